//! Many hosts at once, and faults: a host that dies mid-run, a port that refuses.

use std::time::{Duration, Instant};

use kinit::transport::ssh::SshConnection;
use kinit::transport::{ExecRequest, TransportError};

use crate::fixtures::sshd::SshLab;

/// 20 hosts × 50 commands: every host sees exactly one SSH connection and one login.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_hosts_fifty_commands_one_connection_each() {
    let lab = SshLab::new(20);
    let mut tasks = Vec::new();
    for i in 0..20 {
        let target = lab.target(i);
        tasks.push(tokio::spawn(async move {
            let c = SshConnection::connect(&target).await?;
            for n in 0..50 {
                let out = c.exec(&ExecRequest::new(format!("echo {n}"))).await?;
                assert_eq!(out.stdout_str(), format!("{n}\n"));
            }
            c.close().await;
            Ok::<_, TransportError>(())
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    for h in &lab.hosts {
        assert_eq!(h.connections(), 1, "{}: {}", h.name, h.log());
        assert_eq!(h.accepted_logins(), 1, "{}", h.name);
    }
}

/// sshd (and its sessions) killed in the middle of a run: that host's next command fails
/// with a connection error, the other hosts finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sshd_killed_mid_run_fails_only_that_host() {
    let mut lab = SshLab::new(3);
    let mut conns = Vec::new();
    for i in 0..3 {
        conns.push(SshConnection::connect(&lab.target(i)).await.unwrap());
    }
    for c in &conns {
        c.exec(&ExecRequest::new("true")).await.unwrap();
    }
    lab.hosts[1].kill();
    let mut results = Vec::new();
    for c in &conns {
        let mut r = Ok(());
        for _ in 0..5 {
            if let Err(e) = c.exec(&ExecRequest::new("true")).await {
                r = Err(e);
                break;
            }
        }
        results.push(r);
    }
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    let err = results[1].as_ref().unwrap_err();
    assert!(matches!(err, TransportError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("host1"), "{err}");
    // And a reconnect now finds nothing listening.
    let mut t = lab.target(1);
    t.connect_attempts = 1;
    let err = SshConnection::connect(&t).await.err().unwrap();
    assert!(
        matches!(err, TransportError::Connect { attempts: 1, .. }),
        "{err}"
    );
}

/// A port nobody listens on: every attempt is made, with backoff, then `Connect`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_port_retries_then_reports_attempts() {
    let lab = SshLab::new(1);
    let mut t = lab.target(0);
    t.address = "127.0.0.1".into();
    t.port = Some({
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    });
    t.connect_attempts = 3;
    let start = Instant::now();
    let err = SshConnection::connect(&t)
        .await
        .err()
        .expect("nothing listens there");
    let TransportError::Connect {
        attempts,
        ref source,
        ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!(attempts, 3);
    assert!(
        source.to_string().to_lowercase().contains("refused"),
        "{source}"
    );
    // Backoff of 250 ms then 500 ms between the three attempts.
    assert!(
        start.elapsed() >= Duration::from_millis(700),
        "{:?}",
        start.elapsed()
    );
    assert!(err.to_string().contains("after 3 attempt(s)"), "{err}");
}
