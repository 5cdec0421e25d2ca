//! `kinit playbook` end to end over WinRM: the real binary, an inventory with
//! `ansible_connection=winrm`, two WinRM test servers (HTTPS+NTLM verified with
//! `--winrm-ca-file`, and HTTP+NTLM sealed), one shell per host for the whole run.
//! The test server runs the PowerShell text with sh; the `win_shell` scripts below are valid
//! in both languages and end with `exit 0` so sh never reaches the module's PowerShell-only
//! epilogue (sh runs a script command by command).

use std::time::{Duration, Instant};

use crate::support::Test;
use crate::winrm_server::{Mode, PASSWORD, USER, WinRmServer};

fn host_vars(port: u16, scheme: &str) -> String {
    format!(
        "      ansible_host: 127.0.0.1\n      ansible_port: {port}\n\
         \x20     ansible_connection: winrm\n      ansible_winrm_scheme: {scheme}\n\
         \x20     ansible_user: '{USER}'\n      ansible_password: '{PASSWORD}'\n"
    )
}

#[tokio::test]
async fn playbook_over_winrm_one_shell_per_host() {
    let tls = WinRmServer::for_mode(Mode::HttpsNtlm, &[]);
    let sealed = WinRmServer::for_mode(Mode::HttpNtlmSealed, &[]);
    let inventory = format!(
        "all:\n  hosts:\n    win-tls:\n{}    win-sealed:\n{}",
        host_vars(tls.port, "https"),
        host_vars(sealed.port, "http")
    );
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n\
        \x20   - name: several commands on the one shell\n      win_shell: echo item {{ item }}; exit 0\n      loop: [1, 2, 3]\n\
        \x20   - name: capture output\n      win_shell: echo hello-{{ inventory_hostname }}; exit 0\n      register: out\n\
        \x20   - assert:\n        that: \"('hello-' ~ inventory_hostname) in out.stdout\"\n";
    let ran = Test::new()
        .write("hosts.yml", &inventory)
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.yml", "--winrm-ca-file"])
        .args([tls.ca_file().display().to_string()])
        .run()
        .partial_output(
            "win-tls and win-sealed report in parallel: the order of their lines varies",
        );
    let (out, err) = (ran.stdout(), ran.stderr());
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(
        out.contains("win-tls") && out.contains("win-sealed"),
        "{out}"
    );
    assert!(
        !out.contains("unreachable=1") && !out.contains("failed=1"),
        "{out}"
    );
    assert!(
        !out.contains(PASSWORD) && !err.contains(PASSWORD),
        "password printed"
    );
    for srv in [&tls, &sealed] {
        let st = srv.stats().await;
        assert_eq!(st["shells_created"], 1, "one shell per host: {st}");
        assert_eq!(st["shells_open"], 0, "shell left open after the run: {st}");
        assert!(st["commands"].as_i64().unwrap() >= 4, "{st}");
        // NTLM is bound to the TCP connection: a second handshake means a request went out
        // on another connection (it used to, under load, and then failed with 401).
        assert_eq!(
            st["ntlm_handshakes"], 1,
            "one NTLM connection per host: {st}"
        );
    }
    assert_eq!(sealed.stat("plaintext_requests").await, 0);
}

/// Ctrl-C (SIGINT to the real binary) during a long WinRM command: the command is signalled,
/// the shell deleted, and kinit exits 130.
#[tokio::test]
async fn ctrl_c_during_a_winrm_command_leaves_no_shell_open() {
    let srv = WinRmServer::for_mode(Mode::HttpNtlmSealed, &[]);
    let marker = srv.state.path().join("finished");
    let inventory = format!("all:\n  hosts:\n    win:\n{}", host_vars(srv.port, "http"));
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  tasks:\n\
         \x20   - win_shell: sleep 20; echo done > {}; exit 0\n",
        marker.display()
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hosts.yml"), inventory).unwrap();
    std::fs::write(dir.path().join("site.yml"), playbook).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kinit"))
        .args(["playbook", "site.yml", "-i", "hosts.yml"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the command runs on the server.
    assert!(
        srv.wait_for("commands", |n| n >= 1).await >= 1,
        "command never started"
    );
    let started = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "kinit did not stop promptly"
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let st = srv.stats().await;
    assert!(
        st["signals"].as_i64().unwrap() >= 1,
        "command not signalled: {st}"
    );
    assert_eq!(st["shells_created"], 1, "{st}");
    assert_eq!(st["shells_open"], 0, "shell left open after Ctrl-C: {st}");
    assert!(!marker.exists(), "the interrupted command ran to the end");
}

/// `win_reboot` waits for the host to go down and come back: the test server plays the
/// reboot (down for 2 s, then a new boot time), kinit reconnects with a new shell, and the
/// next task runs on the rebooted host.
#[tokio::test]
async fn win_reboot_waits_until_the_host_is_back() {
    let srv = WinRmServer::for_mode(Mode::HttpNtlmSealed, &["--reboot-down-ms", "2000"]);
    let inventory = format!("all:\n  hosts:\n    win:\n{}", host_vars(srv.port, "http"));
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n\
        \x20   - win_reboot:\n        pre_reboot_delay: 1\n        reboot_timeout: 60\n      register: r\n\
        \x20   - win_shell: echo after-reboot; exit 0\n      register: after\n\
        \x20   - assert:\n        that:\n          - r.rebooted\n          - r.changed\n\
        \x20         - r.elapsed >= 2\n          - r.reboot_requested is not defined\n\
        \x20         - \"'after-reboot' in after.stdout\"\n";
    let started = Instant::now();
    let ran = Test::new()
        .write("hosts.yml", &inventory)
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.yml"])
        .run()
        .snapshot();
    let (out, err) = (ran.stdout(), ran.stderr());
    assert_eq!(ran.output.status.code(), Some(0), "{out}\n{err}");
    assert!(started.elapsed() >= Duration::from_secs(3), "{out}");
    let st = srv.stats().await;
    assert!(
        st["shells_created"].as_i64().unwrap() >= 2,
        "no new shell: {st}"
    );
}

/// A host that stays down past `reboot_timeout` fails the task (exit code 2), as in Ansible.
#[tokio::test]
async fn win_reboot_host_not_back_in_time_fails() {
    let srv = WinRmServer::for_mode(Mode::HttpNtlmSealed, &["--reboot-down-ms", "60000"]);
    let inventory = format!("all:\n  hosts:\n    win:\n{}", host_vars(srv.port, "http"));
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n\
        \x20   - win_reboot:\n        pre_reboot_delay: 1\n        reboot_timeout: 4\n\
        \x20       connect_timeout: 2\n";
    let ran = Test::new()
        .write("hosts.yml", &inventory)
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.yml"])
        .run()
        .snapshot();
    let out = ran.stdout();
    assert_eq!(ran.output.status.code(), Some(2), "{out}\n{}", ran.stderr());
    assert!(
        out.contains("did not come back within reboot_timeout (4s)") && out.contains("failed=1"),
        "{out}"
    );
}
