//! `Event`: everything the executor tells the outside world, sent by workers over one channel.
//! Values inside events are already censored for `no_log` tasks; the redaction layer in front
//! of every sink removes known secrets on top of that.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::TaskResult;

/// How one task ended on one host (or one loop item).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// How a deployment phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    Ok,
    Failed,
    Interrupted,
}

impl PhaseStatus {
    pub fn word(self) -> &'static str {
        match self {
            PhaseStatus::Ok => "ok",
            PhaseStatus::Failed => "failed",
            PhaseStatus::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for PhaseStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// One event. The JSON event log (`--log-json`) is these, one per line, and readers of the
/// log (`kinit ci`) parse it back into this type, so a renamed field is a compile error there.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    PlaybookStart {
        path: String,
        plays: usize,
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
    /// An `async` task with `poll` was checked on and is still running (ansible-playbook's
    /// `ASYNC POLL` line, every `poll` seconds).
    AsyncPoll {
        host: String,
        jid: String,
    },
    /// An `async` task with `poll` ended (`ASYNC OK` / `ASYNC FAILED`).
    AsyncDone {
        host: String,
        jid: String,
        failed: bool,
    },
    ItemResult {
        host: String,
        task_id: usize,
        task: String,
        item: String,
        status: Status,
        module: Option<String>,
        result: TaskResult,
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
        #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
        duration: Duration,
        result: TaskResult,
    },
    /// How a long-running task is getting on for a host (rendered as the host's live line;
    /// plain output prints a line when `status` changes).
    Progress {
        host: String,
        task: String,
        status: String,
        #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
        elapsed: Duration,
        /// The module's own figures behind `status`.
        detail: Value,
    },
    Rescued {
        host: String,
    },
    /// An error that ends the run (shown as ansible-playbook's `[ERROR]: ...`).
    Error {
        message: String,
    },
    Warning {
        message: String,
    },
    /// A warning about one value of a task (2.19's template markers in its banner name or a
    /// `debug` value): shown with where `key`'s value is in the task at `location`.
    SourceWarning {
        message: String,
        location: String,
        key: String,
    },
    /// A deprecation a module reported (its `deprecations`), in ansible-core's words.
    Deprecation {
        message: String,
    },
    /// A later `serial` batch of the play started (ansible-playbook shows the play's banner
    /// again).
    BatchStart {
        name: String,
    },
    /// A play matched no host: it is skipped (ansible-playbook's `skipping: no hosts
    /// matched`).
    NoHostsMatched,
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
    /// A deployment phase ended.
    PhaseEnd {
        phase: String,
        status: PhaseStatus,
        #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
        duration: Duration,
    },
}

/// Durations are seconds with millisecond precision in the log.
fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
}

fn from_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let secs = f64::deserialize(d)?;
    Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
}

/// `14m02s`, `1h03m07s`: the elapsed time on progress lines.
pub fn minutes_seconds(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn elapsed_reads_as_minutes_and_seconds() {
        assert_eq!(super::minutes_seconds(Duration::from_secs(842)), "14m02s");
        assert_eq!(super::minutes_seconds(Duration::from_millis(900)), "0m00s");
        assert_eq!(
            super::minutes_seconds(Duration::from_secs(3787)),
            "1h03m07s"
        );
    }
}
