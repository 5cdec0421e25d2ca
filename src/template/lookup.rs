//! `lookup()` and `query()`/`q()`: `env`, `file`, `template`, `pipe`, `vars`, `fileglob`,
//! `first_found`, `lines`, `items`/`list` and `dict`, run on the controller. Relative paths
//! are searched in the `ansible_search_path` variable (each entry, then its `files/` or
//! `templates/` folder), then the current folder, as Ansible does for roles and playbooks.
//!
//! The lookups share one search-path resolver and one argument convention; each is a short
//! function, so they stay together rather than one file each.

use std::path::{Path, PathBuf};

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Error, ErrorKind, State, Value};

use super::pyrepr;
use super::scope::SELF_KEY;

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// How a failed lookup's message starts (Ansible's `_invoke_lookup`): the message is then
/// Ansible's whole text, registered as it is.
pub fn lookup_failed(name: &str, detail: &str) -> String {
    format!("The lookup plugin '{name}' failed: {detail}")
}

/// Whether `msg` is a lookup failure worded by `lookup_failed`.
pub fn is_lookup_failure(msg: &str) -> bool {
    msg.starts_with("The lookup plugin '")
}

fn strip_fqcn(name: &str) -> &str {
    name.strip_prefix("ansible.builtin.").unwrap_or(name)
}

/// `lookup(name, *terms, wantlist=False, errors='strict', ...)`.
pub fn lookup(
    state: &State<'_, '_>,
    name: String,
    terms: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let wantlist = kwargs.get::<Option<bool>>("wantlist")?.unwrap_or(false);
    let ran = run_guarded(state, &name, &terms, &kwargs)?;
    let Some(ran) = ran else {
        return Ok(Value::from(()));
    };
    if wantlist {
        return Ok(Value::from(ran));
    }
    if ran.iter().all(|v| v.kind() == ValueKind::String) {
        let joined: Vec<&str> = ran.iter().filter_map(Value::as_str).collect();
        return Ok(Value::from(joined.join(",")));
    }
    if ran.len() == 1 {
        return Ok(ran.into_iter().next().unwrap_or_default());
    }
    Ok(Value::from(ran))
}

/// `query(name, *terms)`: always a list.
pub fn query(
    state: &State<'_, '_>,
    name: String,
    terms: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let _ = kwargs.get::<Option<bool>>("wantlist")?;
    Ok(run_guarded(state, &name, &terms, &kwargs)?.map_or(Value::from(()), Value::from))
}

/// Run a lookup honouring `errors=strict|warn|ignore` (`None` for a swallowed error).
fn run_guarded(
    state: &State<'_, '_>,
    name: &str,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Option<Vec<Value>>, Error> {
    let errors = kwargs.get::<Option<String>>("errors")?;
    let result = run(state, strip_fqcn(name), terms, kwargs);
    match (result, errors.as_deref()) {
        (Ok(v), _) => {
            kwargs.assert_all_used()?;
            Ok(Some(v))
        }
        (Err(_), Some("ignore" | "warn")) => Ok(None),
        // Ansible's words (`_invoke_lookup`).
        (Err(e), _) => Err(invalid(lookup_failed(
            strip_fqcn(name),
            &super::scope::describe(&e),
        ))),
    }
}

fn term_strings(terms: &[Value]) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for t in terms {
        if t.kind() == ValueKind::Seq {
            for item in t.try_iter()? {
                out.push(pyrepr::to_str(&item)?);
            }
        } else {
            out.push(pyrepr::to_str(t)?);
        }
    }
    Ok(out)
}

fn run(
    state: &State<'_, '_>,
    name: &str,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    match name {
        "env" => {
            let default = kwargs.get::<Option<Value>>("default")?;
            term_strings(terms)?
                .into_iter()
                .map(|t| match std::env::var(&t) {
                    Ok(v) => Ok(Value::from(v)),
                    Err(_) => Ok(default.clone().unwrap_or(Value::from(""))),
                })
                .collect()
        }
        "file" => {
            let rstrip = kwargs.get::<Option<bool>>("rstrip")?.unwrap_or(true);
            let lstrip = kwargs.get::<Option<bool>>("lstrip")?.unwrap_or(false);
            term_strings(terms)?
                .into_iter()
                .map(|t| {
                    let path = find(state, &t, "files")?;
                    let mut s = read(&path)?;
                    if rstrip {
                        s.truncate(s.trim_end().len());
                    }
                    if lstrip {
                        s = s.trim_start().to_string();
                    }
                    Ok(Value::from(s))
                })
                .collect()
        }
        "template" => {
            let extra = kwargs.get::<Option<Value>>("template_vars")?;
            let _ = kwargs.get::<Option<bool>>("convert_data")?;
            term_strings(terms)?
                .into_iter()
                .map(|t| {
                    let path = find(state, &t, "templates")?;
                    let source = read(&path)?;
                    render_template(state, &source, extra.as_ref()).map(Value::from)
                })
                .collect()
        }
        "pipe" => term_strings(terms)?
            .into_iter()
            .map(|cmd| {
                let out = run_command(&cmd)?;
                Ok(Value::from(out.trim_end().to_string()))
            })
            .collect(),
        "lines" => {
            let mut out = Vec::new();
            for cmd in term_strings(terms)? {
                out.extend(run_command(&cmd)?.lines().map(Value::from));
            }
            Ok(out)
        }
        "vars" => {
            let default = kwargs.get::<Option<Value>>("default")?;
            term_strings(terms)?
                .into_iter()
                .map(|t| match state.lookup(&t).filter(|v| !v.is_undefined()) {
                    Some(v) => Ok(v),
                    None => default.clone().ok_or_else(|| {
                        Error::new(ErrorKind::UndefinedError, format!("`{t}` is undefined"))
                    }),
                })
                .collect()
        }
        // As Ansible's `inventory_hostnames` lookup: an inventory made of the `groups`
        // variable (so `--limit` does not apply), matched against the terms as one pattern.
        "inventory_hostnames" => {
            let mut inv = crate::inventory::Inventory::default();
            if let Some(groups) = state
                .lookup("groups")
                .filter(|g| g.kind() == ValueKind::Map)
            {
                for group in groups.try_iter()? {
                    let Some(g) = group.as_str() else { continue };
                    let hosts = groups.get_item(&group)?;
                    for h in hosts.try_iter()? {
                        if let Some(h) = h.as_str() {
                            inv.add_host(h, Some(g), crate::vars::VarMap::new());
                        }
                    }
                }
            }
            let pattern = term_strings(terms)?.join(",");
            // Ansible returns no hosts for a pattern it cannot match.
            inv.select(&pattern)
                .unwrap_or_default()
                .into_iter()
                .map(|h| Ok(Value::from(h)))
                .collect()
        }
        "items" | "list" | "flattened" => {
            let mut out = Vec::new();
            for t in terms {
                if t.kind() == ValueKind::Seq && name != "list" {
                    out.extend(t.try_iter()?);
                } else {
                    out.push(t.clone());
                }
            }
            Ok(out)
        }
        "dict" => {
            let mut out = Vec::new();
            for t in terms {
                for k in t.try_iter()? {
                    let v = t.get_item(&k)?;
                    out.push(Value::from_iter([("key", k), ("value", v)]));
                }
            }
            Ok(out)
        }
        "fileglob" => {
            let mut out = Vec::new();
            for pattern in term_strings(terms)? {
                out.extend(fileglob(state, &pattern)?.into_iter().map(Value::from));
            }
            Ok(out)
        }
        "first_found" => first_found(state, terms, kwargs),
        "nested" | "cartesian" => {
            // Every combination, the first list varying slowest: [[a,b],[1,2]] gives
            // [a,1], [a,2], [b,1], [b,2].
            let mut combos: Vec<Vec<Value>> = vec![Vec::new()];
            for t in terms {
                let items: Vec<Value> = if t.kind() == ValueKind::Seq {
                    t.try_iter()?.collect()
                } else {
                    vec![t.clone()]
                };
                combos = combos
                    .into_iter()
                    .flat_map(|c| {
                        items.iter().map(move |i| {
                            let mut c = c.clone();
                            c.push(i.clone());
                            c
                        })
                    })
                    .collect();
            }
            if terms.is_empty() {
                return Err(invalid("`nested` needs at least one list".into()));
            }
            Ok(combos.into_iter().map(Value::from).collect())
        }
        "together" => {
            // Zipped, the shorter lists padded with None.
            let lists: Vec<Vec<Value>> = terms
                .iter()
                .map(|t| t.try_iter().map(Iterator::collect))
                .collect::<Result<_, _>>()?;
            // Only no lists at all is an error; shorter lists are padded.
            if lists.is_empty() {
                return Err(invalid(
                    "with_together requires at least one element in each list".into(),
                ));
            }
            let n = lists.iter().map(Vec::len).max().unwrap_or(0);
            Ok((0..n)
                .map(|i| {
                    Value::from(
                        lists
                            .iter()
                            .map(|l| l.get(i).cloned().unwrap_or(Value::from(())))
                            .collect::<Vec<_>>(),
                    )
                })
                .collect())
        }
        "subelements" => subelements(terms),
        "sequence" => {
            let mut options = Vec::new();
            for key in kwargs.args() {
                if !matches!(key, "wantlist" | "errors") {
                    options.push((key.to_string(), pyrepr::to_str(&kwargs.get::<Value>(key)?)?));
                }
            }
            super::sequence(&term_strings(terms)?, &options)
                .map(|v| v.into_iter().map(Value::from).collect())
                .map_err(invalid)
        }
        // `unvault`: the (decrypted) file as it is, nothing stripped.
        "unvault" => term_strings(terms)?
            .into_iter()
            .map(|t| Ok(Value::from(read(&find(state, &t, "files")?)?)))
            .collect(),
        "password" => Err(invalid(format!(
            "the `{name}` lookup is not supported by kinit"
        ))),
        other => Err(invalid(format!(
            "unknown lookup `{other}`, expected one of {}",
            NAMES.join(", ")
        ))),
    }
}

/// `subelements`: `[list_of_dicts, 'key']` (optionally `{'skip_missing': true}`) gives
/// `[element, subelement]` for every subelement of every element.
fn subelements(terms: &[Value]) -> Result<Vec<Value>, Error> {
    // Upstream's words (plugins/lookup/subelements.py `_raise_terms_error`).
    let terms_error = |why: &str| {
        invalid(format!(
            "subelements lookup expects a list of two or three items, {why}"
        ))
    };
    if !(2..=3).contains(&terms.len()) {
        return Err(terms_error(""));
    }
    let (Some(list), Some(key)) = (terms.first(), terms.get(1).and_then(Value::as_str)) else {
        return Err(terms_error(
            "first a dict or a list, second a string pointing to the subkey",
        ));
    };
    if !matches!(list.kind(), ValueKind::Seq | ValueKind::Map) {
        return Err(terms_error(
            "first a dict or a list, second a string pointing to the subkey",
        ));
    }
    if terms.get(2).is_some_and(|f| f.kind() != ValueKind::Map) {
        return Err(terms_error(
            "the optional third item must be a dict with flags ('skip_missing',)",
        ));
    }
    let skip_missing = terms
        .get(2)
        .map(|f| f.get_attr("skip_missing").map(|v| v.is_true()))
        .transpose()?
        .unwrap_or(false);
    // A registered result that was skipped as a whole has no elements (a `skipped` key that
    // is not false); otherwise a dict's values are the elements, as upstream takes them.
    if list.kind() == ValueKind::Map
        && list
            .get_attr("skipped")
            .is_ok_and(|v| !v.is_undefined() && (v.kind() != ValueKind::Bool || v.is_true()))
    {
        return Ok(Vec::new());
    }
    let elements: Vec<Value> = match list.kind() {
        ValueKind::Map => list
            .try_iter()?
            .map(|k| list.get_item(&k))
            .collect::<Result<_, _>>()?,
        _ => list.try_iter()?.collect(),
    };
    let subkeys: Vec<&str> = key.split('.').collect();
    let mut out = Vec::new();
    for element in elements {
        if element.kind() != ValueKind::Map {
            return Err(invalid(format!(
                "subelements lookup expects a dictionary, got '{}'",
                super::pyrepr::to_str(&element)?
            )));
        }
        if element
            .get_attr("skipped")
            .is_ok_and(|v| !v.is_undefined() && v != Value::from(false))
        {
            continue;
        }
        let mut sub = element.clone();
        let mut sublist = None;
        for (n, part) in subkeys.iter().enumerate() {
            let last = n + 1 == subkeys.len();
            let next = sub.get_attr(part)?;
            if next.is_undefined() {
                if skip_missing {
                    continue;
                }
                return Err(invalid(format!(
                    "could not find '{part}' key in iterated item '{}'",
                    super::pyrepr::to_str(&sub)?
                )));
            }
            if !last {
                if next.kind() != ValueKind::Map {
                    if skip_missing {
                        continue;
                    }
                    return Err(invalid(format!(
                        "the key {part} should point to a dictionary, got '{}'",
                        super::pyrepr::to_str(&next)?
                    )));
                }
                sub = next;
            } else if next.kind() != ValueKind::Seq {
                return Err(invalid(format!(
                    "the key {part} should point to a list, got '{}'",
                    super::pyrepr::to_str(&next)?
                )));
            } else {
                sublist = Some(next);
            }
        }
        if let Some(items) = sublist {
            // Upstream pops the list out of the element it hands on (`subvalue.pop`).
            let mut shown: serde_json::Value =
                serde_json::to_value(&element).map_err(|e| invalid(format!("subelements: {e}")))?;
            let mut at = &mut shown;
            for part in &subkeys[..subkeys.len() - 1] {
                at = &mut at[*part];
            }
            if let Some(m) = at.as_object_mut() {
                m.remove(*subkeys.last().unwrap_or(&""));
            }
            let shown = Value::from_serialize(&shown);
            for s in items.try_iter()? {
                out.push(Value::from(vec![shown.clone(), s]));
            }
        }
    }
    Ok(out)
}

/// The lookups kinit has (`lookup()`, `query()` and the `with_<name>` loops).
pub const NAMES: &[&str] = &[
    "env",
    "file",
    "template",
    "pipe",
    "lines",
    "vars",
    "items",
    "list",
    "flattened",
    "dict",
    "fileglob",
    "first_found",
    "nested",
    "cartesian",
    "together",
    "subelements",
    "inventory_hostnames",
    "unvault",
    "sequence",
];

/// The folders relative paths are searched in.
/// The variable a `with_first_found` loop sets while it runs the lookup: the folder its task's
/// action searches (`templates`, `vars` or `files`, from the action's name, as ansible-core's
/// `first_found` does when invoked by a `with_` loop). A direct `lookup()`/`query()` has none.
pub const WITH_SUBDIR_VAR: &str = "__kinit_with_subdir";

/// The options of a `first_found` call: its keywords, replaced by each mapping term in turn
/// (ansible-core's `set_options(direct=term)`: a key the mapping leaves out is back to its
/// default).
#[derive(Default, Clone)]
struct FirstFound {
    files: Vec<String>,
    paths: Vec<String>,
    skip: bool,
}

impl FirstFound {
    fn from_options(get: &dyn Fn(&str) -> Result<Option<Value>, Error>) -> Result<Self, Error> {
        let list = |v: Option<Value>| -> Result<Vec<String>, Error> {
            match v {
                None => Ok(Vec::new()),
                Some(v) if v.is_undefined() || v.is_none() => Ok(Vec::new()),
                Some(v) => term_strings(std::slice::from_ref(&v)),
            }
        };
        Ok(FirstFound {
            files: list(get("files")?)?,
            paths: list(get("paths")?)?,
            skip: get("skip")?.is_some_and(|v| v.is_true()),
        })
    }
}

/// Split a `files` or `paths` entry on its separators (ansible-core still splits `a,b` and
/// `a;b`, and paths also on `:`, though it deprecates it).
fn split_on(items: &[String], seps: &[char]) -> Vec<String> {
    items
        .iter()
        .flat_map(|i| i.split(seps).map(str::to_string))
        .collect()
}

/// The candidate paths of `first_found`'s terms, in order (`_process_terms`).
fn first_found_candidates(
    terms: &[Value],
    opts: &mut FirstFound,
    out: &mut Vec<String>,
) -> Result<(), Error> {
    for term in terms {
        let files = match term.kind() {
            ValueKind::Map => {
                *opts = FirstFound::from_options(&|k| {
                    let v = term.get_attr(k)?;
                    Ok((!v.is_undefined()).then_some(v))
                })?;
                opts.files.clone()
            }
            ValueKind::String => vec![term.as_str().unwrap_or_default().to_string()],
            ValueKind::Seq => {
                let inner: Vec<Value> = term.try_iter()?.collect();
                first_found_candidates(&inner, opts, out)?;
                continue;
            }
            _ => {
                return Err(invalid(format!(
                    "Invalid term supplied. A string, dict or list is required, not '{}').",
                    super::filters::core::type_debug(term.clone())
                )));
            }
        };
        let files = split_on(&files, &[',', ';']);
        let paths = split_on(&opts.paths, &[',', ':', ';']);
        if paths.is_empty() {
            out.extend(files);
        } else {
            for p in &paths {
                for f in &files {
                    out.push(Path::new(p).join(f).display().to_string());
                }
            }
        }
    }
    Ok(())
}

/// `first_found`: the first of its candidates that exists, searched as ansible-core's
/// `find_file_in_search_path` does (`DataLoader.path_dwim_relative_stack`).
fn first_found(
    state: &State<'_, '_>,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    let mut opts = FirstFound::from_options(&|k| kwargs.get::<Option<Value>>(k))?;
    let mut terms = terms.to_vec();
    if terms.is_empty() {
        terms = opts.files.iter().map(|f| Value::from(f.as_str())).collect();
    }
    let mut candidates = Vec::new();
    first_found_candidates(&terms, &mut opts, &mut candidates)?;
    let subdir = state
        .lookup(WITH_SUBDIR_VAR)
        .and_then(|v| v.as_str().map(str::to_string));
    for c in &candidates {
        if let Some(p) = search_stack(state, c, subdir.as_deref()) {
            return Ok(vec![Value::from(p.display().to_string())]);
        }
    }
    if opts.skip {
        return Ok(Vec::new());
    }
    Err(invalid("No file was found when using first_found.".into()))
}

/// Where ansible-core looks for `source` relative to a task: each search-path entry (with
/// `subdir` in it first, and for a role's nested task folder the role's `subdir`), then the
/// current folder. A path starting with `/` or `~` is only checked as it is.
fn search_stack(state: &State<'_, '_>, source: &str, subdir: Option<&str>) -> Option<PathBuf> {
    if source.starts_with('/') || source.starts_with('~') {
        let p = PathBuf::from(
            super::filters::text::expanduser(Value::from(source)).unwrap_or_else(|_| source.into()),
        );
        return p.exists().then_some(p);
    }
    let in_role = state.lookup("role_path").is_some_and(|v| !v.is_undefined());
    let first = source.split('/').next().unwrap_or_default();
    let mut search = Vec::new();
    let mut bases = search_path(state);
    bases.push(PathBuf::from("."));
    for base in &bases {
        if let (Some(sub), Some(parent)) = (subdir, base.parent())
            && in_role
            && parent.ends_with("tasks")
            && let Some(role) = parent.parent()
        {
            search.push(role.join(sub).join(source));
            search.push(parent.join(source));
        }
        if let Some(sub) = subdir
            && first != sub
        {
            search.push(base.join(sub).join(source));
        }
        search.push(base.join(source));
    }
    search
        .into_iter()
        .find(|p| p.exists())
        .map(|p| std::path::absolute(&p).unwrap_or(p))
}

fn search_path(state: &State<'_, '_>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(v) = state.lookup("ansible_search_path")
        && let Ok(items) = v.try_iter()
    {
        for item in items {
            if let Some(s) = item.as_str() {
                out.push(PathBuf::from(s));
            }
        }
    }
    out
}

fn find(state: &State<'_, '_>, name: &str, subdir: &str) -> Result<PathBuf, Error> {
    let p = Path::new(name);
    if p.is_absolute() {
        return if p.exists() {
            Ok(p.to_path_buf())
        } else {
            Err(invalid(format!("could not find `{name}`")))
        };
    }
    let bases = search_path(state);
    for base in &bases {
        for candidate in [base.join(subdir).join(name), base.join(name)] {
            if candidate.exists() {
                return Ok(candidate);
            }
        }
    }
    if p.exists() {
        return Ok(p.to_path_buf());
    }
    let searched: Vec<String> = bases.iter().map(|b| b.display().to_string()).collect();
    Err(invalid(format!(
        "could not find `{name}` (searched {}and the current folder)",
        if searched.is_empty() {
            String::new()
        } else {
            format!("{}, ", searched.join(", "))
        }
    )))
}

/// A file's text; a vaulted file's plaintext, as Ansible's loader gives `file`, `template`
/// and `unvault` lookups.
fn read(path: &Path) -> Result<String, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid(format!("cannot read `{}`: {e}", path.display())))?;
    crate::vault::file_text(path, text).map_err(|e| invalid(e.to_string()))
}

fn run_command(cmd: &str) -> Result<String, Error> {
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map_err(|e| invalid(format!("cannot run `{cmd}`: {e}")))?;
    if !out.status.success() {
        return Err(invalid(format!(
            "`{cmd}` exited with {}",
            out.status.code().unwrap_or(-1)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Render a template file's text with the current variables (plus `template_vars`).
fn render_template(
    state: &State<'_, '_>,
    source: &str,
    extra: Option<&Value>,
) -> Result<String, Error> {
    let scope = state.lookup(SELF_KEY).unwrap_or_default();
    let ctx = match extra {
        Some(extra) if extra.kind() == ValueKind::Map => {
            minijinja::context! { ..extra.clone(), ..scope }
        }
        _ => scope,
    };
    super::render::render(state.env(), source, &ctx)
}

fn fileglob(state: &State<'_, '_>, pattern: &str) -> Result<Vec<String>, Error> {
    let p = Path::new(pattern);
    let (dir, file_pat) = match (p.parent(), p.file_name().and_then(|f| f.to_str())) {
        (Some(d), Some(f)) => (d.to_path_buf(), f.to_string()),
        _ => return Ok(Vec::new()),
    };
    let dirs: Vec<PathBuf> = if dir.is_absolute() {
        vec![dir]
    } else {
        let mut v: Vec<PathBuf> = search_path(state)
            .into_iter()
            .flat_map(|b| [b.join("files").join(&dir), b.join(&dir)])
            .collect();
        v.push(dir);
        v
    };
    let glob = globset::Glob::new(&file_pat)
        .map_err(|e| invalid(format!("invalid glob `{pattern}`: {e}")))?
        .compile_matcher();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut found: Vec<String> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .filter(|p| p.file_name().is_some_and(|f| glob.is_match(f)))
            .map(|p| p.display().to_string())
            .collect();
        if !found.is_empty() {
            found.sort();
            return Ok(found);
        }
    }
    Ok(Vec::new())
}
