//! The WinRM transport: PowerShell over a WinRS shell (WS-Management, MS-WSMV).
//!
//! # Why kinit has its own client
//! winrm-rs is pinned at `=1.1.2` (the last release that builds on rustc 1.95), but its
//! request path is wrong where kinit needs it most:
//! * NTLM message encryption over HTTP never works (bad multipart framing, the SOAP body sent
//!   in plaintext on the AUTHENTICATE leg, unsealed replays), so NTLM on 5985 fails against a
//!   stock Windows host (`AllowUnencrypted=false`) and silently sends plaintext elsewhere;
//! * HTTPS trusts only the webpki roots: no CA file, so a WinRM listener's internal CA cannot
//!   be verified without switching verification off entirely;
//! * its receive loop fails any command silent longer than `OperationTimeout`, and its
//!   shells leak on cancellation.
//!
//! Its HTTP layer is not pluggable, so its low-level shell API cannot be used without its
//! transport. kinit therefore speaks WS-Management itself over one owned hyper connection
//! (`conn.rs`, `http.rs`) with an event-driven quick-xml parser (`soap.rs`), does the NTLMv2
//! handshake itself (`ntlm.rs`), and uses winrm-rs only where it is correct: its public `NtlmSession` (NTLM sign/seal key
//! derivation and RC4 sealing), under kinit's own MS-WSMV framing (`seal.rs`).
//!
//! # Layout
//! - `http.rs`: Basic/NTLM auth, sealing, retries. `conn.rs`: the session's one connection
//!   (NTLM is connection-bound). `tls.rs`: certificate verification policy.
//! - `soap.rs`: envelopes and response parsing. `ntlm.rs`, `seal.rs`: NTLM and encryption.
//! - `shell.rs`: the per-host shell and the receive loop. `transfer.rs`: put/get.
//! - `clixml.rs`: PowerShell CLIXML stderr to text.
//!
//! One actor task per host owns the HTTP session and the shell; `WinRmConnection` sends it
//! operations. Operations run one at a time (NTLM binds auth to one connection). A caller that
//! drops its future (Ctrl-C, a timeout) cancels the operation: the actor signals the running
//! command. Dropping or closing the connection deletes the shell.

mod clixml;
mod conn;
mod http;
mod ntlm;
mod seal;
mod shell;
mod soap;
mod tls;
mod transfer;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use self::http::{HttpError, HttpSession};
use self::shell::{Shell, ShellError};
use self::transfer::TransferError;
use super::{ExecOutput, ExecRequest, HostTarget, Source, TransportError, quote};

enum Op {
    Exec {
        command_line: String,
        stdin: Option<Vec<u8>>,
        timeout: Option<Duration>,
    },
    Put {
        src: Source,
        dest: String,
    },
    Get {
        src: String,
        dest: PathBuf,
    },
}

#[derive(Debug, thiserror::Error)]
enum OpError {
    #[error(transparent)]
    Shell(#[from] ShellError),
    #[error(transparent)]
    Transfer(#[from] TransferError),
}

struct Job {
    op: Op,
    cancel: CancellationToken,
    reply: oneshot::Sender<Result<Option<ExecOutput>, OpError>>,
}

enum Msg {
    Job(Job),
    /// Answered with the error of a failed shell deletion.
    Close(oneshot::Sender<Option<String>>),
}

pub struct WinRmConnection {
    name: String,
    user: String,
    address: String,
    tx: mpsc::Sender<Msg>,
}

impl WinRmConnection {
    /// Authenticate and open the host's shell (retried `connect_attempts` times when the
    /// endpoint cannot be reached).
    pub async fn connect(target: &HostTarget) -> Result<Self, TransportError> {
        let user = target.user.clone().unwrap_or_default();
        let http = HttpSession::new(target).map_err(|e| match e {
            HttpError::Config(detail) => TransportError::Config {
                host: target.name.clone(),
                kind: "winrm",
                detail,
            },
            other => map_http(&target.name, &user, &target.address, "connect", other, 1),
        })?;
        let address = http.url().to_string();
        let o = &target.winrm;
        let mut shell = Shell::new(http, o.operation_timeout, o.idle_timeout);
        let attempts = target.connect_attempts.max(1);
        // The shell is created in a task of its own: a caller dropped mid-request (Ctrl-C in
        // the first moments of a run) would otherwise leave a shell the server made but whose
        // id nobody read. The task hands the shell over, or deletes it when nobody waits.
        let (handoff, opened) = oneshot::channel();
        tokio::spawn(async move {
            let mut outcome = Ok(());
            for attempt in 1..=attempts {
                match shell.open().await {
                    Ok(_) => {
                        outcome = Ok(());
                        break;
                    }
                    Err(ShellError::Http(HttpError::Connect(_))) if attempt < attempts => {
                        tokio::time::sleep(Duration::from_millis(250 << attempt.min(5))).await;
                    }
                    Err(e) => {
                        outcome = Err((e, attempt));
                        break;
                    }
                }
            }
            if let Err(Ok(mut shell)) = handoff.send(outcome.map(|()| shell)) {
                let _ = shell.delete().await;
            }
        });
        let shell = match opened.await {
            Ok(Ok(shell)) => shell,
            Ok(Err((e, attempt))) => {
                return Err(map_shell(
                    &target.name,
                    &user,
                    &address,
                    "connect",
                    e,
                    attempt,
                ));
            }
            Err(_) => {
                return Err(TransportError::Cancelled {
                    host: target.name.clone(),
                });
            }
        };
        let (tx, rx) = mpsc::channel(8);
        tokio::spawn(actor(shell, rx));
        Ok(WinRmConnection {
            name: target.name.clone(),
            user,
            address,
            tx,
        })
    }

    async fn run(&self, op: Op, what: &str) -> Result<Option<ExecOutput>, TransportError> {
        let (reply, rx) = oneshot::channel();
        let cancel = CancellationToken::new();
        // Dropping this future (the caller was cancelled) cancels the job on the actor.
        let _guard = cancel.clone().drop_guard();
        let lost = || TransportError::Cancelled {
            host: self.name.clone(),
        };
        self.tx
            .send(Msg::Job(Job { op, cancel, reply }))
            .await
            .map_err(|_| lost())?;
        match rx.await.map_err(|_| lost())? {
            Ok(out) => Ok(out),
            Err(OpError::Shell(e)) => {
                Err(map_shell(&self.name, &self.user, &self.address, what, e, 1))
            }
            Err(OpError::Transfer(e)) => Err(self.map_transfer(what, e)),
        }
    }

    pub async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        if req.become_.is_some() {
            return Err(TransportError::Unsupported {
                host: self.name.clone(),
                kind: "winrm",
                reason: "become is not supported over WinRM".into(),
            });
        }
        let op = Op::Exec {
            command_line: quote::ps_command_line(&ps_wrap(req)),
            stdin: req.stdin.clone(),
            timeout: req.timeout,
        };
        let out = self.run(op, "command").await?;
        Ok(out.unwrap_or_default())
    }

    pub async fn put(
        &self,
        src: &Source,
        dest: &str,
        _mode: Option<u32>,
    ) -> Result<(), TransportError> {
        let op = Op::Put {
            src: src.clone(),
            dest: dest.to_string(),
        };
        self.run(op, &format!("upload to `{dest}`")).await.map(drop)
    }

    pub async fn get(&self, src: &str, dest: &Path) -> Result<(), TransportError> {
        let op = Op::Get {
            src: src.to_string(),
            dest: dest.to_path_buf(),
        };
        self.run(op, &format!("download of `{src}`"))
            .await
            .map(drop)
    }

    /// Delete the shell and stop the actor. Returns a warning when the shell could not be
    /// deleted (it then stays open on the host until WinRM's idle timeout).
    pub async fn close(self) -> Option<String> {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Close(ack)).await.is_ok() {
            return done.await.ok().flatten().map(|e| {
                format!(
                    "{}: the WinRM shell could not be deleted ({e}); it stays open until the \
                     host's idle timeout, and Windows allows 30 shells per user",
                    self.name
                )
            });
        }
        None
    }

    fn map_transfer(&self, what: &str, e: TransferError) -> TransportError {
        let host = self.name.clone();
        match e {
            TransferError::Shell(e) => map_shell(&self.name, &self.user, &self.address, what, e, 1),
            TransferError::Local { path, source } => TransportError::Io {
                host,
                what: format!("{what} (local file `{}`)", path.display()),
                source,
            },
            TransferError::Remote { rc, stderr } => TransportError::Protocol {
                host,
                what: what.to_string(),
                detail: format!("remote exit code {rc}: {stderr}"),
            },
            TransferError::Checksum => TransportError::Checksum {
                host,
                path: what.to_string(),
            },
        }
    }
}

/// The PowerShell text for `req`: env and cwd applied before the script.
fn ps_wrap(req: &ExecRequest) -> String {
    let mut s = String::new();
    for (k, v) in &req.env {
        s.push_str(&format!("${{env:{k}}} = {}\n", quote::ps(v)));
    }
    if let Some(cwd) = &req.cwd {
        s.push_str(&format!("Set-Location -LiteralPath {}\n", quote::ps(cwd)));
    }
    s.push_str(&req.script);
    s
}

async fn actor(mut shell: Shell, mut rx: mpsc::Receiver<Msg>) {
    while let Some(msg) = rx.recv().await {
        match msg {
            Msg::Job(job) => {
                let upload_to = match &job.op {
                    Op::Put { dest, .. } => Some(dest.clone()),
                    _ => None,
                };
                let result = tokio::select! {
                    biased;
                    _ = job.cancel.cancelled() => None,
                    r = perform(&mut shell, job.op) => Some(r),
                };
                match result {
                    Some(r) => {
                        let _ = job.reply.send(r);
                    }
                    // The caller is gone: stop whatever the job left running, and remove
                    // the temp file of an upload it cut short.
                    None => {
                        shell.terminate().await;
                        if let Some(dest) = upload_to {
                            let _ = transfer::discard(&mut shell, &dest).await;
                        }
                    }
                }
            }
            Msg::Close(ack) => {
                let failed = shell.delete().await.err().map(|e| e.to_string());
                let _ = ack.send(failed);
                return;
            }
        }
    }
    // Dropped without close(): still never leave a shell behind (Windows allows 30 per user).
    let _ = shell.delete().await;
}

async fn perform(shell: &mut Shell, op: Op) -> Result<Option<ExecOutput>, OpError> {
    match op {
        Op::Exec {
            command_line,
            stdin,
            timeout,
        } => {
            let cid = shell.start(&command_line).await?;
            if let Some(input) = stdin {
                let mut chunks = input.chunks(64 * 1024).peekable();
                while let Some(c) = chunks.next() {
                    shell.send(&cid, c, chunks.peek().is_none()).await?;
                }
                if input.is_empty() {
                    shell.send(&cid, b"", true).await?;
                }
            }
            let mut stdout = Vec::new();
            let mut stderr = Vec::new();
            let rc = shell
                .drive(
                    &cid,
                    &mut |b| {
                        stdout.extend_from_slice(b);
                        Ok(())
                    },
                    &mut stderr,
                    timeout,
                )
                .await?;
            Ok(Some(ExecOutput {
                rc,
                stdout,
                stderr: clixml::decode(&stderr),
            }))
        }
        Op::Put { src, dest } => {
            transfer::put(shell, &src, &dest).await?;
            Ok(None)
        }
        Op::Get { src, dest } => {
            transfer::get(shell, &src, &dest).await?;
            Ok(None)
        }
    }
}

fn map_shell(
    host: &str,
    user: &str,
    address: &str,
    what: &str,
    e: ShellError,
    attempts: u32,
) -> TransportError {
    match e {
        ShellError::Http(h) => map_http(host, user, address, what, h, attempts),
        ShellError::Deadline(after) => TransportError::Timeout {
            host: host.to_string(),
            what: what.to_string(),
            after,
        },
        other => TransportError::Protocol {
            host: host.to_string(),
            what: what.to_string(),
            detail: other.to_string(),
        },
    }
}

fn map_http(
    host: &str,
    user: &str,
    address: &str,
    what: &str,
    e: HttpError,
    attempts: u32,
) -> TransportError {
    let host = host.to_string();
    match e {
        HttpError::Connect(source) => TransportError::Connect {
            host,
            address: address.to_string(),
            attempts,
            source: Box::new(source),
        },
        HttpError::Auth(reason) => TransportError::Auth {
            host,
            user: user.to_string(),
            reason: reason.to_string(),
        },
        HttpError::Timeout(after) => TransportError::Timeout {
            host,
            what: format!("{what} (HTTP request)"),
            after,
        },
        HttpError::Io(source) => TransportError::Io {
            host,
            what: what.to_string(),
            source: std::io::Error::other(source),
        },
        other => TransportError::Protocol {
            host,
            what: what.to_string(),
            detail: other.to_string(),
        },
    }
}
