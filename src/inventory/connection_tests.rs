//! Unit tests for `connection`: connection variables to targets, defaults and errors.

use super::*;
use serde_json::json;

fn resolve(vars: Value) -> Result<ResolvedHost, InventoryError> {
    let Value::Object(map) = vars else { panic!() };
    resolve_target("h1", &map, &ConnectionDefaults::default())
}

#[test]
fn ssh_variables_and_jump_hosts() {
    let r = resolve(json!({
        "ansible_host": "10.0.0.5", "ansible_port": "2222", "ansible_user": "core",
        "ansible_ssh_pass": "pw", "ansible_ssh_private_key_file": "/k/id",
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o ProxyJump=admin@hv1:2200,hv2",
        "ansible_ssh_extra_args": "-o ProxyCommand=\"ssh -W %h:%p -p 2022 -i /k/j root@bastion\"",
        "kinit_jump_host": "me@last",
        "ansible_become": "yes", "ansible_become_user": "postgres",
    }))
    .unwrap();
    let t = &r.target;
    assert_eq!(t.connection, ConnectionKind::Ssh);
    assert_eq!((t.address.as_str(), t.port), ("10.0.0.5", Some(2222)));
    assert_eq!(t.user.as_deref(), Some("core"));
    assert_eq!(t.password.as_ref().unwrap().expose(), "pw");
    assert_eq!(t.private_key_files, [PathBuf::from("/k/id")]);
    let hops: Vec<(String, u16, Option<String>)> = t
        .jump
        .iter()
        .map(|j| (j.address.clone(), j.port, j.user.clone()))
        .collect();
    assert_eq!(
        hops,
        [
            ("hv1".into(), 2200, Some("admin".into())),
            ("hv2".into(), 22, None),
            ("bastion".into(), 2022, Some("root".into())),
            ("last".into(), 22, Some("me".into())),
        ]
    );
    assert_eq!(t.jump[2].private_key_file, Some(PathBuf::from("/k/j")));
    assert_eq!(r.become_.enabled, Some(true));
    assert_eq!(r.become_.user.as_deref(), Some("postgres"));
}

#[test]
fn winrm_variables() {
    let r = resolve(json!({
        "ansible_connection": "winrm", "ansible_port": 5985,
        "ansible_winrm_transport": "basic", "ansible_winrm_server_cert_validation": "ignore",
        "ansible_winrm_operation_timeout_sec": 40, "ansible_winrm_path": "/custom",
        "ansible_winrm_ca_trust_path": "/ca.pem",
        "kinit_winrm_allow_basic_over_http": true,
        "ansible_winrm_reconnection_retries": "6", "ansible_winrm_reconnection_backoff": 1.5,
    }))
    .unwrap();
    let w = &r.target.winrm;
    assert_eq!(w.http_retries, 6);
    assert_eq!(w.retry_backoff, Duration::from_millis(1500));
    assert!(w.allow_basic_over_http);
    assert_eq!(r.target.connection, ConnectionKind::WinRm);
    assert_eq!(w.scheme, WinRmScheme::Http);
    assert_eq!(w.auth, WinRmAuth::Basic);
    assert!(!w.cert_validation);
    assert_eq!(w.operation_timeout, Duration::from_secs(40));
    assert_eq!(w.path, "/custom");
    assert_eq!(w.ca_file, Some(PathBuf::from("/ca.pem")));
    let https = resolve(json!({"ansible_connection": "winrm"})).unwrap();
    assert_eq!(https.target.winrm.scheme, WinRmScheme::Https);
    assert_eq!(https.target.winrm.http_retries, 2);
    assert_eq!(https.target.winrm.retry_backoff, Duration::from_millis(200));
    assert!(https.target.winrm.cert_validation);
    assert!(!https.target.winrm.allow_basic_over_http);
    let local = resolve(json!({"ansible_connection": "local"})).unwrap();
    assert_eq!(local.target.connection, ConnectionKind::Local);
    let smart = resolve(json!({"ansible_connection": "paramiko"})).unwrap();
    assert_eq!(smart.target.connection, ConnectionKind::Ssh);
}

#[test]
fn bad_values_are_named_and_passwords_hidden() {
    let cases = [
        (json!({"ansible_connection": "telnet"}), "`telnet`"),
        (json!({"ansible_port": "ssh"}), "ansible_port"),
        (json!({"ansible_port": 70000}), "70000"),
        (json!({"ansible_winrm_transport": "kerberos"}), "kerberos"),
        (json!({"ansible_winrm_scheme": "ftp"}), "ftp"),
        (
            json!({"ansible_connection": "winrm", "ansible_winrm_reconnection_retries": "many"}),
            "ansible_winrm_reconnection_retries",
        ),
        (
            json!({"ansible_ssh_common_args": "-o ProxyCommand='nc %h %p'"}),
            "ProxyCommand",
        ),
    ];
    for (vars, needle) in cases {
        let err = resolve(vars.clone()).unwrap_err().to_string();
        assert!(err.contains(needle) && err.contains("h1"), "{vars}: {err}");
    }
    let err = resolve(json!({"ansible_password": ["s3cret"]}))
        .unwrap_err()
        .to_string();
    assert!(
        !err.contains("s3cret") && err.contains("ansible_password"),
        "{err}"
    );
}
