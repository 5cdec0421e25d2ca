//! `kinit ci index <out>`: the page over every run folder in `<out>` (each holding a
//! `summary.json`): per job label a status badge (`badges/<label>.svg`), when it last passed,
//! and the last N runs with their durations, so a job that broke or slowed down stands out.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::html::STYLE;
use super::name::human;
use super::summary::RunSummary;
use super::svg::{badge, esc, sparkline};
use super::{CiError, write};

/// A run this much slower than the median of the job's earlier runs is flagged.
const SLOWER: f64 = 1.2;

pub fn load_runs(out: &Path) -> Result<Vec<RunSummary>, CiError> {
    let rd = std::fs::read_dir(out).map_err(|source| CiError::ReadReports {
        path: out.to_path_buf(),
        source,
    })?;
    let mut runs = Vec::new();
    for e in rd.flatten() {
        let p = e.path().join("summary.json");
        // Folders without a readable summary (unfinished or foreign) are not runs.
        if let Ok(text) = std::fs::read_to_string(&p)
            && let Ok(s) = serde_json::from_str::<RunSummary>(&text)
        {
            runs.push(s);
        }
    }
    runs.sort_by(|a, b| (a.started, &a.name).cmp(&(b.started, &b.name)));
    Ok(runs)
}

pub fn write_index(out: &Path, history: usize) -> Result<PathBuf, CiError> {
    let runs = load_runs(out)?;
    let mut by_label: IndexMap<&str, Vec<&RunSummary>> = IndexMap::new();
    for r in &runs {
        by_label.entry(r.label.as_str()).or_default().push(r);
    }
    by_label.sort_keys();
    let badges = out.join("badges");
    std::fs::create_dir_all(&badges).map_err(|source| CiError::Write {
        path: badges.clone(),
        source,
    })?;
    let mut o = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kinit periodic jobs</title>\
         <style>{STYLE}</style></head><body>\n<h1>kinit periodic jobs</h1>\n\
         <table id=\"jobs\"><tr><th>Job</th><th>Status</th><th>Last passed</th><th>Last duration</th>\
         <th>Duration trend</th><th>Last {history} runs</th></tr>\n"
    );
    for (label, rs) in &by_label {
        let last = rs.last().copied();
        let status = last.map(|r| r.passed);
        let file = format!("{}.svg", safe(label));
        write(&badges.join(&file), &badge(label, status))?;
        // When it last passed, linked to that run.
        let last_pass = rs
            .iter()
            .rev()
            .find(|r| r.passed)
            .map_or("never".to_string(), |r| {
                format!(
                    "<a href=\"{}/index.html\">{}</a>",
                    esc(&r.name),
                    human(r.started)
                )
            });
        let shown: Vec<&RunSummary> = rs.iter().rev().take(history).rev().copied().collect();
        let points: Vec<(f64, bool)> = shown.iter().map(|r| (r.duration, r.passed)).collect();
        let trend = last.map_or(String::new(), |l| regression(rs, l));
        let mut runs_cell = String::new();
        for r in shown.iter().rev() {
            let _ = write!(
                runs_cell,
                "<a class=\"run {c}\" href=\"{n}/index.html\" title=\"{n}\">{w}</a> ",
                c = if r.passed { "passed" } else { "failed" },
                n = esc(&r.name),
                w = if r.passed { "&#10004;" } else { "&#10008;" }
            );
        }
        let _ = writeln!(
            o,
            "<tr class=\"job\" data-label=\"{l}\"><td>{l}</td>\
             <td><img class=\"badge\" src=\"badges/{f}\" alt=\"{l}: {s}\"></td>\
             <td class=\"last-passed\">{lp}</td><td>{d}{trend}</td><td>{spark}</td><td>{runs_cell}</td></tr>",
            l = esc(label),
            f = esc(&file),
            s = match status {
                Some(true) => "passing",
                Some(false) => "failing",
                None => "unknown",
            },
            lp = last_pass,
            d = last.map_or(String::new(), |r| format!("{:.1}s", r.duration)),
            spark = sparkline(&points),
        );
    }
    o.push_str("</table>\n<h2>All runs</h2>\n<ul id=\"runs\">\n");
    for r in runs.iter().rev() {
        let _ = writeln!(
            o,
            "<li><a href=\"{n}/index.html\">{n}</a> {s} ({d:.1}s)</li>",
            n = esc(&r.name),
            s = if r.passed { "passed" } else { "failed" },
            d = r.duration
        );
    }
    o.push_str("</ul>\n</body></html>\n");
    let page = out.join("index.html");
    write(&page, &o)?;
    Ok(page)
}

/// ` <span class="regression">+35%</span>` when the last run was much slower than the median
/// of the earlier ones, else the change in a plain span.
fn regression(rs: &[&RunSummary], last: &RunSummary) -> String {
    let mut before: Vec<f64> = rs[..rs.len() - 1].iter().map(|r| r.duration).collect();
    if before.is_empty() {
        return String::new();
    }
    before.sort_by(f64::total_cmp);
    let median = before[before.len() / 2].max(0.001);
    let pct = (last.duration / median - 1.0) * 100.0;
    let class = if last.duration > median * SLOWER {
        "regression failed"
    } else {
        "trend"
    };
    format!(" <span class=\"{class}\">{pct:+.0}%</span>")
}

/// Label as a file name: anything but letters, digits, `-` and `.` becomes `_`.
fn safe(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
