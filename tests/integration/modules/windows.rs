//! Windows modules. No Windows host and no PowerShell exist on the build machine, so the
//! generated PowerShell is checked by parsing it with tree-sitter-powershell (unit tests in
//! each `src/modules/win_*.rs`, with a mutation test in `pwsh.rs` showing the check catches a
//! single dropped delimiter). Here: the registry (short names and FQCNs), argument errors,
//! and POSIX modules refusing a PowerShell host, against the in-repo WinRM test server
//! (which runs what it receives with sh, so it cannot run the Windows modules themselves).

use kinit::modules;
use kinit::transport::Connection;
use serde_json::json;

use super::Fixture;
use crate::winrm_server::{Mode, WinRmServer};

const ALL: &[&str] = &[
    "command",
    "shell",
    "raw",
    "script",
    "copy",
    "template",
    "file",
    "lineinfile",
    "blockinfile",
    "stat",
    "slurp",
    "fetch",
    "get_url",
    "unarchive",
    "package",
    "apt",
    "dnf",
    "service",
    "systemd",
    "sysctl",
    "modprobe",
    "user",
    "wait_for",
    "uri",
    "ping",
    "setup",
    "win_shell",
    "win_command",
    "win_powershell",
    "win_copy",
    "win_file",
    "win_get_url",
    "win_service",
    "win_feature",
    "win_reboot",
    "win_ping",
    "win_stat",
];

#[test]
fn every_module_is_registered_by_short_name_and_fqcn() {
    for name in ALL {
        assert!(
            modules::lookup(name).is_some(),
            "`{name}` is not registered"
        );
        let fqcn = if name.starts_with("win_") {
            format!("ansible.windows.{name}")
        } else {
            format!("ansible.builtin.{name}")
        };
        assert!(modules::lookup(&fqcn).is_some(), "`{fqcn}` is not resolved");
    }
    assert!(modules::lookup("ansible.posix.sysctl").is_some());
    assert!(modules::lookup("community.general.modprobe").is_some());
    assert!(modules::lookup("nosuch").is_none());
}

#[test]
fn windows_arguments_are_checked_with_suggestions() {
    let m = modules::lookup("ansible.windows.win_copy").unwrap();
    let err = m
        .validate(&json!({"src": "a", "dets": "C:\\k"}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("module `win_copy`: unknown argument `dets`, did you mean `dest`?"),
        "{err}"
    );
    let err = modules::lookup("win_service")
        .unwrap()
        .validate(&json!({"name": "kubelet", "start_mode": "automatic"}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown value `automatic`, did you mean `auto`?"),
        "{err}"
    );
    // Templated values are only checked after rendering.
    assert!(
        modules::lookup("win_file")
            .unwrap()
            .validate(&json!({"path": "C:\\k", "state": "{{ wanted }}"}))
            .is_ok()
    );
}

#[tokio::test]
async fn posix_modules_refuse_a_powershell_host() {
    let srv = WinRmServer::for_mode(Mode::HttpsNtlm, &[]);
    let conn = Connection::open(&srv.target(Mode::HttpsNtlm))
        .await
        .unwrap();
    let fx = Fixture::new(&conn).await;
    let r = fx
        .run("copy", json!({"content": "x", "dest": "C:\\k\\x"}))
        .await;
    assert!(r.failed);
    let msg = r.msg.unwrap();
    assert!(
        msg.contains("module `copy` runs POSIX shell commands"),
        "{msg}"
    );
    assert!(msg.contains("use `win_copy`"), "{msg}");
    let r = fx.run("setup", json!({})).await;
    assert!(r.failed && !r.msg.unwrap().contains("use `"));
    fx.finish().await;
    conn.close().await;
}

/// `raw` works on Windows as in Ansible: the text goes to the shell as it is. The test server
/// runs the PowerShell text it receives with sh, so the text is valid in both.
#[tokio::test]
async fn raw_runs_its_text_on_a_powershell_host() {
    let srv = WinRmServer::for_mode(Mode::HttpNtlmSealed, &[]);
    let conn = Connection::open(&srv.target(Mode::HttpNtlmSealed))
        .await
        .unwrap();
    let fx = Fixture::new(&conn).await;
    let before = srv.stat("commands").await;
    let r = fx
        .run("raw", json!({"_raw_params": "echo raw-on-winrm; exit 3"}))
        .await;
    assert!(r.failed, "exit 3 must fail the task");
    assert_eq!(r.data["rc"], 3, "{r:?}");
    assert_eq!(
        r.data["stdout"].as_str().map(str::trim),
        Some("raw-on-winrm")
    );
    assert!(
        srv.stat("commands").await > before,
        "nothing ran on the host"
    );
    let r = fx
        .run(
            "raw",
            json!({"_raw_params": "echo x", "executable": "/bin/bash"}),
        )
        .await;
    assert!(r.failed);
    assert!(r.msg.unwrap().contains("not supported on the Windows"));
    fx.finish().await;
    conn.close().await;
}
