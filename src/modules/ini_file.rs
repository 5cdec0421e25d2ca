//! `ini_file` (community.general's; ansible-core has none and routes the short name there):
//! set, add or remove `option = value` lines, or whole sections, in an INI-style file.
//!
//! The file is read in the probe and edited on the controller by [`edit`] (pure, unit
//! tested), which follows the line algorithm of community.general 11.4 (the version the
//! `ansible` 12 bundle for ansible-core 2.19 ships, plugins/modules/ini_file.py): a sentinel
//! section at the top holds the options before the first section, a commented-out `#opt = x`
//! counts as the option unless `modify_inactive_option: false`, new options go after the
//! section's last line that is neither blank nor a comment, a missing section is appended at
//! the end, and a file that does not end in a newline gets one (which alone is a change).
//! Content is written back only when it changed; owner/group/mode are fixed after, and, as
//! upstream, not looked at in check mode.
//!
//! Over 300 lines because upstream's edit is one pass over the lines whose steps depend on
//! each other (which lines earlier steps touched, which values are left); a third is tests.

use regex::Regex;
use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::{boolish, opt_boolish, opt_stringish};
use super::filewrite::{self, Content, Write};
use super::host_path;
use super::lineinfile::State;
use super::mode::{Mode, opt_mode};
use super::posix::{self, Attrs, Kind};
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(IniFile, "ini_file", Params, run);

fn yes() -> bool {
    true
}

/// One `section_has_values` condition: the section must have `option` (with one of the
/// values, when given).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// The option to look for.
    option: String,
    /// The value it must have.
    #[serde(default, deserialize_with = "opt_stringish")]
    value: Option<String>,
    /// Values it may have (any one).
    #[serde(default, deserialize_with = "opt_list")]
    values: Option<Vec<String>>,
}

fn opt_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    super::args::list(d).map(Some)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The INI file on the host (created when missing unless `create: false`).
    #[serde(alias = "dest", deserialize_with = "host_path::one")]
    path: String,
    /// The section; empty or omitted means the options before the first section.
    #[serde(default, deserialize_with = "opt_stringish")]
    section: Option<String>,
    /// Among sections of the same name, the one having these options (and values).
    section_has_values: Option<Vec<Condition>>,
    /// The option (omitted: the whole section is added or removed).
    #[serde(default, deserialize_with = "opt_stringish")]
    option: Option<String>,
    /// The option's value (same as `values: [value]`).
    #[serde(default, deserialize_with = "opt_stringish")]
    value: Option<String>,
    /// The option's values (one `option = value` line each).
    #[serde(default, deserialize_with = "opt_list")]
    values: Option<Vec<String>>,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// `present`: other values of the option are removed; `absent`: every line of the
    /// option goes, whatever its value (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    exclusive: bool,
    /// Write `option=value` instead of `option = value`.
    #[serde(default, deserialize_with = "boolish")]
    no_extra_spaces: bool,
    /// Leave a line alone when only the spaces around `=` differ.
    #[serde(default, deserialize_with = "boolish")]
    ignore_spaces: bool,
    /// Allow an option without value and without `=`.
    #[serde(default, deserialize_with = "boolish")]
    allow_no_value: bool,
    /// A commented-out `#option = x` line may be replaced by the option (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    modify_inactive_option: bool,
    /// Create the file when missing (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    create: bool,
    /// Keep a timestamped copy before changing the file.
    #[serde(default, deserialize_with = "boolish")]
    backup: bool,
    /// Accepted for compatibility: the file behind a link is what is edited.
    #[serde(default, deserialize_with = "opt_boolish")]
    follow: Option<bool>,
    /// Permissions of the file.
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Owner (name or uid).
    owner: Option<String>,
    /// Group (name or gid).
    group: Option<String>,
}

/// The edit, with the values already merged and deduplicated.
pub struct Spec {
    pub section: Option<String>,
    /// `(option, values)` per `section_has_values` condition; `None`: no conditions.
    pub section_has: Option<Vec<(String, Vec<String>)>>,
    pub option: Option<String>,
    pub values: Vec<String>,
    pub state: State,
    pub exclusive: bool,
    pub no_extra_spaces: bool,
    pub ignore_spaces: bool,
    pub allow_no_value: bool,
    pub modify_inactive_option: bool,
}

/// The name of the sentinel section that holds the lines before the first real section
/// (upstream's, so a file can never have it by accident in a way that differs from upstream).
const TOP: &str = "ad01e11446efb704fcdbdb21f2c43757423d91c5";

/// An option line: whether it is commented out, whether it has `=`, and its value.
struct OptLine {
    comment: bool,
    value: String,
}

/// Matches `option` lines; `inactive` also matches `#option`/`;option` (upstream's
/// `match_opt`; without it `match_active_opt`).
struct Matcher {
    re: Regex,
}

impl Matcher {
    fn new(option: &str, inactive: bool) -> Self {
        let comment = if inactive { "[#;]?" } else { "" };
        let re = Regex::new(&format!(
            r"^[ \t]*(?P<c>{comment})[ \t]*{}[ \t]*(?:=|$)[ \t]*(?P<v>.*)",
            regex::escape(option)
        ))
        .expect("an escaped option is a valid regex");
        Self { re }
    }

    fn find(&self, line: &str) -> Option<OptLine> {
        // Lines keep their `\n`; Python's `$` matches before it, Rust's only at the end.
        let body = line.strip_suffix('\n').unwrap_or(line);
        self.re.captures(body).map(|c| OptLine {
            comment: !c["c"].is_empty(),
            value: c["v"].to_string(),
        })
    }
}

/// Blank lines and comments (`^[ \t]*([#;].*)?$`).
fn blank_or_comment(line: &str) -> bool {
    let body = line.strip_suffix('\n').unwrap_or(line);
    let t = body.trim_start_matches([' ', '\t']);
    t.is_empty() || t.starts_with('#') || t.starts_with(';')
}

/// Split as Python's `readlines()` does: every line keeps its `\n`, the last may lack it.
fn read_lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

/// The edited text, whether anything changed, and upstream's message.
pub fn edit(text: &str, s: &Spec) -> (String, bool, &'static str) {
    let mut lines = read_lines(text);
    let mut changed = false;
    let mut msg = "OK";
    if lines.is_empty() {
        lines.push("\n".into());
    }
    if let Some(last) = lines.last_mut()
        && !last.ends_with('\n')
    {
        last.push('\n');
        changed = true;
    }
    lines.insert(0, format!("[{TOP}]"));
    lines.push("[".into());
    let section = s
        .section
        .as_deref()
        .filter(|x| !x.is_empty())
        .unwrap_or(TOP);
    let sep = if s.no_extra_spaces { "=" } else { " = " };
    let header = Regex::new(&format!(r"^\[\s*{}\s*]", regex::escape(section.trim())))
        .expect("an escaped section is a valid regex");
    let any = |o: &str| Matcher::new(o, true);
    let has = |lines: &[String]| -> bool {
        let Some(conds) = &s.section_has else {
            return true;
        };
        conds.iter().all(|(o, vals)| {
            let m = any(o);
            lines.iter().any(|l| {
                m.find(l)
                    .is_some_and(|x| vals.is_empty() || vals.contains(&x.value))
            })
        })
    };

    let (mut within, mut start, mut end) = (false, 0, 0);
    for (i, line) in lines.iter().enumerate() {
        if within && line.starts_with('[') {
            if has(&lines[start..i]) {
                end = i;
                break;
            }
            (within, start, end) = (false, 0, 0);
        }
        if header.is_match(line) {
            within = true;
            start = i;
        }
    }
    let after = lines.split_off(end);
    let mut sec = lines.split_off(start);
    let before = lines;

    let mut values = s.values.clone();
    let option = s.option.as_deref().filter(|o| !o.is_empty());
    let mut touched = vec![false; sec.len()];
    let mut no_value_present = false;
    let matcher = option.map(|o| Matcher::new(o, s.modify_inactive_option));
    let full = option.map(any);
    // Replace line `i` by `new` unless it is the same (or, with `ignore_spaces`, has the same
    // value); either way the line now counts as handled.
    let update = |sec: &mut Vec<String>, touched: &mut Vec<bool>, i: usize, new: String| -> bool {
        let mut differs = None;
        if s.ignore_spaces
            && let Some(full) = &full
            && let Some(old) = full.find(&sec[i])
            && !old.comment
        {
            differs = Some(full.find(&new).map(|n| n.value) != Some(old.value));
        }
        let differs = differs.unwrap_or(sec[i] != new);
        if differs {
            sec[i] = new;
        }
        touched[i] = true;
        differs
    };

    if s.state == State::Present
        && let (Some(o), Some(m)) = (option, &matcher)
    {
        for i in 0..sec.len() {
            let Some(found) = m.find(&sec[i]) else {
                continue;
            };
            if let Some(pos) = values.iter().position(|v| *v == found.value) {
                let new = if found.value.is_empty() && s.allow_no_value {
                    no_value_present = true;
                    format!("{o}\n")
                } else {
                    format!("{o}{sep}{}\n", found.value)
                };
                if update(&mut sec, &mut touched, i, new) {
                    (changed, msg) = (true, "option changed");
                }
                values.remove(pos);
            } else if values.is_empty() && s.allow_no_value {
                if update(&mut sec, &mut touched, i, format!("{o}\n")) {
                    (changed, msg) = (true, "option changed");
                }
                no_value_present = true;
                break;
            }
        }
    }

    if s.state == State::Present
        && s.exclusive
        && !s.allow_no_value
        && let (Some(o), Some(m)) = (option, &matcher)
    {
        if !values.is_empty() {
            for i in 0..sec.len() {
                if !touched[i] && m.find(&sec[i]).is_some() {
                    let v = values.remove(0);
                    if update(&mut sec, &mut touched, i, format!("{o}{sep}{v}\n")) {
                        (changed, msg) = (true, "option changed");
                    }
                    if values.is_empty() {
                        break;
                    }
                }
            }
        }
        // Every other line of the option goes (the header line 0 never matches).
        for i in (1..sec.len()).rev() {
            if !touched[i] && m.find(&sec[i]).is_some() {
                sec.remove(i);
                touched.remove(i);
                changed = true;
                msg = "option changed";
            }
        }
    }

    if s.state == State::Present {
        // New lines go after the section's last line that is not blank or a comment.
        for i in (1..=sec.len()).rev() {
            if blank_or_comment(&sec[i - 1]) {
                continue;
            }
            if let Some(o) = option {
                if !values.is_empty() {
                    for v in values.iter().rev() {
                        sec.insert(i, format!("{o}{sep}{v}\n"));
                    }
                    msg = "option added";
                    changed = true;
                } else if s.allow_no_value && !no_value_present {
                    sec.insert(i, format!("{o}\n"));
                    msg = "option added";
                    changed = true;
                }
            }
            break;
        }
    }

    if s.state == State::Absent {
        match option {
            Some(o) => {
                let active = Matcher::new(o, false);
                let keep: Vec<String> = sec
                    .iter()
                    .filter(|l| match active.find(l) {
                        None => true,
                        Some(_) if s.exclusive => false,
                        Some(x) => values.is_empty() || !values.contains(&x.value),
                    })
                    .cloned()
                    .collect();
                if keep != sec && (s.exclusive || !values.is_empty()) {
                    sec = keep;
                    changed = true;
                    msg = "option changed";
                }
            }
            None if !sec.is_empty() => {
                sec.clear();
                msg = "section removed";
                changed = true;
            }
            None => {}
        }
    }

    let mut out: Vec<String> = before.into_iter().chain(sec).chain(after).collect();
    out.remove(0);
    out.pop();

    if !within && s.state == State::Present {
        out.push(format!("[{section}]\n"));
        msg = "section and option added";
        for (co, cvals) in s.section_has.iter().flatten() {
            if Some(co.as_str()) != option {
                if !cvals.is_empty() {
                    out.extend(cvals.iter().map(|v| format!("{co}{sep}{v}\n")));
                } else if s.allow_no_value {
                    out.push(format!("{co}\n"));
                }
            } else if !s.exclusive {
                for v in cvals {
                    if !values.contains(v) {
                        values.push(v.clone());
                    }
                }
            }
        }
        match option {
            Some(o) if !values.is_empty() => {
                out.extend(values.iter().map(|v| format!("{o}{sep}{v}\n")))
            }
            Some(o) if s.allow_no_value => out.push(format!("{o}\n")),
            _ => msg = "only section added",
        }
        changed = true;
    }
    (out.concat(), changed, msg)
}

/// Upstream's argument checks, in its order and words.
fn spec(p: &Params) -> Result<Spec, String> {
    if p.value.is_some() && p.values.is_some() {
        return Err("parameters are mutually exclusive: value|values".into());
    }
    let no_values = p.values.as_ref().is_none_or(Vec::is_empty);
    if p.state == State::Present && !p.allow_no_value && p.value.is_none() && no_values {
        return Err(
            "Parameter 'value(s)' must be defined if state=present and allow_no_value=False."
                .into(),
        );
    }
    let mut section_has = None;
    if let Some(conds) = &p.section_has_values {
        let mut out = Vec::new();
        for c in conds {
            if c.value.is_some() && c.values.is_some() {
                return Err(
                    "parameters are mutually exclusive: value|values found in section_has_values"
                        .into(),
                );
            }
            let vals = match &c.value {
                Some(v) => vec![v.clone()],
                None => c.values.clone().unwrap_or_default(),
            };
            out.push((c.option.clone(), vals));
        }
        section_has = Some(out);
    }
    let given = match &p.value {
        Some(v) => vec![v.clone()],
        None => p.values.clone().unwrap_or_default(),
    };
    let mut values: Vec<String> = Vec::new();
    for v in given {
        if !values.contains(&v) {
            values.push(v);
        }
    }
    Ok(Spec {
        section: p.section.clone(),
        section_has,
        option: p.option.clone(),
        values,
        state: p.state,
        exclusive: p.exclusive,
        no_extra_spaces: p.no_extra_spaces,
        ignore_spaces: p.ignore_spaces,
        allow_no_value: p.allow_no_value,
        modify_inactive_option: p.modify_inactive_option,
    })
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = p.follow;
    let s = match spec(&p) {
        Ok(s) => s,
        Err(msg) => return Ok(ModuleResult::failed(msg)),
    };
    let before = filewrite::probe(ctx, &p.path, true).await?;
    match before.stat.kind {
        Kind::File => {}
        Kind::Absent if p.create => {}
        Kind::Absent => {
            return Ok(
                ModuleResult::failed(format!("Destination {} does not exist!", p.path))
                    .with("rc", 257),
            );
        }
        _ => {
            return Ok(ModuleResult::failed(format!(
                "`{}` is not a regular file",
                p.path
            )));
        }
    }
    // Read as Python's text mode with `utf-8-sig` does: no BOM, universal newlines.
    let old = before.text();
    let old = old.strip_prefix('\u{feff}').unwrap_or(&old);
    let old = old.replace("\r\n", "\n").replace('\r', "\n");
    let (new, content_changed, msg) = edit(&old, &s);
    let mut changed = content_changed;
    let attrs = Attrs {
        mode: p.mode.clone(),
        owner: p.owner.clone(),
        group: p.group.clone(),
    };
    let mut r = ModuleResult::ok();
    if ctx.diff {
        r.diff = Some(Diff {
            path: Some(format!("{} (content)", p.path)),
            before: old.clone().into(),
            after: new.clone().into(),
        });
    }
    let exists = before.stat.kind == Kind::File;
    let mut mode = exists.then_some(before.stat.mode);
    if ctx.check_mode {
        // Upstream neither creates folders nor looks at attributes in check mode.
    } else if content_changed {
        if !exists {
            let parent = posix::parent_of(&p.path);
            let out = ctx
                .run(format!("[ -d {0} ] || mkdir -p -- {0}", sh(&parent)))
                .await?;
            if !out.success() {
                return Ok(ModuleResult::failed(format!(
                    "cannot create `{parent}`: {}",
                    out.stderr_str().trim()
                )));
            }
        }
        let w = Write {
            dest: &p.path,
            attrs: &attrs,
            backup: p.backup,
            force: true,
            validate: None,
        };
        let written =
            filewrite::apply(ctx, &w, Content::bytes(new.clone().into_bytes()), &before).await?;
        if written.failed {
            return Ok(written);
        }
        if let Some(b) = written.data.get("backup_file") {
            r = r.with("backup_file", b.clone());
        }
        mode = written
            .data
            .get("mode")
            .and_then(|m| m.as_str())
            .and_then(|m| u32::from_str_radix(m, 8).ok());
    } else if exists {
        let fix = attrs.fix_script(&p.path, &before.stat, false);
        if !fix.is_empty() {
            let out = ctx.run(fix).await?;
            if !out.success() {
                return Ok(ModuleResult::failed(format!(
                    "cannot set attributes of `{}`: {}",
                    p.path,
                    out.stderr_str().trim()
                )));
            }
            changed = true;
            mode = attrs
                .mode
                .as_ref()
                .and_then(|m| m.resolve(before.stat.mode, false))
                .or(mode);
        }
    }
    r.changed = changed;
    r.msg = Some(msg.to_string());
    let on_disk = exists || (content_changed && !ctx.check_mode);
    r = r.with("path", p.path.as_str());
    // Upstream's exit adds the file's stat for a `path` that exists (basic.py add_path_info).
    if on_disk {
        let size = if content_changed && !ctx.check_mode {
            new.len() as u64
        } else {
            before.stat.size
        };
        r = r
            .with("state", "file")
            .with("mode", mode.map(posix::mode_str))
            .with("size", size);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_of(v: serde_json::Value) -> Spec {
        let p: Params = super::super::args::parse("ini_file", &v).unwrap();
        spec(&p).unwrap()
    }

    fn run_edit(text: &str, v: serde_json::Value) -> (String, bool, &'static str) {
        let mut v = v;
        v["path"] = "/f".into();
        edit(text, &spec_of(v))
    }

    #[test]
    fn sets_changes_and_adds_options_where_upstream_does() {
        let text = "top=1\n\n[a]\nx = 1\n# comment\n\n[b]\ny=2\n";
        // A new option goes after the last non-blank, non-comment line of the section.
        let (out, ch, msg) = run_edit(
            text,
            serde_json::json!({"section": "a", "option": "z", "value": "3"}),
        );
        assert_eq!(out, "top=1\n\n[a]\nx = 1\nz = 3\n# comment\n\n[b]\ny=2\n");
        assert!(ch);
        assert_eq!(msg, "option added");
        let (out, _, msg) = run_edit(
            text,
            serde_json::json!({"section": "b", "option": "y", "value": "5", "no_extra_spaces": true}),
        );
        assert_eq!(out, "top=1\n\n[a]\nx = 1\n# comment\n\n[b]\ny=5\n");
        assert_eq!(msg, "option changed");
        // The same value with other spacing is a change unless ignore_spaces.
        let (_, ch, msg) = run_edit(
            text,
            serde_json::json!({"section": "b", "option": "y", "value": "2"}),
        );
        assert!(ch && msg == "option changed");
        let (_, ch, msg) = run_edit(
            text,
            serde_json::json!({"section": "b", "option": "y", "value": "2", "ignore_spaces": true}),
        );
        assert!(!ch && msg == "OK");
        // No section: the options before the first section.
        let (out, _, _) = run_edit(text, serde_json::json!({"option": "top", "value": "9"}));
        assert!(out.starts_with("top = 9\n\n[a]"), "{out}");
        // A missing section is appended; a new file starts with a blank line, as upstream's.
        let (out, _, msg) = run_edit(
            "",
            serde_json::json!({"section": "n", "option": "k", "value": "v"}),
        );
        assert_eq!(
            (out.as_str(), msg),
            ("\n[n]\nk = v\n", "section and option added")
        );
        let (out, _, msg) = run_edit(
            "",
            serde_json::json!({"section": "n", "state": "present", "allow_no_value": true}),
        );
        assert_eq!((out.as_str(), msg), ("\n[n]\n", "only section added"));
    }

    #[test]
    fn values_exclusive_and_commented_options() {
        let text = "[s]\nk = a\nk = b\n#k = c\n";
        let (out, _, _) = run_edit(
            text,
            serde_json::json!({"section": "s", "option": "k", "values": ["b", "d"]}),
        );
        // b stays, the first other k line (a) becomes d, the commented one goes.
        assert_eq!(out, "[s]\nk = d\nk = b\n");
        let (out, _, _) = run_edit(
            text,
            serde_json::json!({"section": "s", "option": "k", "values": ["d"], "exclusive": false}),
        );
        // New lines go before trailing comments.
        assert_eq!(out, "[s]\nk = a\nk = b\nk = d\n#k = c\n");
        let (out, _, _) = run_edit(
            text,
            serde_json::json!({"section": "s", "option": "k", "value": "c"}),
        );
        assert_eq!(out, "[s]\nk = c\n");
        let (out, _, _) = run_edit(
            text,
            serde_json::json!({"section": "s", "option": "k", "value": "c", "modify_inactive_option": false}),
        );
        assert_eq!(out, "[s]\nk = c\n#k = c\n");
    }

    #[test]
    fn absent_removes_options_or_sections() {
        let text = "[s]\nk = a\nk = b\n#k = c\n[t]\nq=1\n";
        let (out, ch, msg) = run_edit(
            text,
            serde_json::json!({"section": "s", "option": "k", "state": "absent"}),
        );
        assert_eq!(
            (out.as_str(), ch, msg),
            ("[s]\n#k = c\n[t]\nq=1\n", true, "option changed")
        );
        let (out, _, _) = run_edit(
            text,
            serde_json::json!({"section": "s", "option": "k", "value": "b", "state": "absent", "exclusive": false}),
        );
        assert_eq!(out, "[s]\nk = a\n#k = c\n[t]\nq=1\n");
        let (out, _, msg) = run_edit(text, serde_json::json!({"section": "s", "state": "absent"}));
        assert_eq!((out.as_str(), msg), ("[t]\nq=1\n", "section removed"));
        let (out, ch, _) = run_edit(
            text,
            serde_json::json!({"section": "zz", "state": "absent"}),
        );
        assert_eq!((out.as_str(), ch), (text, false));
        // A missing final newline is added, and that alone is a change.
        let (out, ch, msg) = run_edit(
            "[t]\nq=1",
            serde_json::json!({"section": "t", "option": "q", "value": "1", "no_extra_spaces": true}),
        );
        assert_eq!((out.as_str(), ch, msg), ("[t]\nq=1\n", true, "OK"));
    }

    #[test]
    fn section_has_values_picks_among_same_named_sections() {
        let text = "[Peer]\nIp = 1\nKey = a\n[Peer]\nIp = 2\nKey = b\n";
        let (out, _, _) = run_edit(
            text,
            serde_json::json!({"section": "Peer", "option": "Key", "value": "z",
            "section_has_values": [{"option": "Ip", "value": "2"}]}),
        );
        assert_eq!(out, "[Peer]\nIp = 1\nKey = a\n[Peer]\nIp = 2\nKey = z\n");
        let (out, _, _) = run_edit(
            text,
            serde_json::json!({"section": "Peer", "option": "Key", "value": "c",
            "section_has_values": [{"option": "Ip", "value": "3"}]}),
        );
        assert!(out.ends_with("[Peer]\nIp = 3\nKey = c\n"), "{out}");
    }

    #[test]
    fn argument_checks_use_upstreams_words() {
        let p: Params = super::super::args::parse(
            "ini_file",
            &serde_json::json!({"path": "/f", "section": "s", "option": "o"}),
        )
        .unwrap();
        assert_eq!(
            spec(&p).err().unwrap(),
            "Parameter 'value(s)' must be defined if state=present and allow_no_value=False."
        );
        let p: Params = super::super::args::parse(
            "ini_file",
            &serde_json::json!({"path": "/f", "option": "o", "value": "1", "values": ["2"]}),
        )
        .unwrap();
        assert_eq!(
            spec(&p).err().unwrap(),
            "parameters are mutually exclusive: value|values"
        );
    }
}
