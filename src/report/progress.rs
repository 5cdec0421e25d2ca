//! Live progress on a terminal (indicatif): an overall bar of host-task results and one
//! spinner line per running host showing its current task. Result lines print above the bars.

use std::collections::HashMap;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use super::event::Event;

pub struct Progress {
    multi: MultiProgress,
    overall: ProgressBar,
    hosts: HashMap<String, ProgressBar>,
}

impl Progress {
    pub fn new() -> Self {
        let multi = MultiProgress::new();
        let overall = multi.add(ProgressBar::new(0));
        overall.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        overall.enable_steady_tick(Duration::from_millis(200));
        Self {
            multi,
            overall,
            hosts: HashMap::new(),
        }
    }

    pub fn handle(&mut self, ev: &Event, text: &str) {
        let trimmed = text.trim_end_matches('\n');
        if !trimmed.is_empty() {
            let _ = self.multi.println(trimmed);
        }
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
                    b.enable_steady_tick(Duration::from_millis(120));
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
