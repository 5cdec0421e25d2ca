//! Guests reached only through a hypervisor jump host (direct-tcpip), as kinit reaches
//! libvirt guests.

use std::time::Duration;

use kinit::transport::ssh::SshConnection;
use kinit::transport::{ExecRequest, Source, TransportError};

use crate::fixtures::netns::is_root;
use crate::fixtures::sshd::SshLab;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_through_the_hypervisor_one_connection_each() {
    let lab = SshLab::jump_topology(2);
    if is_root() {
        // The namespaces make the guests unreachable from the controller.
        let mut direct = lab.target_for(&lab.guests[0]);
        direct.connect_timeout = Duration::from_millis(500);
        direct.connect_attempts = 1;
        let err = SshConnection::connect(&direct)
            .await
            .err()
            .expect("guest must be unreachable");
        assert!(matches!(err, TransportError::Connect { .. }), "{err}");
    }
    let mut conns = Vec::new();
    for i in 0..2 {
        conns.push(SshConnection::connect(&lab.guest_target(i)).await.unwrap());
    }
    for (i, c) in conns.iter().enumerate() {
        for _ in 0..10 {
            let out = c
                .exec(&ExecRequest::new("hostname -I 2>/dev/null || echo lo"))
                .await
                .unwrap();
            assert_eq!(out.rc, 0);
            if is_root() {
                assert_eq!(out.stdout_str().trim(), lab.guests[i].address);
            }
        }
        let home = c
            .exec(&ExecRequest::new("printf %s \"$HOME\""))
            .await
            .unwrap()
            .stdout_str();
        c.put(
            &Source::Bytes(vec![b'x'; 200_000]),
            &format!("{home}/via-jump"),
            Some(0o600),
        )
        .await
        .unwrap();
        let back = lab.dir().join(format!("via-jump-{i}"));
        c.get(&format!("{home}/via-jump"), &back).await.unwrap();
        assert_eq!(std::fs::read(&back).unwrap(), vec![b'x'; 200_000]);
    }
    for c in conns {
        c.close().await;
    }
    // One login per guest, and one hypervisor login per guest connection.
    assert_eq!(lab.guests[0].accepted_logins(), 1);
    assert_eq!(lab.guests[1].accepted_logins(), 1);
    assert_eq!(lab.hosts[0].accepted_logins(), 2);
}

/// The module suite through the hypervisor jump host, as modules reach libvirt guests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_suite_through_a_jump_host() {
    let lab = SshLab::jump_topology(1);
    let conn = kinit::transport::Connection::open(&lab.guest_target(0))
        .await
        .expect("ssh connect through the jump host");
    let own = crate::modules::suite(&conn).await;
    conn.close().await;
    // kinit's one connection, and the logins of rsync's own ssh (`synchronize`).
    assert_eq!(lab.guests[0].accepted_logins(), 1 + own);
}

/// A chain of two jump hops (the hypervisor twice, reaching itself the second time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hop_jump_chain() {
    let lab = SshLab::jump_topology(1);
    let mut t = lab.guest_target(0);
    let hop = t.jump[0].clone();
    t.jump.push(hop);
    let c = SshConnection::connect(&t).await.unwrap();
    let out = c.exec(&ExecRequest::new("echo through")).await.unwrap();
    assert_eq!(out.stdout_str(), "through\n");
    c.close().await;
    assert_eq!(lab.hosts[0].accepted_logins(), 2);
    assert_eq!(lab.guests[0].accepted_logins(), 1);
}
