//! `replace`: replace every match of a regular expression in a text file, as Ansible's
//! `replace` module does (`re.subn` with `re.MULTILINE` over the file, or over the part
//! between `after` and `before`, found with `re.DOTALL`), with Python patterns and
//! replacement templates ([`crate::pyre`]). Read in the probe, edited on the controller by
//! [`edit`] (pure, unit tested), written back only when it changed.

use serde::Deserialize;

use crate::pyre::{Anchor, Flags, PyRegex, Template};

use super::args::boolish;
use super::host_path;
use super::mode::{Mode, opt_mode};
use super::posix::{Attrs, Kind};
use super::textedit::{self, TextEdit};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Replace, "replace", Params, run);

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
    /// The regular expression (Python syntax, multi-line mode: `^`/`$` match at every line).
    regexp: String,
    /// What each match becomes (`\1`, `\g<name>` for groups); empty removes the matches.
    #[serde(default)]
    replace: String,
    /// Only the text after the first match of this expression is edited.
    after: Option<String>,
    /// Only the text before the first match of this expression is edited.
    before: Option<String>,
    /// Keep a timestamped copy before changing the file.
    #[serde(default, deserialize_with = "boolish")]
    backup: bool,
    /// Accepted for compatibility; files are read and written as UTF-8.
    encoding: Option<String>,
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

/// The replacement, with the `after`/`before` section (already combined into one pattern).
pub struct Edit {
    pub regexp: PyRegex,
    /// The template, or upstream's failure message for one that does not fit `regexp`.
    pub replace: Result<Template, String>,
    pub section: Option<PyRegex>,
    /// The section pattern as upstream writes it, for its "did not match" message.
    pub section_text: String,
}

/// The edited text and Ansible's message (`N replacements made`, or empty).
pub fn edit(text: &str, e: &Edit) -> (String, String) {
    let (start, end) = match &e.section {
        None => (0, text.len()),
        Some(section) => match section
            .group_index("subsection")
            .and_then(|i| section.search(text).and_then(|c| c.span(i)))
        {
            Some(span) => span,
            None => {
                return (
                    text.to_string(),
                    format!(
                        "Pattern for before/after params did not match the given file: {}",
                        e.section_text
                    ),
                );
            }
        },
    };
    let part = &text[start..end];
    let Ok(template) = &e.replace else {
        return (text.to_string(), String::new());
    };
    let (replaced, count) = e.regexp.subn(part, template, 0);
    if count == 0 || replaced == part {
        return (text.to_string(), String::new());
    }
    let out = format!("{}{replaced}{}", &text[..start], &text[end..]);
    (out, format!("{count} replacements made"))
}

fn build(p: &Params) -> Result<Edit, ModuleError> {
    let bad = |detail: String| ModuleError::BadArgs {
        module: "replace",
        detail,
    };
    let compile = |what: &str, pattern: &str, flags: Flags| {
        PyRegex::with(pattern, flags, Anchor::Search).map_err(|e| {
            bad(format!(
                "`{what}` `{pattern}` is not a valid regular expression: {e}"
            ))
        })
    };
    let regexp = compile(
        "regexp",
        &p.regexp,
        Flags {
            multiline: true,
            ..Flags::default()
        },
    )?;
    // Upstream pastes `after` and `before` around the subsection group and searches the
    // whole file with `re.DOTALL`.
    let section_text = match (&p.after, &p.before) {
        (Some(a), Some(b)) => format!("{a}(?P<subsection>.*?){b}"),
        (Some(a), None) => format!("{a}(?P<subsection>.*)"),
        (None, Some(b)) => format!("(?P<subsection>.*){b}"),
        (None, None) => String::new(),
    };
    let section = if section_text.is_empty() {
        None
    } else {
        let what = match (&p.after, &p.before) {
            (Some(_), Some(_)) => "after`/`before",
            (Some(_), None) => "after",
            _ => "before",
        };
        Some(compile(
            what,
            &section_text,
            Flags {
                dotall: true,
                ..Flags::default()
            },
        )?)
    };
    // Upstream's `re.subn` fails on a bad template once the file is read; so does `run`.
    let replace = Template::new(&p.replace, &regexp)
        .map_err(|e| format!("Unable to process replace due to error: {e}"));
    Ok(Edit {
        regexp,
        replace,
        section,
        section_text,
    })
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    // A `path` parameter upstream: `~` is the remote user's home.
    let _ = &p.encoding;
    let spec = build(&p)?;
    let attrs = Attrs {
        mode: p.mode.clone(),
        owner: p.owner.clone(),
        group: p.group.clone(),
    };
    let e = TextEdit {
        path: &p.path,
        create: false,
        backup: p.backup,
        attrs: &attrs,
        validate: p.validate.as_deref(),
        missing_msg: Some(format!("Path {} does not exist !", p.path)),
        created_msg: None,
        content_header: false,
    };
    if let Err(msg) = &spec.replace {
        // Upstream reads the file (any kind but a folder) before `re.subn` finds the
        // template bad: the folder and missing-file failures come first.
        let before = super::filewrite::probe(ctx, &p.path, false).await?;
        return Ok(match before.stat.kind {
            Kind::Directory => {
                ModuleResult::failed(format!("Path {} is a directory !", p.path)).with("rc", 256)
            }
            Kind::Absent => {
                ModuleResult::failed(format!("Path {} does not exist !", p.path)).with("rc", 257)
            }
            _ => ModuleResult::failed(msg.clone()),
        });
    }
    let r = textedit::edit_file(ctx, &e, |old| edit(old, &spec)).await?;
    // Ansible's replace reports `rc: 0` on success (and 256/257 on its failures).
    Ok(if r.failed { r } else { r.with("rc", 0) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(regexp: &str, replace: &str, after: Option<&str>, before: Option<&str>) -> Params {
        Params {
            path: "/f".into(),
            regexp: regexp.into(),
            replace: replace.into(),
            after: after.map(str::to_string),
            before: before.map(str::to_string),
            backup: false,
            encoding: None,
            mode: None,
            owner: None,
            group: None,
            validate: None,
        }
    }

    fn spec(regexp: &str, replace: &str, after: Option<&str>, before: Option<&str>) -> Edit {
        build(&params(regexp, replace, after, before)).unwrap()
    }

    #[test]
    fn replaces_like_pythons_subn_in_multiline_mode_within_the_section() {
        let text = "a=1\nb=2\n[x]\na=3\n";
        let (out, msg) = edit(text, &spec(r"^a=(\d)$", r"a=\1\1", None, None));
        assert_eq!(out, "a=11\nb=2\n[x]\na=33\n");
        assert_eq!(msg, "2 replacements made");
        let (out, msg) = edit(text, &spec(r"^a=(\d)$", "a=9", Some(r"\[x\]"), None));
        assert_eq!(
            (out.as_str(), msg.as_str()),
            ("a=1\nb=2\n[x]\na=9\n", "1 replacements made")
        );
        let (out, _) = edit(text, &spec("^a", "z", None, Some(r"\[x\]")));
        assert_eq!(out, "z=1\nb=2\n[x]\na=3\n");
        // A section that is not found: unchanged, upstream's message with its pattern.
        assert_eq!(
            edit(text, &spec("a", "b", Some("nope"), Some("x"))),
            (
                text.into(),
                "Pattern for before/after params did not match the given file: \
                 nope(?P<subsection>.*?)x"
                    .to_string()
            )
        );
        // Nothing to replace: unchanged, no message.
        assert_eq!(
            edit(text, &spec("q", "b", None, None)),
            (text.into(), String::new())
        );
        // A replacement that changes nothing is no change.
        assert_eq!(edit(text, &spec("b=2", "b=2", None, None)).1, "");
    }

    #[test]
    fn back_references_look_around_and_named_groups() {
        // Expected values from CPython 3.11: `re.subn(regexp, replace, text, flags=re.M)`.
        let text = "k=k\nk=v\nkey = key\n";
        let (out, msg) = edit(
            text,
            &spec(
                r"^(?P<name>\w+) ?= ?(?P=name)$",
                r"\g<name>=same",
                None,
                None,
            ),
        );
        assert_eq!(out, "k=same\nk=v\nkey=same\n");
        assert_eq!(msg, "2 replacements made");
        let (out, _) = edit("ab ac ad\n", &spec(r"a(?!c)(?<=a)", "X", None, None));
        assert_eq!(out, "Xb ac Xd\n");
    }

    #[test]
    fn bad_patterns_and_templates_name_the_parameter() {
        let p =
            |regexp: &str, replace: &str, after: Option<&str>| params(regexp, replace, after, None);
        let msg = |p: Params| match build(&p) {
            Err(ModuleError::BadArgs { detail, .. }) => detail,
            _ => panic!("expected an argument error"),
        };
        let m = msg(p("(a", "", None));
        assert!(
            m.starts_with("`regexp` `(a` is not a valid regular expression: "),
            "{m}"
        );
        let m = msg(p("a", "", Some("[x")));
        assert!(
            m.starts_with("`after` `[x(?P<subsection>.*)` is not a valid"),
            "{m}"
        );
        assert_eq!(
            build(&p("(a)", r"\2", None)).unwrap().replace.unwrap_err(),
            "Unable to process replace due to error: invalid group reference 2"
        );
    }
}
