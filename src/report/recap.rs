//! `RunStats`: the per-host counters behind PLAY RECAP and the per-task timing summary, and
//! their rendering.

use std::fmt::Write;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::Value;

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
    /// `set_stats` data: per host, and for the whole run under `None`.
    pub custom: std::collections::BTreeMap<Option<String>, serde_json::Map<String, Value>>,
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

    /// Take in a result's `ansible_stats` (what `set_stats` returns), as ansible-core's
    /// strategy does: for `host` with `per_host`, else for the run; with `aggregate` each
    /// value is added to the one before it (`StatsStats.update_custom_stats`: mappings
    /// merged, numbers summed, texts and lists joined, a value of another type ignored),
    /// otherwise it replaces it.
    pub fn custom_stats(&mut self, host: &str, stats: &Value) {
        let Some(data) = stats.get("data").and_then(Value::as_object) else {
            return;
        };
        let on = |k: &str| stats.get(k).and_then(Value::as_bool).unwrap_or(false);
        let key = on("per_host").then(|| host.to_string());
        let aggregate = on("aggregate");
        let custom = self.custom.entry(key).or_default();
        for (k, v) in data {
            match custom.get_mut(k) {
                Some(old) if aggregate => {
                    if let Some(sum) = added(old, v) {
                        *old = sum;
                    }
                }
                _ => {
                    custom.insert(k.clone(), v.clone());
                }
            }
        }
    }

    /// ansible-playbook's CUSTOM STATS section (`show_custom_stats`): each host's, then the
    /// run's, as one-space-indented JSON with its line breaks taken out. Empty without any.
    pub fn custom_summary(&self) -> String {
        if self.custom.is_empty() {
            return String::new();
        }
        let one_line = |m: &serde_json::Map<String, Value>| {
            let mut out = Vec::new();
            let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
            let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
            let sorted: std::collections::BTreeMap<&String, &Value> = m.iter().collect();
            let _ = serde::Serialize::serialize(&sorted, &mut ser);
            String::from_utf8_lossy(&out).replace('\n', "")
        };
        let mut out = String::from("\nCUSTOM STATS:\n");
        for (host, m) in self.custom.iter().filter(|(h, _)| h.is_some()) {
            let _ = writeln!(
                out,
                "\t{}: {}",
                host.as_deref().unwrap_or_default(),
                one_line(m)
            );
        }
        if let Some(run) = self.custom.get(&None) {
            let _ = writeln!(out, "\n\tRUN: {}", one_line(run));
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

/// `old + new` as Python adds them for `update_custom_stats`, `None` where the types differ
/// (the stat is then left as it was).
fn added(old: &Value, new: &Value) -> Option<Value> {
    Some(match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut m = a.clone();
            for (k, v) in b {
                let merged = match (m.get(k), v) {
                    (Some(Value::Object(_)), Value::Object(_)) => added(&m[k], v)?,
                    _ => v.clone(),
                };
                m.insert(k.clone(), merged);
            }
            Value::Object(m)
        }
        (Value::Array(a), Value::Array(b)) => Value::Array(a.iter().chain(b).cloned().collect()),
        (Value::String(a), Value::String(b)) => Value::String(format!("{a}{b}")),
        (Value::Number(a), Value::Number(b)) if a.is_f64() == b.is_f64() => {
            match (a.as_i64(), b.as_i64()) {
                (Some(x), Some(y)) => Value::from(x.checked_add(y)?),
                _ => Value::from(a.as_f64()? + b.as_f64()?),
            }
        }
        (Value::Bool(a), Value::Bool(b)) => Value::from(i64::from(*a) + i64::from(*b)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::RunStats;

    #[test]
    fn custom_stats_add_up_as_ansible_core_adds_them() {
        let mut s = RunStats::default();
        let set = |data, per_host, aggregate| json!({"data": data, "per_host": per_host, "aggregate": aggregate});
        s.custom_stats(
            "a",
            &set(
                json!({"n": 1, "f": 0.5, "t": "x", "m": {"k": {"a": 1}}}),
                false,
                true,
            ),
        );
        s.custom_stats(
            "b",
            &set(
                json!({"n": 2, "f": 1, "t": "y", "m": {"k": {"b": 2}}}),
                false,
                true,
            ),
        );
        // A value of another type leaves the stat as it was; `aggregate: no` replaces it.
        s.custom_stats("b", &set(json!({"n": "z", "t": ["l"]}), false, true));
        s.custom_stats("a", &set(json!({"f": 7}), false, false));
        s.custom_stats("a", &set(json!({"h": 1}), true, true));
        assert_eq!(
            serde_json::Value::Object(s.custom[&None].clone()),
            json!({"n": 3, "f": 7, "t": "xy", "m": {"k": {"a": 1, "b": 2}}})
        );
        assert_eq!(
            s.custom_summary(),
            "\nCUSTOM STATS:\n\ta: { \"h\": 1}\n\n\tRUN: { \"f\": 7, \"m\": {  \"k\": {   \"a\": 1,   \
             \"b\": 2  } }, \"n\": 3, \"t\": \"xy\"}\n"
        );
        assert_eq!(RunStats::default().custom_summary(), "");
    }
}
