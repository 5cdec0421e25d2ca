//! Ansible Vault interop: every vaulted input here is made at test time by ansible-core's own
//! `ansible-vault` (from `KINIT_VENV`, else PATH), in both envelope formats (1.1 without a
//! vault-id, 1.2 with one), whole files and inline `!vault` values, and kinit must read them
//! as ansible-playbook does; the differential test runs both tools on the same files and
//! compares what they wrote. The error tests check Ansible's messages with the file and line.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{Ran, Test};

/// Passwords only these tests use.
const PW1: &str = "Vault-Pw-One-4417";
const PW2: &str = "Vault-Pw-Two-9083";

fn venv_tool(name: &str) -> Option<PathBuf> {
    if let Some(venv) = std::env::var_os("KINIT_VENV") {
        let p = Path::new(&venv).join("bin").join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// `ansible-vault`, or `None` after saying why the test cannot run.
pub(crate) fn ansible_vault() -> Option<PathBuf> {
    let tool = venv_tool("ansible-vault");
    if tool.is_none() {
        crate::support::cannot_run(
            "ansible-vault is not on PATH and KINIT_VENV has none (ci/test.sh installs it)",
        );
    }
    tool
}

/// Run `ansible-vault args` in `dir`, returning its stdout.
fn vault_cmd(tool: &Path, dir: &Path, args: &[&str]) -> String {
    let out = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .env("ANSIBLE_HOME", dir.join(".ansible-home"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ansible-vault {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Encrypt `rel` in place; `id` is `--vault-id` (`label@file`) or a bare password file.
pub(crate) fn encrypt_file(tool: &Path, dir: &Path, rel: &str, id: &str) {
    let flag = if id.contains('@') {
        "--vault-id"
    } else {
        "--vault-password-file"
    };
    vault_cmd(tool, dir, &["encrypt", flag, id, rel]);
}

/// `name: !vault |` + envelope for `value`, every line indented by `indent` spaces.
fn inline(tool: &Path, dir: &Path, id: &str, name: &str, value: &str, indent: usize) -> String {
    let text = vault_cmd(
        tool,
        dir,
        &["encrypt_string", "--vault-id", id, "--name", name, value],
    );
    assert!(text.contains("!vault |"), "{text}");
    let pad = " ".repeat(indent);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

const TASKS: &str = "  tasks:
    - include_vars: included.yml
    - copy: src=payload.txt dest={{ out }}-copy.txt
    - copy: src=payload.txt dest={{ out }}-raw.txt decrypt=false
    - template: src=greeting.j2 dest={{ out }}-template.txt
    - copy:
        dest: \"{{ out }}-vars.json\"
        content: \"{{ {'inline': inline_word, 'file': file_word, 'include': include_word,
                     'group': group_word, 'host': host_word, 'extra': extra_word,
                     'unvault': lookup('unvault', 'payload.txt'),
                     'file_lookup': lookup('file', 'greeting.j2'),
                     'vault_encrypted': [inline_word is vault_encrypted,
                       host_word is vault_encrypted, file_word is vault_encrypted,
                       out is vault_encrypted, ('x' ~ inline_word) is vault_encrypted]} | to_json }}\"
";

/// A scratch folder with every kind of vaulted input: 1.1 files under the `default` secret
/// (`pw1`), 1.2 values and files labelled `dev` (`pw1`) and `prod` (`pw2`).
fn vaulted_project(tool: &Path) -> Test {
    let test = Test::new()
        .write("pw1.txt", &format!("{PW1}\n"))
        .write("pw2.txt", &format!("{PW2}\n"))
        .write("vars.yml", "file_word: from-a-1.1-vars-file\n")
        .write("included.yml", "include_word: from-include-vars\n")
        .write("group_vars/all.yml", "group_word: from-group-vars\n")
        .write("extra.yml", "extra_word: from-extra-vars-file\n")
        .write("payload.txt", "copied plaintext\n")
        .write("greeting.j2", "hello {{ inline_word }}\n")
        .write(
            "roles/r/defaults/main.yml",
            "role_word: from-role-defaults\n",
        )
        .write("roles/r/tasks/main.yml", "- debug: msg={{ role_word }}\n");
    let dir = test.path().to_path_buf();
    encrypt_file(tool, &dir, "vars.yml", "pw1.txt");
    encrypt_file(tool, &dir, "included.yml", "dev@pw1.txt");
    encrypt_file(tool, &dir, "group_vars/all.yml", "pw1.txt");
    encrypt_file(tool, &dir, "extra.yml", "prod@pw2.txt");
    encrypt_file(tool, &dir, "payload.txt", "prod@pw2.txt");
    encrypt_file(tool, &dir, "greeting.j2", "pw1.txt");
    encrypt_file(tool, &dir, "roles/r/defaults/main.yml", "prod@pw2.txt");
    let inventory = format!(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n{}",
        inline(tool, &dir, "dev@pw1.txt", "host_word", "from-inventory", 6)
    );
    let play = format!(
        "- hosts: all\n  gather_facts: false\n  vars_files: [vars.yml]\n  roles: [r]\n  vars:\n{}{TASKS}",
        inline(tool, &dir, "prod@pw2.txt", "inline_word", "from-inline", 4)
    );
    test.write("inv.yml", &inventory).write("site.yml", &play)
}

const BOTH_IDS: [&str; 4] = ["--vault-id", "dev@pw1.txt", "--vault-id", "prod@pw2.txt"];

fn expected_vars() -> serde_json::Value {
    serde_json::json!({
        "inline": "from-inline", "file": "from-a-1.1-vars-file",
        "include": "from-include-vars", "group": "from-group-vars",
        "host": "from-inventory", "extra": "from-extra-vars-file",
        "unvault": "copied plaintext\n", "file_lookup": "hello {{ inline_word }}",
        // Inline `!vault` values are; a whole vaulted file's values are not.
        "vault_encrypted": [true, true, false, false, false],
    })
}

fn read_json(dir: &Path, rel: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn run_kinit(test: Test, extra: &[&str]) -> Ran {
    test.args(["playbook", "-i", "inv.yml", "site.yml", "-e", "@extra.yml"])
        .args(extra.iter().copied())
        .run()
}

#[test]
fn vaulted_files_and_values_decrypt_like_ansible_playbook() {
    let Some(tool) = ansible_vault() else { return };
    let Some(ansible) = venv_tool("ansible-playbook") else {
        crate::support::cannot_run("ansible-playbook is not beside ansible-vault");
        return;
    };
    let test = vaulted_project(&tool);
    let dir = test.path().to_path_buf();
    let python = tool.parent().unwrap().join("python");
    let a = Command::new(&ansible)
        .args([
            "-i",
            "inv.yml",
            "site.yml",
            "-e",
            "@extra.yml",
            "-e",
            "out=ansible",
        ])
        .args(BOTH_IDS)
        .current_dir(&dir)
        .env("ANSIBLE_HOME", dir.join(".ansible-home"))
        .env("ANSIBLE_LOCAL_TEMP", dir.join(".ansible-tmp"))
        .env("ANSIBLE_PYTHON_INTERPRETER", &python)
        .env("ANSIBLE_RETRY_FILES_ENABLED", "false")
        .output()
        .unwrap();
    assert!(
        a.status.success(),
        "ansible-playbook failed:\n{}{}",
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&a.stderr)
    );
    let ran = run_kinit(test, &[&BOTH_IDS[..], &["-e", "out=kinit"]].concat())
        .code(0)
        .stdout_has("ok=6")
        // The role's vaulted defaults, printed by its own task.
        .stdout_has("from-role-defaults")
        .snapshot();
    assert_eq!(read_json(&ran.dir, "kinit-vars.json"), expected_vars());
    for file in ["vars.json", "copy.txt", "template.txt"] {
        let (k, a) = (
            std::fs::read(ran.dir.join(format!("kinit-{file}"))).unwrap(),
            std::fs::read(ran.dir.join(format!("ansible-{file}"))).unwrap(),
        );
        if file.ends_with(".json") {
            let parse = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap();
            assert_eq!(parse(&k), parse(&a), "{file}");
        } else {
            assert_eq!(
                String::from_utf8_lossy(&k),
                String::from_utf8_lossy(&a),
                "{file}"
            );
        }
    }
    let copied = std::fs::read_to_string(ran.dir.join("kinit-copy.txt")).unwrap();
    assert_eq!(copied, "copied plaintext\n");
    let template = std::fs::read_to_string(ran.dir.join("kinit-template.txt")).unwrap();
    assert_eq!(template, "hello from-inline\n");
    // `decrypt: false` copies the vault as it is, byte for byte.
    let raw = std::fs::read(ran.dir.join("kinit-raw.txt")).unwrap();
    assert_eq!(raw, std::fs::read(ran.dir.join("payload.txt")).unwrap());
    assert!(raw.starts_with(b"$ANSIBLE_VAULT;1.2;AES256;prod\n"));
}

#[test]
fn without_any_secret_the_first_vaulted_file_is_named() {
    let Some(tool) = ansible_vault() else { return };
    // `-e @extra.yml` is read first, as ansible-playbook reads extra vars before the plays.
    run_kinit(vaulted_project(&tool), &["-e", "out=kinit"])
        .code(1)
        .stderr_has("extra.yml: Attempting to decrypt but no vault secrets found")
        .snapshot();
}

#[test]
fn a_wrong_password_names_the_file_and_line_of_the_value() {
    let Some(tool) = ansible_vault() else { return };
    let test = Test::new()
        .write("pw1.txt", PW1)
        .write("wrong.txt", "not-the-password\n");
    // As in ansible-core 2.19, the value fails where a task uses it, not when the play is
    // read: the first task, which does not read it, runs.
    let play = format!(
        "- hosts: localhost\n  gather_facts: false\n  vars:\n    plain: 1\n{}  tasks:\n    \
         - debug: msg={{{{ plain }}}}\n    - debug: msg={{{{ word }}}}\n",
        inline(&tool, test.path(), "dev@pw1.txt", "word", "hidden", 4)
    );
    test.write("site.yml", &play)
        .args(["playbook", "site.yml", "--vault-password-file", "wrong.txt"])
        .fails_with(2)
        .stdout_has(
            "Attempt to use undecryptable variable: site.yml:5: Decryption failed (no vault \
             secrets were found that could decrypt)",
        )
        .snapshot();
}

#[test]
fn with_one_of_two_labels_the_values_of_the_other_do_not_open() {
    let Some(tool) = ansible_vault() else { return };
    // Only `prod` (pw2): `-e @extra.yml` and the play's inline value open. The inventory's
    // `dev` value (pw1) on line 5 cannot, but it would fail only where it is used; the whole
    // file `group_vars/all.yml` (pw1) cannot be read at all, which stops the run.
    run_kinit(
        vaulted_project(&tool),
        &["--vault-id", "prod@pw2.txt", "-e", "out=k"],
    )
    .code(1)
    .stderr_has(
        "group_vars/all.yml: Decryption failed (no vault secrets were found that could decrypt)",
    )
    .snapshot();
}

#[test]
fn a_wrong_password_for_a_whole_vaulted_file_names_the_file() {
    let Some(tool) = ansible_vault() else { return };
    let test = Test::new()
        .write("pw1.txt", PW1)
        .write("other.txt", PW2)
        .write("vars.yml", "word: hidden\n")
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - include_vars: vars.yml\n",
        );
    encrypt_file(&tool, test.path(), "vars.yml", "pw1.txt");
    // `include_vars` fails the host, which reports it on stdout.
    test.args(["playbook", "site.yml", "--vault-password-file", "other.txt"])
        .fails_with(2)
        .stdout_has("vars.yml: Decryption failed (no vault secrets were found that could decrypt)")
        .snapshot();
}

#[test]
fn secrets_come_from_scripts_ansible_cfg_and_the_environment() {
    let Some(tool) = ansible_vault() else { return };
    let play = "- hosts: localhost\n  gather_facts: false\n  vars_files: [vars.yml]\n  \
                tasks:\n    - debug: msg={{ word }}\n";
    let project = |extra: &[(&str, &str)]| {
        let mut t = Test::new()
            .write("pw1.txt", PW1)
            .write("pw.sh", &format!("#!/bin/sh\necho {PW1}\n"))
            .write("vars.yml", "word: opened-by-the-secret\n")
            .write("site.yml", play);
        std::fs::set_permissions(
            t.path().join("pw.sh"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        encrypt_file(&tool, t.path(), "vars.yml", "ops@pw1.txt");
        // After encrypting: ansible-vault reads the ansible.cfg in its folder too.
        for (rel, text) in extra {
            t = t.write(rel, text);
        }
        t
    };
    let word = "opened-by-the-secret";
    // An executable password file is run; its output is the password.
    project(&[])
        .args(["playbook", "site.yml", "--vault-password-file", "pw.sh"])
        .succeeds()
        .stdout_has(word)
        .snapshot();
    project(&[])
        .args(["playbook", "site.yml", "--vault-id", "ops@pw.sh"])
        .succeeds()
        .stdout_has(word)
        .snapshot();
    // ANSIBLE_VAULT_PASSWORD_FILE, and ansible.cfg's two settings.
    project(&[])
        .env("ANSIBLE_VAULT_PASSWORD_FILE", "pw1.txt")
        .args(["playbook", "site.yml"])
        .succeeds()
        .stdout_has(word)
        .snapshot();
    project(&[("ansible.cfg", "[defaults]\nvault_password_file = pw.sh\n")])
        .args(["playbook", "site.yml"])
        .succeeds()
        .stdout_has(word)
        .snapshot();
    project(&[(
        "ansible.cfg",
        "[defaults]\nvault_identity_list = dev@missing.txt, ops@pw1.txt\n",
    )])
    .args(["playbook", "site.yml"])
    .succeeds()
    .stdout_has(word)
    .stderr_has("[WARNING]: Error getting vault password file (dev)")
    .snapshot();
}

#[test]
fn a_failing_or_missing_password_source_is_a_clear_error() {
    let t = Test::new()
        .write("pw.sh", "#!/bin/sh\nexit 3\n")
        .write("site.yml", "- hosts: localhost\n  tasks: []\n");
    std::fs::set_permissions(
        t.path().join("pw.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    t.args(["playbook", "site.yml", "--vault-password-file", "pw.sh"])
        .fails_with(1)
        .stderr_has("error: vault password script `pw.sh` returned non-zero (3)")
        .snapshot();
    Test::new()
        .write("site.yml", "- hosts: localhost\n  tasks: []\n")
        .args(["playbook", "site.yml", "--vault-id", "dev@nope.txt"])
        .fails_with(1)
        .stderr_has("error: The vault password file `nope.txt` was not found")
        .snapshot();
}

#[test]
fn ask_vault_pass_without_a_terminal_fails_at_once() {
    // The test runs kinit with piped output and no stdin: no terminal to ask on.
    for flag in ["-J", "--ask-vault-pass", "--ask-vault-password"] {
        Test::new()
            .write("site.yml", "- hosts: localhost\n  tasks: []\n")
            .args(["playbook", "site.yml", flag])
            .fails_with(1)
            .stderr_has("cannot prompt for the vault password (default): no terminal")
            .snapshot_as(&format!("ask_vault_pass_without_a_terminal{flag}"));
    }
}

#[test]
fn playbook_help_lists_the_vault_flags() {
    let ran = Test::new()
        .args(["playbook", "--help"])
        .succeeds()
        .partial_output(
            "the whole help text is clap's layout; the vault flags are what this checks",
        );
    for flag in [
        "--vault-id <VAULT_IDS>",
        "-J, --ask-vault-password",
        "--ask-vault-pass",
        "--vault-password-file <VAULT_PASSWORD_FILES>",
        "--vault-pass-file",
    ] {
        assert!(ran.stdout().contains(flag), "{flag}:\n{}", ran.stdout());
    }
}

#[test]
fn ask_vault_pass_reads_the_password_from_the_terminal_without_echo() {
    let Some(tool) = ansible_vault() else { return };
    let test = Test::new()
        .write("pw1.txt", PW1)
        .write("vars.yml", "word: opened-at-the-prompt\n")
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  vars_files: [vars.yml]\n  \
             tasks:\n    - debug: msg={{ word }}\n",
        );
    encrypt_file(&tool, test.path(), "vars.yml", "pw1.txt");
    let Some((prompted, status, out)) = crate::support::on_terminal(
        test.path(),
        "playbook site.yml -J",
        &[("Vault password: ", PW1)],
    ) else {
        return;
    };
    assert!(prompted, "no prompt:\n{out}");
    assert!(status.success(), "{out}");
    assert!(out.contains("opened-at-the-prompt"), "{out}");
    assert!(!out.contains(PW1), "the password was echoed:\n{out}");
}
