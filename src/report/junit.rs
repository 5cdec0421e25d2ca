//! JUnit XML: the one writer behind `kinit playbook --junit` / `kinit run` (a suite per play,
//! a test case per host and task, built by `Junit` from the events) and `kinit ci run` (a
//! suite per step, built by `ci::junit`). Every file it writes is valid against the JUnit
//! schema Jenkins, GitLab and GitHub read (`tests/fixtures/ci/junit.xsd`): each suite carries
//! `tests`, `failures`, `errors`, `skipped` and `time`.

use std::fmt::Write;

use super::event::{Event, Status};

/// How one test case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseOutcome {
    Passed,
    Skipped,
    /// The thing tested went wrong (a failed task, a failed phase).
    Failed {
        message: String,
        text: String,
    },
    /// It could not be tested to its end (an unreachable host, an interrupted step).
    Error {
        message: String,
        text: String,
    },
}

/// One `<testcase>`.
#[derive(Debug, Clone)]
pub struct Case {
    pub classname: String,
    pub name: String,
    pub secs: f64,
    pub outcome: CaseOutcome,
}

/// One `<testsuite>`; `time` defaults to the sum of its cases.
#[derive(Debug, Clone, Default)]
pub struct Suite {
    pub name: String,
    pub time: Option<f64>,
    pub cases: Vec<Case>,
}

/// The document: `<testsuites name=..>` around every suite.
pub fn write_xml(name: Option<&str>, suites: &[Suite]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    match name {
        Some(n) => {
            let _ = writeln!(out, "<testsuites name=\"{}\">", esc(n));
        }
        None => out.push_str("<testsuites>\n"),
    }
    for s in suites {
        let count = |f: fn(&CaseOutcome) -> bool| s.cases.iter().filter(|c| f(&c.outcome)).count();
        let failures = count(|o| matches!(o, CaseOutcome::Failed { .. }));
        let errors = count(|o| matches!(o, CaseOutcome::Error { .. }));
        let skipped = count(|o| matches!(o, CaseOutcome::Skipped));
        let time = s
            .time
            .unwrap_or_else(|| s.cases.iter().map(|c| c.secs).sum());
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" \
             skipped=\"{skipped}\" time=\"{:.3}\">",
            esc(&s.name),
            s.cases.len(),
            secs(time)
        );
        for c in &s.cases {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                esc(&c.classname),
                esc(&c.name),
                secs(c.secs)
            );
            let (tag, message, text) = match &c.outcome {
                CaseOutcome::Passed => {
                    out.push_str("/>\n");
                    continue;
                }
                CaseOutcome::Skipped => {
                    out.push_str(">\n      <skipped/>\n    </testcase>\n");
                    continue;
                }
                CaseOutcome::Failed { message, text } => ("failure", message, text),
                CaseOutcome::Error { message, text } => ("error", message, text),
            };
            let _ = writeln!(
                out,
                ">\n      <{tag} message=\"{}\">{}</{tag}>\n    </testcase>",
                esc(message),
                esc(text)
            );
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// The schema wants a non-negative decimal: no NaN, no infinity, no minus sign.
fn secs(s: f64) -> f64 {
    if s.is_finite() && s > 0.0 { s } else { 0.0 }
}

/// Escape text for XML (and HTML) content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // XML 1.0 forbids most control characters even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// Collects the task results of a playbook run: a suite per play, a case per host and task.
#[derive(Default)]
pub struct Junit {
    suites: Vec<Suite>,
}

impl Junit {
    pub fn observe(&mut self, ev: &Event) {
        match ev {
            Event::PlayStart { name, .. } => self.suites.push(Suite {
                name: name.clone(),
                ..Suite::default()
            }),
            Event::TaskResult {
                host,
                task,
                status,
                duration,
                result,
                ..
            } => {
                if self.suites.is_empty() {
                    self.suites.push(Suite {
                        name: "kinit".into(),
                        ..Suite::default()
                    });
                }
                let msg = result.msg_str().unwrap_or_default().to_string();
                // An unreachable host is an error, not a failure: its task did not run, so
                // nothing was tested. (Ansible's junit callback leaves such a host out of the
                // report altogether, which hides it; the recap still counts it unreachable.)
                let outcome = match status {
                    Status::Failed => CaseOutcome::Failed {
                        message: msg.clone(),
                        text: msg,
                    },
                    Status::Unreachable => CaseOutcome::Error {
                        message: format!("unreachable: {msg}"),
                        text: msg,
                    },
                    Status::Skipped => CaseOutcome::Skipped,
                    _ => CaseOutcome::Passed,
                };
                if let Some(s) = self.suites.last_mut() {
                    s.cases.push(Case {
                        classname: host.clone(),
                        name: task.clone(),
                        secs: duration.as_secs_f64(),
                        outcome,
                    });
                }
            }
            _ => {}
        }
    }

    pub fn render(&self) -> String {
        write_xml(None, &self.suites)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_host_is_an_error_and_a_failed_task_a_failure() {
        let mut junit = Junit::default();
        let result = |host: &str, status, msg: &str| Event::TaskResult {
            host: host.into(),
            task_id: 1,
            task: "ping".into(),
            location: "site.yml:4".into(),
            status,
            module: None,
            delegated_to: None,
            looped: false,
            duration: std::time::Duration::from_millis(10),
            result: crate::report::TaskResult::failed(msg),
        };
        junit.observe(&Event::PlayStart {
            name: "p".into(),
            hosts: vec![],
            planned: 3,
        });
        junit.observe(&result("a", Status::Unreachable, "connection refused"));
        junit.observe(&result("b", Status::Failed, "rc=3"));
        junit.observe(&result("c", Status::Ignored, "rc=1"));
        let xml = junit.render();
        assert!(
            xml.contains("tests=\"3\" failures=\"1\" errors=\"1\" skipped=\"0\""),
            "{xml}"
        );
        assert!(
            xml.contains("<error message=\"unreachable: connection refused\">"),
            "{xml}"
        );
        assert!(xml.contains("<failure message=\"rc=3\">"), "{xml}");
    }

    #[test]
    fn counts_and_escapes() {
        let case = |name: &str, outcome| Case {
            classname: "h<1>".into(),
            name: name.into(),
            secs: 0.5,
            outcome,
        };
        let suite = Suite {
            name: "play \"one\"".into(),
            time: None,
            cases: vec![
                case("ok", CaseOutcome::Passed),
                case("skip", CaseOutcome::Skipped),
                case(
                    "bad",
                    CaseOutcome::Failed {
                        message: "a & b".into(),
                        text: "x\u{1}y".into(),
                    },
                ),
                case(
                    "gone",
                    CaseOutcome::Error {
                        message: "unreachable".into(),
                        text: String::new(),
                    },
                ),
            ],
        };
        let xml = write_xml(Some("run"), &[suite]);
        assert!(xml.contains(
            "<testsuite name=\"play &quot;one&quot;\" tests=\"4\" failures=\"1\" errors=\"1\" \
             skipped=\"1\" time=\"2.000\">"
        ));
        assert!(xml.contains("classname=\"h&lt;1&gt;\""));
        assert!(xml.contains("<failure message=\"a &amp; b\">x\u{FFFD}y</failure>"));
        assert!(xml.contains("<error message=\"unreachable\"></error>"));
        assert!(
            xml.starts_with(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"run\">"
            )
        );
    }
}
