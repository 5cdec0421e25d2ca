//! `blockinfile`: keep a block of lines between two marker lines in a text file (insert,
//! update or remove it). Same flow as `lineinfile`: read in the probe, [`edit`] on the
//! controller, write back only on change.

use crate::pyre::PyRegex as Regex;
use serde::Deserialize;

use super::args::boolish;
use super::host_path;
use super::lineinfile::State;
use super::mode::{Mode, opt_mode};
use super::posix::Attrs;
use super::textedit::{self, TextEdit, lines, unlines};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(BlockInFile, "blockinfile", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The file on the host.
    #[serde(
        alias = "dest",
        alias = "destfile",
        alias = "name",
        deserialize_with = "host_path::one"
    )]
    path: String,
    /// The text between the markers (empty removes the block).
    #[serde(default, alias = "content")]
    block: String,
    /// Marker line template; `{mark}` becomes `marker_begin`/`marker_end`.
    #[serde(default = "default_marker")]
    marker: String,
    /// Replaces `{mark}` in the opening marker (default `BEGIN`).
    #[serde(default = "begin")]
    marker_begin: String,
    /// Replaces `{mark}` in the closing marker (default `END`).
    #[serde(default = "end")]
    marker_end: String,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// A new block goes after the last line matching this regex, or at `EOF` (default).
    insertafter: Option<String>,
    /// A new block goes before the last line matching this regex, or at `BOF`.
    insertbefore: Option<String>,
    /// Create the file when missing.
    #[serde(default, deserialize_with = "boolish")]
    create: bool,
    /// Keep a timestamped copy before changing the file.
    #[serde(default, deserialize_with = "boolish")]
    backup: bool,
    /// Permissions of the file.
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Owner (name or uid).
    owner: Option<String>,
    /// Group (name or gid).
    group: Option<String>,
    /// A command (with `%s` for the edited file) that must accept the file before it
    /// replaces the old one.
    validate: Option<String>,
    /// Put a blank line before a new block unless one is there (or it starts the file).
    #[serde(default, deserialize_with = "boolish")]
    prepend_newline: bool,
    /// Put a blank line after a new block unless one is there (or it ends the file).
    #[serde(default, deserialize_with = "boolish")]
    append_newline: bool,
}

fn default_marker() -> String {
    "# {mark} ANSIBLE MANAGED BLOCK".into()
}
fn begin() -> String {
    "BEGIN".into()
}
fn end() -> String {
    "END".into()
}

/// Where a new block goes.
pub enum Place {
    Eof,
    Bof,
    After(Regex),
    Before(Regex),
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    // A `path` parameter upstream: `~` is the remote user's home.
    let re = |field: &str, r: &str| {
        Regex::new(r).map_err(|e| ModuleError::BadArgs {
            module: "blockinfile",
            detail: format!("`{field}` `{r}` is not a valid regex: {e}"),
        })
    };
    let place = match (p.insertafter.as_deref(), p.insertbefore.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(ModuleError::BadArgs {
                module: "blockinfile",
                detail: "`insertafter` and `insertbefore` are mutually exclusive".into(),
            });
        }
        (Some("EOF") | None, None) => Place::Eof,
        (Some(r), None) => Place::After(re("insertafter", r)?),
        (None, Some("BOF")) => Place::Bof,
        (None, Some(r)) => Place::Before(re("insertbefore", r)?),
    };
    let begin = p.marker.replace("{mark}", &p.marker_begin);
    let end = p.marker.replace("{mark}", &p.marker_end);
    let block = (p.state == State::Present && !p.block.is_empty()).then_some(p.block.as_str());
    let attrs = Attrs {
        mode: p.mode,
        owner: p.owner,
        group: p.group,
    };
    let e = TextEdit {
        path: &p.path,
        create: p.create,
        backup: p.backup,
        attrs: &attrs,
        validate: p.validate.as_deref(),
        missing_msg: None,
        created_msg: Some("File created"),
        content_header: true,
    };
    let spacing = Spacing {
        before: p.prepend_newline,
        after: p.append_newline,
    };
    textedit::edit_file(ctx, &e, |old| {
        let (text, msg) = edit(old, &begin, &end, block, &place, spacing);
        (text, msg.to_string())
    })
    .await
}

/// Blank lines to keep around a block written this run (`prepend_newline`, `append_newline`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Spacing {
    pub before: bool,
    pub after: bool,
}

/// Whether a pattern sets Python's `re.MULTILINE` with a leading inline flag group
/// (`(?m)...`, `(?im:...)` is scoped, not global). Upstream then searches the whole text,
/// not line by line, so a pattern may span lines.
fn multiline(r: &Regex) -> bool {
    let s = r.as_str();
    s.strip_prefix("(?")
        .and_then(|rest| rest.split_once(')'))
        .is_some_and(|(flags, _)| {
            flags.chars().all(|c| c.is_ascii_alphabetic()) && flags.contains('m')
        })
}

/// Where upstream puts a new block for `place`: after (before) the last line matching, or for
/// a multi-line pattern after (before) its first match in the whole text; the end when
/// nothing matches.
fn position(text: &str, ls: &[String], place: &Place) -> usize {
    let (r, after) = match place {
        Place::Eof => return ls.len(),
        Place::Bof => return 0,
        Place::After(r) => (r, true),
        Place::Before(r) => (r, false),
    };
    if multiline(r) {
        return match r.search(text) {
            Some(m) if after => text[..m.end()].matches('\n').count() + 1,
            Some(m) => text[..m.start()].matches('\n').count(),
            None => ls.len(),
        };
    }
    match ls.iter().rposition(|l| r.is_match(l)) {
        Some(i) if after => i + 1,
        Some(i) => i,
        None => ls.len(),
    }
}

/// Put `block` (or, with `None`, no block) between the `begin`/`end` marker lines of `text`.
pub fn edit(
    text: &str,
    begin: &str,
    end: &str,
    block: Option<&str>,
    place: &Place,
    spacing: Spacing,
) -> (String, &'static str) {
    let mut ls = lines(text);
    // The last of each marker, as upstream's scan keeps the last.
    let b = ls.iter().rposition(|l| l == begin);
    let e = ls.iter().rposition(|l| l == end);
    let new: Vec<String> = match block {
        Some(body) => std::iter::once(begin.to_string())
            .chain(lines(body))
            .chain(std::iter::once(end.to_string()))
            .collect(),
        None => Vec::new(),
    };
    let (at, msg) = match (b, e) {
        (Some(b), Some(e)) if b <= e => {
            // Replaced even when equal: the spacing may still change; the text decides below.
            ls.drain(b..=e);
            (
                b,
                if block.is_some() {
                    "Block inserted"
                } else {
                    "Block removed"
                },
            )
        }
        _ if block.is_none() => return (text.to_string(), ""),
        _ => (position(text, &ls, place).min(ls.len()), "Block inserted"),
    };
    let mut at = at;
    if spacing.before && block.is_some() && at != 0 && !ls[at - 1].is_empty() {
        ls.insert(at, String::new());
        at += 1;
    }
    let count = new.len();
    for (i, l) in new.into_iter().enumerate() {
        ls.insert(at + i, l);
    }
    let next = at + count;
    if spacing.after && block.is_some() && next < ls.len() && !ls[next].is_empty() {
        ls.insert(next, String::new());
    }
    let out = unlines(&ls);
    if out == text {
        return (out, "");
    }
    (out, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "# BEGIN X";
    const E: &str = "# END X";
    const N: Spacing = Spacing {
        before: false,
        after: false,
    };

    #[test]
    fn inserts_updates_and_removes_a_block() {
        let (t, m) = edit("a\n", B, E, Some("k=1\n"), &Place::Eof, N);
        assert_eq!(
            (t.as_str(), m),
            ("a\n# BEGIN X\nk=1\n# END X\n", "Block inserted")
        );
        assert_eq!(edit(&t, B, E, Some("k=1\n"), &Place::Eof, N).1, "");
        let (t2, _) = edit(&t, B, E, Some("k=2"), &Place::Eof, N);
        assert_eq!(t2, "a\n# BEGIN X\nk=2\n# END X\n");
        assert_eq!(edit(&t2, B, E, None, &Place::Eof, N).0, "a\n");
    }

    #[test]
    fn inserts_before_a_matching_line() {
        let r = Regex::new("^b").unwrap();
        let (t, _) = edit("a\nb\n", B, E, Some("x"), &Place::Before(r), N);
        assert_eq!(t, "a\n# BEGIN X\nx\n# END X\nb\n");
    }

    #[test]
    fn a_multiline_pattern_is_searched_in_the_whole_text() {
        let text = "a\nLIST =\n  (X =\nb\n";
        let r = Regex::new(r"(?m)LIST =\n.*\(X =").unwrap();
        assert!(multiline(&r));
        let (t, _) = edit(text, B, E, Some("x"), &Place::After(r), N);
        assert_eq!(t, "a\nLIST =\n  (X =\n# BEGIN X\nx\n# END X\nb\n");
        // Without the flag, lines are matched one by one: no line holds both, so the end.
        let r = Regex::new(r"LIST =\n.*\(X =").unwrap();
        assert!(!multiline(&r));
        let (t, _) = edit(text, B, E, Some("x"), &Place::After(r), N);
        assert_eq!(t, "a\nLIST =\n  (X =\nb\n# BEGIN X\nx\n# END X\n");
    }

    #[test]
    fn blank_lines_around_a_new_block_when_asked() {
        let both = Spacing {
            before: true,
            after: true,
        };
        let r = Regex::new("^a").unwrap();
        let (t, _) = edit("a\nb\n", B, E, Some("x"), &Place::After(r), both);
        assert_eq!(t, "a\n\n# BEGIN X\nx\n# END X\n\nb\n");
    }
}
