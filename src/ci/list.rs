//! `kinit ci list` output: a table for people, JSON for a scheduler's job matrix (GitHub
//! Actions `fromJSON`), bare labels for shell loops (GitLab CI).

use std::fmt::Write;

use super::jobs::Job;

/// How `kinit ci list` prints the jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Labels,
}

pub fn render(jobs: &[&Job], format: Format) -> String {
    match format {
        Format::Table => {
            let mut o = String::new();
            for j in jobs {
                let _ = writeln!(
                    o,
                    "{:<28} {:<8} {:<22} {}",
                    j.label,
                    j.schedule.word(),
                    j.runner,
                    j.shape.spec()
                );
            }
            o
        }
        Format::Labels => jobs.iter().map(|j| format!("{}\n", j.label)).collect(),
        Format::Json => {
            let rows: Vec<serde_json::Value> = jobs
                .iter()
                .map(|j| {
                    serde_json::json!({
                        "label": j.label,
                        "schedule": j.schedule.word(),
                        "runner": j.runner,
                        "spec": j.shape.spec(),
                    })
                })
                .collect();
            format!("{}\n", serde_json::Value::Array(rows))
        }
    }
}
