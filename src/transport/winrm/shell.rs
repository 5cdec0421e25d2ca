//! The one WinRS shell kinit keeps per host, and kinit's own receive loop.
//!
//! The shell is created when the connection opens, reused by every command, and deleted on
//! close (or when the connection is dropped, by the actor in `mod.rs`). A command that stays
//! silent longer than `OperationTimeout` gets a `w:TimedOut` fault on Receive, which means
//! "poll again", never failure; only the caller's own deadline ends a command early, and then
//! the command is signalled (terminate) before the error is returned. A shell the server has
//! forgotten (idle timeout) is recreated once.

use std::time::Duration;

use super::http::{HttpError, HttpSession};
use super::soap::{Envelopes, Response};

#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("the command ran longer than {0:?}")]
    Deadline(Duration),
    #[error("the WinRM service answered without a {0}")]
    Missing(&'static str),
    #[error("writing the output failed")]
    Sink(#[source] std::io::Error),
}

pub struct Shell {
    pub http: HttpSession,
    env: Envelopes,
    idle_timeout: Duration,
    shell_id: Option<String>,
    /// The command in flight, signalled if its job is cancelled.
    running: Option<String>,
}

impl Shell {
    pub fn new(http: HttpSession, operation_timeout: Duration, idle_timeout: Duration) -> Self {
        let env = Envelopes {
            url: http.url().to_string(),
            timeout_secs: operation_timeout.as_secs().max(1),
        };
        Shell {
            http,
            env,
            idle_timeout,
            shell_id: None,
            running: None,
        }
    }

    /// Create the shell unless one is open.
    pub async fn open(&mut self) -> Result<String, ShellError> {
        if let Some(id) = &self.shell_id {
            return Ok(id.clone());
        }
        let req = self.env.create(self.idle_timeout.as_secs().max(60));
        let resp = self.http.call(&req).await?;
        let id = resp.shell_id.ok_or(ShellError::Missing("ShellId"))?;
        self.shell_id = Some(id.clone());
        Ok(id)
    }

    /// Start `command_line`; returns its CommandId.
    pub async fn start(&mut self, command_line: &str) -> Result<String, ShellError> {
        for attempt in 0..2 {
            let shell = self.open().await?;
            let req = self.env.command(&shell, command_line);
            match self.http.call(&req).await {
                Ok(r) => {
                    let id = r.command_id.ok_or(ShellError::Missing("CommandId"))?;
                    self.running = Some(id.clone());
                    return Ok(id);
                }
                Err(HttpError::Fault(f)) if f.is_unknown_shell() && attempt == 0 => {
                    self.shell_id = None;
                }
                Err(e) => return Err(e.into()),
            }
        }
        unreachable!("the loop returns on its second attempt")
    }

    pub async fn send(&mut self, cid: &str, data: &[u8], end: bool) -> Result<(), ShellError> {
        let shell = self.shell_id.clone().ok_or(ShellError::Missing("shell"))?;
        self.http
            .call(&self.env.send(&shell, cid, data, end))
            .await?;
        Ok(())
    }

    /// One Receive; a `w:TimedOut` fault is an empty, unfinished response.
    async fn receive(&mut self, cid: &str) -> Result<Response, ShellError> {
        let shell = self.shell_id.clone().ok_or(ShellError::Missing("shell"))?;
        match self.http.call(&self.env.receive(&shell, cid)).await {
            Ok(r) => Ok(r),
            Err(HttpError::Fault(f)) if f.is_timed_out() => Ok(Response::default()),
            Err(e) => Err(e.into()),
        }
    }

    /// Poll `cid` until it exits, feeding stdout to `on_stdout` as it arrives; returns the
    /// exit code. `deadline` bounds the whole wait; when it passes the command is terminated.
    pub async fn drive(
        &mut self,
        cid: &str,
        on_stdout: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
        stderr: &mut Vec<u8>,
        deadline: Option<Duration>,
    ) -> Result<i32, ShellError> {
        let poll = async {
            loop {
                let r = self.receive(cid).await?;
                on_stdout(&r.stdout).map_err(ShellError::Sink)?;
                stderr.extend_from_slice(&r.stderr);
                if r.done {
                    return Ok::<i32, ShellError>(r.exit_code.unwrap_or(-1));
                }
            }
        };
        let result = match deadline {
            Some(d) => match tokio::time::timeout(d, poll).await {
                Ok(r) => r,
                Err(_) => Err(ShellError::Deadline(d)),
            },
            None => poll.await,
        };
        match result {
            Ok(code) => {
                // Done commands are released by the server; the Signal tells Windows to drop
                // its bookkeeping early, as winrs.exe does.
                self.terminate().await;
                Ok(code)
            }
            Err(e) => {
                self.terminate().await;
                Err(e)
            }
        }
    }

    /// Signal terminate to the running command, if any; best effort.
    pub async fn terminate(&mut self) {
        let (Some(cid), Some(shell)) = (self.running.take(), self.shell_id.clone()) else {
            return;
        };
        let _ = self
            .http
            .call(&self.env.signal_terminate(&shell, &cid))
            .await;
    }

    /// Delete the shell, if open, trying three times (a busy WinRM service answers 500 at
    /// times). An error after that means the shell stays until the server's idle timeout:
    /// Windows allows 30 shells per user, so the caller says so.
    pub async fn delete(&mut self) -> Result<(), ShellError> {
        self.terminate().await;
        let Some(shell) = self.shell_id.take() else {
            return Ok(());
        };
        let mut last = None;
        for attempt in 0..3u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(300 << attempt)).await;
            }
            match self.http.call(&self.env.delete(&shell)).await {
                Ok(_) => return Ok(()),
                Err(HttpError::Fault(f)) if f.is_unknown_shell() => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("three attempts").into())
    }
}
