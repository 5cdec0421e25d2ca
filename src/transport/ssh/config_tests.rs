//! Unit tests for `config`: host blocks, ProxyJump chains and errors.

use super::*;

const CONF: &str = "\
IdentityFile /keys/global
Host hv-* !hv-skip
  User admin
  Port 2222
  IdentityFile /keys/hv
Host guest?
  HostName 10.0.0.%h
  ProxyJump admin@hv-1:2200,root@[fe80::1]:22
Host *
  User fallback
  Port 22
";

#[test]
fn wildcard_blocks_apply_first_value_wins() {
    let c = SshConfig::parse(CONF, "cfg").unwrap();
    let hv = c.host("hv-1");
    assert_eq!(hv.user.as_deref(), Some("admin"));
    assert_eq!(hv.port, Some(2222));
    assert_eq!(
        hv.identity_files,
        vec![PathBuf::from("/keys/global"), PathBuf::from("/keys/hv")]
    );
    let skipped = c.host("hv-skip");
    assert_eq!(skipped.user.as_deref(), Some("fallback"));
    assert_eq!(skipped.port, Some(22));
}

#[test]
fn proxy_jump_chain_and_hostname_token() {
    let c = SshConfig::parse(CONF, "cfg").unwrap();
    let g = c.host("guest1");
    assert_eq!(g.hostname.as_deref(), Some("10.0.0.guest1"));
    let jumps = g.proxy_jump.unwrap();
    assert_eq!(jumps.len(), 2);
    assert_eq!(jumps[0].address, "hv-1");
    assert_eq!(jumps[0].port, 2200);
    assert_eq!(jumps[0].user.as_deref(), Some("admin"));
    assert_eq!(jumps[1].address, "fe80::1");
    assert_eq!(jumps[1].user.as_deref(), Some("root"));
    assert!(c.host("guest12").proxy_jump.is_none());
    assert_eq!(
        parse_jumps("ok, root@hv:port"),
        Err(BadJump {
            hop: "root@hv:port".into()
        })
    );
}

#[test]
fn bad_port_names_file_line_and_value() {
    let err = SshConfig::parse("Host a\n  Port=http\n", "my.cfg").unwrap_err();
    assert_eq!(
        err.to_string(),
        "my.cfg:2: `Port` has an invalid value `http`: expected a port number 1-65535"
    );
}

#[test]
fn glob_matches_like_openssh() {
    assert!(glob("*.example.com", "a.Example.com"));
    assert!(glob("h?st", "host"));
    assert!(!glob("h?st", "hoost"));
    assert!(glob("*", ""));
}
