//! Host key checking, authentication methods and `~/.ssh/config` against real sshd.

use std::process::Command;

use kinit::secret::Secret;
use kinit::transport::HostKeyChecking;
use kinit::transport::ssh::SshConnection;
use kinit::transport::{ExecRequest, TransportError};

use crate::fixtures::sshd::{SshLab, keygen};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_host_key_is_refused_under_strict_and_unknown_is_learned_under_accept_new() {
    let lab = SshLab::new(1);
    let h = &lab.hosts[0];
    // A known_hosts that records some other key for this host.
    let other = lab.dir().join("other_key");
    keygen(&other, "ed25519");
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let wrong = lab.dir().join("wrong_known_hosts");
    std::fs::write(&wrong, format!("{} {}", h.known_hosts_name(), other_pub)).unwrap();
    let mut t = lab.target(0);
    t.known_hosts_file = Some(wrong.clone());
    for policy in [HostKeyChecking::Strict, HostKeyChecking::AcceptNew] {
        t.host_key_checking = policy;
        let err = SshConnection::connect(&t)
            .await
            .err()
            .expect("changed key accepted");
        let TransportError::HostKey { ref reason, .. } = err else {
            panic!("{err:?}")
        };
        assert!(reason.contains("REMOTE HOST KEY CHANGED"), "{reason}");
        assert!(
            reason.contains("line 1") && reason.contains("SHA256:"),
            "{reason}"
        );
    }
    assert_eq!(
        h.accepted_logins(),
        0,
        "no login may happen after a refused key"
    );
    t.host_key_checking = HostKeyChecking::Off;
    SshConnection::connect(&t).await.unwrap().close().await;

    // Unknown host: strict refuses and names the way out; accept-new records the key.
    let fresh = lab.dir().join("fresh_known_hosts");
    t.known_hosts_file = Some(fresh.clone());
    t.host_key_checking = HostKeyChecking::Strict;
    let err = SshConnection::connect(&t)
        .await
        .err()
        .expect("unknown key accepted");
    assert!(err.to_string().contains("not a known host"), "{err}");
    assert!(err.to_string().contains("accept-new"), "{err}");
    t.host_key_checking = HostKeyChecking::AcceptNew;
    SshConnection::connect(&t).await.unwrap().close().await;
    let recorded = std::fs::read_to_string(&fresh).unwrap();
    assert!(recorded.contains(&h.host_public_key), "{recorded}");
    t.host_key_checking = HostKeyChecking::Strict;
    SshConnection::connect(&t).await.unwrap().close().await;

    // Hashed entries (`ssh-keygen -H`) are matched too.
    let hashed = lab.dir().join("hashed_known_hosts");
    std::fs::copy(&lab.known_hosts, &hashed).unwrap();
    let out = Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&hashed)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = std::fs::read_to_string(&hashed).unwrap();
    assert!(
        text.starts_with("|1|") && !text.contains(&h.address),
        "{text}"
    );
    t.known_hosts_file = Some(hashed);
    SshConnection::connect(&t).await.unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_types_encrypted_keys_and_agent() {
    let lab = SshLab::new(1);
    let auth = lab.dir().join("authorized_keys");
    let mut keys = Vec::new();
    for kind in ["rsa", "ecdsa"] {
        let k = lab.dir().join(format!("id_{kind}"));
        keygen(&k, kind);
        keys.push(k);
    }
    let enc = lab.dir().join("id_encrypted");
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "pass phrase", "-f"])
        .arg(&enc)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut all = std::fs::read_to_string(&auth).unwrap();
    for k in keys.iter().chain([&enc]) {
        all.push_str(&std::fs::read_to_string(k.with_extension("pub")).unwrap());
    }
    std::fs::write(&auth, all).unwrap();

    for k in &keys {
        let mut t = lab.target(0);
        t.private_key_files = vec![k.clone()];
        let c = SshConnection::connect(&t)
            .await
            .unwrap_or_else(|e| panic!("{k:?}: {e}"));
        assert_eq!(
            c.exec(&ExecRequest::new("echo ok"))
                .await
                .unwrap()
                .stdout_str(),
            "ok\n"
        );
        c.close().await;
    }

    let mut t = lab.target(0);
    t.private_key_files = vec![enc.clone()];
    t.key_passphrase = None;
    let err = SshConnection::connect(&t)
        .await
        .err()
        .expect("encrypted key without passphrase");
    assert!(err.to_string().contains("is encrypted"), "{err}");
    t.key_passphrase = Some(Secret::new("wrong"));
    let err = SshConnection::connect(&t)
        .await
        .err()
        .expect("wrong passphrase");
    assert!(
        !err.to_string().contains("wrong"),
        "passphrase leaked: {err}"
    );
    t.key_passphrase = Some(Secret::new("pass phrase"));
    SshConnection::connect(&t).await.unwrap().close().await;

    // The same encrypted key held by a real ssh-agent: no passphrase needed.
    let sock = lab.dir().join("agent.sock");
    let mut agent = Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&sock)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let askpass = lab.dir().join("askpass.sh");
    std::fs::write(&askpass, "#!/bin/sh\necho 'pass phrase'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
    let added = Command::new("ssh-add")
        .arg(&enc)
        .env("SSH_AUTH_SOCK", &sock)
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    t.key_passphrase = None;
    t.ssh_agent_socket = Some(sock);
    let before = lab.hosts[0].accepted_logins();
    SshConnection::connect(&t).await.unwrap().close().await;
    assert_eq!(lab.hosts[0].accepted_logins(), before + 1);
    let _ = agent.kill();
    let _ = agent.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_config_alias_supplies_hostname_port_user_and_key() {
    let lab = SshLab::new(1);
    let h = &lab.hosts[0];
    let cfg = lab.dir().join("ssh_config");
    std::fs::write(
        &cfg,
        format!(
            "Host other\n  User nobody\nHost web-*\n  HostName {}\n  Port {}\n  User {}\n  \
             IdentityFile {}\nHost *\n  User wrong\n  Port 1\n",
            h.address,
            h.port,
            lab.user,
            lab.client_key.display()
        ),
    )
    .unwrap();
    let mut t = lab.target(0);
    t.address = "web-1".into();
    t.port = None;
    t.user = None;
    t.private_key_files.clear();
    t.ssh_config_file = Some(cfg);
    let c = SshConnection::connect(&t).await.unwrap();
    let out = c.exec(&ExecRequest::new("id -un")).await.unwrap();
    assert_eq!(out.stdout_str().trim(), lab.user);
    c.close().await;
}
