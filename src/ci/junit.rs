//! JUnit XML for one run: a suite per step, a test case per step, per phase and per failed
//! task, so a CI server shows which phase broke and what the task said. Written by the same
//! writer as `kinit playbook --junit` (`report::junit`).

use super::summary::{RunSummary, StepStatus};
use crate::report::PhaseStatus;
use crate::report::junit::{Case, CaseOutcome, Suite, write_xml};

pub fn render(s: &RunSummary) -> String {
    let mut suites = Vec::new();
    for step in &s.steps {
        let class = format!("{}.{}", s.label, step.name);
        let first = |msg: &str| msg.lines().next().unwrap_or_default().to_string();
        let msg = format!("{} ({})\n{}", step.status.word(), step.command, step.output);
        let outcome = match step.status {
            StepStatus::Ok => CaseOutcome::Passed,
            StepStatus::Skipped => CaseOutcome::Skipped,
            StepStatus::Failed => CaseOutcome::Failed {
                message: first(&msg),
                text: msg,
            },
            // Stopped from outside: not a verdict on the cluster.
            StepStatus::Interrupted => CaseOutcome::Error {
                message: first(&msg),
                text: msg,
            },
        };
        let mut cases = vec![Case {
            classname: class.clone(),
            name: step.name.clone(),
            secs: step.duration,
            outcome,
        }];
        for p in s.phases.iter().filter(|p| p.step == step.name) {
            let message = format!("phase {} ended {}", p.phase, p.status);
            cases.push(Case {
                classname: class.clone(),
                name: p.phase.clone(),
                secs: p.duration,
                outcome: match p.status {
                    PhaseStatus::Ok => CaseOutcome::Passed,
                    PhaseStatus::Interrupted => CaseOutcome::Error {
                        text: message.clone(),
                        message,
                    },
                    _ => CaseOutcome::Failed {
                        text: message.clone(),
                        message,
                    },
                },
            });
        }
        for t in s.failed_tasks.iter().filter(|t| t.step == step.name) {
            let text = format!("{}\n{}", t.location, t.output);
            cases.push(Case {
                classname: format!("{class}.{}", t.phase),
                name: format!("{}: {} on {}", t.phase, t.task, t.host),
                secs: 0.0,
                outcome: CaseOutcome::Failed {
                    message: first(&text),
                    text,
                },
            });
        }
        suites.push(Suite {
            name: class,
            time: Some(step.duration),
            cases,
        });
    }
    write_xml(Some(&s.name), &suites)
}
