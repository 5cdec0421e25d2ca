//! The static run page (`<run>/index.html`): result, steps, phases with durations and a
//! timing chart, hosts, failed tasks with their output and teardown errors. Every value is
//! escaped; the launcher passes the whole page through the redactor before writing it.

use std::fmt::Write;

use super::name::human;
use super::summary::{RunSummary, StepStatus};
use super::svg::{esc, timing_chart};
use crate::report::PhaseStatus;

pub const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}\
.ok,.passed{color:#2e8b57}.failed,.interrupted{color:#c0392b}.skipped{color:#888}\
pre{background:#f4f4f4;padding:.6em;white-space:pre-wrap;max-width:100em}";

pub fn run_page(s: &RunSummary) -> String {
    let result = if s.interrupted {
        "interrupted"
    } else if s.passed {
        "passed"
    } else {
        "failed"
    };
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{n}</title>\
         <style>{STYLE}</style></head><body>\n<h1 id=\"run-name\">{n}</h1>\n\
         <p id=\"result\" class=\"{result}\" data-result=\"{result}\">Result: <b>{result}</b></p>\n\
         <table id=\"facts\"><tr><th>Job</th><td>{l}</td></tr><tr><th>Type</th><td>{t}</td></tr>\
         <tr><th>Pipeline</th><td>{p}</td></tr><tr><th>Runner</th><td>{r}</td></tr>\
         <tr><th>Started</th><td>{st}</td></tr><tr><th>Duration</th><td>{d:.1}s</td></tr>\
         <tr><th>Dry run</th><td>{dry}</td></tr></table>\n",
        n = esc(&s.name),
        l = esc(&s.label),
        t = esc(&s.job_type),
        p = esc(&s.pipeline_id),
        r = esc(&s.runner),
        st = human(s.started),
        d = s.duration,
        dry = if s.dry_run { "yes" } else { "no" },
    );

    o.push_str("<h2>Steps</h2>\n<table id=\"steps\"><tr><th>Step</th><th>Status</th><th>Duration</th><th>Command</th></tr>\n");
    for t in &s.steps {
        let _ = writeln!(
            o,
            "<tr class=\"step\"><td>{}</td><td class=\"{w}\">{w}</td><td>{:.1}s</td><td><code>{}</code></td></tr>",
            esc(&t.name),
            t.duration,
            esc(&t.command),
            w = t.status.word()
        );
    }
    o.push_str("</table>\n");
    for t in s
        .steps
        .iter()
        .filter(|t| t.status != StepStatus::Ok && !t.output.is_empty())
    {
        let _ = writeln!(
            o,
            "<h3>{} output</h3><pre>{}</pre>",
            esc(&t.name),
            esc(&t.output)
        );
    }

    o.push_str("<h2>Phases</h2>\n<table id=\"phases\"><tr><th>Step</th><th>Phase</th><th>Status</th><th>Duration</th></tr>\n");
    for p in &s.phases {
        let _ = writeln!(
            o,
            "<tr class=\"phase\" data-step=\"{step}\" data-phase=\"{ph}\"><td>{step}</td><td>{ph}</td><td class=\"{st}\">{st}</td><td>{:.1}s</td></tr>",
            p.duration,
            step = esc(&p.step),
            ph = esc(&p.phase),
            st = p.status.word()
        );
    }
    o.push_str("</table>\n");
    let rows: Vec<(String, f64, bool)> = s
        .phases
        .iter()
        .map(|p| {
            (
                format!("{}: {}", p.step, p.phase),
                p.duration,
                p.status == PhaseStatus::Ok,
            )
        })
        .collect();
    if !rows.is_empty() {
        o.push_str("<h2>Time per phase</h2>\n");
        o.push_str(&timing_chart(&rows));
    }

    o.push_str("<h2>Hosts</h2>\n<ul id=\"hosts\">\n");
    for h in &s.hosts {
        let _ = writeln!(o, "<li>{}</li>", esc(h));
    }
    o.push_str("</ul>\n<h2>Failed tasks</h2>\n<div id=\"failed-tasks\">\n");
    if s.failed_tasks.is_empty() {
        o.push_str("<p>None.</p>\n");
    }
    for t in &s.failed_tasks {
        let _ = writeln!(
            o,
            "<div class=\"failed-task\"><h3>{}: {} on {}</h3><p>{}</p><pre>{}</pre></div>",
            esc(&t.phase),
            esc(&t.task),
            esc(&t.host),
            esc(&t.location),
            esc(&t.output)
        );
    }
    o.push_str("</div>\n<h2>Teardown errors</h2>\n<ul id=\"teardown-errors\">\n");
    for e in &s.teardown_errors {
        let _ = writeln!(o, "<li><pre>{}</pre></li>", esc(e));
    }
    o.push_str("</ul>\n<p><a href=\"junit.xml\">JUnit XML</a> · <a href=\"events.jsonl\">JSON event log</a> · <a href=\"../index.html\">all runs</a></p>\n</body></html>\n");
    o
}
