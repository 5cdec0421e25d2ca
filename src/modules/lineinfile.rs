//! `lineinfile`: make sure one line is in a text file (replacing the line a regex or a search
//! string matches), or that matching lines are gone. The file is read in the probe, edited on
//! the controller by [`edit`] (pure, unit tested), and written back only when it changed.

use serde::Deserialize;

use crate::pyre::{PyRegex as Regex, Template};

use super::args::boolish;
use super::host_path;
use super::mode::{Mode, opt_mode};
use super::posix::Attrs;
use super::textedit::{self, TextEdit, lines, unlines};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(LineInFile, "lineinfile", Params, run);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    #[default]
    Present,
    Absent,
}

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
    /// The line to have in the file (`state: present`).
    line: Option<String>,
    /// Regex: the last matching line is replaced (present) or every matching line removed
    /// (absent).
    #[serde(alias = "regex")]
    regexp: Option<String>,
    /// Like `regexp`, but a plain substring.
    search_string: Option<String>,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// Where a new line goes when nothing matched: `EOF` (default) or after the last line
    /// matching this regex.
    insertafter: Option<String>,
    /// Where a new line goes when nothing matched: `BOF` or before the last line matching
    /// this regex.
    insertbefore: Option<String>,
    /// With `regexp`: `line` may use `\1` groups; when nothing matches, the file is unchanged.
    #[serde(default, deserialize_with = "boolish")]
    backrefs: bool,
    /// Use the first match of `regexp`/`insertafter`/`insertbefore` instead of the last.
    #[serde(default, deserialize_with = "boolish")]
    firstmatch: bool,
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
}

/// What to match a line against.
pub enum Matcher {
    Regex(Regex),
    Substring(String),
}

impl Matcher {
    fn is_match(&self, l: &str) -> bool {
        match self {
            Matcher::Regex(r) => r.is_match(l),
            Matcher::Substring(s) => l.contains(s.as_str()),
        }
    }
}

/// Where a new line is inserted when nothing matched.
pub enum Insert {
    Eof,
    Bof,
    After(Regex),
    Before(Regex),
}

/// The parsed edit.
pub struct Edit {
    pub state: State,
    pub line: Option<String>,
    pub matcher: Option<Matcher>,
    pub insert: Insert,
    pub backrefs: bool,
    pub firstmatch: bool,
}

/// A Python pattern from `field`; a bad one names the field, the pattern and the reason.
fn regex(field: &str, r: &str) -> Result<Regex, ModuleError> {
    Regex::new(r).map_err(|e| ModuleError::BadArgs {
        module: "lineinfile",
        detail: format!("`{field}` `{r}` is not a valid regex: {e}"),
    })
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    // A `path` parameter upstream: `~` is the remote user's home.
    let bad = |d: &str| ModuleError::BadArgs {
        module: "lineinfile",
        detail: d.to_string(),
    };
    let matcher = match (&p.regexp, &p.search_string) {
        (Some(_), Some(_)) => {
            return Err(bad("`regexp` and `search_string` are mutually exclusive"));
        }
        (Some(r), None) => Some(Matcher::Regex(regex("regexp", r)?)),
        (None, Some(s)) => Some(Matcher::Substring(s.clone())),
        (None, None) => None,
    };
    let insert = match (p.insertafter.as_deref(), p.insertbefore.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "`insertafter` and `insertbefore` are mutually exclusive",
            ));
        }
        (Some("EOF") | None, None) => Insert::Eof,
        (Some(r), None) => Insert::After(regex("insertafter", r)?),
        (None, Some("BOF")) => Insert::Bof,
        (None, Some(r)) => Insert::Before(regex("insertbefore", r)?),
    };
    if p.state == State::Present && p.line.is_none() {
        return Err(bad("`line` is required with `state: present`"));
    }
    if p.state == State::Absent && p.line.is_none() && matcher.is_none() {
        return Err(bad(
            "one of `line`, `regexp` or `search_string` is required with `state: absent`",
        ));
    }
    if p.backrefs {
        let Some(Matcher::Regex(r)) = &matcher else {
            return Err(bad("`backrefs` needs `regexp`"));
        };
        // The line is a `re` template (`match.expand` upstream): check it against the groups.
        if let Some(line) = &p.line {
            Template::new(line, r).map_err(|e| {
                bad(&format!(
                    "`line` `{line}` does not fit `regexp` `{}` with `backrefs`: {e}",
                    r.as_str()
                ))
            })?;
        }
    }
    let edit_spec = Edit {
        state: p.state,
        line: p.line,
        matcher,
        insert,
        backrefs: p.backrefs,
        firstmatch: p.firstmatch,
    };
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
        missing_msg: Some(format!("Destination {} does not exist !", p.path)),
        created_msg: None,
        content_header: true,
    };
    let found = std::sync::atomic::AtomicUsize::new(0);
    let mut r = textedit::edit_file(ctx, &e, |old| {
        let (text, msg) = edit(old, &edit_spec);
        if edit_spec.state == State::Absent {
            found.store(
                lines(old).len() - lines(&text).len(),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        (text, msg)
    })
    .await?;
    if r.failed {
        return Ok(r);
    }
    // An empty pattern matches every line: upstream warns (and goes on).
    let empty = match (p.regexp.as_deref(), p.search_string.as_deref()) {
        (Some(""), _) => Some((
            "regular expression",
            " If this is desired, use '^' to match every line in the file and avoid this warning.",
        )),
        (_, Some("")) => Some(("search string", "")),
        _ => None,
    };
    if let Some((what, hint)) = empty {
        r = r.with(
            "warnings",
            serde_json::json!([format!(
                "The {what} is an empty string, which will match every line in the file. This may \
                 have unintended consequences, such as replacing the last line in the file rather \
                 than appending.{hint}"
            )]),
        );
    }
    // Upstream names the backup `backup` ("" when none) and counts removed lines as `found`.
    let backup = r.data.remove("backup_file").unwrap_or_else(|| "".into());
    r = r.with("backup", backup);
    if edit_spec.state == State::Absent {
        r = r.with("found", found.into_inner());
    }
    Ok(r)
}

/// Apply `e` to `text`: the new text and Ansible's message for what happened.
pub fn edit(text: &str, e: &Edit) -> (String, String) {
    let mut ls = lines(text);
    let pick = |idx: Vec<usize>| -> Option<usize> {
        if e.firstmatch {
            idx.first().copied()
        } else {
            idx.last().copied()
        }
    };
    if e.state == State::Absent {
        let before = ls.len();
        ls.retain(|l| {
            let by_match = e.matcher.as_ref().is_some_and(|m| m.is_match(l));
            let by_line = e.matcher.is_none() && e.line.as_deref() == Some(l.as_str());
            !(by_match || by_line)
        });
        // Upstream counts the removed lines in its message.
        return if ls.len() == before {
            (text.to_string(), String::new())
        } else {
            let removed = before - ls.len();
            (unlines(&ls), format!("{removed} line(s) removed"))
        };
    }
    let line = e.line.clone().unwrap_or_default();
    let matches: Vec<usize> = match &e.matcher {
        Some(m) => (0..ls.len()).filter(|i| m.is_match(&ls[*i])).collect(),
        None => Vec::new(),
    };
    if let Some(i) = pick(matches) {
        let new = match (&e.matcher, e.backrefs) {
            (Some(Matcher::Regex(r)), true) => {
                // `i` was picked because `r` matched it, so captures are always there; the
                // template was checked against `r` when the parameters were read.
                match (r.search(&ls[i]), Template::new(&line, r)) {
                    (Some(caps), Ok(t)) => t.expand(&caps),
                    _ => line,
                }
            }
            _ => line,
        };
        if ls[i] == new {
            return (text.to_string(), String::new());
        }
        ls[i] = new;
        return (unlines(&ls), "line replaced".into());
    }
    if e.backrefs || ls.contains(&line) {
        return (text.to_string(), String::new());
    }
    let find = |r: &Regex| pick((0..ls.len()).filter(|i| r.is_match(&ls[*i])).collect());
    let at = match &e.insert {
        Insert::Eof => ls.len(),
        Insert::Bof => 0,
        Insert::After(r) => find(r).map(|i| i + 1).unwrap_or(ls.len()),
        Insert::Before(r) => find(r).unwrap_or(ls.len()),
    };
    ls.insert(at, line);
    (unlines(&ls), "line added".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(line: &str, regexp: Option<&str>) -> Edit {
        Edit {
            state: State::Present,
            line: Some(line.into()),
            matcher: regexp.map(|r| Matcher::Regex(Regex::new(r).unwrap())),
            insert: Insert::Eof,
            backrefs: false,
            firstmatch: false,
        }
    }

    #[test]
    fn replaces_the_last_match_and_is_idempotent() {
        let e = spec("port=2", Some("^port="));
        let (t, msg) = edit("a\nport=1\nb\nport=1\n", &e);
        assert_eq!(
            (t.as_str(), msg),
            ("a\nport=1\nb\nport=2\n", "line replaced".into())
        );
        assert_eq!(edit(&t, &e).1, "");
    }

    #[test]
    fn appends_and_keeps_missing_final_newline_unchanged_when_present() {
        let e = spec("x", None);
        assert_eq!(edit("a", &e).0, "a\nx\n");
        assert_eq!(edit("a\nx", &e).0, "a\nx");
    }

    #[test]
    fn insert_before_and_after_regex() {
        let mut e = spec("new", None);
        e.insert = Insert::Before(Regex::new("^b").unwrap());
        assert_eq!(edit("a\nb\n", &e).0, "a\nnew\nb\n");
        e.insert = Insert::After(Regex::new("^a").unwrap());
        assert_eq!(edit("a\nb\n", &e).0, "a\nnew\nb\n");
        e.insert = Insert::Bof;
        assert_eq!(edit("a\n", &e).0, "new\na\n");
    }

    #[test]
    fn backrefs_without_match_change_nothing() {
        let mut e = spec(r"v=\g<1>0 $", Some(r"^v=(\d+)$"));
        e.backrefs = true;
        assert_eq!(edit("v=5\n", &e).0, "v=50 $\n");
        assert_eq!(edit("w=5\n", &e).0, "w=5\n");
    }

    #[test]
    fn back_references_and_look_around_in_the_pattern() {
        // Expected lines from ansible-core's lineinfile (CPython `re`).
        let mut e = spec(r"\2 by \1", Some(r"^(REF) (\w+) \1$"));
        e.backrefs = true;
        assert_eq!(
            edit("REF a REX\nREF b REF\n", &e),
            ("REF a REX\nb by REF\n".into(), "line replaced".into())
        );
        let e = spec("port=2222", Some(r"^port=(?!8080)\d+$"));
        assert_eq!(edit("port=22\nport=8080\n", &e).0, "port=2222\nport=8080\n");
        let mut e = spec("first=1", None);
        e.insert = Insert::After(Regex::new(r"(?<=\[)main(?=\])").unwrap());
        assert_eq!(edit("[main]\nx=1\n", &e).0, "[main]\nfirst=1\nx=1\n");
    }

    #[test]
    fn absent_removes_every_match() {
        let e = Edit {
            state: State::Absent,
            line: None,
            matcher: Some(Matcher::Substring("tmp".into())),
            insert: Insert::Eof,
            backrefs: false,
            firstmatch: false,
        };
        assert_eq!(
            edit("tmp1\nkeep\ntmp2\n", &e),
            ("keep\n".into(), "2 line(s) removed".into())
        );
    }
}
