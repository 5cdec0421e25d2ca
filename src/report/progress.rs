//! Live progress on a terminal (indicatif): an overall bar of host-task results and one
//! spinner line per running host showing its current task. Result lines print above the bars.

use std::collections::HashMap;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::event::Event;

pub struct Progress {
    multi: MultiProgress,
    overall: ProgressBar,
    hosts: HashMap<String, ProgressBar>,
    /// Redraw on a timer (off where the drawing is compared, in tests).
    ticking: bool,
}

impl Progress {
    pub fn new() -> Self {
        Self::drawing_to(ProgressDrawTarget::stderr(), true)
    }

    fn drawing_to(target: ProgressDrawTarget, ticking: bool) -> Self {
        let multi = MultiProgress::with_draw_target(target);
        let overall = multi.add(ProgressBar::new(0));
        overall.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        if ticking {
            overall.enable_steady_tick(Duration::from_millis(200));
        }
        Self {
            multi,
            overall,
            hosts: HashMap::new(),
            ticking,
        }
    }

    /// A handle on the bars, to hide them while the terminal is used otherwise.
    pub fn bars(&self) -> MultiProgress {
        self.multi.clone()
    }

    /// Print lines above the bars.
    pub fn print(&self, text: &str) {
        let trimmed = text.trim_end_matches('\n');
        if !trimmed.is_empty() {
            let _ = self.multi.println(trimmed);
        }
    }

    pub fn handle(&mut self, ev: &Event, text: &str) {
        self.print(text);
        match ev {
            Event::PlayStart { name, planned, .. } => {
                self.overall.set_message(name.clone());
                self.overall.inc_length(*planned as u64);
            }
            Event::HostTask { host, task } => {
                let bar = self.hosts.entry(host.clone()).or_insert_with(|| {
                    let b = self.multi.add(ProgressBar::new_spinner());
                    b.set_style(
                        ProgressStyle::with_template("  {spinner} {prefix}: {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    b.set_prefix(host.clone());
                    if self.ticking {
                        b.enable_steady_tick(Duration::from_millis(120));
                    }
                    b
                });
                bar.set_message(task.clone());
            }
            Event::Progress {
                host,
                task,
                status,
                elapsed,
                ..
            } => {
                if let Some(bar) = self.hosts.get(host) {
                    bar.set_message(format!(
                        "{task}: {status} {}",
                        super::event::minutes_seconds(*elapsed)
                    ));
                }
            }
            Event::TaskResult { .. } => {
                if self.overall.position() >= self.overall.length().unwrap_or(0) {
                    self.overall.inc_length(1);
                }
                self.overall.inc(1);
            }
            Event::PlayEnd { .. } => {
                for (_, b) in self.hosts.drain() {
                    b.finish_and_clear();
                }
            }
            _ => {}
        }
    }

    pub fn finish(self) {
        for (_, b) in self.hosts {
            b.finish_and_clear();
        }
        self.overall.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use indicatif::InMemoryTerm;

    use super::*;
    use crate::report::{Status, TaskResult};

    /// The screen as a user sees it: the overall bar, one line per busy host with its task
    /// (and a module's own status), result lines printed above the bars.
    #[test]
    fn progress_lines_snapshot() {
        let term = InMemoryTerm::new(10, 80);
        let mut p = Progress::drawing_to(
            ProgressDrawTarget::term_like_with_hz(Box::new(term.clone()), 255),
            false,
        );
        let hosts = vec!["node-1".to_string(), "node-2".to_string()];
        p.handle(
            &Event::PlayStart {
                name: "Deploy".into(),
                hosts,
                planned: 4,
            },
            "",
        );
        for host in ["node-1", "node-2"] {
            p.handle(
                &Event::HostTask {
                    host: host.into(),
                    task: "Download the Windows ISO".into(),
                },
                "",
            );
        }
        p.handle(
            &Event::Progress {
                host: "node-2".into(),
                task: "Download the Windows ISO".into(),
                status: "1.2 GiB of 4.7 GiB".into(),
                elapsed: Duration::from_secs(65),
                detail: serde_json::Value::Null,
            },
            "",
        );
        let result = Event::TaskResult {
            host: "node-1".into(),
            task_id: 1,
            task: "Download the Windows ISO".into(),
            location: "site.yml:4".into(),
            status: Status::Changed,
            module: Some("get_url".into()),
            delegated_to: None,
            looped: false,
            duration: Duration::ZERO,
            result: TaskResult::ok(),
        };
        p.handle(&result, "changed: [node-1]\n");
        // The elapsed clock of the overall bar is the one part that moves; the run is far
        // under a second here.
        insta::assert_snapshot!("progress_lines", term.contents());
        p.finish();
    }
}
