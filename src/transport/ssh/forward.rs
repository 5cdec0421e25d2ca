//! A Unix socket of the remote host (libvirt's) made reachable on the controller over the
//! host's SSH connection: kinit listens on a private local socket and carries each
//! connection made to it in a `direct-streamlocal@openssh.com` channel. The controller's
//! libvirt client thus talks to the hypervisor's daemon through the same authenticated
//! connection (and jump hosts) that every task on that host uses.
//!
//! These channels do not count against the connection's `MAX_CHANNELS_PER_HOST`: that bound
//! keeps kinit under sshd's `MaxSessions`, which counts shell, exec and subsystem sessions
//! only, not forwarded channels. A libvirt connection holds its channel for as long as it
//! is open (the whole run), and taking an exec slot for it left the hypervisor's tasks one
//! command short. Forwarded channels have their own bound, `MAX_FORWARDED`.

use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::UnixListener;
use tokio::sync::Semaphore;

use super::session::Connected;

/// Local connections carried at once by one forward (each is one channel); more wait.
const MAX_FORWARDED: usize = 8;
use crate::transport::TransportError;

/// A local socket leading to `remote` on the host. Dropping it stops accepting new
/// connections and removes the local socket's folder; connections already carried end
/// with the SSH connection.
pub(super) struct SocketForward {
    dir: PathBuf,
    accept: tokio::task::JoinHandle<()>,
}

impl SocketForward {
    pub fn local(&self) -> PathBuf {
        self.dir.join("sock")
    }
}

impl Drop for SocketForward {
    fn drop(&mut self) {
        self.accept.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Listen locally for the first of `candidates` (socket paths on the host) that accepts a
/// channel. Each candidate is tried once, so an absent daemon is reported here rather
/// than as the client's end-of-file later.
pub(super) async fn open(
    host: &str,
    conn: &Arc<Connected>,
    candidates: &[&str],
) -> Result<SocketForward, TransportError> {
    let mut refused = Vec::new();
    let mut remote = None;
    for path in candidates {
        match conn.handle.channel_open_direct_streamlocal(*path).await {
            Ok(ch) => {
                let _ = ch.close().await;
                remote = Some(path.to_string());
                break;
            }
            Err(e) => refused.push(format!("`{path}`: {e}")),
        }
    }
    let Some(remote) = remote else {
        return Err(TransportError::Protocol {
            host: host.to_string(),
            what: "forwarding a socket".into(),
            detail: format!("no socket accepted a connection ({})", refused.join("; ")),
        });
    };
    let dir = std::env::temp_dir().join(format!("kinit-forward-{}", uuid::Uuid::new_v4()));
    let io_error = |what: &str, source: std::io::Error| TransportError::Io {
        host: host.to_string(),
        what: format!("{what} for the forward of `{remote}`"),
        source,
    };
    // Only this user may connect: whoever reaches the socket acts as the SSH user.
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| io_error("creating a private folder", e))?;
    let listener = match UnixListener::bind(dir.join("sock")) {
        Ok(l) => l,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(io_error("listening on a local socket", e));
        }
    };
    let channels = Arc::new(Semaphore::new(MAX_FORWARDED));
    let accept = tokio::spawn(carry(listener, conn.clone(), channels, remote));
    Ok(SocketForward { dir, accept })
}

/// Accept local connections and carry each one to `remote` in its own channel.
async fn carry(
    listener: UnixListener,
    conn: Arc<Connected>,
    channels: Arc<Semaphore>,
    remote: String,
) {
    while let Ok((mut local, _)) = listener.accept().await {
        let (conn, channels, remote) = (conn.clone(), channels.clone(), remote.clone());
        tokio::spawn(async move {
            let Ok(_permit) = channels.acquire_owned().await else {
                return;
            };
            // A refused channel closes the local connection: the client sees end-of-file.
            let Ok(ch) = conn.handle.channel_open_direct_streamlocal(remote).await else {
                return;
            };
            let mut far = ch.into_stream();
            let _ = tokio::io::copy_bidirectional(&mut local, &mut far).await;
        });
    }
}
