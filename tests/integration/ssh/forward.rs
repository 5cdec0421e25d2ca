//! A Unix socket of the host reached through the connection's forward (how the `virt_*`
//! modules reach a remote libvirt): the first candidate path that exists is used, every
//! local connection becomes its own channel, and a host with none of the sockets is a clear
//! error. The far end is a real Unix socket server on the sshd host, answering per
//! connection, so the bytes really crossed sshd. Forwarded channels leave every command
//! slot free, and a libvirt connection through the forward of an SSH connection that was
//! re-opened is dropped, letting the old SSH connection end.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use kinit::provider::Hypervisor;
use kinit::transport::ssh::SshConnection;
use kinit::transport::{ExecRequest, TransportError};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::fixtures::sshd::SshLab;

/// A server on `path` that answers each line with `<n> <line>`, `n` counting connections.
fn serve(path: &Path) -> tokio::task::JoinHandle<()> {
    let listener = UnixListener::bind(path).unwrap();
    // sshd's session runs as the lab user, not root.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((stream, _)) = listener.accept().await {
            n += 1;
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let _ = w.write_all(format!("{n} {line}\n").as_bytes()).await;
                }
            });
        }
    })
}

async fn ask(local: &Path, line: &str) -> String {
    let mut s = UnixStream::connect(local).await.unwrap();
    s.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).await.unwrap();
    answer.trim_end().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_socket_reached_through_the_connection() {
    let lab = SshLab::new(1);
    let dir = lab.dir().join("sockets");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let present = dir.join("daemon-sock");
    let server = serve(&present);
    let missing = dir.join("absent-sock");
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();

    let candidates = [missing.to_str().unwrap(), present.to_str().unwrap()];
    let local = c.forward_socket(&candidates).await.unwrap();
    assert_ne!(local, present, "a local socket of its own");
    let mode = std::fs::metadata(local.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "only this user may use the forward");
    // Each local connection is a connection of its own at the far end (the probe that
    // picked the path was the first).
    assert_eq!(ask(&local, "hello").await, "2 hello");
    assert_eq!(ask(&local, "again").await, "3 again");
    // Asked again, the same forward.
    assert_eq!(c.forward_socket(&candidates).await.unwrap(), local);
    // sshd (LogLevel VERBOSE) logs the candidate it could not connect to.
    let log = lab.hosts[0].log();
    assert!(
        log.contains(&format!("connect to {} port -2 failed", missing.display())),
        "sshd was not asked for the missing socket first:\n{log}"
    );

    let err = c
        .forward_socket(&[missing.to_str().unwrap()])
        .await
        .expect_err("no socket there");
    assert!(matches!(err, TransportError::Protocol { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("no socket accepted a connection") && msg.contains("absent-sock"),
        "{msg}"
    );

    c.close().await;
    assert!(
        !local.exists(),
        "closing the connection removes the local socket"
    );
    server.abort();
}

/// Regression: each forwarded connection (libvirt's, open for the whole run) took one of the
/// host's 8 command slots, so a hypervisor ran one command fewer at a time. sshd's
/// MaxSessions (10 here, its default) counts sessions, not forwarded channels: 3 held
/// forwarded connections plus 8 commands at once (11 channels) all run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_connections_leave_every_command_slot_free() {
    let lab = SshLab::new(1);
    let dir = lab.dir().join("sockets");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.join("daemon-sock");
    let server = serve(&path);
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();
    let local = c.forward_socket(&[path.to_str().unwrap()]).await.unwrap();

    let mut held = Vec::new();
    for i in 0..3 {
        let s = UnixStream::connect(&local).await.unwrap();
        let mut s = BufReader::new(s);
        s.get_mut()
            .write_all(format!("hold{i}\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        s.read_line(&mut answer).await.unwrap();
        assert!(answer.ends_with(&format!(" hold{i}\n")), "{answer:?}");
        held.push(s);
    }
    // Eight commands that each wait until all eight have started: with one slot fewer the
    // running ones would wait for the eighth until they give up (exit 9 after 30 s).
    let meet = lab.dir().join("rendezvous");
    std::fs::create_dir(&meet).unwrap();
    std::fs::set_permissions(&meet, std::fs::Permissions::from_mode(0o777)).unwrap();
    let runs: Vec<_> = (0..8)
        .map(|i| {
            let script = format!(
                "d={}; touch $d/{i}; n=0; while [ $(ls $d | wc -l) -lt 8 ]; do \
                 n=$((n+1)); [ $n -lt 300 ] || exit 9; sleep 0.1; done",
                meet.display()
            );
            let c = &c;
            async move { c.exec_channel(&ExecRequest::new(script)).await }
        })
        .collect();
    for (i, out) in futures_util::future::join_all(runs)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(
            out.unwrap().rc,
            0,
            "command {i} never saw all eight running"
        );
    }
    for (i, s) in held.iter_mut().enumerate() {
        s.get_mut().write_all(b"still\n").await.unwrap();
        let mut answer = String::new();
        s.read_line(&mut answer).await.unwrap();
        assert!(
            answer.ends_with(" still\n"),
            "held connection {i}: {answer:?}"
        );
    }
    c.close().await;
    server.abort();
}

/// Established TCP connections from this machine to `address`:`port`.
fn established_to(address: &str, port: u16) -> usize {
    let dst = format!("{address}:{port}");
    let out = std::process::Command::new("ss")
        .args(["-Htn", "state", "established", "dst", &dst])
        .output()
        .expect("run ss");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

async fn hostname(socket: &Path) -> String {
    let uri = format!("qemu+unix:///system?socket={}", socket.display());
    let h = Hypervisor::open(&uri).await.unwrap();
    h.call("get hostname".into(), |c| c.hostname())
        .await
        .unwrap()
}

/// Regression: libvirt connections were cached for the whole run, so one made through the
/// forward of an SSH connection that the run then re-opened kept its forwarded channel, and
/// with it the old SSH connection, open to the end. Opening libvirt through the new
/// connection's forward drops the old libvirt connection and the old SSH connection ends.
/// Needs a libvirtd on this machine's `/run/libvirt/libvirt-sock` (ci/test.sh starts one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libvirt_connection_of_a_reopened_ssh_connection_is_dropped() {
    const LIBVIRT: &str = "/run/libvirt/libvirt-sock";
    if std::os::unix::net::UnixStream::connect(LIBVIRT).is_err() {
        crate::support::cannot_run(format!("no libvirtd listens on {LIBVIRT}"));
        return;
    }
    let lab = SshLab::new(1);
    let (address, port) = (lab.hosts[0].address.clone(), lab.hosts[0].port);
    // libvirtd lets root in without asking polkit (which needs a system bus).
    let mut target = lab.target(0);
    target.user = Some("root".into());
    let first = SshConnection::connect(&target).await.unwrap();
    let old = first.forward_socket(&[LIBVIRT]).await.unwrap();
    let name = hostname(&old).await;
    assert!(!name.is_empty());
    assert_eq!(established_to(&address, port), 1);
    // The run forgets a host's connection without closing it when it re-opens one.
    drop(first);
    let second = SshConnection::connect(&target).await.unwrap();
    let new = second.forward_socket(&[LIBVIRT]).await.unwrap();
    assert_ne!(new, old);
    assert_eq!(hostname(&new).await, name);
    let deadline = Instant::now() + Duration::from_secs(10);
    while established_to(&address, port) > 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        established_to(&address, port),
        1,
        "the dropped connection's libvirt connection kept it open"
    );
    second.close().await;
}
