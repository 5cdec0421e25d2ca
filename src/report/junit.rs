//! JUnit XML: one test case per (host, task) result, grouped in one suite per play.

use std::fmt::Write;

use serde_json::Value;

use super::event::{Event, Status};

struct Case {
    host: String,
    task: String,
    status: Status,
    secs: f64,
    msg: String,
}

#[derive(Default)]
pub struct Junit {
    suites: Vec<(String, Vec<Case>)>,
}

impl Junit {
    pub fn observe(&mut self, ev: &Event) {
        match ev {
            Event::PlayStart { name, .. } => self.suites.push((name.clone(), Vec::new())),
            Event::TaskResult {
                host,
                task,
                status,
                duration,
                result,
                ..
            } => {
                if self.suites.is_empty() {
                    self.suites.push(("kinit".into(), Vec::new()));
                }
                let msg = result
                    .get("msg")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if let Some((_, cases)) = self.suites.last_mut() {
                    cases.push(Case {
                        host: host.clone(),
                        task: task.clone(),
                        status: *status,
                        secs: duration.as_secs_f64(),
                        msg,
                    });
                }
            }
            _ => {}
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
        for (name, cases) in &self.suites {
            let failures = cases
                .iter()
                .filter(|c| matches!(c.status, Status::Failed | Status::Unreachable))
                .count();
            let skipped = cases.iter().filter(|c| c.status == Status::Skipped).count();
            let _ = writeln!(
                out,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
                esc(name),
                cases.len()
            );
            for c in cases {
                let _ = write!(
                    out,
                    "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                    esc(&c.host),
                    esc(&c.task),
                    c.secs
                );
                match c.status {
                    Status::Failed | Status::Unreachable => {
                        let _ = writeln!(
                            out,
                            ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                            esc(&c.msg),
                            esc(&c.msg)
                        );
                    }
                    Status::Skipped => out.push_str(">\n      <skipped/>\n    </testcase>\n"),
                    _ => out.push_str("/>\n"),
                }
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
