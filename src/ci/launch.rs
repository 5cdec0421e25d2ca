//! The launcher behind `kinit ci run`: deploy the job's cluster with a child `kinit run`, run
//! the validations, and always tear the cluster down (`--stop-after cleanup-hypervisors`),
//! also after a failure or Ctrl-C. SIGINT and SIGTERM are caught, SIGINT is forwarded to the running child, and the
//! teardown still runs; a teardown failure is reported, never hidden.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Notify;

use super::CiError;
use super::jobs::Job;
use super::summary::{StepResult, StepStatus};
use crate::report::Redactor;

/// Lines of a failed child's error output kept for the report.
const KEEP_LINES: usize = 40;

/// Set once Ctrl-C arrived; `notify` wakes the step that is waiting on its child.
#[derive(Clone, Default)]
pub struct Interrupt {
    pub seen: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

impl Interrupt {
    /// Catch SIGINT and SIGTERM for the rest of the process (the default would kill us
    /// before teardown).
    pub fn install(&self) {
        let me = self.clone();
        let mut signals = crate::interrupt::Signals::listen();
        tokio::spawn(async move {
            // A Ctrl-C caught before this task listened (see `crate::interrupt`) counts too.
            if crate::interrupt::requested() && !me.seen.swap(true, Ordering::SeqCst) {
                eprintln!("kinit ci: interrupted; stopping the deployment, then tearing down");
                me.notify.notify_waiters();
            }
            loop {
                signals.recv().await;
                if me.seen.swap(true, Ordering::SeqCst) {
                    eprintln!("kinit ci: interrupted again; the teardown still runs to its end");
                } else {
                    eprintln!("kinit ci: interrupted; stopping the deployment, then tearing down");
                }
                me.notify.notify_waiters();
            }
        });
    }

    pub fn is_set(&self) -> bool {
        self.seen.load(Ordering::SeqCst)
    }
}

/// The arguments that describe the job's cluster, shared by every child.
pub fn cluster_args(job: &Job, vars_file: Option<&Path>) -> Vec<String> {
    let mut a = vec!["--spec".to_string(), job.shape.spec()];
    if let Some(rules) = &job.cluster_nodes_spec {
        a.push("--cluster-nodes-spec".into());
        a.push(rules.to_string());
    }
    if !job.hypervisor_hosts.is_empty() {
        a.push("--hypervisor-hosts".into());
        a.push(job.hypervisor_hosts.join(","));
    }
    if let Some(f) = vars_file {
        a.push("-e".into());
        a.push(format!("@{}", f.display()));
    }
    a
}

/// Extra vars go through a file, so their values (possibly secret) never show in `ps`.
pub fn write_vars_file(job: &Job, redactor: &Redactor) -> Result<Option<PathBuf>, CiError> {
    if job.extra_vars.is_empty() {
        return Ok(None);
    }
    for (k, v) in &job.extra_vars {
        let k = k.to_ascii_lowercase();
        if ["pass", "secret", "token", "key"]
            .iter()
            .any(|w| k.contains(w))
        {
            redactor.add_value(v);
        }
    }
    let path = std::env::temp_dir().join(format!(
        "kinit-ci-{}-{}.json",
        std::process::id(),
        job.label
    ));
    let text = serde_json::to_string(&job.extra_vars).unwrap_or_default();
    write_private(&path, &text).map_err(|source| CiError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(Some(path))
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}

/// Run one child `kinit` to its end. With `interruptible`, Ctrl-C is forwarded to it as
/// SIGINT; the teardown is not interruptible, so it always finishes.
pub async fn step(
    exe: &Path,
    name: &str,
    args: &[String],
    interrupt: &Interrupt,
    interruptible: bool,
    redactor: &Redactor,
) -> StepResult {
    let command = redactor.apply(&format!("kinit {}", args.join(" ")));
    eprintln!("kinit ci: {name}: {command}");
    let start = Instant::now();
    let done = |status, exit_code, output: String| StepResult {
        name: name.to_string(),
        status,
        duration: start.elapsed().as_secs_f64(),
        exit_code,
        command: command.clone(),
        output: redactor.apply(&output),
    };
    if interruptible && interrupt.is_set() {
        return done(
            StepStatus::Skipped,
            None,
            "interrupted before it started".into(),
        );
    }
    let mut child = match tokio::process::Command::new(exe)
        .args(args)
        // Its own process group: a Ctrl-C at the terminal reaches only this launcher, which
        // forwards it to the deploy and keeps it away from the teardown.
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return done(StepStatus::Failed, None, format!("cannot start kinit: {e}")),
    };
    // Tee the child's error output: shown live, and its end kept for the report.
    let stderr = child.stderr.take();
    let tail = tokio::spawn(async move {
        let mut kept: Vec<String> = Vec::new();
        if let Some(s) = stderr {
            let mut lines = BufReader::new(s).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                eprintln!("{l}");
                kept.push(l);
                if kept.len() > KEEP_LINES {
                    kept.remove(0);
                }
            }
        }
        kept.join("\n")
    });
    let mut forwarded = false;
    let status = loop {
        let notified = interrupt.notify.notified();
        if interruptible && interrupt.is_set() && !forwarded {
            forward_sigint(child.id());
            forwarded = true;
        }
        tokio::select! {
            s = child.wait() => break s,
            () = notified => {}
        }
    };
    let output = tail.await.unwrap_or_default();
    match status {
        Ok(s) if s.success() && !forwarded => done(StepStatus::Ok, s.code(), String::new()),
        Ok(s) if forwarded || s.code() == Some(130) => {
            done(StepStatus::Interrupted, s.code(), output)
        }
        Ok(s) => done(StepStatus::Failed, s.code(), output),
        Err(e) => done(StepStatus::Failed, None, format!("waiting for kinit: {e}")),
    }
}

/// Pass Ctrl-C on to the child (it cancels its tasks and writes its logs before exiting).
fn forward_sigint(pid: Option<u32>) {
    if let Some(pid) = pid {
        // `kill(1)` rather than libc: the crate forbids unsafe code.
        let _ = std::process::Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status();
    }
}
