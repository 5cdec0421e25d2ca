//! JUnit XML for one run: a suite per step, a test case per step, per phase and per failed
//! task, so a CI server shows which phase broke and what the task said.

use std::fmt::Write;

use super::summary::{RunSummary, StepStatus};
use super::svg::esc;

pub fn render(s: &RunSummary) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"{}\">", esc(&s.name));
    for step in &s.steps {
        let mut cases = String::new();
        let (mut tests, mut failures, mut skipped) = (0, 0, 0);
        let mut case = |class: &str, name: &str, secs: f64, failure: Option<&str>, skip: bool| {
            tests += 1;
            let _ = write!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{secs:.3}\"",
                esc(class),
                esc(name)
            );
            if let Some(msg) = failure {
                failures += 1;
                let first = msg.lines().next().unwrap_or_default();
                let _ = writeln!(
                    cases,
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                    esc(first),
                    esc(msg)
                );
            } else if skip {
                skipped += 1;
                cases.push_str(">\n      <skipped/>\n    </testcase>\n");
            } else {
                cases.push_str("/>\n");
            }
        };
        let class = format!("{}.{}", s.label, step.name);
        let failed = matches!(step.status, StepStatus::Failed | StepStatus::Interrupted);
        let msg = format!("{} ({})\n{}", step.status.word(), step.command, step.output);
        case(
            &class,
            &step.name,
            step.duration,
            failed.then_some(msg.as_str()),
            step.status == StepStatus::Skipped,
        );
        for p in s.phases.iter().filter(|p| p.step == step.name) {
            let m = format!("phase {} ended {}", p.phase, p.status);
            case(
                &class,
                &p.phase,
                p.duration,
                (p.status != "ok").then_some(m.as_str()),
                false,
            );
        }
        for t in s.failed_tasks.iter().filter(|t| t.step == step.name) {
            let name = format!("{}: {} on {}", t.phase, t.task, t.host);
            let m = format!("{}\n{}", t.location, t.output);
            case(
                &format!("{class}.{}", t.phase),
                &name,
                0.0,
                Some(m.as_str()),
                false,
            );
        }
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" \
             skipped=\"{skipped}\" time=\"{:.3}\">",
            esc(&class),
            step.duration
        );
        out.push_str(&cases);
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
