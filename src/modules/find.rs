//! `find`: list the files under folders that match names, age, size, mode or content, as
//! ansible-core 2.19's `find` does (ansible/modules/find.py).
//!
//! One GNU `find -printf` per folder lists every entry with its `lstat` fields (down to the
//! depth the walk can reach); the controller then replays upstream's `os.walk` (top-down, per
//! folder its non-folders then its folders, each in directory order) with its filters, its
//! `examined` count (every entry of every folder walked, hidden ones too) and its `limit`.
//! Only `contains` and `get_checksum` need a second command: the content or checksum of the
//! candidates alone.
//!
//! Over 300 lines because upstream's walk, its filters and its result shape are one contract,
//! replayed together; about half the file is the unit tests of that replay.

use std::collections::HashMap;

use crate::pyre::PyRegex as Regex;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::transport::quote::sh;

use super::args::{boolish, list, opt_stringish, opt_u64ish};
use super::host_path;
use super::mode::Mode;
use super::posix::Algo;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};
use crate::codec::Codec;

typed_module!(Find, "find", Params, run);

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileType {
    Any,
    Directory,
    #[default]
    File,
    Link,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgeStamp {
    Atime,
    Ctime,
    #[default]
    Mtime,
}

fn sha1() -> Algo {
    Algo::Sha1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Folders to search (list or comma-separated).
    #[serde(alias = "name", alias = "path", deserialize_with = "host_path::list")]
    paths: Vec<String>,
    /// Name patterns (globs, or Python regexes with `use_regex`) a match must fit; default all.
    #[serde(default, alias = "pattern", deserialize_with = "list")]
    patterns: Vec<String>,
    /// Name patterns that exclude a match.
    #[serde(default, alias = "exclude", deserialize_with = "list")]
    excludes: Vec<String>,
    /// A Python regex a line of the file must match from its start (files only).
    contains: Option<String>,
    /// `contains` is searched anywhere in the whole file instead of per line.
    #[serde(default, deserialize_with = "boolish")]
    read_whole_file: bool,
    /// `file` (default), `directory`, `link` or `any`.
    #[serde(default)]
    file_type: FileType,
    /// At least this old (`30`, `2d`, `4w`...; negative: at most).
    #[serde(default, deserialize_with = "opt_stringish")]
    age: Option<String>,
    /// Which time `age` looks at: `mtime` (default), `atime`, `ctime`.
    #[serde(default)]
    age_stamp: AgeStamp,
    /// At least this big (`10k`, `1m`...; negative: at most); regular files only.
    #[serde(default, deserialize_with = "opt_stringish")]
    size: Option<String>,
    /// Descend into sub-folders.
    #[serde(default, deserialize_with = "boolish")]
    recurse: bool,
    /// Include names starting with `.`.
    #[serde(default, deserialize_with = "boolish")]
    hidden: bool,
    /// Descend into linked folders.
    #[serde(default, deserialize_with = "boolish")]
    follow: bool,
    /// Add each file's `checksum`.
    #[serde(default, deserialize_with = "boolish")]
    get_checksum: bool,
    /// Checksum algorithm (default sha1).
    #[serde(default = "sha1", alias = "checksum", alias = "checksum_algo")]
    checksum_algorithm: Algo,
    /// `patterns`/`excludes` are Python regexes matched from the name's start.
    #[serde(default, deserialize_with = "boolish")]
    use_regex: bool,
    /// How deep to descend with `recurse` (1: only the folder's own entries).
    #[serde(default, deserialize_with = "opt_u64ish")]
    depth: Option<u64>,
    /// Permissions a match must have (octal or symbolic string).
    mode: Option<Value>,
    /// `mode` must be exactly the permissions (default) or only share a bit with them.
    #[serde(default = "yes", deserialize_with = "boolish")]
    exact_mode: bool,
    /// The encoding `contains` reads files in (Python's name; UTF-8 by default).
    encoding: Option<String>,
    /// Stop after this many matches.
    limit: Option<i64>,
}

/// One entry as `find -printf` reported it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Entry {
    /// Path below the searched folder (`a/b`).
    rel: String,
    /// `%y`: `f`, `d`, `l`, `c`, `b`, `p`, `s`.
    kind: char,
    /// `%Y`: the type a link points to (`os.walk` puts links to folders among the folders).
    target_kind: char,
    mode: u32,
    uid: u64,
    gid: u64,
    size: u64,
    inode: u64,
    dev: u64,
    nlink: u64,
    atime: f64,
    mtime: f64,
    ctime: f64,
    user: String,
    group: String,
}

/// The `-printf` format: 15 NUL-terminated fields per entry.
const FORMAT: &str = r"%y\0%Y\0%m\0%U\0%G\0%s\0%i\0%D\0%n\0%A@\0%T@\0%C@\0%u\0%g\0%P\0";

fn parse_entries(out: &[u8]) -> Vec<Entry> {
    let fields: Vec<String> = out
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    fields
        .chunks_exact(15)
        .map(|f| {
            let n = |s: &str| s.parse::<u64>().unwrap_or(0);
            let t = |s: &str| s.parse::<f64>().unwrap_or(0.0);
            // find prints the id when there is no name; Python's pwd lookup gives "".
            let name = |s: &str, id: &str| {
                if s == id {
                    String::new()
                } else {
                    s.to_string()
                }
            };
            Entry {
                kind: f[0].chars().next().unwrap_or('U'),
                target_kind: f[1].chars().next().unwrap_or('U'),
                mode: u32::from_str_radix(&f[2], 8).unwrap_or(0),
                uid: n(&f[3]),
                gid: n(&f[4]),
                size: n(&f[5]),
                inode: n(&f[6]),
                dev: n(&f[7]),
                nlink: n(&f[8]),
                atime: t(&f[9]),
                mtime: t(&f[10]),
                ctime: t(&f[11]),
                user: name(&f[12], &f[3]),
                group: name(&f[13], &f[4]),
                rel: f[14].clone(),
            }
        })
        .collect()
}

/// Python's `os.path.normpath` for POSIX paths.
fn normpath(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let lead = if p.starts_with("//") && !p.starts_with("///") {
        "//"
    } else if p.starts_with('/') {
        "/"
    } else {
        ""
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            ".." if !lead.is_empty() => {}
            c => parts.push(c),
        }
    }
    let s = format!("{lead}{}", parts.join("/"));
    if s.is_empty() { ".".into() } else { s }
}

/// Python's `fnmatch.translate`: the glob as an anchored regex.
fn glob_regex(glob: &str) -> String {
    super::fnmatch::translate(glob)
}

fn python_regex(what: &str, p: &str) -> Result<Regex, String> {
    Regex::new(p).map_err(|e| format!("`{what}` `{p}` is not a valid regular expression: {e}"))
}

/// The name filter (upstream's `pfilter`): a pattern matches and no exclude does.
struct Names {
    patterns: Vec<Regex>,
    excludes: Vec<Regex>,
}

impl Names {
    fn new(p: &Params) -> Result<Self, String> {
        let build = |what: &str, list: &[String]| -> Result<Vec<Regex>, String> {
            list.iter()
                .map(|x| {
                    if p.use_regex {
                        // `re.match`: anchored at the start only.
                        python_regex(what, &format!("^(?:{x})"))
                    } else {
                        Regex::new(&glob_regex(x)).map_err(|e| format!("`{what}` `{x}`: {e}"))
                    }
                })
                .collect()
        };
        let default = vec![if p.use_regex { ".*" } else { "*" }.to_string()];
        let patterns = if p.patterns.is_empty() {
            &default
        } else {
            &p.patterns
        };
        Ok(Self {
            patterns: build("patterns", patterns)?,
            excludes: build("excludes", &p.excludes)?,
        })
    }

    fn matches(&self, name: &str) -> bool {
        self.patterns.iter().any(|r| r.is_match(name))
            && !self.excludes.iter().any(|r| r.is_match(name))
    }
}

/// `30`, `2d`, `-1w` in seconds (upstream's units: s m h d w).
fn parse_age(s: &str) -> Option<i64> {
    scaled(
        s,
        &[
            ('s', 1),
            ('m', 60),
            ('h', 3600),
            ('d', 86400),
            ('w', 604800),
        ],
    )
}

/// `100`, `10k`, `-2m` in bytes (upstream's units: b k m g t).
fn parse_size(s: &str) -> Option<i64> {
    scaled(
        s,
        &[
            ('b', 1),
            ('k', 1 << 10),
            ('m', 1 << 20),
            ('g', 1 << 30),
            ('t', 1 << 40),
        ],
    )
}

fn scaled(s: &str, units: &[(char, i64)]) -> Option<i64> {
    let s = s.to_lowercase();
    let (num, unit) = match s.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => (&s[..s.len() - 1], Some(c)),
        _ => (s.as_str(), None),
    };
    let digits = num.strip_prefix('-').unwrap_or(num);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: i64 = num.parse().ok()?;
    let mult = match unit {
        None => 1,
        Some(u) => units.iter().find(|(c, _)| *c == u)?.1,
    };
    n.checked_mul(mult)
}

/// Everything decided before the walk.
struct Filters {
    names: Names,
    age: Option<i64>,
    size: Option<i64>,
    mode: Option<u32>,
    contains: Option<Regex>,
}

impl Filters {
    fn age_ok(&self, e: &Entry, stamp: AgeStamp, now: f64) -> bool {
        let Some(age) = self.age else { return true };
        let t = match stamp {
            AgeStamp::Atime => e.atime,
            AgeStamp::Ctime => e.ctime,
            AgeStamp::Mtime => e.mtime,
        };
        let d = now - t;
        if age >= 0 {
            d >= age as f64
        } else {
            d <= age.unsigned_abs() as f64
        }
    }

    fn size_ok(&self, e: &Entry) -> bool {
        match self.size {
            None => true,
            Some(s) if s >= 0 => e.size >= s as u64,
            Some(s) => e.size <= s.unsigned_abs(),
        }
    }

    fn mode_ok(&self, e: &Entry, exact: bool) -> bool {
        match self.mode {
            None => true,
            Some(m) if exact => e.mode == m,
            Some(m) => e.mode & m != 0,
        }
    }
}

/// The stat dict upstream returns per match (`statinfo`), with its `path`.
fn statinfo(path: &str, e: &Entry) -> Map<String, Value> {
    let m = e.mode;
    let bit = |b: u32| m & b != 0;
    let v = json!({
        "path": path,
        "mode": format!("{:04o}", m & 0o7777),
        "isdir": e.kind == 'd',
        "ischr": e.kind == 'c',
        "isblk": e.kind == 'b',
        "isreg": e.kind == 'f',
        "isfifo": e.kind == 'p',
        "islnk": e.kind == 'l',
        "issock": e.kind == 's',
        "uid": e.uid,
        "gid": e.gid,
        "size": e.size,
        "inode": e.inode,
        "dev": e.dev,
        "nlink": e.nlink,
        "atime": e.atime,
        "mtime": e.mtime,
        "ctime": e.ctime,
        "gr_name": e.group,
        "pw_name": e.user,
        "wusr": bit(0o200), "rusr": bit(0o400), "xusr": bit(0o100),
        "wgrp": bit(0o020), "rgrp": bit(0o040), "xgrp": bit(0o010),
        "woth": bit(0o002), "roth": bit(0o004), "xoth": bit(0o001),
        "isuid": bit(0o4000), "isgid": bit(0o2000),
    });
    match v {
        Value::Object(o) => o,
        _ => unreachable!("a json! object"),
    }
}

/// One searched folder's entries in `os.walk` order, each with its full path and whether the
/// walk reached it at an allowed depth.
struct Walked {
    path: String,
    entry: Entry,
    /// Which folder of the walk listed it (0: the searched folder itself).
    root: usize,
}

/// Replay `os.walk(top, topdown=True)` over the entries `find` listed: per folder, its
/// non-folders then its folders (directory order each), then each sub-folder in turn.
/// Returns the entries in the order upstream looks at them and, per folder walked, how many
/// entries it has (upstream's `examined` adds them up as it goes).
/// A folder's entries in walk order, and how many entries each walked folder has.
type Walk = (Vec<Walked>, Vec<u64>);

/// A searched folder's walk and the folders in it the walk could not enter (path, why), or
/// why the folder itself is not searched.
type Searched = Result<(Walk, Vec<(String, String)>), String>;

fn walk(top: &str, entries: Vec<Entry>, p: &Params) -> Walk {
    let mut children: HashMap<String, Vec<Entry>> = HashMap::new();
    for e in entries {
        let parent = match e.rel.rfind('/') {
            Some(i) => e.rel[..i].to_string(),
            None => String::new(),
        };
        children.entry(parent).or_default().push(e);
    }
    let top_slashes = format!("{}/", top.trim_end_matches('/'))
        .matches('/')
        .count();
    let mut out = Vec::new();
    let mut looked = Vec::new();
    let mut stack = vec![String::new()];
    while let Some(root) = stack.pop() {
        let list = children.remove(&root).unwrap_or_default();
        let is_dir = |e: &Entry| e.kind == 'd' || (e.kind == 'l' && e.target_kind == 'd');
        let (dirs, files): (Vec<Entry>, Vec<Entry>) = list.into_iter().partition(is_dir);
        let root = looked.len();
        looked.push((files.len() + dirs.len()) as u64);
        let mut descend: Vec<String> = dirs
            .iter()
            .filter(|d| d.kind == 'd' || p.follow)
            .map(|d| d.rel.clone())
            .collect();
        for e in files.into_iter().chain(dirs) {
            let path = normpath(&format!("{top}/{}", e.rel));
            if let Some(depth) = p.depth.filter(|d| *d > 0) {
                let d = path.matches('/').count() + 1 - top_slashes;
                if d as u64 > depth {
                    descend.clear();
                    continue;
                }
            }
            out.push(Walked {
                path,
                entry: e,
                root,
            });
        }
        if !p.recurse {
            break;
        }
        descend.reverse();
        stack.extend(descend);
    }
    (out, looked)
}

/// The sh text listing `top` for [`walk`]: `D` and the entries when it is a folder, else `N`.
fn list_script(top: &str, p: &Params) -> String {
    let max = match (p.recurse, p.depth.filter(|d| *d > 0)) {
        (false, _) => " -maxdepth 1".to_string(),
        (true, Some(d)) => format!(" -maxdepth {}", d + 1),
        (true, None) => String::new(),
    };
    let follow = if p.follow { "-L " } else { "" };
    let t = if top == "~" || top.starts_with("~/") {
        format!("\"$HOME\"{}", sh(&top[1..]))
    } else {
        sh(top)
    };
    format!(
        "if [ -d {t} ]; then printf 'D\\0'; find {follow}{t} -mindepth 1{max} -printf '{FORMAT}'; \
         else printf 'N\\0'; fi"
    )
}

/// Python's message for an unreadable folder (`[Errno 13] Permission denied: '/x'`), from
/// find's `find: '/x': Permission denied`.
fn walk_error(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("find: ")?;
    let (path, why) = rest.rsplit_once(": ")?;
    let path = path.trim_matches(['\'', '‘', '’', '"']).to_string();
    let errno = match why {
        "Permission denied" => 13,
        "Operation not permitted" => 1,
        "No such file or directory" => 2,
        _ => return None,
    };
    Some((path.clone(), format!("[Errno {errno}] {why}: '{path}'")))
}

/// Read the given files on the host: each as its byte count, a newline, then its bytes
/// (`-1` for one that cannot be read).
async fn read_files(
    ctx: &ModuleCtx<'_>,
    paths: &[String],
) -> Result<Vec<Option<Vec<u8>>>, ModuleError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut script = String::new();
    for p in paths {
        script.push_str(&format!(
            "f={}; if [ -r \"$f\" ]; then wc -c < \"$f\"; cat -- \"$f\"; else echo -1; fi\n",
            sh(p)
        ));
    }
    let out = ctx.run(script).await?;
    let mut rest: &[u8] = &out.stdout;
    let mut files = Vec::new();
    for _ in paths {
        let Some(nl) = rest.iter().position(|b| *b == b'\n') else {
            files.push(None);
            continue;
        };
        let n: i64 = String::from_utf8_lossy(&rest[..nl])
            .trim()
            .parse()
            .unwrap_or(-1);
        rest = &rest[nl + 1..];
        if n < 0 || n as usize > rest.len() {
            files.push(None);
            continue;
        }
        files.push(Some(rest[..n as usize].to_vec()));
        rest = &rest[n as usize..];
    }
    Ok(files)
}

/// Whether `text` has what `contains` looks for: a line matching from its start, or (with
/// `read_whole_file`) a match anywhere.
fn contains(text: &str, re: &Regex, whole: bool) -> bool {
    if whole {
        return re.is_match(text);
    }
    // `re.match` per line: the leftmost match starts at 0 when any match does.
    text.split_inclusive('\n')
        .any(|line| re.search(line).is_some_and(|m| m.start() == 0))
}

/// The bytes Python's text reader hands over at a time: it decodes a file in chunks of this
/// size, so a line can match before a chunk further on fails to decode.
const PY_CHUNK: usize = 8192;

/// `contains` on a file's bytes as upstream's `contentfilter` reads them: decoded strictly in
/// `encoding`; a file that does not decode fails the whole folder with upstream's message,
/// unless (line by line) a complete line of the chunks read before the bad one matched.
fn content_hit(path: &str, bytes: &[u8], re: &Regex, p: &Params) -> Result<bool, String> {
    let name = p.encoding.as_deref().unwrap_or_default();
    let Some(codec) = Codec::lookup(name) else {
        return Err(format!("unknown encoding: {name}"));
    };
    match codec.decode(bytes) {
        Ok(text) => Ok(contains(&text, re, p.read_whole_file)),
        Err(bad) => {
            let read = bad / PY_CHUNK * PY_CHUNK;
            if !p.read_whole_file
                && let Ok(text) = codec.decode(&bytes[..read])
                && let Some(end) = text.rfind('\n')
                && contains(&text[..=end], re, false)
            {
                return Ok(true);
            }
            let current = match &p.encoding {
                Some(e) => e.as_str(),
                None => "None (default determined by the Python built-in function \"open\")",
            };
            Err(format!(
                "Failed to read the file {path} due to an encoding error. current encoding: {current}"
            ))
        }
    }
}

fn filters(p: &Params) -> Result<Filters, Box<ModuleResult>> {
    let fail = |m: String| Box::new(ModuleResult::failed(m));
    let names = Names::new(p).map_err(fail)?;
    let age = match &p.age {
        None => None,
        Some(a) => Some(parse_age(a).ok_or_else(|| {
            ModuleResult::failed("failed to process age").with("age", a.as_str())
        })?),
    };
    let size = match &p.size {
        None => None,
        Some(s) => Some(parse_size(s).ok_or_else(|| {
            Box::new(ModuleResult::failed("failed to process size").with("size", s.as_str()))
        })?),
    };
    if let Some(l) = p.limit.filter(|l| *l <= 0) {
        return Err(fail(format!(
            "limit cannot be {l} (use None for unlimited)"
        )));
    }
    let mode = match &p.mode {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => {
            let m = match u32::from_str_radix(s, 8) {
                Ok(m) => m,
                Err(_) => Mode::parse(s)
                    .ok()
                    .and_then(|m| m.resolve(0, false))
                    .ok_or_else(|| fail(format!("bad symbolic permission for mode: {s}")))?,
            };
            Some(m & 0o7777)
        }
        Some(other) => {
            let ty = match other {
                Value::Number(n) if n.is_f64() => "float",
                Value::Number(_) => "int",
                Value::Bool(_) => "bool",
                Value::Array(_) => "list",
                _ => "dict",
            };
            return Err(fail(format!(
                "argument 'mode' is not a string and conversion is not allowed, value is of type {ty}"
            )));
        }
    };
    let contains = match &p.contains {
        None => None,
        Some(c) => Some(python_regex("contains", c).map_err(fail)?),
    };
    Ok(Filters {
        names,
        age,
        size,
        mode,
        contains,
    })
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let f = match filters(&p) {
        Ok(f) => f,
        Err(r) => return Ok(*r),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut skipped = Map::new();
    // Upstream warns of each searched folder it gave up on (not of folders the walk could
    // not enter).
    let mut warnings: Vec<String> = Vec::new();
    let mut give_up = |skipped: &mut Map<String, Value>, top: &str, why: String| {
        warnings.push(format!(
            "Skipped '{top}' path due to this access issue: {why}\n"
        ));
        skipped.insert(top.to_string(), why.into());
    };
    // Per searched folder: its entries in walk order and the folders the walk could not
    // enter, or why it is not searched.
    let mut walks: Vec<(&String, Searched)> = Vec::new();
    for top in &p.paths {
        let out = ctx.run(list_script(top, &p)).await?;
        let stdout = out.stdout.as_slice();
        if stdout.first() != Some(&b'D') {
            walks.push((top, Err(format!("'{top}' is not a directory"))));
            continue;
        }
        let mut unreadable = Vec::new();
        let mut other = Vec::new();
        for line in out.stderr_str().lines() {
            match walk_error(line) {
                Some(e) => unreadable.push(e),
                None => other.push(line.to_string()),
            }
        }
        // Unreadable folders are skipped as upstream does; anything else (a `find` without
        // GNU's `-printf`) is a failure, not an empty result.
        if !out.success() && !other.is_empty() {
            return Ok(ModuleResult::failed(format!(
                "`find` on the host failed (kinit needs GNU findutils): {}",
                other.join("; ")
            )));
        }
        let w = walk(top, parse_entries(&stdout[2.min(stdout.len())..]), &p);
        walks.push((top, Ok((w, unreadable))));
    }
    // Decide everything but content; read the content of the files that need it.
    let pre = |w: &Walked| -> bool {
        let e = &w.entry;
        let name = w.path.rsplit('/').next().unwrap_or("");
        if name.starts_with('.') && !p.hidden {
            return false;
        }
        let name = e.rel.rsplit('/').next().unwrap_or("");
        let common = f.names.matches(name) && f.age_ok(e, p.age_stamp, now);
        match p.file_type {
            FileType::Any => common && (e.kind != 'f' || f.size_ok(e)),
            FileType::Directory => e.kind == 'd' && common,
            FileType::File => e.kind == 'f' && common && f.size_ok(e),
            FileType::Link => e.kind == 'l' && common,
        }
    };
    // Upstream checks the mode last, after reading the content.
    let mode_ok = |w: &Walked| f.mode_ok(&w.entry, p.exact_mode);
    let mut content: HashMap<String, Result<bool, String>> = HashMap::new();
    if let (Some(re), FileType::File) = (&f.contains, p.file_type) {
        let want: Vec<String> = walks
            .iter()
            .filter_map(|(_, w)| w.as_ref().ok())
            .flat_map(|((w, _), _)| w)
            .filter(|w| pre(w))
            .map(|w| w.path.clone())
            .collect();
        for (path, bytes) in want.iter().zip(read_files(ctx, &want).await?) {
            // A file that cannot be read does not match (upstream passes over its `OSError`).
            let hit = bytes.map_or(Ok(false), |b| content_hit(path, &b, re, &p));
            content.insert(path.clone(), hit);
        }
    }
    let mut files: Vec<Map<String, Value>> = Vec::new();
    let mut msg = "All paths examined";
    let mut looked = 0u64;
    for (top, walked) in &walks {
        let ((walked, counts), unreadable) = match walked {
            Ok(w) => w,
            Err(why) => {
                give_up(&mut skipped, top, why.clone());
                continue;
            }
        };
        for (path, why) in unreadable {
            skipped.insert(path.clone(), why.clone().into());
        }
        let mut examined: u64 = counts.iter().sum();
        for w in walked {
            let hit = match content.get(&w.path) {
                Some(Err(why)) if pre(w) => {
                    // Upstream's exception ends the walk of this folder where it stood.
                    give_up(&mut skipped, top, why.clone());
                    examined = counts[..=w.root].iter().sum();
                    break;
                }
                Some(hit) => hit.clone().unwrap_or(false),
                None => f.contains.is_none() || p.file_type != FileType::File,
            };
            let ok = pre(w) && hit && mode_ok(w);
            if ok {
                files.push(statinfo(&w.path, &w.entry));
            }
            if p.limit.is_some_and(|l| files.len() as i64 == l) {
                msg = "Limit of matches reached";
                // The walk stops here: later folders are not listed, so not examined.
                examined = counts[..=w.root].iter().sum();
                break;
            }
        }
        looked += examined;
    }
    if p.get_checksum {
        let regular: Vec<String> = files
            .iter()
            .filter(|m| m["isreg"] == true)
            .map(|m| m["path"].as_str().unwrap_or_default().to_string())
            .collect();
        if !regular.is_empty() {
            let tool = p.checksum_algorithm.tool();
            let script: String = regular
                .iter()
                .map(|r| {
                    format!(
                        "s=$({tool}sum < {} 2>/dev/null); echo \"${{s%% *}}\"\n",
                        sh(r)
                    )
                })
                .collect();
            let out = ctx.run(script).await?;
            let sums: HashMap<&String, String> = regular
                .iter()
                .zip(out.stdout_str().lines().map(str::to_string))
                .collect();
            for m in files.iter_mut() {
                let path = m["path"].as_str().unwrap_or_default().to_string();
                if let Some(s) = sums.get(&path) {
                    m.insert("checksum".into(), s.clone().into());
                }
            }
        }
    }
    if !warnings.is_empty() {
        msg = "Not all paths examined, check warnings for details";
    }
    let matched = files.len();
    let r = ModuleResult {
        msg: Some(msg.into()),
        ..ModuleResult::ok()
    }
    .with(
        "files",
        files.into_iter().map(Value::Object).collect::<Vec<_>>(),
    )
    .with("matched", matched)
    .with("examined", looked)
    .with("skipped_paths", Value::Object(skipped));
    Ok(if warnings.is_empty() {
        r
    } else {
        r.with("warnings", warnings)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Params {
        super::super::args::parse("find", &v).unwrap()
    }

    fn entry(rel: &str, kind: char) -> Entry {
        Entry {
            rel: rel.into(),
            kind,
            target_kind: kind,
            ..Entry::default()
        }
    }

    #[test]
    fn globs_translate_as_fnmatch() {
        let m = |g: &str, s: &str| Regex::new(&glob_regex(g)).unwrap().is_match(s);
        assert!(m("*.conf", "a.conf") && !m("*.conf", "a.conf.bak"));
        assert!(m("*", ".hidden") && m("a?c", "abc") && !m("a?c", "ac"));
        assert!(m("[ab]x", "bx") && !m("[!ab]x", "bx") && m("[!ab]x", "cx"));
        assert!(m("[x", "[x") && m("a.b", "a.b") && !m("a.b", "axb"));
    }

    #[test]
    fn ages_and_sizes_use_upstreams_units() {
        assert_eq!(parse_age("2d"), Some(172800));
        assert_eq!(parse_age("-1W"), Some(-604800));
        assert_eq!(parse_age("30"), Some(30));
        assert_eq!(parse_age("3y"), None);
        assert_eq!(parse_size("10k"), Some(10240));
        assert_eq!(parse_size("-1m"), Some(-1048576));
        assert_eq!(parse_size("k"), None);
    }

    #[test]
    fn normpath_is_pythons() {
        assert_eq!(normpath("/tmp/x//a"), "/tmp/x/a");
        assert_eq!(normpath("/tmp/x/./b/../c"), "/tmp/x/c");
        assert_eq!(normpath("rel/"), "rel");
        assert_eq!(normpath("//x"), "//x");
    }

    #[test]
    fn walk_is_os_walks_order_and_count() {
        // find lists depth-first; os.walk gives each folder's files, then its folders, then
        // descends.
        let entries = vec![
            entry("d1", 'd'),
            entry("d1/x", 'f'),
            entry("d1/sub", 'd'),
            entry("d1/sub/y", 'f'),
            entry("a", 'f'),
            entry(".h", 'd'),
            entry(".h/z", 'f'),
        ];
        let p = params(json!({"paths": "/t/", "recurse": true}));
        let (w, counts) = walk("/t/", entries.clone(), &p);
        let order: Vec<&str> = w.iter().map(|w| w.path.as_str()).collect();
        assert_eq!(
            order,
            [
                "/t/a",
                "/t/d1",
                "/t/.h",
                "/t/d1/x",
                "/t/d1/sub",
                "/t/d1/sub/y",
                "/t/.h/z"
            ]
        );
        assert_eq!(counts, [3, 2, 1, 1]);
        assert_eq!(w[4].root, 1);
        let p = params(json!({"paths": "/t", "recurse": true, "depth": 1}));
        let (w, counts) = walk("/t", entries.clone(), &p);
        // `sub` is listed in `d1` (counted) but, deeper than 1, neither matched nor walked.
        assert_eq!(w.len(), 3);
        assert_eq!(counts, [3, 2, 1]);
        let p = params(json!({"paths": "/t"}));
        let (w, counts) = walk("/t", entries, &p);
        assert_eq!((w.len(), counts), (3, vec![3]));
    }

    #[test]
    fn printf_records_are_parsed() {
        let fields = [
            "f",
            "f",
            "644",
            "1000",
            "1000",
            "12",
            "99",
            "2049",
            "1",
            "1700000000.5",
            "1700000001.25",
            "1700000002.0",
            "alice",
            "1000",
            "sub/x.conf",
        ];
        let rec: String = fields.iter().map(|f| format!("{f}\0")).collect();
        let e = &parse_entries(rec.as_bytes())[0];
        assert_eq!(e.rel, "sub/x.conf");
        assert_eq!((e.mode, e.size, e.inode, e.dev), (0o644, 12, 99, 2049));
        assert_eq!((e.user.as_str(), e.group.as_str()), ("alice", ""));
        assert_eq!(e.mtime, 1700000001.25);
        let s = statinfo("/t/sub/x.conf", e);
        assert_eq!(s["mode"], "0644");
        assert_eq!(s["rusr"], true);
        assert_eq!(s["xoth"], false);
    }

    #[test]
    fn contains_matches_a_line_start_or_anywhere() {
        let re = Regex::new("port=").unwrap();
        assert!(contains("a=1\nport=2\n", &re, false));
        assert!(!contains("a=1 port=2\n", &re, false));
        assert!(contains("a=1 port=2\n", &re, true));
    }

    #[test]
    fn walk_errors_read_as_pythons() {
        assert_eq!(
            walk_error("find: '/t/locked': Permission denied"),
            Some((
                "/t/locked".to_string(),
                "[Errno 13] Permission denied: '/t/locked'".to_string()
            ))
        );
    }
}
