//! A Unix socket of the host reached through the connection's forward (how the `virt_*`
//! modules reach a remote libvirt): the first candidate path that exists is used, every
//! local connection becomes its own channel, and a host with none of the sockets is a clear
//! error. The far end is a real Unix socket server on the sshd host, answering per
//! connection, so the bytes really crossed sshd.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use kinit::transport::TransportError;
use kinit::transport::ssh::SshConnection;
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
