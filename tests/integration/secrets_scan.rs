//! Secrets scan: run the scenarios that handle secrets (no_log tasks, registered secret
//! results in loops and failures, `-v`/`-vvv`, `--diff`, `debug: var=`, inventory SSH and
//! become passwords over real sshd, secret-named `-e` vars, WinRM Basic and NTLM credentials
//! against the test server including a wrong password and an injected 500), with JSON and
//! JUnit logs, then grep every byte kinit wrote (stdout, stderr, every file it created in its
//! scratch folder and state dir) for each secret in raw, base64, UTF-16LE and
//! base64-of-UTF-16LE form. Any hit fails the test, naming the secret, form and place. The
//! vault scenario does the same for vault passwords (files, scripts, a wrong one).

use std::path::Path;

use base64::Engine;

use crate::fixtures::netns::is_root;
use crate::fixtures::sshd::{PW_USER, PW_USER_PASSWORD, SshLab};
use crate::support::{Ran, Test};
use crate::winrm_server::{Mode, PASSWORD as WINRM_PASSWORD, USER as WINRM_USER, WinRmServer};

/// Values only this test uses, so a hit can only come from kinit writing them.
/// Why the runs here are not compared whole.
const SCANNED: &str = "the test scans every channel for secrets; what the runs print is \
                       compared whole by the playbook tests, not here";
const VAULT_TOKEN: &str = "Tok3n-Qx7-Zebra-Orchid";
const DB_PASSWORD: &str = "Db-Pw-Marmalade-8812";
const NOLOG_VALUE: &str = "NoLog-Kumquat-5521";
const LOOP_SECRET: &str = "Loop-Secret-Pelican-77";
const WRONG_WINRM: &str = "Wr0ng-WinRM-Pw-9931";
const VAULT_PW: &str = "Vault-Pw-Quince-3390";
const WRONG_VAULT_PW: &str = "Vault-Wrong-Heron-6127";

/// Every form a secret could leak in: raw, base64 at each byte alignment (as inside a longer
/// encoded blob), UTF-16LE (PowerShell strings) and its base64 (`-EncodedCommand`).
fn forms(secret: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![("raw".to_string(), secret.as_bytes().to_vec())];
    let utf16: Vec<u8> = secret.encode_utf16().flat_map(u16::to_le_bytes).collect();
    out.push(("utf-16le".into(), utf16.clone()));
    for (name, bytes) in [
        ("base64", secret.as_bytes().to_vec()),
        ("base64(utf-16le)", utf16),
    ] {
        for pad in 0..3usize {
            let mut buf = vec![b'x'; pad];
            buf.extend_from_slice(&bytes);
            let enc = base64::engine::general_purpose::STANDARD.encode(&buf);
            // Skip the characters that mix in the prefix, and the last group (mixes the suffix).
            let start = [0, 2, 3][pad];
            let core = &enc.as_bytes()[start..enc.len() - 4];
            out.push((format!("{name}@{pad}"), core.to_vec()));
        }
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Every file under `dir` except the inputs the test wrote itself.
fn written_files(dir: &Path, inputs: &[&str], out: &mut Vec<(String, Vec<u8>)>, root: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        if p.is_dir() {
            written_files(&p, inputs, out, root);
        } else if !inputs.contains(&rel.as_str()) {
            out.push((rel, std::fs::read(&p).unwrap_or_default()));
        }
    }
}

/// Collect (place, bytes) for everything one run wrote.
fn outputs(label: &str, ran: &Ran, inputs: &[&str]) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![
        (format!("{label}: stdout"), ran.output.stdout.clone()),
        (format!("{label}: stderr"), ran.output.stderr.clone()),
    ];
    let mut files = Vec::new();
    written_files(&ran.dir, inputs, &mut files, &ran.dir);
    out.extend(files.into_iter().map(|(p, b)| (format!("{label}: {p}"), b)));
    out
}

fn assert_no_leaks(secrets: &[&str], places: &[(String, Vec<u8>)]) {
    let mut hits = Vec::new();
    for s in secrets {
        for (form, needle) in forms(s) {
            for (place, bytes) in places {
                if find(bytes, &needle) {
                    hits.push(format!("{s:?} as {form} in {place}"));
                }
            }
        }
    }
    assert!(hits.is_empty(), "secrets leaked:\n{}", hits.join("\n"));
}

#[test]
fn scan_finds_a_planted_secret_in_every_form() {
    // The scanner itself must be able to fail.
    let s = "Planted-Secret-123";
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("pre{s}post"));
    let utf16: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let u16b64 = base64::engine::general_purpose::STANDARD.encode([&b"ab"[..], &utf16].concat());
    for hay in [
        format!("x{s}y").into_bytes(),
        b64.into_bytes(),
        utf16,
        u16b64.into_bytes(),
    ] {
        assert!(forms(s).iter().any(|(_, n)| find(&hay, n)));
    }
}

const SSH_PLAYBOOK: &str = r#"- hosts: all
  gather_facts: false
  vars:
    api_token: "Tok3n-Qx7-Zebra-Orchid"
  tasks:
    - name: use a secret without no_log (secret-named var)
      command: echo token={{ api_token }}
      register: tok
    - debug: var=tok
    - debug: var=api_token
    - debug: msg="db is {{ db_password }}"
    - name: no_log task registers a secret result
      command: echo NoLog-Kumquat-5521
      register: hidden
      no_log: true
    - debug: var=hidden
    - debug: msg="hidden said {{ hidden.stdout }}"
    - name: no_log loop
      command: echo {{ item }}
      loop: ["Loop-Secret-Pelican-77", "second-Loop-Secret-Pelican-77"]
      register: looped
      no_log: true
    - debug: var=looped
    - name: write a secret file with diff
      copy:
        content: "password={{ db_password }}\n"
        dest: /tmp/kinit-secret-scan-{{ inventory_hostname }}
        mode: "0600"
    - name: become with a password
      command: id -un
      become: true
    - name: failing no_log task
      shell: echo NoLog-Kumquat-5521 >&2; exit 3
      no_log: true
      ignore_errors: true
    - name: failing task with a secret argument
      shell: echo {{ db_password }} {{ api_token }} >&2; exit 4
      ignore_errors: true
"#;

#[test]
fn no_secret_reaches_any_output_over_ssh() {
    if !is_root() {
        crate::support::cannot_run("the sudo-with-password user needs root");
        return;
    }
    let lab = SshLab::new(1);
    let h = &lab.hosts[0];
    let inventory = format!(
        "[all]\n{} ansible_host={} ansible_port={}\n[all:vars]\nansible_user={PW_USER}\n\
         ansible_password={PW_USER_PASSWORD}\nansible_become_password={PW_USER_PASSWORD}\n",
        h.name, h.address, h.port
    );
    let inputs = ["hosts.ini", "site.yml", ".home/.ssh/known_hosts"];
    let mut places = Vec::new();
    for (label, flags) in [
        ("plain", vec![]),
        ("-v", vec!["-v"]),
        ("-vvv", vec!["-vvv"]),
        ("--diff", vec!["--diff", "-v"]),
    ] {
        let test = Test::new()
            .write("hosts.ini", &inventory)
            .write("site.yml", SSH_PLAYBOOK)
            .write(
                ".home/.ssh/known_hosts",
                &std::fs::read_to_string(&lab.known_hosts).unwrap(),
            );
        let home = test.path().join(".home").display().to_string();
        let ran = test
            .env("HOME", &home)
            .args(["playbook", "site.yml", "-i", "hosts.ini"])
            .args(["-e", &format!("db_password={DB_PASSWORD}")])
            .args(["--log-json", "log.jsonl", "--junit", "junit.xml"])
            .args(flags)
            .run()
            .partial_output(SCANNED);
        assert_eq!(
            ran.output.status.code(),
            Some(0),
            "{label}\n{}\n{}",
            ran.stdout(),
            ran.stderr()
        );
        // The scan must have looked at something: the logs exist and the run did its work.
        assert!(ran.dir.join("log.jsonl").exists() && ran.dir.join("junit.xml").exists());
        assert!(ran.stdout().contains("ok="), "{}", ran.stdout());
        places.extend(outputs(label, &ran, &inputs));
    }
    assert_no_leaks(
        &[
            VAULT_TOKEN,
            DB_PASSWORD,
            NOLOG_VALUE,
            LOOP_SECRET,
            PW_USER_PASSWORD,
        ],
        &places,
    );
}

fn winrm_inventory(port: u16, scheme: &str, auth: &str, password: &str) -> String {
    format!(
        "all:\n  hosts:\n    win:\n      ansible_host: 127.0.0.1\n      ansible_port: {port}\n\
         \x20     ansible_connection: winrm\n      ansible_winrm_scheme: {scheme}\n\
         \x20     ansible_winrm_transport: {auth}\n\
         \x20     ansible_user: '{WINRM_USER}'\n      ansible_password: '{password}'\n"
    )
}

const WIN_PLAYBOOK: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n\
    \x20   - win_shell: echo {{ db_password }}; exit 0\n      register: out\n      no_log: true\n\
    \x20   - debug: var=out\n\
    \x20   - win_shell: echo again; exit 0\n";

#[tokio::test]
async fn no_secret_reaches_any_output_over_winrm() {
    let inputs = ["hosts.yml", "site.yml"];
    let mut places = Vec::new();
    let basic = WinRmServer::for_mode(Mode::HttpsBasic, &["--auth", "basic"]);
    let ntlm = WinRmServer::for_mode(Mode::HttpNtlmSealed, &[]);
    let cases: Vec<(&str, &WinRmServer, &str, &str, &str, bool)> = vec![
        ("basic", &basic, "https", "basic", WINRM_PASSWORD, true),
        ("ntlm", &ntlm, "http", "ntlm", WINRM_PASSWORD, true),
        (
            "ntlm wrong password",
            &ntlm,
            "http",
            "ntlm",
            WRONG_WINRM,
            false,
        ),
        (
            "basic wrong password",
            &basic,
            "https",
            "basic",
            WRONG_WINRM,
            false,
        ),
        ("ntlm 500", &ntlm, "http", "ntlm", WINRM_PASSWORD, false),
    ];
    for (label, srv, scheme, auth, pw, ok) in cases {
        if label.ends_with("500") {
            srv.control(serde_json::json!({"fail_next": 50})).await;
        }
        let mut t = Test::new()
            .write("hosts.yml", &winrm_inventory(srv.port, scheme, auth, pw))
            .write("site.yml", WIN_PLAYBOOK)
            .args(["playbook", "site.yml", "-i", "hosts.yml", "-vvv"])
            .args(["-e", &format!("db_password={DB_PASSWORD}")])
            .args(["--log-json", "log.jsonl", "--junit", "junit.xml"]);
        if srv.https {
            t = t.args([
                "--winrm-ca-file".to_string(),
                srv.ca_file().display().to_string(),
            ]);
        }
        let ran = tokio::task::spawn_blocking(move || t.run().partial_output(SCANNED))
            .await
            .unwrap();
        if label.ends_with("500") {
            srv.control(serde_json::json!({"fail_next": 0})).await;
        }
        assert_eq!(
            ran.output.status.code() == Some(0),
            ok,
            "{label}\n{}\n{}",
            ran.stdout(),
            ran.stderr()
        );
        places.extend(outputs(label, &ran, &inputs));
    }
    assert_no_leaks(&[WINRM_PASSWORD, WRONG_WINRM, DB_PASSWORD], &places);
}

/// Tasks that put the vault password itself in front of every channel: read back from its
/// file, echoed by a command, in a failure message.
const VAULT_PLAYBOOK: &str = "- hosts: localhost
  gather_facts: false
  vars_files: [vars.yml]
  tasks:
    - debug: msg=\"{{ lookup('file', 'pw.txt') }} opened {{ word }}\"
    - command: cat pw.txt
      register: out
    - debug: var=out
    - copy: content=\"{{ lookup('file', 'pw.txt') }}\" dest=copied.txt
    - fail: msg=\"{{ lookup('file', 'pw.txt') }}\"
";

#[test]
fn no_vault_password_reaches_any_output() {
    let Some(tool) = crate::vault::ansible_vault() else {
        return;
    };
    let inputs = ["pw.txt", "pw.sh", "wrong.txt", "vars.yml", "site.yml"];
    let mut places = Vec::new();
    for (label, flags, code) in [
        ("file", vec!["--vault-password-file", "pw.txt"], 2),
        ("script -vvv", vec!["--vault-id", "dev@pw.sh", "-vvv"], 2),
        (
            "--diff",
            vec!["--vault-password-file", "pw.txt", "--diff", "-v"],
            2,
        ),
        (
            "wrong",
            vec!["--vault-password-file", "wrong.txt", "-vvv"],
            2,
        ),
    ] {
        let t = Test::new()
            .write("pw.txt", &format!("{VAULT_PW}\n"))
            .write("pw.sh", &format!("#!/bin/sh\necho {VAULT_PW}\n"))
            .write("wrong.txt", WRONG_VAULT_PW)
            .write("vars.yml", "word: the-vaulted-vars\n")
            .write("site.yml", VAULT_PLAYBOOK);
        std::fs::set_permissions(
            t.path().join("pw.sh"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        crate::vault::encrypt_file(&tool, t.path(), "vars.yml", "pw.txt");
        let ran = t
            .args(["playbook", "site.yml"])
            .args(["--log-json", "log.jsonl", "--junit", "junit.xml"])
            .args(flags)
            .run()
            .partial_output(SCANNED);
        assert_eq!(
            ran.output.status.code(),
            Some(code),
            "{label}\n{}\n{}",
            ran.stdout(),
            ran.stderr()
        );
        if label == "wrong" {
            // The run stopped at the vars file: its error is all there is to scan.
            assert!(
                ran.stdout().contains("Decryption failed"),
                "{}",
                ran.stdout()
            );
        } else {
            // The password was read back into results and output, masked everywhere.
            assert!(
                ran.stdout().contains("******** opened the-vaulted-vars"),
                "{}",
                ran.stdout()
            );
            assert!(ran.dir.join("log.jsonl").exists() && ran.dir.join("junit.xml").exists());
        }
        places.extend(outputs(label, &ran, &inputs));
    }
    // `copied.txt` holds the password by design (the task wrote it); it is not output.
    places.retain(|(p, _)| !p.ends_with("copied.txt"));
    assert_no_leaks(&[VAULT_PW, WRONG_VAULT_PW], &places);
}

/// Random passwords (seeded) over ASCII punctuation and non-ASCII text, each used as a host's
/// `ansible_password` and sent through every channel kinit writes (terminal, stderr, the
/// JSON log, JUnit) raw, through `to_json` once and twice and through `b64encode`: no channel
/// holds any spelling of any of them. (`{`, `}`, `%` and `#` are left out: Ansible and kinit
/// template inventory values, so a password holding `{{` is not a plain value in either.)
#[test]
fn random_passwords_reach_no_channel_in_any_encoding() {
    const ALPHABET: &str = "abcXYZ019!\"$&'()*+,-./:;<=>?@[\\]^_`|~ \téü€漢🔐";
    let chars: Vec<char> = ALPHABET.chars().collect();
    let mut seed: u64 = 0x6b69_6e69_7431;
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    \
        - command: echo {{ ansible_password | to_json }}\n      register: o\n    \
        - debug: var=o.stdout\n    \
        - debug: msg=\"{{ ansible_password | to_json | to_json }}\"\n    \
        - debug: msg=\"{{ ansible_password | b64encode }}\"\n    \
        - shell: printf '%s' {{ ansible_password | quote }} >&2; exit 3\n      ignore_errors: true\n    \
        - fail: msg=\"{{ ansible_password }}\"\n";
    for _ in 0..40 {
        let mut pw = String::new();
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1442695040888963407);
        let len = 8 + (seed >> 60) as usize;
        for _ in 0..len {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1442695040888963407);
            pw.push(chars[(seed >> 33) as usize % chars.len()]);
        }
        let inv = format!(
            "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      ansible_password: {}\n",
            serde_json::to_string(&pw).unwrap()
        );
        let run = Test::new()
            .write("hosts.yml", &inv)
            .write("site.yml", site)
            .args(["playbook", "-i", "hosts.yml", "site.yml"])
            .args(["--log-json", "log.jsonl", "--junit", "junit.xml"])
            .run()
            .code(2)
            .partial_output(SCANNED);
        let once = serde_json::to_string(&pw).unwrap();
        let twice = serde_json::to_string(&once).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&pw);
        let forms = [
            pw.clone(),
            once[1..once.len() - 1].to_string(),
            twice[1..twice.len() - 1].to_string(),
            b64.trim_end_matches('=')[..b64.trim_end_matches('=').len() - 2].to_string(),
        ];
        let channels = [
            ("stdout", run.stdout()),
            ("stderr", run.stderr()),
            (
                "log",
                std::fs::read_to_string(run.dir.join("log.jsonl")).unwrap(),
            ),
            (
                "junit",
                std::fs::read_to_string(run.dir.join("junit.xml")).unwrap(),
            ),
        ];
        for (name, text) in &channels {
            for form in &forms {
                assert!(
                    !text.contains(form.as_str()),
                    "password {pw:?} in {name} as {form:?}:\n{text}"
                );
            }
        }
    }
}
