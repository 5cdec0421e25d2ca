//! Ansible's Jinja tests: `match`/`search`/`regex`, task result tests (`success`, `failed`,
//! `changed`, `skipped`, `finished`), `version` comparison, set tests and controller path
//! tests. The builtin ones (`defined`, `none`, ...) come from minijinja.

use std::cmp::Ordering;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use super::pyrepr;
use crate::pyre::{Anchor, Flags, PyRegex};

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

fn regex_test(
    value: &Value,
    pattern: &str,
    kwargs: &Kwargs,
    anchor: Anchor,
) -> Result<bool, Error> {
    let flags = Flags {
        ignorecase: kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false),
        multiline: kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false),
        dotall: false,
    };
    let re = PyRegex::with(pattern, flags, anchor)
        .map_err(|e| invalid(format!("invalid regular expression `{pattern}`: {e}")))?;
    Ok(re.is_match(&pyrepr::to_str(value)?))
}

/// `is match(pattern)`: Python's `re.match` (anchored at the start).
pub fn is_match(value: Value, pattern: String, kwargs: Kwargs) -> Result<bool, Error> {
    let r = regex_test(&value, &pattern, &kwargs, Anchor::Match);
    kwargs.assert_all_used()?;
    r
}

pub fn is_search(value: Value, pattern: String, kwargs: Kwargs) -> Result<bool, Error> {
    let r = regex_test(&value, &pattern, &kwargs, Anchor::Search);
    kwargs.assert_all_used()?;
    r
}

/// `is regex(pattern, match_type='search')`.
pub fn is_regex(value: Value, pattern: String, kwargs: Kwargs) -> Result<bool, Error> {
    let kind = kwargs.get::<Option<String>>("match_type")?;
    let anchor = match kind.as_deref() {
        None | Some("search") => Anchor::Search,
        Some("match") => Anchor::Match,
        Some("fullmatch") => Anchor::FullMatch,
        Some(other) => return Err(invalid(format!("regex: unknown match_type `{other}`"))),
    };
    let r = regex_test(&value, &pattern, &kwargs, anchor);
    kwargs.assert_all_used()?;
    r
}

fn result_flag(test: &str, value: &Value, key: &str, default: bool) -> Result<bool, Error> {
    if value.kind() != ValueKind::Map {
        return Err(invalid(format!("The '{test}' test expects a dictionary")));
    }
    let v = value.get_attr(key)?;
    Ok(if v.is_undefined() {
        default
    } else {
        super::filters::core::to_bool(v)
    })
}

pub fn failed(value: Value) -> Result<bool, Error> {
    result_flag("failed", &value, "failed", false)
}

/// `is success`: not `failed` (ansible-core's test calls `failed`, whose words it shows).
pub fn success(value: Value) -> Result<bool, Error> {
    Ok(!result_flag("failed", &value, "failed", false)?)
}

/// `is changed`: the result's `changed`, or without one, whether any loop result changed.
pub fn changed(value: Value) -> Result<bool, Error> {
    if value.kind() != ValueKind::Map || !value.get_attr("changed")?.is_undefined() {
        return result_flag("changed", &value, "changed", false);
    }
    let results = value.get_attr("results")?;
    if results.kind() == ValueKind::Seq {
        for r in results.try_iter()? {
            if r.kind() == ValueKind::Map && result_flag("changed", &r, "changed", false)? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

pub fn skipped(value: Value) -> Result<bool, Error> {
    result_flag("skipped", &value, "skipped", false)
}

pub fn finished(value: Value) -> Result<bool, Error> {
    result_flag("finished", &value, "finished", true)
}

/// `timedout`: the result of a task its `timeout` stopped (ansible-core's `timedout` test:
/// a `timedout` with a `period`).
pub fn timedout(value: Value) -> Result<bool, Error> {
    if value.kind() != minijinja::value::ValueKind::Map {
        return Err(invalid("The 'timedout' test expects a dictionary".into()));
    }
    let t = value.get_attr("timedout").unwrap_or_default();
    Ok(t.is_true() && t.get_attr("period").is_ok_and(|p| p.is_true()))
}

pub fn unreachable(value: Value) -> Result<bool, Error> {
    result_flag("unreachable", &value, "unreachable", false)
}

pub fn reachable(value: Value) -> Result<bool, Error> {
    Ok(!unreachable(value)?)
}

/// One piece of a version: numbers compare numerically and sort before words.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Num(u64),
    Word(String),
}

/// Python's `LooseVersion` components: runs of digits and of letters.
fn loose(v: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, parts: &mut Vec<Part>| {
        if !cur.is_empty() {
            parts.push(match cur.parse::<u64>() {
                Ok(n) => Part::Num(n),
                Err(_) => Part::Word(cur.to_lowercase()),
            });
            cur.clear();
        }
    };
    for c in v.chars() {
        let same_kind = cur
            .chars()
            .next()
            .is_none_or(|p| p.is_ascii_digit() == c.is_ascii_digit());
        if c.is_ascii_alphanumeric() {
            if !same_kind {
                flush(&mut cur, &mut parts);
            }
            cur.push(c);
        } else {
            flush(&mut cur, &mut parts);
        }
    }
    flush(&mut cur, &mut parts);
    parts
}

/// Semantic versioning 2.0 order (pre-releases before the release, build ignored).
fn semver_cmp(a: &str, b: &str) -> Result<Ordering, Error> {
    fn parse(v: &str) -> Option<(Vec<u64>, Option<Vec<String>>)> {
        let v = v.trim().trim_start_matches('v');
        let v = v.split('+').next()?;
        let (core, pre) = match v.split_once('-') {
            Some((c, p)) => (c, Some(p.split('.').map(str::to_string).collect())),
            None => (v, None),
        };
        let nums: Option<Vec<u64>> = core.split('.').map(|n| n.parse().ok()).collect();
        let nums = nums.filter(|n| n.len() == 3)?;
        Some((nums, pre))
    }
    let (Some(pa), Some(pb)) = (parse(a), parse(b)) else {
        return Err(invalid(format!("`{a}` or `{b}` is not a semantic version")));
    };
    Ok(pa.0.cmp(&pb.0).then_with(|| match (&pa.1, &pb.1) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => {
            for (p, q) in x.iter().zip(y) {
                let o = match (p.parse::<u64>(), q.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    _ => p.cmp(q),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
    }))
}

/// `is version(other, operator='eq', strict=False, version_type='loose')`.
pub fn version(
    value: Value,
    other: Value,
    op: Option<String>,
    kwargs: Kwargs,
) -> Result<bool, Error> {
    let op = match kwargs.get::<Option<String>>("operator")? {
        Some(o) => Some(o),
        None => op,
    };
    let strict = kwargs.get::<Option<bool>>("strict")?.unwrap_or(false);
    let vtype = kwargs.get::<Option<String>>("version_type")?;
    kwargs.assert_all_used()?;
    let (a, b) = (pyrepr::to_str(&value)?, pyrepr::to_str(&other)?);
    if a.is_empty() {
        return Err(invalid("version value cannot be empty".into()));
    }
    let ord = match vtype.as_deref() {
        Some("semver" | "semantic") => semver_cmp(&a, &b)?,
        Some("strict") => strict_cmp(&a, &b)?,
        None if strict => strict_cmp(&a, &b)?,
        None | Some("loose" | "pep440") => loose(&a).cmp(&loose(&b)),
        Some(other) => {
            return Err(invalid(format!(
                "version: unknown version_type `{other}`, expected loose, strict, semver, \
                 semantic or pep440"
            )));
        }
    };
    Ok(match op.as_deref().unwrap_or("eq") {
        "==" | "=" | "eq" => ord == Ordering::Equal,
        "!=" | "<>" | "ne" => ord != Ordering::Equal,
        "<" | "lt" => ord == Ordering::Less,
        "<=" | "le" => ord != Ordering::Greater,
        ">" | "gt" => ord == Ordering::Greater,
        ">=" | "ge" => ord != Ordering::Less,
        other => return Err(invalid(format!("version: invalid operator `{other}`"))),
    })
}

fn strict_cmp(a: &str, b: &str) -> Result<Ordering, Error> {
    let ok = |v: &str| {
        let head = v.split(['a', 'b']).next().unwrap_or(v);
        let n = head.split('.').count();
        (2..=3).contains(&n) && head.split('.').all(|p| p.parse::<u64>().is_ok())
    };
    if !ok(a) || !ok(b) {
        return Err(invalid(format!("`{a}` or `{b}` is not a strict version")));
    }
    Ok(loose(a).cmp(&loose(b)))
}

fn items(v: &Value) -> Result<Vec<Value>, Error> {
    Ok(v.try_iter()?.collect())
}

pub fn subset(a: Value, b: Value) -> Result<bool, Error> {
    let big = items(&b)?;
    Ok(items(&a)?.iter().all(|x| big.contains(x)))
}

pub fn superset(a: Value, b: Value) -> Result<bool, Error> {
    subset(b, a)
}

/// Ansible's `contains` test is Python's `value in seq`: a substring test on a string.
pub fn contains(seq: Value, item: Value) -> Result<bool, Error> {
    if let (Some(text), Some(part)) = (seq.as_str(), item.as_str()) {
        return Ok(text.contains(part));
    }
    Ok(items(&seq)?.contains(&item))
}

/// `all` and `any`: Python's builtins as tests (ansible-core's `plugins/test/core.py`):
/// whether every item (any item) of an iterable is true; kubespray selects packages with
/// `selectattr('value', 'ansible.builtin.all')`.
pub fn all(v: Value) -> Result<bool, Error> {
    Ok(iterable_items(&v)?.iter().all(Value::is_true))
}

pub fn any(v: Value) -> Result<bool, Error> {
    Ok(iterable_items(&v)?.iter().any(Value::is_true))
}

/// The items of `v`, or Python's error for a value that is not iterable.
fn iterable_items(v: &Value) -> Result<Vec<Value>, Error> {
    match v.kind() {
        ValueKind::Seq | ValueKind::Map | ValueKind::String | ValueKind::Iterable => items(v),
        _ => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "'{}' object is not iterable",
                super::filters::core::type_debug(v.clone())
            ),
        )),
    }
}

pub fn truthy(v: Value) -> bool {
    v.is_true()
}

pub fn falsy(v: Value) -> bool {
    !v.is_true()
}

pub fn path_exists(v: Value) -> Result<bool, Error> {
    Ok(std::path::Path::new(&pyrepr::to_str(&v)?).exists())
}

pub fn path_file(v: Value) -> Result<bool, Error> {
    Ok(std::path::Path::new(&pyrepr::to_str(&v)?).is_file())
}

pub fn path_directory(v: Value) -> Result<bool, Error> {
    Ok(std::path::Path::new(&pyrepr::to_str(&v)?).is_dir())
}

pub fn path_link(v: Value) -> Result<bool, Error> {
    Ok(std::path::Path::new(&pyrepr::to_str(&v)?).is_symlink())
}

pub fn path_abs(v: Value) -> Result<bool, Error> {
    Ok(pyrepr::to_str(&v)?.starts_with('/'))
}

/// `is link_exists`: Python's `os.path.lexists` (a broken symlink exists).
pub fn path_lexists(v: Value) -> Result<bool, Error> {
    Ok(std::fs::symlink_metadata(pyrepr::to_str(&v)?).is_ok())
}

/// `is same_file(other)`: Python's `os.path.samefile`, which fails when either path is
/// missing.
pub fn path_same_file(a: Value, b: Value) -> Result<bool, Error> {
    use std::os::unix::fs::MetadataExt;
    let stat = |v: &Value| -> Result<std::fs::Metadata, Error> {
        let p = pyrepr::to_str(v)?;
        std::fs::metadata(&p).map_err(|e| {
            invalid(format!(
                "[Errno {}] {}: '{p}'",
                e.raw_os_error().unwrap_or(0),
                python_strerror(&e)
            ))
        })
    };
    let (x, y) = (stat(&a)?, stat(&b)?);
    Ok(x.dev() == y.dev() && x.ino() == y.ino())
}

fn python_strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).to_string()
}

/// `is mount`: Python's `os.path.ismount` — not a symlink, and on another device than its
/// parent or the same inode as its parent (`/`).
pub fn path_mount(v: Value) -> Result<bool, Error> {
    use std::os::unix::fs::MetadataExt;
    let p = pyrepr::to_str(&v)?;
    let Ok(me) = std::fs::symlink_metadata(&p) else {
        return Ok(false);
    };
    if me.file_type().is_symlink() {
        return Ok(false);
    }
    let Ok(parent) = std::fs::symlink_metadata(format!("{}/..", p.trim_end_matches('/'))) else {
        return Ok(false);
    };
    Ok(me.dev() != parent.dev() || me.ino() == parent.ino())
}

/// `is nan`: Python's `math.isnan`, false for anything that is not a number.
pub fn is_nan(v: Value) -> bool {
    match v.kind() {
        ValueKind::Number => f64::try_from(v).is_ok_and(f64::is_nan),
        _ => false,
    }
}
