//! One command on a new exec channel: open, exec, send stdin, collect stdout/stderr and the
//! exit status. Two round trips per command (open, then exec through exit).

use std::time::{Duration, Instant};

use russh::ChannelMsg;
use russh::client::Msg;
use tokio::sync::Semaphore;

use super::session::Connected;
use crate::transport::{ExecOutput, ExecRequest, TransportError, quote};

pub(super) async fn run(
    host: &str,
    conn: &Connected,
    channels: &Semaphore,
    req: &ExecRequest,
) -> Result<ExecOutput, TransportError> {
    let _permit = channels.acquire().await.map_err(|_| closed(host))?;
    let started = Instant::now();
    let work = async {
        let mut ch = open_session(host, conn).await?;
        let input = stdin_bytes(req);
        if input.is_empty() {
            // stdin from /dev/null instead of a separate EOF message: one packet less, and
            // the same semantics as the persistent shell.
            ch.exec(false, format!("{{ {}\n}} </dev/null", command_text(req)))
                .await
                .map_err(|e| lost(host, "starting a command", e))?;
        } else {
            ch.exec(false, command_text(req))
                .await
                .map_err(|e| lost(host, "starting a command", e))?;
            ch.data(&input[..])
                .await
                .map_err(|e| lost(host, "sending stdin", e))?;
            ch.eof().await.map_err(|e| lost(host, "sending stdin", e))?;
        }
        collect(host, &mut ch).await
    };
    let out = match req.timeout {
        Some(t) => tokio::time::timeout(t + CLIENT_GRACE, work)
            .await
            .map_err(|_| timed_out(host, t))?,
        None => work.await,
    }?;
    check_timeout(host, req, started, out)
}

/// How long after a command's timeout the client gives up on hearing back (the remote
/// `timeout` normally ends the command first).
pub(super) const CLIENT_GRACE: Duration = Duration::from_secs(5);

/// The remote command text: `sh_wrap`, and under a timeout, GNU `timeout` so the host itself
/// kills the command (and its process group) instead of leaving it running when the
/// client gives up.
pub(super) fn command_text(req: &ExecRequest) -> String {
    let text = quote::sh_wrap(req);
    match req.timeout {
        Some(t) => format!(
            "timeout -s KILL {:.3} sh -c {}",
            t.as_secs_f64(),
            quote::sh(&text)
        ),
        None => text,
    }
}

/// A command killed by its remote `timeout` (status 137 at or after the deadline) is a
/// timeout, not an exit status.
pub(super) fn check_timeout(
    host: &str,
    req: &ExecRequest,
    started: Instant,
    out: ExecOutput,
) -> Result<ExecOutput, TransportError> {
    match req.timeout {
        Some(t) if out.rc == 137 && started.elapsed() >= t => Err(timed_out(host, t)),
        _ => Ok(out),
    }
}

pub(super) fn timed_out(host: &str, after: Duration) -> TransportError {
    TransportError::Timeout {
        host: host.to_string(),
        what: "command".into(),
        after,
    }
}

/// Open a session channel. sshd frees a finished session's slot a moment after the client
/// sees it close, so a refusal at the `MaxSessions` limit is retried briefly.
pub(super) async fn open_session(
    host: &str,
    conn: &Connected,
) -> Result<russh::Channel<Msg>, TransportError> {
    let mut delay = Duration::from_millis(5);
    for _ in 0..12 {
        match conn.handle.channel_open_session().await {
            Err(russh::Error::ChannelOpenFailure(
                russh::ChannelOpenFailure::ConnectFailed
                | russh::ChannelOpenFailure::ResourceShortage,
            )) => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(200));
            }
            other => return other.map_err(|e| lost(host, "opening a channel", e)),
        }
    }
    conn.handle
        .channel_open_session()
        .await
        .map_err(|e| lost(host, "opening a channel", e))
}

/// The become password line (sudo reads it first), then the caller's stdin.
pub(super) fn stdin_bytes(req: &ExecRequest) -> Vec<u8> {
    let mut input = Vec::new();
    if let Some(pw) = req.become_.as_ref().and_then(|b| b.password.as_ref()) {
        input.extend_from_slice(pw.expose().as_bytes());
        input.push(b'\n');
    }
    if let Some(data) = &req.stdin {
        input.extend_from_slice(data);
    }
    input
}

async fn collect(
    host: &str,
    ch: &mut russh::Channel<russh::client::Msg>,
) -> Result<ExecOutput, TransportError> {
    let mut out = ExecOutput::default();
    let mut status = None;
    loop {
        // Once the exit status is in, output that stays silent for a second is given up on:
        // a process the command left in the background holds the channel open (as
        // ansible-core's `run_command` stops reading then).
        let msg = match status {
            None => ch.wait().await,
            Some(_) => {
                match tokio::time::timeout(crate::transport::local::AFTER_EXIT_IDLE, ch.wait())
                    .await
                {
                    Ok(m) => m,
                    Err(_) => break,
                }
            }
        };
        let Some(msg) = msg else { break };
        match msg {
            ChannelMsg::Data { data } => out.stdout.extend_from_slice(&data),
            ChannelMsg::ExtendedData { data, ext: 1 } => out.stderr.extend_from_slice(&data),
            ChannelMsg::ExitStatus { exit_status } => status = Some(exit_status as i32),
            // A signal death is reported the way a shell would (128 + signal number).
            ChannelMsg::ExitSignal { signal_name, .. } => {
                status = Some(128 + signal_number(&signal_name));
            }
            _ => {}
        }
    }
    match status {
        Some(rc) => {
            out.rc = rc;
            Ok(out)
        }
        None => Err(TransportError::Io {
            host: host.to_string(),
            what: "a command (the channel closed without an exit status)".into(),
            source: std::io::Error::from(std::io::ErrorKind::ConnectionAborted),
        }),
    }
}

pub(super) fn signal_number(sig: &russh::Sig) -> i32 {
    use russh::Sig;
    match sig {
        Sig::HUP => 1,
        Sig::INT => 2,
        Sig::QUIT => 3,
        Sig::ILL => 4,
        Sig::ABRT => 6,
        Sig::FPE => 8,
        Sig::KILL => 9,
        Sig::USR1 => 10,
        Sig::SEGV => 11,
        Sig::PIPE => 13,
        Sig::ALRM => 14,
        Sig::TERM => 15,
        _ => 0,
    }
}

pub(super) fn lost(host: &str, what: &str, e: russh::Error) -> TransportError {
    TransportError::Io {
        host: host.to_string(),
        what: what.to_string(),
        source: std::io::Error::new(std::io::ErrorKind::ConnectionAborted, e),
    }
}

pub(super) fn closed(host: &str) -> TransportError {
    TransportError::Io {
        host: host.to_string(),
        what: "a command (the connection is closed)".into(),
        source: std::io::Error::from(std::io::ErrorKind::NotConnected),
    }
}
