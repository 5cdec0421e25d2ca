//! Running the phase window: `site.yml` is loaded once; each phase of the window runs as its
//! own pass of the engine with `--tags <phase>`, between `PhaseStart`/`PhaseEnd` events sent
//! to the one reporter of the run. A phase that fails (or Ctrl-C) ends the run there, so a
//! re-run with `--start-at` can pick it up.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::cluster::Phase;
use crate::config::RunConfig;
use crate::exec::{Executor, RunOptions, TagFilter};
use crate::inventory::Inventory;
use crate::playbook::{Loader, LoaderOptions, Playbook};
use crate::report::{self, Event, Redactor, ReportOptions};
use crate::secret::Secret;
use crate::vars::VarMap;
use crate::{Error, Outcome};

pub const EVENTS: &str = "events.jsonl";
pub const JUNIT: &str = "junit.xml";

/// Everything one run needs besides the validated configuration.
pub struct Job {
    pub playbook_dir: PathBuf,
    pub inventory: Inventory,
    pub extra_vars: VarMap,
    pub run_dir: PathBuf,
    /// The Windows administrator password, when the cluster has one.
    pub password: Option<Secret>,
}

pub fn run(cfg: &RunConfig, job: Job) -> Result<Outcome, Error> {
    let loader = Arc::new(Loader::new(LoaderOptions {
        roles_path: super::locate::roles_path(&job.playbook_dir),
    }));
    let book = loader.load_playbook(&job.playbook_dir.join(super::locate::ENTRY))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(crate::exec::WORKER_STACK)
        .build()
        .map_err(|source| Error::Runtime { source })?;
    runtime.block_on(run_phases(cfg, job, loader, book))
}

async fn run_phases(
    cfg: &RunConfig,
    job: Job,
    loader: Arc<Loader>,
    book: Playbook,
) -> Result<Outcome, Error> {
    let redactor = Redactor::default();
    // Registered before any event exists, so no sink can ever see the generated password.
    if let Some(password) = &job.password {
        redactor.add(password.expose());
    }
    let ropts = ReportOptions {
        verbose: cfg.exec.verbose,
        diff: cfg.exec.diff,
        log_json: Some(job.run_dir.join(EVENTS)),
        junit: Some(job.run_dir.join(JUNIT)),
        progress: std::io::stdout().is_terminal()
            && std::env::var("TERM").map(|t| t != "dumb").unwrap_or(false),
        frozen_time: std::env::var_os("KINIT_FROZEN_TIME").is_some(),
    };
    let (events, reporter) = report::start(ropts, redactor)?;
    let cancel = CancellationToken::new();
    let ctrl_c = crate::interrupt::watch(cancel.clone());
    let mut failed = false;
    for phase in cfg.window.phases() {
        if cancel.is_cancelled() {
            break;
        }
        failed = run_phase(cfg, &job, &loader, &book, &events, &cancel, phase).await;
        if failed {
            break;
        }
    }
    drop(events);
    ctrl_c.abort();
    let stats = reporter.await.map_err(|e| Error::Runtime {
        source: std::io::Error::other(e),
    })??;
    Ok(if cancel.is_cancelled() {
        Outcome::Interrupted
    } else if stats.any_failed() || (failed && !stats.any_unreachable()) {
        Outcome::HostFailed
    } else if stats.any_unreachable() {
        Outcome::HostUnreachable
    } else {
        Outcome::Success
    })
}

/// One phase; returns whether it failed (a host failed or was unreachable).
async fn run_phase(
    cfg: &RunConfig,
    job: &Job,
    loader: &Arc<Loader>,
    book: &Playbook,
    events: &report::EventSender,
    cancel: &CancellationToken,
    phase: Phase,
) -> bool {
    events.send(Event::PhaseStart {
        phase: phase.name().to_string(),
    });
    let started = Instant::now();
    let opts = RunOptions {
        forks: cfg.exec.forks,
        check: cfg.exec.check,
        diff: cfg.exec.diff,
        verbose: cfg.exec.verbose,
        tags: TagFilter::new(&[phase.name().to_string()], &cfg.skip_tags),
        start_at_task: None,
        extra_vars: job.extra_vars.clone(),
        limit: None,
        host_key_checking: cfg.exec.host_key_checking,
        winrm_ca_file: cfg.exec.winrm_ca_file.clone(),
    };
    let exec = Executor::new(
        loader.clone(),
        job.inventory.clone(),
        opts,
        events.clone(),
        cancel.clone(),
    );
    // Only this phase's plays: the others would print empty play headers.
    let plays = book
        .plays
        .iter()
        .filter(|p| p.kw.tags.iter().any(|t| t == phase.name()))
        .cloned()
        .collect();
    let book = Playbook {
        path: book.path.clone(),
        plays,
    };
    let interrupted = exec.run(&book).await;
    let failed = exec
        .hosts
        .lock()
        .unwrap()
        .values()
        .any(|s| s.failed || s.unreachable);
    let status = if interrupted {
        "interrupted"
    } else if failed {
        "failed"
    } else {
        "ok"
    };
    events.send(Event::PhaseEnd {
        phase: phase.name().to_string(),
        status: status.to_string(),
        duration: started.elapsed(),
    });
    failed
}
