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

/// `started`: an async result's `started`; a result without one (not async) counts as
/// started, as ansible-core's test answers (it also warns there).
pub fn started(value: Value) -> Result<bool, Error> {
    result_flag("started", &value, "started", true)
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
    let parsed =
        |v: &str| parse(v).ok_or_else(|| invalid(format!("invalid semantic version '{v}'")));
    let (pa, pb) = (parsed(a)?, parsed(b)?);
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

/// `is version(other, operator='eq', strict=None, version_type=None)`, checked in the order
/// and words of ansible-core's `version_compare` (`plugins/test/core.py`); a version the
/// chosen scheme cannot read fails as `Version comparison failed: ...`.
pub fn version(
    value: Value,
    other: Value,
    op: Option<String>,
    strict: Option<bool>,
    kwargs: Kwargs,
) -> Result<bool, Error> {
    let op = kwargs.get::<Option<String>>("operator")?.or(op);
    let strict = kwargs.get::<Option<bool>>("strict")?.or(strict);
    let vtype = kwargs.get::<Option<String>>("version_type")?;
    kwargs.assert_all_used()?;
    if strict.is_some() && vtype.is_some() {
        return Err(invalid(
            "Cannot specify both 'strict' and 'version_type'".into(),
        ));
    }
    if !value.is_true() {
        return Err(invalid("Input version value cannot be empty".into()));
    }
    if !other.is_true() {
        return Err(invalid(
            "Version parameter to compare against cannot be empty".into(),
        ));
    }
    let scheme = match (strict, vtype.as_deref()) {
        (Some(true), _) => "strict",
        (_, None) => "loose",
        (_, Some(t @ ("loose" | "strict" | "semver" | "semantic" | "pep440"))) => t,
        (_, Some(other)) => {
            return Err(invalid(format!(
                "Invalid version type ({other}). Must be one of 'loose', 'strict', 'semver', \
                 'semantic', 'pep440'"
            )));
        }
    };
    let wanted: fn(Ordering) -> bool = match op.as_deref().unwrap_or("eq") {
        "==" | "=" | "eq" => Ordering::is_eq,
        "!=" | "<>" | "ne" => Ordering::is_ne,
        "<" | "lt" => Ordering::is_lt,
        "<=" | "le" => Ordering::is_le,
        ">" | "gt" => Ordering::is_gt,
        ">=" | "ge" => Ordering::is_ge,
        other => {
            return Err(invalid(format!(
                "Invalid operator type ({other}). Must be one of '==', '=', 'eq', '<', 'lt', \
                 '<=', 'le', '>', 'gt', '>=', 'ge', '!=', '<>', 'ne'"
            )));
        }
    };
    let (a, b) = (pyrepr::to_str(&value)?, pyrepr::to_str(&other)?);
    let ord = match scheme {
        "semver" | "semantic" => semver_cmp(&a, &b),
        "strict" => strict_cmp(&a, &b),
        "pep440" => pep440_cmp(&a, &b),
        _ => Ok(loose(&a).cmp(&loose(&b))),
    }
    .map_err(|e| {
        invalid(format!(
            "Version comparison failed: {}",
            e.detail().unwrap_or_default()
        ))
    })?;
    Ok(wanted(ord))
}

fn strict_cmp(a: &str, b: &str) -> Result<Ordering, Error> {
    let ok = |v: &str| {
        let head = v.split(['a', 'b']).next().unwrap_or(v);
        let n = head.split('.').count();
        (2..=3).contains(&n) && head.split('.').all(|p| p.parse::<u64>().is_ok())
    };
    for v in [a, b] {
        if !ok(v) {
            return Err(invalid(format!("invalid version number '{v}'")));
        }
    }
    Ok(loose(a).cmp(&loose(b)))
}

/// The release, pre-release (rank, number), post-release and dev release of a PEP 440 version.
type Pep440Key = (Vec<u64>, (u8, u64), u64, u64);

/// A PEP 440 version's sort key as `packaging.version.Version` builds it (`_cmpkey`): the
/// release with trailing zeros dropped; the pre-release (a < b < rc), where a release with
/// only a dev part sorts before all its pre-releases and a final after them; the post-release
/// (none first); the dev release (none last).
fn pep440_key(v: &str) -> Option<Pep440Key> {
    fn number(rest: &mut &str) -> u64 {
        let t = rest.trim_start_matches(['.', '-', '_']);
        let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let n = t[..end].parse().unwrap_or(0);
        *rest = &t[end..];
        n
    }
    fn word(rest: &mut &str, words: &[&str]) -> Option<usize> {
        let t = rest.trim_start_matches(['.', '-', '_']);
        let i = words.iter().position(|w| t.starts_with(w))?;
        *rest = &t[words[i].len()..];
        Some(i)
    }
    let lower = v.trim().to_ascii_lowercase();
    let v = lower.strip_prefix('v').unwrap_or(&lower);
    let v = v.split('+').next()?;
    let v = v.split_once('!').map_or(v, |(_, rest)| rest);
    let end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (release, mut rest) = v.split_at(end);
    let mut nums: Vec<u64> = release
        .trim_end_matches('.')
        .split('.')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    while nums.len() > 1 && nums.last() == Some(&0) {
        nums.pop();
    }
    const PRE: [&str; 8] = ["alpha", "beta", "preview", "pre", "rc", "a", "b", "c"];
    const RANK: [u8; 8] = [1, 2, 3, 3, 3, 1, 2, 3];
    let pre = word(&mut rest, &PRE).map(|i| (RANK[i], number(&mut rest)));
    let post = word(&mut rest, &["post", "rev", "r"]).map(|_| number(&mut rest));
    let dev = word(&mut rest, &["dev"]).map(|_| number(&mut rest));
    if !rest.is_empty() {
        return None;
    }
    let pre = match (pre, post, dev) {
        (Some(p), _, _) => p,
        (None, None, Some(_)) => (0, 0),
        (None, _, _) => (9, 0),
    };
    Some((
        nums,
        pre,
        post.map_or(0, |n| n.saturating_add(1)),
        dev.unwrap_or(u64::MAX),
    ))
}

fn pep440_cmp(a: &str, b: &str) -> Result<Ordering, Error> {
    let key = |v: &str| pep440_key(v).ok_or_else(|| invalid(format!("Invalid version: '{v}'")));
    Ok(key(a)?.cmp(&key(b)?))
}

fn items(v: &Value) -> Result<Vec<Value>, Error> {
    Ok(v.try_iter()?.collect())
}

pub fn subset(a: Value, b: Value) -> Result<bool, Error> {
    let small = iterable_items(&a)?;
    let big = iterable_items(&b)?;
    Ok(small.iter().all(|x| big.contains(x)))
}

pub fn superset(a: Value, b: Value) -> Result<bool, Error> {
    subset(b, a)
}

/// Ansible's `contains` test is Python's `value in seq`: a substring test on a string.
pub fn contains(seq: Value, item: Value) -> Result<bool, Error> {
    if let (Some(text), Some(part)) = (seq.as_str(), item.as_str()) {
        return Ok(text.contains(part));
    }
    if !matches!(
        seq.kind(),
        ValueKind::Seq | ValueKind::Map | ValueKind::String | ValueKind::Iterable
    ) {
        return Err(invalid(format!(
            "argument of type '{}' is not iterable",
            super::filters::core::type_debug(seq)
        )));
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

/// `truthy(convert_bool=False)`: Python's `bool`, after ansible-core's `boolean()` when
/// `convert_bool` and the value is one of its words (`'off'` false, `'fred'` left as text).
pub fn truthy(v: Value, kwargs: Kwargs) -> Result<bool, Error> {
    let convert = kwargs.get::<Option<bool>>("convert_bool")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    if convert && let Some(b) = boolean_word(&v) {
        return Ok(b);
    }
    Ok(v.is_true())
}

pub fn falsy(v: Value, kwargs: Kwargs) -> Result<bool, Error> {
    truthy(v, kwargs).map(|t| !t)
}

/// ansible-core's `boolean()` (module_utils/parsing/convert_bool.py) for the values it knows;
/// `None` where it raises.
fn boolean_word(v: &Value) -> Option<bool> {
    match v.kind() {
        ValueKind::Bool => Some(v.is_true()),
        ValueKind::Number => match f64::try_from(v.clone()).ok()? {
            1.0 => Some(true),
            0.0 => Some(false),
            _ => None,
        },
        ValueKind::String => match v.as_str()?.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" | "on" | "1" | "true" | "t" => Some(true),
            "n" | "no" | "off" | "0" | "false" | "f" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// `vault_encrypted`: whether the value is the text of an inline `!vault` value (see
/// `crate::vault::is_vaulted_text`).
pub fn vault_encrypted(value: Value) -> bool {
    value.as_str().is_some_and(crate::vault::is_vaulted_text)
}

/// `vaulted_file`: whether the file at the path (from the current folder) is vault-encrypted,
/// its first bytes `$ANSIBLE_VAULT`; a file that cannot be read fails the test.
pub fn vaulted_file(path: String) -> Result<bool, Error> {
    use std::io::Read;
    let mut head = [0u8; 14];
    let read = std::fs::File::open(&path).and_then(|mut f| {
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    });
    match read {
        Ok(n) => Ok(head[..n] == *b"$ANSIBLE_VAULT"),
        Err(_) => Err(invalid(format!(
            "Cannot test if the file '{path}' is a vault."
        ))),
    }
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
