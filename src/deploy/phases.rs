//! Running the phase window: `site.yml` is loaded once; the phases of the window run one after
//! another through one `Session` (one connection per host, one host-state map, one reporter),
//! each selecting its plays by its tag, between `PhaseStart`/`PhaseEnd` events. A phase that
//! fails (or Ctrl-C) ends the run there, so a re-run with `--start-at` can pick it up.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::cluster::Phase;
use crate::config::RunConfig;
use crate::exec::session::{ReportFiles, Session};
use crate::exec::{RunOptions, TagFilter};
use crate::inventory::Inventory;
use crate::playbook::{Loader, Playbook};
use crate::report::{Event, PhaseStatus, Redactor};
use crate::secret::Secret;
use crate::vars::VarMap;
use crate::{Error, Outcome};

pub const EVENTS: &str = "events.jsonl";
pub const JUNIT: &str = "junit.xml";

/// Everything one run needs besides the validated configuration.
pub struct Job {
    /// The loader of `book` (its roles and files).
    pub loader: Arc<Loader>,
    /// `site.yml`, loaded and checked (`catalog::check`).
    pub book: Playbook,
    pub inventory: Inventory,
    pub extra_vars: VarMap,
    pub run_dir: PathBuf,
    /// The Windows administrator password, when the cluster has one.
    pub password: Option<Secret>,
}

pub fn run(cfg: &RunConfig, job: Job) -> Result<Outcome, Error> {
    crate::exec::session::runtime()?.block_on(run_phases(cfg, job))
}

async fn run_phases(cfg: &RunConfig, job: Job) -> Result<Outcome, Error> {
    let redactor = Redactor::default();
    // Registered before any event exists, so no sink can ever see the generated password.
    if let Some(password) = &job.password {
        redactor.add(password.expose());
    }
    let opts = RunOptions {
        forks: cfg.exec.forks.unwrap_or(crate::exec::DEFAULT_FORKS),
        check: cfg.exec.check,
        diff: cfg.exec.diff,
        verbose: cfg.exec.verbose,
        tags: TagFilter::default(),
        start_at_task: None,
        extra_vars: job.extra_vars.clone(),
        limit: None,
        host_key_checking: cfg.exec.host_key_checking.unwrap_or_default(),
        winrm_ca_file: cfg.exec.winrm_ca_file.clone(),
        connect: Default::default(),
        render: None,
        force_handlers: false,
        error_on_missing_handler: true,
        allow_broken_conditionals: false,
        fact_caching: Default::default(),
        flush_cache: false,
    };
    let files = ReportFiles {
        log_json: Some(job.run_dir.join(EVENTS)),
        junit: Some(job.run_dir.join(JUNIT)),
        display: Default::default(),
    };
    let session = Session::start(job.loader, job.inventory, opts, files, redactor)?;
    let mut failed = false;
    for phase in cfg.window.phases() {
        if session.is_cancelled() {
            break;
        }
        failed = run_phase(cfg, &session, &job.book, phase).await;
        if failed {
            break;
        }
    }
    session.finish(failed).await
}

/// One phase: the plays of `site.yml` tagged with its name, through the run's one session
/// (so connections, facts and `set_fact` values of earlier phases are there). Returns whether
/// it failed (a host failed or was unreachable).
async fn run_phase(cfg: &RunConfig, session: &Session, book: &Playbook, phase: Phase) -> bool {
    let exec = session.executor();
    exec.emit(Event::PhaseStart {
        phase: phase.name().to_string(),
    });
    let started = Instant::now();
    exec.set_tags(TagFilter::new(&[phase.name().to_string()], &cfg.skip_tags));
    // Only this phase's plays: the others would print empty play headers.
    let book = Playbook {
        path: book.path.clone(),
        plays: super::catalog::plays_of(book, phase),
    };
    let interrupted = exec.run(&book).await;
    let failed = exec.any_host_failed();
    let status = if interrupted {
        PhaseStatus::Interrupted
    } else if failed {
        PhaseStatus::Failed
    } else {
        PhaseStatus::Ok
    };
    exec.emit(Event::PhaseEnd {
        phase: phase.name().to_string(),
        status,
        duration: started.elapsed(),
    });
    failed
}
