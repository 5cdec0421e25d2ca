//! `RunSummary`: what one `kinit ci run` did, built from its steps and the JSON event logs of
//! the child `kinit run` processes. Saved as `summary.json` in the run folder; the JUnit file,
//! the run page and the index are all rendered from it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::report::{Event, PhaseStatus, Status, TaskResult};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    pub name: String,
    pub label: String,
    pub job_type: String,
    pub pipeline_id: String,
    pub runner: String,
    /// Unix time the run started.
    pub started: u64,
    pub duration: f64,
    pub passed: bool,
    pub interrupted: bool,
    pub dry_run: bool,
    pub steps: Vec<StepResult>,
    pub phases: Vec<PhaseResult>,
    pub hosts: Vec<String>,
    pub failed_tasks: Vec<FailedTask>,
    /// Teardown problems, reported but never stopping the run from finishing.
    pub teardown_errors: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Ok,
    Failed,
    Interrupted,
    Skipped,
}

impl StepStatus {
    pub fn word(self) -> &'static str {
        match self {
            StepStatus::Ok => "ok",
            StepStatus::Failed => "failed",
            StepStatus::Interrupted => "interrupted",
            StepStatus::Skipped => "skipped",
        }
    }
}

/// One child process of the run: `deploy`, `validate: <name>` or `teardown`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepResult {
    pub name: String,
    pub status: StepStatus,
    pub duration: f64,
    pub exit_code: Option<i32>,
    /// The command line (without secrets) and, on failure, the end of its error output.
    pub command: String,
    pub output: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseResult {
    pub step: String,
    pub phase: String,
    pub status: PhaseStatus,
    pub duration: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailedTask {
    pub step: String,
    pub phase: String,
    pub host: String,
    pub task: String,
    pub location: String,
    pub output: String,
}

/// What one event log says: phases, hosts and failed tasks.
#[derive(Debug, Default)]
pub struct LogFacts {
    pub phases: Vec<PhaseResult>,
    pub hosts: Vec<String>,
    pub failed_tasks: Vec<FailedTask>,
}

/// Read a `--log-json` event log (one `Event` per line). Lines that are not events are
/// skipped: a child killed mid-write may leave half a line.
pub fn read_log(step: &str, text: &str) -> LogFacts {
    let mut facts = LogFacts::default();
    let mut phase = String::new();
    let add_host = |hosts: &mut Vec<String>, h: &str| {
        if !hosts.iter().any(|x| x == h) {
            hosts.push(h.to_string());
        }
    };
    for line in text.lines() {
        let Ok(ev) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        match ev {
            Event::PhaseStart { phase: p } => phase = p,
            Event::PhaseEnd {
                phase,
                status,
                duration,
            } => facts.phases.push(PhaseResult {
                step: step.to_string(),
                phase,
                status,
                duration: duration.as_secs_f64(),
            }),
            Event::PlayStart { hosts, .. } => {
                for h in &hosts {
                    add_host(&mut facts.hosts, h);
                }
            }
            Event::TaskResult {
                host,
                task,
                location,
                status,
                result,
                ..
            } => {
                add_host(&mut facts.hosts, &host);
                if matches!(status, Status::Failed | Status::Unreachable) {
                    facts.failed_tasks.push(FailedTask {
                        step: step.to_string(),
                        phase: phase.clone(),
                        host,
                        task,
                        location,
                        output: task_output(&result),
                    });
                }
            }
            _ => {}
        }
    }
    facts
}

/// The parts of a module result a reader needs: message, then stderr, then stdout.
fn task_output(r: &TaskResult) -> String {
    let mut out = Vec::new();
    for key in ["msg", "stderr", "stdout"] {
        match r.get(key) {
            Some(Value::String(s)) if !s.is_empty() => out.push(format!("{key}: {s}")),
            Some(v @ (Value::Object(_) | Value::Array(_))) => out.push(format!("{key}: {v}")),
            _ => {}
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_hosts_and_failed_tasks_come_from_the_log() {
        let log = r#"{"event":"phase_start","phase":"create-network"}
{"event":"play_start","name":"p","hosts":["hypervisor-01"],"planned":1}
{"event":"task_result","host":"hypervisor-01","task_id":1,"task":"net","location":"a.yml:3","status":"failed","module":"command","delegated_to":null,"looped":false,"duration":0.5,"result":{"msg":"boom","stderr":"no bridge"}}
{"event":"phase_end","phase":"create-network","status":"failed","duration":1.25}
not json"#;
        let f = read_log("deploy", log);
        assert_eq!(f.phases.len(), 1);
        assert_eq!(f.phases[0].phase, "create-network");
        assert_eq!(f.phases[0].duration, 1.25);
        assert_eq!(f.hosts, ["hypervisor-01"]);
        assert_eq!(f.failed_tasks[0].phase, "create-network");
        assert_eq!(f.failed_tasks[0].output, "msg: boom\nstderr: no bridge");
    }
}
