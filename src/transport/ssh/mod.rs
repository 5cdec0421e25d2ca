//! The SSH transport (russh): one authenticated connection per host for the whole run,
//! reached directly or through a chain of jump hosts, with commands run through a persistent
//! remote shell (one round trip each) or exec channels, and files moved over SFTP.
//!
//! # Layout
//! - `config`: the subset of `~/.ssh/config` kinit honours (Host aliases, ProxyJump, ...).
//! - `known_hosts`: host key checking (`strict | accept-new | off`).
//! - `auth`: key files, ssh-agent and password authentication.
//! - `session`: TCP connect with timeout/retries, the russh handler, jump chains.
//! - `stream`: the write-coalescing adapter for tunnelled connections.
//! - `exec`: one command on a fresh exec channel.
//! - `shell`: the persistent remote `/bin/sh` that runs framed commands.
//! - `sftp`: streamed, checksum-verified uploads and downloads.
//! - `upload_temp`: upload temp file names, and which leftovers of cut uploads are stale.
//! - `forward`: a remote Unix socket (libvirt's) reachable through a local one.

mod auth;
mod client;
pub mod config;
mod exec;
mod forward;
pub mod known_hosts;
mod session;
mod sftp;
mod shell;
mod stream;
mod upload_temp;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::{ExecOutput, ExecRequest, FileOwner, HostTarget, Source, TransportError};
use session::Connected;

/// sshd's default `MaxSessions` is 10; staying below it leaves room for a user's own session.
pub const MAX_CHANNELS_PER_HOST: usize = 8;

/// How often a running operation checks that its connection still stands.
const LOST_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// How long closing a connection may take.
const CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Persistent shells kept per host. Commands beyond this many in parallel use exec channels.
const MAX_SHELLS_PER_HOST: usize = 2;

pub struct SshConnection {
    name: String,
    /// What this connection was opened to (for tools that make their own SSH connection
    /// to the same host, such as `synchronize`'s rsync).
    target: Box<HostTarget>,
    conn: Arc<Connected>,
    /// Bounds the session channels (exec, shell, SFTP) on this connection; forwarded
    /// sockets have their own bound (see `forward`).
    channels: Arc<Semaphore>,
    // Boxed: both are large, and `Connection` holds this inline.
    shells: Option<Box<shell::ShellPool>>,
    sftp: Box<sftp::SftpCell>,
    /// Remote sockets forwarded so far, by the candidate paths asked for.
    forwards: tokio::sync::Mutex<HashMap<String, forward::SocketForward>>,
}

impl SshConnection {
    /// Connect (through `target.jump` or the config's ProxyJump when set), check the host
    /// key and authenticate; retried per `connect_attempts` for network failures only.
    pub async fn connect(target: &HostTarget) -> Result<Self, TransportError> {
        let conn = Arc::new(session::connect(target).await?);
        let channels = Arc::new(Semaphore::new(MAX_CHANNELS_PER_HOST));
        let shells = target
            .persistent_shell
            .then(|| Box::new(shell::ShellPool::new(MAX_SHELLS_PER_HOST)));
        Ok(Self {
            name: target.name.clone(),
            target: Box::new(target.clone()),
            conn,
            channels,
            shells,
            sftp: Box::default(),
            forwards: tokio::sync::Mutex::default(),
        })
    }

    /// The target this connection was opened to.
    pub fn target(&self) -> &HostTarget {
        &self.target
    }

    /// Run one command. Through the persistent shell when one is free, else on a new exec
    /// channel; both give the same `ExecOutput`.
    pub async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        self.unless_lost("a command", async {
            if let Some(pool) = &self.shells
                && let Some(out) = pool
                    .try_exec(&self.name, &self.conn, &self.channels, req)
                    .await
            {
                return out;
            }
            exec::run(&self.name, &self.conn, &self.channels, req).await
        })
        .await
    }

    /// Run one command on a new exec channel, never the persistent shell (for measurements
    /// and for callers that need a fresh process environment).
    pub async fn exec_channel(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        self.unless_lost(
            "a command",
            exec::run(&self.name, &self.conn, &self.channels, req),
        )
        .await
    }

    pub async fn put(
        &self,
        src: &Source,
        dest: &str,
        mode: Option<u32>,
    ) -> Result<(), TransportError> {
        self.unless_lost("an upload", sftp::put(self, src, dest, mode, false))
            .await
            .map(drop)
    }

    /// `put`, reading who owns `dest` in the upload's finishing command.
    pub async fn put_owned(
        &self,
        src: &Source,
        dest: &str,
        mode: Option<u32>,
    ) -> Result<Option<FileOwner>, TransportError> {
        self.unless_lost("an upload", sftp::put(self, src, dest, mode, true))
            .await
    }

    pub async fn get(&self, src: &str, dest: &Path) -> Result<(), TransportError> {
        self.unless_lost("a download", sftp::get(self, src, dest))
            .await
    }

    /// A local Unix socket leading to the first of `candidates` (socket paths on the host)
    /// that accepts a connection; opened on first use and kept while the connection is.
    /// Once the connection is lost its forwards are dropped (their local sockets go away)
    /// and this is a connection error.
    pub async fn forward_socket(&self, candidates: &[&str]) -> Result<PathBuf, TransportError> {
        let mut forwards = self.forwards.lock().await;
        if self.conn.handle.is_closed() {
            forwards.clear();
            return Err(TransportError::Io {
                host: self.name.clone(),
                what: "forwarding a socket (the connection was lost)".into(),
                source: std::io::Error::from(std::io::ErrorKind::ConnectionAborted),
            });
        }
        let key = candidates.join("\n");
        if let Some(f) = forwards.get(&key) {
            return Ok(f.local());
        }
        let f = self
            .unless_lost(
                "forwarding a socket",
                forward::open(&self.name, &self.conn, candidates),
            )
            .await?;
        let local = f.local();
        forwards.insert(key, f);
        Ok(local)
    }

    /// `op`, unless the connection ends first (the server or the network went away): then
    /// a connection error, also where a reply `op` waits for can never come (a channel
    /// opened while the session was dying).
    async fn unless_lost<T>(
        &self,
        what: &str,
        op: impl std::future::Future<Output = Result<T, TransportError>>,
    ) -> Result<T, TransportError> {
        let lost = async {
            while !self.conn.handle.is_closed() {
                tokio::time::sleep(LOST_POLL).await;
            }
        };
        tokio::select! {
            r = op => r,
            _ = lost => Err(TransportError::Io {
                host: self.name.clone(),
                what: format!("{what} (the connection was lost)"),
                source: std::io::Error::from(std::io::ErrorKind::ConnectionAborted),
            }),
        }
    }

    /// Close the shells and the SFTP session, then disconnect every hop. Bounded: a
    /// connection whose server vanished gets no goodbye.
    pub async fn close(self) {
        let close = async {
            if let Some(pool) = &self.shells {
                pool.close().await;
            }
            self.sftp.close().await;
            self.forwards.lock().await.clear();
            self.conn.disconnect().await;
        };
        let _ = tokio::time::timeout(CLOSE_LIMIT, close).await;
    }
}
