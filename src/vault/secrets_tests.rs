//! Tests of `secrets`: slugs, password files and scripts, warnings and failures.

use super::*;

#[test]
fn slugs_split_at_the_first_at_sign() {
    assert_eq!(
        split("dev@prompt"),
        (Some("dev".into()), Source::Prompt { ask_style: false })
    );
    assert_eq!(
        split("a@b@c"),
        (Some("a".into()), Source::Path("b@c".into()))
    );
    assert_eq!(split("pw.txt"), (None, Source::Path("pw.txt".into())));
}

#[test]
fn files_are_stripped_and_scripts_lose_their_newline_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pw");
    std::fs::write(&file, "  two words \n\n").unwrap();
    let script = dir.path().join("pw.sh");
    std::fs::write(&script, "#!/bin/sh\nprintf ' spaced \\n'\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sources = SecretSources {
        vault_ids: vec![format!("dev@{}", script.display())],
        password_files: vec![file.clone()],
        ..Default::default()
    };
    let v = load_secrets(&sources, &mut |w| panic!("{w}")).unwrap();
    let got: Vec<(&str, &str)> = v
        .secrets
        .iter()
        .map(|(id, s)| (id.as_str(), s.expose()))
        .collect();
    assert_eq!(got, [("dev", " spaced "), ("default", "two words")]);
}

#[test]
fn a_missing_file_warns_while_another_works_and_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("pw");
    std::fs::write(&good, "secret\n").unwrap();
    let missing = dir.path().join("nope");
    let mut warnings = Vec::new();
    let sources = SecretSources {
        password_files: vec![missing.clone(), good],
        ..Default::default()
    };
    let v = load_secrets(&sources, &mut |w| warnings.push(w)).unwrap();
    assert_eq!(v.secrets.len(), 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let alone = SecretSources {
        password_files: vec![missing],
        ..Default::default()
    };
    let err = load_secrets(&alone, &mut |_| {}).unwrap_err();
    assert!(matches!(err, SecretError::NotFound { .. }), "{err}");
}

#[test]
fn a_vaulted_password_file_opens_with_an_earlier_secret() {
    let dir = tempfile::tempdir().unwrap();
    let (pw, vaulted) = (dir.path().join("pw"), dir.path().join("vaulted-pw"));
    std::fs::write(&pw, "kinit-vault-pw\n").unwrap();
    // `hello vault\n`, vaulted by ansible-vault with `kinit-vault-pw`.
    std::fs::write(&vaulted, crate::vault::cipher::tests::HELLO).unwrap();
    let sources = SecretSources {
        vault_ids: vec![
            format!("a@{}", pw.display()),
            format!("b@{}", vaulted.display()),
        ],
        ..Default::default()
    };
    let v = load_secrets(&sources, &mut |w| panic!("{w}")).unwrap();
    assert_eq!(v.secrets[1].0, "b");
    assert_eq!(v.secrets[1].1.expose(), "hello vault");
}

#[test]
fn a_failing_script_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("pw.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 3\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sources = SecretSources {
        password_files: vec![script],
        ..Default::default()
    };
    let err = load_secrets(&sources, &mut |_| {}).unwrap_err();
    assert!(
        matches!(err, SecretError::ScriptFailed { code: 3, .. }),
        "{err}"
    );
}
