//! One command's run: the tokio runtime, the one reporter, the one interrupt watch and the one
//! executor (with its connection pool and host-state map) that every playbook and every phase
//! of the command runs through. So `kinit playbook a.yml b.yml` and the phases of `kinit run`
//! keep their connections (one login per host for the whole command), facts, `set_fact`
//! values and `add_host` hosts from one playbook or phase to the next, as a single
//! ansible-playbook run does; and both commands end the same way (`finish`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Executor, RunOptions};
use crate::inventory::Inventory;
use crate::playbook::Loader;
use crate::report::{self, Redactor, ReportError, RunStats};
use crate::{Error, Outcome};

/// The runtime every command that runs tasks uses: its worker threads get the stack the
/// executor needs (`WORKER_STACK`).
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(super::WORKER_STACK)
        .build()
        .map_err(|source| Error::Runtime { source })
}

/// Where the reporter writes, besides the terminal, and which results the terminal shows.
#[derive(Debug, Clone, Default)]
pub struct ReportFiles {
    pub log_json: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    pub display: report::Display,
}

pub struct Session {
    exec: Executor,
    reporter: JoinHandle<Result<RunStats, ReportError>>,
    interrupt: JoinHandle<()>,
    cancel: CancellationToken,
}

impl Session {
    /// Start the reporter and the interrupt watch and build the executor. Call inside the
    /// runtime from [`runtime`]. Values registered with `redactor` before this never reach
    /// any output.
    pub fn start(
        loader: Arc<Loader>,
        inventory: Inventory,
        opts: RunOptions,
        files: ReportFiles,
        redactor: Redactor,
    ) -> Result<Session, Error> {
        let ropts = report::ReportOptions {
            verbose: opts.verbose,
            diff: opts.diff,
            display: files.display,
            log_json: files.log_json,
            junit: files.junit,
            progress: std::io::stdout().is_terminal()
                && std::env::var("TERM").map(|t| t != "dumb").unwrap_or(false),
            frozen_time: std::env::var_os("KINIT_FROZEN_TIME").is_some(),
        };
        let (events, reporter) = report::start(ropts, redactor)?;
        let cancel = CancellationToken::new();
        let interrupt = crate::interrupt::watch(cancel.clone());
        let exec = Executor::new(loader, inventory, opts, events, cancel.clone());
        Ok(Session {
            exec,
            reporter,
            interrupt,
            cancel,
        })
    }

    pub fn executor(&self) -> &Executor {
        &self.exec
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Close the connections, let the reporter print the recap and write its files, and map
    /// the run onto ansible-playbook's exit codes. `stopped_by_failure`: the caller stopped
    /// early because something failed that the recap may not count as a failed host (a phase
    /// whose hosts all became unreachable still ends a deployment as failed).
    pub async fn finish(self, stopped_by_failure: bool) -> Result<Outcome, Error> {
        self.exec.end_run().await;
        let host_failed = self.exec.any_host_ends_failed();
        let run_error = self.exec.run_error();
        let in_playbook = self.exec.run_error_in_playbook();
        self.interrupt.abort();
        // The reporter ends when the last event sender (the executor's) is gone.
        drop(self.exec);
        let stats = self.reporter.await.map_err(|e| Error::Runtime {
            source: std::io::Error::other(e),
        })??;
        Ok(if self.cancel.is_cancelled() {
            Outcome::Interrupted
        } else if run_error.is_some() && in_playbook {
            Outcome::ParseError
        } else if run_error.is_some() {
            Outcome::Error
        } else if host_failed || (stopped_by_failure && !stats.any_unreachable()) {
            Outcome::HostFailed
        } else if stats.any_unreachable() {
            Outcome::HostUnreachable
        } else {
            Outcome::Success
        })
    }
}
