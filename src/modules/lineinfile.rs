//! `lineinfile`: make sure one line is in a text file (replacing the line a regex or a search
//! string matches), or that matching lines are gone. The file is read in the probe, edited on
//! the controller by [`edit`] (pure, unit tested), and written back only when it changed.

use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

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

fn regex(field: &str, r: &str) -> Result<Regex, ModuleError> {
    Regex::new(r).map_err(|e| ModuleError::BadArgs {
        module: "lineinfile",
        detail: format!("`{field}` `{r}` is not a valid regex: {e}"),
    })
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
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
    if p.backrefs && !matches!(matcher, Some(Matcher::Regex(_))) {
        return Err(bad("`backrefs` needs `regexp`"));
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
        (text, msg.to_string())
    })
    .await?;
    if r.failed {
        return Ok(r);
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
pub fn edit(text: &str, e: &Edit) -> (String, &'static str) {
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
        return if ls.len() == before {
            (text.to_string(), "")
        } else {
            (unlines(&ls), "line(s) removed")
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
                // `i` was picked because `r` matched it, so captures are always there.
                let mut out = String::new();
                if let Some(caps) = r.captures(&ls[i]) {
                    caps.expand(&python_backrefs(&line), &mut out);
                }
                out
            }
            _ => line,
        };
        if ls[i] == new {
            return (text.to_string(), "");
        }
        ls[i] = new;
        return (unlines(&ls), "line replaced");
    }
    if e.backrefs || ls.contains(&line) {
        return (text.to_string(), "");
    }
    let find = |r: &Regex| pick((0..ls.len()).filter(|i| r.is_match(&ls[*i])).collect());
    let at = match &e.insert {
        Insert::Eof => ls.len(),
        Insert::Bof => 0,
        Insert::After(r) => find(r).map(|i| i + 1).unwrap_or(ls.len()),
        Insert::Before(r) => find(r).unwrap_or(ls.len()),
    };
    ls.insert(at, line);
    (unlines(&ls), "line added")
}

/// Python's `\1` / `\g<name>` references in Rust's `${1}` / `${name}` form; a literal `$`
/// is escaped.
fn python_backrefs(line: &str) -> String {
    // Compiled once: backrefs are expanded on every matched line of every host.
    static BACKREF: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\\(\d+)|\\g<(\w+)>").expect("the backref pattern is a valid regex")
    });
    let escaped = line.replace('$', "$$");
    BACKREF
        .replace_all(&escaped, |c: &regex::Captures<'_>| {
            let name = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
            format!("${{{name}}}")
        })
        .into_owned()
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
            ("a\nport=1\nb\nport=2\n", "line replaced")
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
            ("keep\n".into(), "line(s) removed")
        );
    }
}
