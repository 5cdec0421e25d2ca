//! Small SVG pieces drawn by kinit itself (no external service): the per-phase timing chart,
//! the status badge and the duration sparkline; plus HTML/XML escaping for every page.

use std::fmt::Write;

pub use crate::report::junit::esc;

/// Horizontal bars, one per (label, seconds, ok).
pub fn timing_chart(rows: &[(String, f64, bool)]) -> String {
    let max = rows.iter().map(|r| r.1).fold(0.0_f64, f64::max).max(0.001);
    let (label_w, bar_w, row_h) = (260.0, 560.0, 22.0);
    let h = row_h * rows.len() as f64 + 10.0;
    let mut o = format!(
        "<svg class=\"timing-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{h}\" \
         role=\"img\" aria-label=\"time per phase\">\n",
        label_w + bar_w + 90.0
    );
    for (i, (label, secs, ok)) in rows.iter().enumerate() {
        let y = i as f64 * row_h + 5.0;
        let w = (secs / max * bar_w).max(1.0);
        let color = if *ok { "#2e8b57" } else { "#c0392b" };
        let _ = writeln!(
            o,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{}</text>\
             <rect class=\"bar\" x=\"{label_w}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{color}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{secs:.1}s</text>",
            y + 14.0,
            esc(label),
            row_h - 6.0,
            label_w + w + 6.0,
            y + 14.0
        );
    }
    o.push_str("</svg>\n");
    o
}

/// A shields-style badge: `<label> | passing|failing|unknown`.
pub fn badge(label: &str, status: Option<bool>) -> String {
    let (word, color) = match status {
        Some(true) => ("passing", "#2e8b57"),
        Some(false) => ("failing", "#c0392b"),
        None => ("unknown", "#999999"),
    };
    let lw = 7 * label.chars().count() as u32 + 10;
    let rw = 7 * word.len() as u32 + 10;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"20\" role=\"img\" \
         aria-label=\"{l}: {word}\"><title>{l}: {word}</title>\
         <rect width=\"{lw}\" height=\"20\" fill=\"#555\"/>\
         <rect x=\"{lw}\" width=\"{rw}\" height=\"20\" fill=\"{color}\"/>\
         <g fill=\"#fff\" font-family=\"monospace\" font-size=\"11\">\
         <text x=\"5\" y=\"14\">{l}</text><text x=\"{tx}\" y=\"14\">{word}</text></g></svg>\n",
        w = lw + rw,
        l = esc(label),
        tx = lw + 5
    )
}

/// Duration history as a polyline, oldest first; failed runs are red dots.
pub fn sparkline(points: &[(f64, bool)]) -> String {
    let (w, h) = (160.0, 30.0);
    let max = points
        .iter()
        .map(|p| p.0)
        .fold(0.0_f64, f64::max)
        .max(0.001);
    let step = if points.len() > 1 {
        w / (points.len() - 1) as f64
    } else {
        0.0
    };
    let xy = |i: usize, v: f64| (i as f64 * step + 3.0, h - v / max * (h - 6.0) - 3.0);
    let mut o = format!(
        "<svg class=\"sparkline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{h}\">",
        w + 6.0
    );
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (x, y) = xy(i, p.0);
            format!("{x:.1},{y:.1}")
        })
        .collect();
    let _ = write!(
        o,
        "<polyline fill=\"none\" stroke=\"#555\" points=\"{}\"/>",
        line.join(" ")
    );
    for (i, p) in points.iter().enumerate() {
        let (x, y) = xy(i, p.0);
        let c = if p.1 { "#2e8b57" } else { "#c0392b" };
        let _ = write!(
            o,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\" fill=\"{c}\"/>"
        );
    }
    o.push_str("</svg>");
    o
}
