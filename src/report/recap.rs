//! `RunStats`: the per-host counters behind PLAY RECAP and the per-task timing summary, and
//! their rendering.

use std::fmt::Write;
use std::time::Duration;

use indexmap::IndexMap;

use super::event::Status;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostStats {
    pub ok: u32,
    pub changed: u32,
    pub unreachable: u32,
    pub failed: u32,
    pub skipped: u32,
    pub rescued: u32,
    pub ignored: u32,
}

#[derive(Debug, Clone, Default)]
pub struct RunStats {
    pub hosts: IndexMap<String, HostStats>,
    /// Total time per task (`name (file:line)`), in first-run order.
    pub timings: IndexMap<String, Duration>,
    pub interrupted: bool,
    /// `kinit run` phases in run order: (name, status, duration).
    pub phases: Vec<(String, String, Duration)>,
}

impl RunStats {
    pub fn record(&mut self, host: &str, status: Status) {
        let h = self.hosts.entry(host.to_string()).or_default();
        match status {
            Status::Ok => h.ok += 1,
            Status::Changed => {
                h.ok += 1;
                h.changed += 1
            }
            Status::Failed => h.failed += 1,
            Status::Ignored => {
                h.ok += 1;
                h.ignored += 1
            }
            Status::Skipped => h.skipped += 1,
            Status::Unreachable => h.unreachable += 1,
        }
    }

    pub fn rescued(&mut self, host: &str) {
        let h = self.hosts.entry(host.to_string()).or_default();
        h.rescued += 1;
        // The failure that was rescued no longer counts against the host.
        h.failed = h.failed.saturating_sub(1);
    }

    pub fn time(&mut self, task: &str, d: Duration) {
        *self.timings.entry(task.to_string()).or_default() += d;
    }

    pub fn phase(&mut self, name: &str, status: super::PhaseStatus, d: Duration) {
        self.phases
            .push((name.to_string(), status.word().to_string(), d));
    }

    pub fn any_failed(&self) -> bool {
        self.hosts.values().any(|h| h.failed > 0)
    }

    pub fn any_unreachable(&self) -> bool {
        self.hosts.values().any(|h| h.unreachable > 0)
    }

    /// The PLAY RECAP table, hosts sorted by name as ansible-playbook's default callback
    /// sorts them (`hosts = sorted(stats.processed.keys())` in
    /// ansible/plugins/callback/default.py, `v2_playbook_on_stats`), so the table does not
    /// change with the order parallel hosts happened to report in.
    pub fn recap(&self) -> String {
        let mut out = String::from("PLAY RECAP\n");
        let width = self
            .hosts
            .keys()
            .map(String::len)
            .max()
            .unwrap_or(0)
            .max(20);
        let mut hosts: Vec<(&String, &HostStats)> = self.hosts.iter().collect();
        hosts.sort_by(|a, b| a.0.cmp(b.0));
        for (host, s) in hosts {
            let _ = writeln!(
                out,
                "{host:<width$} : ok={:<4} changed={:<4} unreachable={:<4} failed={:<4} skipped={:<4} rescued={:<4} ignored={}",
                s.ok, s.changed, s.unreachable, s.failed, s.skipped, s.rescued, s.ignored
            );
        }
        out
    }

    /// The PHASES table of `kinit run` (empty for plain playbook runs).
    pub fn phase_summary(&self) -> String {
        if self.phases.is_empty() {
            return String::new();
        }
        let mut out = String::from("PHASES\n");
        for (name, status, d) in &self.phases {
            let _ = writeln!(out, "{name:<22} {status:<12} {:>8.2}s", d.as_secs_f64());
        }
        let total: Duration = self.phases.iter().map(|p| p.2).sum();
        let _ = writeln!(
            out,
            "{:<22} {:<12} {:>8.2}s",
            "total",
            "",
            total.as_secs_f64()
        );
        out
    }

    /// The slowest tasks first (ties in run order), at most `limit`.
    pub fn timing_summary(&self, limit: usize) -> String {
        let mut rows: Vec<(usize, &String, &Duration)> = self
            .timings
            .iter()
            .enumerate()
            .map(|(i, (k, v))| (i, k, v))
            .collect();
        rows.sort_by(|a, b| b.2.cmp(a.2).then(a.0.cmp(&b.0)));
        let mut out = String::from("TASK TIMING\n");
        let width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).min(70);
        for (_, name, d) in rows.into_iter().take(limit) {
            let _ = writeln!(out, "{name:<width$} {:>8.2}s", d.as_secs_f64());
        }
        out
    }
}
