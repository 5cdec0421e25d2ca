//! The persistent remote shell: one long-lived `/bin/sh` per host (up to a small pool) that
//! runs framed commands, so a command costs one round trip and no process start-up on the
//! server beyond a fork.
//!
//! Each command is sent as one line (plus an optional here-document carrying stdin as
//! base64):
//!
//! ```text
//! ( eval '<script>' ) </dev/null; printf '\n%s:%d\n' TOKEN $?; printf '\n%s\n' TOKEN >&2
//! ```
//!
//! `eval` of a single-quoted word means no script text can break the framing (an
//! unterminated quote is a syntax error of that command only), the subshell keeps `exit`,
//! `cd` and variables from leaking into the next command, and `TOKEN` is random per session
//! plus a counter, so output cannot fake the end marker. stdout ends at the last
//! `\nTOKEN:rc\n`, stderr at `\nTOKEN\n`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use base64::Engine as _;
use russh::ChannelMsg;
use russh::client::Msg;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

use super::exec::{
    CLIENT_GRACE, check_timeout, closed, command_text, lost, open_session, signal_number,
    stdin_bytes, timed_out,
};
use super::session::Connected;
use crate::transport::{ExecOutput, ExecRequest, TransportError, quote};

pub(super) struct ShellPool {
    idle: Mutex<Vec<Shell>>,
    open: AtomicUsize,
    max: usize,
    /// Set when a shell cannot be started on this host; exec channels are used from then on.
    broken: AtomicBool,
    seed: String,
    counter: AtomicU64,
}

struct Shell {
    ch: russh::Channel<Msg>,
    _permit: OwnedSemaphorePermit,
}

impl ShellPool {
    pub fn new(max: usize) -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            max,
            broken: AtomicBool::new(false),
            seed: random_hex(),
            counter: AtomicU64::new(0),
        }
    }

    /// Run `req` through a free shell; `None` when no shell is free and no new one may be
    /// opened now (the caller then uses an exec channel).
    pub async fn try_exec(
        &self,
        host: &str,
        conn: &Connected,
        channels: &Arc<Semaphore>,
        req: &ExecRequest,
    ) -> Option<Result<ExecOutput, TransportError>> {
        if self.broken.load(Ordering::Relaxed) {
            return None;
        }
        let popped = self.idle.lock().await.pop();
        let mut shell = match popped {
            Some(s) => s,
            None => {
                if self.open.fetch_add(1, Ordering::SeqCst) >= self.max {
                    self.open.fetch_sub(1, Ordering::SeqCst);
                    return None;
                }
                let Ok(permit) = channels.clone().try_acquire_owned() else {
                    self.open.fetch_sub(1, Ordering::SeqCst);
                    return None;
                };
                match start(host, conn, permit).await {
                    Ok(s) => s,
                    Err(_) => {
                        self.open.fetch_sub(1, Ordering::SeqCst);
                        self.broken.store(true, Ordering::Relaxed);
                        return None;
                    }
                }
            }
        };
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let token = format!("KINIT{}{n}", self.seed);
        let started = std::time::Instant::now();
        let run = shell.run(host, &token, req);
        let result = match req.timeout {
            Some(t) => match tokio::time::timeout(t + CLIENT_GRACE, run).await {
                Ok(r) => r,
                Err(_) => Err(timed_out(host, t)),
            },
            None => run.await,
        };
        match result {
            // A remote `timeout` kill leaves the shell itself healthy.
            Ok((out, true)) => {
                self.idle.lock().await.push(shell);
                Some(check_timeout(host, req, started, out))
            }
            // The command ended the shell itself (`kill $$`, `exec`): its result stands,
            // the shell is gone.
            Ok((out, false)) => {
                self.open.fetch_sub(1, Ordering::SeqCst);
                Some(Ok(out))
            }
            // A shell in an unknown state is never reused.
            Err(e) => {
                let _ = shell.ch.close().await;
                self.open.fetch_sub(1, Ordering::SeqCst);
                Some(Err(e))
            }
        }
    }

    pub async fn close(&self) {
        for shell in self.idle.lock().await.drain(..) {
            let _ = shell.ch.eof().await;
            let _ = shell.ch.close().await;
        }
    }
}

async fn start(
    host: &str,
    conn: &Connected,
    permit: OwnedSemaphorePermit,
) -> Result<Shell, TransportError> {
    let ch = open_session(host, conn).await?;
    // `exec` so the login shell is replaced by a plain POSIX sh reading commands from stdin.
    ch.exec(false, "exec /bin/sh")
        .await
        .map_err(|e| lost(host, "starting the shell", e))?;
    Ok(Shell {
        ch,
        _permit: permit,
    })
}

impl Shell {
    async fn run(
        &mut self,
        host: &str,
        token: &str,
        req: &ExecRequest,
    ) -> Result<(ExecOutput, bool), TransportError> {
        let script = quote::sh(&command_text(req));
        let marks = format!("printf '\\n%s:%d\\n' {token} $?; printf '\\n%s\\n' {token} >&2\n");
        let input = stdin_bytes(req);
        let text = if input.is_empty() {
            format!("( eval {script} ) </dev/null; {marks}")
        } else {
            let b64 = base64::engine::general_purpose::STANDARD.encode(&input);
            let mut body = String::with_capacity(b64.len() + b64.len() / 76 + 1);
            for chunk in b64.as_bytes().chunks(76) {
                body.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
                body.push('\n');
            }
            format!("base64 -d <<'{token}IN' | ( eval {script} ); {marks}{body}{token}IN\n")
        };
        self.ch
            .data(text.as_bytes())
            .await
            .map_err(|e| lost(host, "sending a command to the shell", e))?;

        let out_end = format!("\n{token}:");
        let err_end = format!("\n{token}\n");
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut rc = None;
        let mut err_done = false;
        let mut shell_status = None;
        while rc.is_none() || !err_done {
            match self.ch.wait().await {
                Some(ChannelMsg::Data { data }) => {
                    out.extend_from_slice(&data);
                    if rc.is_none() {
                        rc = take_status(&mut out, out_end.as_bytes());
                    }
                }
                Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                    err.extend_from_slice(&data);
                    if !err_done && err.ends_with(err_end.as_bytes()) {
                        err.truncate(err.len() - err_end.len());
                        err_done = true;
                    }
                }
                Some(ChannelMsg::ExitStatus { exit_status }) => {
                    shell_status = Some(exit_status as i32);
                }
                Some(ChannelMsg::ExitSignal { signal_name, .. }) => {
                    shell_status = Some(128 + signal_number(&signal_name));
                }
                // The exit status may follow EOF; Close is final.
                Some(ChannelMsg::Close) | None => {
                    // The shell ended mid-command; like `sh -c`, the command's status is the
                    // shell's.
                    return match shell_status {
                        Some(rc) => Ok((
                            ExecOutput {
                                rc,
                                stdout: out,
                                stderr: err,
                            },
                            false,
                        )),
                        None => Err(closed(host)),
                    };
                }
                Some(_) => {}
            }
        }
        let out = ExecOutput {
            rc: rc.unwrap_or_default(),
            stdout: out,
            stderr: err,
        };
        Ok((out, true))
    }
}

/// When `buf` ends with `\nTOKEN:<rc>\n`, cut that off and return rc.
fn take_status(buf: &mut Vec<u8>, end: &[u8]) -> Option<i32> {
    if buf.last() != Some(&b'\n') {
        return None;
    }
    let body = &buf[..buf.len() - 1];
    let digits = body.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let mark_end = body.len() - digits;
    if digits == 0 || !body[..mark_end].ends_with(end) {
        return None;
    }
    let rc = std::str::from_utf8(&body[mark_end..]).ok()?.parse().ok()?;
    buf.truncate(mark_end - end.len());
    Some(rc)
}

fn random_hex() -> String {
    let mut bytes = [0u8; 12];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read as _;
        let _ = f.read_exact(&mut bytes);
    }
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_cut_only_at_the_end_marker() {
        let mut b = b"hello\nX:1\nmore\nX:42\n".to_vec();
        assert_eq!(take_status(&mut b, b"\nX:"), Some(42));
        assert_eq!(b, b"hello\nX:1\nmore");
        let mut partial = b"hello\nX:4".to_vec();
        assert_eq!(take_status(&mut partial, b"\nX:"), None);
        let mut empty = b"\nX:0\n".to_vec();
        assert_eq!(take_status(&mut empty, b"\nX:"), Some(0));
        assert!(empty.is_empty());
    }
}
