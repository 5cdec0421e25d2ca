//! Connections to managed hosts: local processes, SSH (russh) and WinRM, behind one enum.
//!
//! The executor holds one `Connection` per host for the whole run. Modules build command text
//! with `quote` (the one place that knows POSIX sh and PowerShell quoting), run it with
//! `exec`, and move files with `put`/`get`. A non-zero exit status is data in `ExecOutput`,
//! never a `TransportError`: transport errors are connect/auth/IO/timeout only and make a host
//! unreachable rather than failed.

pub mod local;
pub mod quote;
pub mod ssh;
pub mod target;
pub mod winrm;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use target::{
    BecomeMethod, BecomeOptions, ConnectionKind, HostKeyChecking, HostTarget, JumpHost,
    WinRmOptions,
};

/// The language a host's commands are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellKind {
    /// POSIX `sh` (Linux, BSD, macOS).
    Posix,
    /// Windows PowerShell (WinRM, or SSH to Windows).
    PowerShell,
}

/// One command to run on a host.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    /// Script text in the host's shell language (`ShellKind`).
    pub script: String,
    /// Bytes written to the command's stdin, then stdin is closed.
    pub stdin: Option<Vec<u8>>,
    /// Environment variables set for this command only.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Run as another user (sudo on POSIX hosts).
    pub become_: Option<BecomeOptions>,
    /// Give up (and kill the command) after this long.
    pub timeout: Option<Duration>,
}

impl ExecRequest {
    pub fn new(script: impl Into<String>) -> Self {
        Self {
            script: script.into(),
            ..Self::default()
        }
    }
}

/// What a command did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    pub rc: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl ExecOutput {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
    pub fn success(&self) -> bool {
        self.rc == 0
    }
}

/// Where the bytes of an upload come from.
#[derive(Debug, Clone)]
pub enum Source {
    Bytes(Vec<u8>),
    /// A local file, streamed (never read whole into memory).
    File(PathBuf),
}

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("cannot connect to `{host}` ({address}) after {attempts} attempt(s)")]
    Connect {
        host: String,
        address: String,
        attempts: u32,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("authentication to `{host}` as `{user}` failed: {reason}")]
    Auth {
        host: String,
        user: String,
        reason: String,
    },
    #[error("host key of `{host}` rejected: {reason}")]
    HostKey { host: String, reason: String },
    #[error("`{host}`: {what} timed out after {after:?}")]
    Timeout {
        host: String,
        what: String,
        after: Duration,
    },
    #[error("`{host}`: connection lost during {what}")]
    Io {
        host: String,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{host}`: {what}: {detail}")]
    Protocol {
        host: String,
        what: String,
        detail: String,
    },
    #[error("`{host}`: checksum mismatch after transfer of `{path}`")]
    Checksum { host: String, path: String },
    #[error("`{host}`: invalid {kind} settings: {detail}")]
    Config {
        host: String,
        kind: &'static str,
        detail: String,
    },
    #[error("`{host}`: cancelled")]
    Cancelled { host: String },
    #[error("`{host}`: the {kind} transport is not available in this build: {reason}")]
    Unsupported {
        host: String,
        kind: &'static str,
        reason: String,
    },
}

/// Who owns a file on a POSIX host: numbers and names, as `stat -c '%u %g %U %G'` prints
/// them (a name the host does not know is `UNKNOWN`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOwner {
    pub uid: u64,
    pub gid: u64,
    pub user: String,
    pub group: String,
}

impl FileOwner {
    /// The owner from one line of `stat -c '%u %g %U %G'`; `None` for anything else.
    pub fn parse(line: &str) -> Option<Self> {
        let mut f = line.split_whitespace();
        let (uid, gid, user, group) = (f.next()?, f.next()?, f.next()?, f.next()?);
        if f.next().is_some() {
            return None;
        }
        Some(Self {
            uid: uid.parse().ok()?,
            gid: gid.parse().ok()?,
            user: user.to_string(),
            group: group.to_string(),
        })
    }
}

/// An open connection to one host. One dispatch point: every operation matches here once.
pub enum Connection {
    Local(local::LocalConnection),
    Ssh(ssh::SshConnection),
    WinRm(winrm::WinRmConnection),
}

impl Connection {
    /// Open the connection `target` describes (with its retries and timeouts).
    pub async fn open(target: &HostTarget) -> Result<Self, TransportError> {
        Ok(match target.connection {
            ConnectionKind::Local => Connection::Local(local::LocalConnection::new(target)),
            ConnectionKind::Ssh => Connection::Ssh(ssh::SshConnection::connect(target).await?),
            ConnectionKind::WinRm => {
                Connection::WinRm(winrm::WinRmConnection::connect(target).await?)
            }
        })
    }

    /// The SSH target of an SSH connection (`None` for the others).
    pub fn ssh_target(&self) -> Option<&HostTarget> {
        match self {
            Connection::Ssh(c) => Some(c.target()),
            Connection::Local(_) | Connection::WinRm(_) => None,
        }
    }

    pub fn shell(&self) -> ShellKind {
        match self {
            Connection::Local(_) | Connection::Ssh(_) => ShellKind::Posix,
            Connection::WinRm(_) => ShellKind::PowerShell,
        }
    }

    pub async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        match self {
            Connection::Local(c) => c.exec(req).await,
            Connection::Ssh(c) => c.exec(req).await,
            Connection::WinRm(c) => c.exec(req).await,
        }
    }

    /// Write `src` to `dest` on the host (atomically: temp file then rename), verifying a
    /// SHA-256 of what arrived; `mode` applies on POSIX hosts.
    pub async fn put(
        &self,
        src: &Source,
        dest: &str,
        mode: Option<u32>,
    ) -> Result<(), TransportError> {
        match self {
            Connection::Local(c) => c.put(src, dest, mode).await,
            Connection::Ssh(c) => c.put(src, dest, mode).await,
            Connection::WinRm(c) => c.put(src, dest, mode).await,
        }
    }

    /// [`put`](Self::put), and who owns `dest` once it is in place. Over SSH the upload's own
    /// finishing command reads it (no round trip of its own, which a file module writing one
    /// file per task would otherwise pay on every write); `None` from the other transports,
    /// or when the host could not say: the caller asks the host itself then.
    pub async fn put_owned(
        &self,
        src: &Source,
        dest: &str,
        mode: Option<u32>,
    ) -> Result<Option<FileOwner>, TransportError> {
        match self {
            Connection::Ssh(c) => c.put_owned(src, dest, mode).await,
            Connection::Local(_) | Connection::WinRm(_) => {
                self.put(src, dest, mode).await.map(|()| None)
            }
        }
    }

    /// Copy `src` on the host to the local file `dest`, verifying a SHA-256.
    pub async fn get(&self, src: &str, dest: &Path) -> Result<(), TransportError> {
        match self {
            Connection::Local(c) => c.get(src, dest).await,
            Connection::Ssh(c) => c.get(src, dest).await,
            Connection::WinRm(c) => c.get(src, dest).await,
        }
    }

    /// Release the connection (SSH disconnect, WinRM shells deleted).
    /// Close the connection; a warning for the user when something of it stays behind (a
    /// WinRM shell the host would not delete).
    pub async fn close(self) -> Option<String> {
        match self {
            Connection::Local(_) => None,
            Connection::Ssh(c) => {
                c.close().await;
                None
            }
            Connection::WinRm(c) => c.close().await,
        }
    }
}
