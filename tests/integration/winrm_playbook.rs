//! `kinit playbook` end to end over WinRM: the real binary, an inventory with
//! `ansible_connection=winrm`, two WinRM test servers (HTTPS+NTLM verified with
//! `--winrm-ca-file`, and HTTP+NTLM sealed), one shell per host for the whole run.
//! The test server runs the PowerShell text with sh, so the `raw` tasks are sh.

use crate::support::Test;
use crate::winrm_server::{Mode, PASSWORD, USER, WinRmServer};

#[tokio::test]
async fn playbook_over_winrm_one_shell_per_host() {
    let tls = WinRmServer::for_mode(Mode::HttpsNtlm, &[]);
    let sealed = WinRmServer::for_mode(Mode::HttpNtlmSealed, &[]);
    let host = |port: u16, scheme: &str| {
        format!(
            "      ansible_host: 127.0.0.1\n      ansible_port: {port}\n\
             \x20     ansible_connection: winrm\n      ansible_winrm_scheme: {scheme}\n\
             \x20     ansible_user: '{USER}'\n      ansible_password: '{PASSWORD}'\n"
        )
    };
    let inventory = format!(
        "all:\n  hosts:\n    win-tls:\n{}    win-sealed:\n{}",
        host(tls.port, "https"),
        host(sealed.port, "http")
    );
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n\
        \x20   - name: several commands on the one shell\n      raw: echo item {{ item }}\n      loop: [1, 2, 3]\n\
        \x20   - name: capture output\n      raw: echo hello-{{ inventory_hostname }}\n      register: out\n\
        \x20   - assert:\n        that: \"('hello-' ~ inventory_hostname) in out.stdout\"\n";
    let ran = Test::new()
        .write("hosts.yml", &inventory)
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.yml", "--winrm-ca-file"])
        .args([tls.ca_file().display().to_string()])
        .run();
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
    }
    assert_eq!(sealed.stat("plaintext_requests").await, 0);
}
