//! Periodic CI jobs (`kinit ci list|run|index`): the job matrix (`jobs`), the launcher that
//! deploys, validates and always tears down (`launch`), run names (`name`), the run summary
//! built from the children's event logs (`summary`), and the reports rendered from it: JUnit
//! (`junit`), the run page (`html`) and the index over all runs with badges (`index`).

mod html;
pub mod index;
#[cfg(test)]
mod index_tests;
pub mod jobs;
#[cfg(test)]
mod jobs_tests;
mod junit;
pub mod launch;
pub mod list;
mod name;
pub mod summary;
mod svg;

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use jobs::{JobsError, Matrix};
pub use name::JobType;

use crate::report::Redactor;
use summary::{RunSummary, StepResult, StepStatus};

#[derive(Debug, thiserror::Error)]
pub enum CiError {
    #[error(transparent)]
    Jobs(#[from] JobsError),
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the reports folder `{}`", path.display())]
    ReadReports {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot find the kinit binary to run the steps with")]
    Exe(#[source] std::io::Error),
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("kinit ci run: {0}")]
    ExtraVars(#[from] crate::extra_vars::ExtraVarsError),
}

pub(crate) fn write(path: &Path, text: &str) -> Result<(), CiError> {
    std::fs::write(path, text).map_err(|source| CiError::Write {
        path: path.to_path_buf(),
        source,
    })
}

pub struct RunOptions {
    pub out: PathBuf,
    pub dry_run: bool,
    pub job_type: JobType,
    pub pipeline_id: String,
    pub exe: PathBuf,
    /// Deploy only up to this phase; validations are skipped.
    pub stop_after: Option<String>,
}

/// Deploy, validate, tear down, and write the run's reports. Returns the summary; the
/// run folder is `<out>/<summary.name>`.
pub async fn run_job(job: &jobs::Job, opts: &RunOptions) -> Result<RunSummary, CiError> {
    let started = name::now_secs();
    let clock = Instant::now();
    let prefix = name::run_prefix(
        job,
        opts.job_type,
        &opts.pipeline_id,
        &name::timestamp(started),
    );
    let work = opts.out.join(name::with_result(&prefix, None));
    std::fs::create_dir_all(&work).map_err(|source| CiError::Write {
        path: work.clone(),
        source,
    })?;
    let redactor = Redactor::default();
    let interrupt = launch::Interrupt::default();
    interrupt.install();
    let vars = launch::write_vars_file(job, &redactor)?;
    let base = launch::cluster_args(job, vars.as_deref());
    let run_args = |log: &str, extra: &[&str]| {
        let mut a = vec!["run".to_string()];
        a.extend(base.iter().cloned());
        a.extend(extra.iter().map(|s| s.to_string()));
        a.push("--log-json".into());
        a.push(work.join(log).display().to_string());
        if opts.dry_run {
            a.push("--check".into());
        }
        a
    };
    let mut steps: Vec<StepResult> = Vec::new();
    let partial: Vec<&str> = match &opts.stop_after {
        Some(p) => vec!["--stop-after", p.as_str()],
        None => Vec::new(),
    };
    let deploy = run_args("events-deploy.jsonl", &partial);
    steps.push(launch::step(&opts.exe, "deploy", &deploy, &interrupt, true, &redactor).await);
    let deployed = steps[0].status == StepStatus::Ok;
    for v in &job.validate {
        let step_name = format!("validate: {}", v.name);
        let why = if opts.dry_run {
            Some("dry run".to_string())
        } else if !deployed {
            Some("the deployment did not finish".to_string())
        } else {
            opts.stop_after
                .as_ref()
                .map(|p| format!("the deployment stopped after {p}"))
        };
        if let Some(why) = why {
            steps.push(skipped(&step_name, &why));
            continue;
        }
        let mut a = vec!["ssh".to_string(), v.node.clone()];
        a.extend(base.iter().cloned());
        a.extend(["--".into(), "sh".into(), "-c".into(), v.command.clone()]);
        steps.push(launch::step(&opts.exe, &step_name, &a, &interrupt, true, &redactor).await);
    }
    // Always: whatever happened above, the hypervisors are cleaned.
    let teardown = run_args(
        "events-teardown.jsonl",
        &["--stop-after", "cleanup-hypervisors"],
    );
    steps.push(
        launch::step(
            &opts.exe, "teardown", &teardown, &interrupt, false, &redactor,
        )
        .await,
    );
    if let Some(v) = vars {
        let _ = std::fs::remove_file(v);
    }

    let mut s = RunSummary {
        name: String::new(),
        label: job.label.clone(),
        job_type: opts.job_type.word().into(),
        pipeline_id: opts.pipeline_id.clone(),
        runner: job.runner.clone(),
        started,
        duration: clock.elapsed().as_secs_f64(),
        passed: false,
        interrupted: interrupt.is_set(),
        dry_run: opts.dry_run,
        steps,
        phases: Vec::new(),
        hosts: Vec::new(),
        failed_tasks: Vec::new(),
        teardown_errors: Vec::new(),
    };
    // One event log for the run: the children's logs in order, each line redacted again.
    let mut events = String::new();
    for (step, file) in [
        ("deploy", "events-deploy.jsonl"),
        ("teardown", "events-teardown.jsonl"),
    ] {
        let path = work.join(file);
        let text = redactor.apply(&std::fs::read_to_string(&path).unwrap_or_default());
        let _ = std::fs::remove_file(&path);
        let facts = summary::read_log(step, &text);
        s.phases.extend(facts.phases);
        for h in facts.hosts {
            if !s.hosts.contains(&h) {
                s.hosts.push(h);
            }
        }
        if step == "teardown" {
            s.teardown_errors.extend(
                facts
                    .failed_tasks
                    .iter()
                    .map(|t| format!("{} on {}: {}", t.task, t.host, t.output)),
            );
        }
        s.failed_tasks.extend(facts.failed_tasks);
        events.push_str(&format!("{{\"event\":\"ci_step\",\"step\":\"{step}\"}}\n"));
        events.push_str(&text);
        if !text.is_empty() && !text.ends_with('\n') {
            events.push('\n');
        }
    }
    if let Some(t) = s.steps.iter().find(|t| t.name == "teardown")
        && t.status != StepStatus::Ok
        && s.teardown_errors.is_empty()
    {
        s.teardown_errors.push(format!(
            "teardown exited with {}: {}",
            t.exit_code.map_or("no code".into(), |c| c.to_string()),
            t.output
        ));
    }
    // Validations skipped on purpose (dry run, partial deployment) do not fail the run.
    let skip_ok = opts.dry_run || opts.stop_after.is_some();
    s.passed = !s.interrupted
        && s.steps
            .iter()
            .all(|t| t.status == StepStatus::Ok || (skip_ok && t.status == StepStatus::Skipped));
    s.name = name::with_result(&prefix, Some(s.passed));

    let dir = opts.out.join(&s.name);
    std::fs::rename(&work, &dir).map_err(|source| CiError::Write {
        path: dir.clone(),
        source,
    })?;
    write(&dir.join("events.jsonl"), &events)?;
    write(&dir.join("junit.xml"), &redactor.apply(&junit::render(&s)))?;
    write(
        &dir.join("index.html"),
        &redactor.apply(&html::run_page(&s)),
    )?;
    let json = serde_json::to_string_pretty(&s).unwrap_or_default();
    write(&dir.join("summary.json"), &redactor.apply(&json))?;
    Ok(s)
}

fn skipped(name: &str, why: &str) -> StepResult {
    StepResult {
        name: name.to_string(),
        status: StepStatus::Skipped,
        duration: 0.0,
        exit_code: None,
        command: String::new(),
        output: why.to_string(),
    }
}
