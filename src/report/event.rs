//! `Event`: everything the executor tells the outside world, sent by workers over one channel.
//! Values inside events are already censored for `no_log` tasks; the redaction layer in front
//! of every sink removes known secrets on top of that.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// How one task ended on one host (or one loop item).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Changed,
    Failed,
    /// Failed, but `ignore_errors` let the host go on.
    Ignored,
    Skipped,
    Unreachable,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Changed => "changed",
            Status::Failed => "failed",
            Status::Ignored => "ignored",
            Status::Skipped => "skipping",
            Status::Unreachable => "unreachable",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    PlaybookStart {
        path: String,
    },
    PlayStart {
        name: String,
        hosts: Vec<String>,
        /// Host-task pairs expected in this play (for the progress bar; includes make it grow).
        planned: usize,
    },
    TaskStart {
        id: usize,
        name: String,
        location: String,
        handler: bool,
    },
    /// A host started a task (drives the per-host progress line).
    HostTask {
        host: String,
        task: String,
    },
    Retry {
        host: String,
        task: String,
        attempt: u32,
        retries: u32,
    },
    ItemResult {
        host: String,
        task_id: usize,
        task: String,
        item: String,
        status: Status,
        module: Option<String>,
        result: Value,
    },
    TaskResult {
        host: String,
        task_id: usize,
        task: String,
        location: String,
        status: Status,
        module: Option<String>,
        /// `delegate_to` target, when the task ran elsewhere.
        delegated_to: Option<String>,
        /// True when the task looped (its items were reported one by one).
        looped: bool,
        #[serde(serialize_with = "secs")]
        duration: Duration,
        result: Value,
    },
    Rescued {
        host: String,
    },
    Warning {
        message: String,
    },
    PlayEnd {
        name: String,
    },
    RunEnd {
        interrupted: bool,
    },
    /// `kinit run` entered a deployment phase.
    PhaseStart {
        phase: String,
    },
    /// A deployment phase ended (`status`: `ok`, `failed` or `interrupted`).
    PhaseEnd {
        phase: String,
        status: String,
        #[serde(serialize_with = "secs")]
        duration: Duration,
    },
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
}
