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
    // ansible-core's `_invoke_lookup`: a swallowed error is `None` (`[]` with wantlist);
    // without wantlist no result is `[]`, one is itself, several strings are joined with
    // commas and anything else stays a list.
    let Some(ran) = ran else {
        return Ok(if wantlist {
            Value::from(Vec::<Value>::new())
        } else {
            Value::from(())
        });
    };
    if wantlist || ran.is_empty() {
        return Ok(Value::from(ran));
    }
    if ran.len() == 1 {
        return Ok(ran.into_iter().next().unwrap_or_default());
    }
    if ran.iter().all(|v| v.kind() == ValueKind::String) {
        let joined: Vec<&str> = ran.iter().filter_map(Value::as_str).collect();
        return Ok(Value::from(joined.join(",")));
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
    Ok(Value::from(
        run_guarded(state, &name, &terms, &kwargs)?.unwrap_or_default(),
    ))
}

/// Run a lookup honouring `errors=strict|warn|ignore` (`None` for a swallowed error).
fn run_guarded(
    state: &State<'_, '_>,
    name: &str,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Option<Vec<Value>>, Error> {
    // An option whose value is undefined is an error before the lookup runs (ansible-core
    // templates the options first), saying which variable was undefined; `default` may be
    // undefined on purpose (`lookup('env', 'X', default=undef())`).
    for key in kwargs.args() {
        let v: Value = kwargs.get(key)?;
        if v.is_undefined() && key != "default" {
            return Err(Error::from(minijinja::ErrorKind::UndefinedError));
        }
    }
    let errors = kwargs.get::<Option<String>>("errors")?;
    let result = run(state, strip_fqcn(name), terms, kwargs);
    match (result, errors.as_deref()) {
        (Ok(v), _) => {
            // An option the lookup does not have is ignored, as ansible-core's
            // `set_options(direct=...)` ignores it (`lookup('vars', name='x')` is `[]`).
            for key in kwargs.args() {
                let _: Value = kwargs.get(key)?;
            }
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

/// The global through which templates reach the custom Python lookups
/// (`Templar::with_python_filters`).
pub const PYTHON_LOOKUPS: &str = "__kinit_python_lookups";

/// The Python plugin host, as a template global, when it serves lookups.
pub struct PythonLookups(pub std::sync::Arc<super::pyfilters::PythonFilters>);

impl std::fmt::Debug for PythonLookups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.lookups.keys()).finish()
    }
}

impl minijinja::value::Object for PythonLookups {}

/// A custom Python lookup (`lookup_plugins/<name>.py`): the terms and keyword arguments go to
/// the plugin host as JSON; each variable the plugin reads is read from this template's
/// scope when it asks, untemplated as ansible-core gives it.
fn python_lookup(
    state: &State<'_, '_>,
    host: &super::pyfilters::PythonFilters,
    name: &str,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    let json = |v: &Value| serde_json::to_value(v).unwrap_or_default();
    let mut named = serde_json::Map::new();
    for key in kwargs.args() {
        // `wantlist` and `errors` are ansible-core's own, not the plugin's.
        let v: Value = kwargs.get(key)?;
        if !matches!(key, "wantlist" | "errors") {
            named.insert(key.to_string(), json(&v));
        }
    }
    // A lookup gets the variables as they are written (ansible-core hands it the
    // untemplated ones); one the scope does not hold as written is read rendered.
    let written = state
        .lookup(SELF_KEY)
        .and_then(|v| v.downcast_object::<super::scope::LazyVars>());
    let variable = |var: &str| -> Option<serde_json::Value> {
        if let Some(raw) = written.as_ref().and_then(|w| w.vars.get(var)) {
            return Some(raw.clone());
        }
        let v = state.lookup(var)?;
        if v.is_undefined() {
            return None;
        }
        serde_json::to_value(&v).ok()
    };
    host.lookup(name, terms.iter().map(json).collect(), named, &variable)
        .map(|list| list.iter().map(Value::from_serialize).collect())
        .map_err(invalid)
}

fn run(
    state: &State<'_, '_>,
    name: &str,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    // A custom lookup wins over a built-in one of the same name, as plugin folders come
    // first in ansible-core's search.
    if let Some(host) = state.lookup(PYTHON_LOOKUPS)
        && let Some(host) = host.downcast_object_ref::<PythonLookups>()
        && host.0.lookups.contains_key(name)
    {
        return python_lookup(state, &host.0, name, terms, kwargs);
    }
    match name {
        "env" => {
            // `default=undef()` makes an unset variable undefined (the lookup's documented
            // way to require one); `Option` would read the undefined value as no default.
            let default = match kwargs.has("default") {
                true => kwargs.get::<Value>("default")?,
                false => Value::from(""),
            };
            term_strings(terms)?
                .into_iter()
                .map(|t| match std::env::var(&t) {
                    Ok(v) => Ok(Value::from(v)),
                    Err(_) => Ok(default.clone()),
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
            let opts = TemplateOptions::read(kwargs)?;
            term_strings(terms)?
                .into_iter()
                .map(|t| {
                    // Upstream's words (plugins/lookup/template.py).
                    let path = find(state, &t, "templates").map_err(|_| {
                        invalid(format!(
                            "the template file {t} could not be found for the lookup"
                        ))
                    })?;
                    let source = read(&path)?;
                    render_template(state, &t, &path, &source, &opts)
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
            terms
                .iter()
                .map(|t| {
                    // Upstream's words (plugins/lookup/vars.py).
                    let Some(t) = t.as_str() else {
                        return Err(invalid(format!(
                            "Variable name must be 'str' not '{}'.",
                            super::filters::core::type_debug(t.clone())
                        )));
                    };
                    match state.lookup(t).filter(|v| !v.is_undefined()) {
                        Some(v) => Ok(v),
                        None => default.clone().filter(|d| !d.is_none()).ok_or_else(|| {
                            Error::new(
                                ErrorKind::UndefinedError,
                                format!("No variable named '{t}' was found."),
                            )
                        }),
                    }
                })
                .collect()
        }
        "varnames" => varnames(state, terms),
        "csvfile" => super::csvfile::run(terms, kwargs, |f| find(state, f, "files").ok()),
        "ini" => super::ini::run(terms, kwargs, |f| find(state, f, "files").ok()),
        // One term picked at random (plugins/lookup/random_choice.py); no terms give none.
        "random_choice" => {
            if terms.is_empty() {
                return Ok(Vec::new());
            }
            let mut b = [0u8; 8];
            getrandom::fill(&mut b)
                .map_err(|e| invalid(format!("Unable to choose random term: {e}")))?;
            let i = (u64::from_le_bytes(b) % terms.len() as u64) as usize;
            Ok(vec![terms[i].clone()])
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
        // `[index, item]` pairs over the terms flattened one level (plugins/lookup/
        // indexed_items.py with `LookupBase._flatten`).
        "indexed_items" => {
            let mut items = Vec::new();
            for t in terms {
                if t.kind() == ValueKind::Seq {
                    items.extend(t.try_iter()?);
                } else {
                    items.push(t.clone());
                }
            }
            Ok(items
                .into_iter()
                .enumerate()
                .map(|(i, item)| Value::from(vec![Value::from(i), item]))
                .collect())
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
        "password" => {
            let mut opts = super::password::Options::default();
            for key in ["length", "chars", "seed", "encrypt", "ident"] {
                if let Some(v) = kwargs.get::<Option<Value>>(key)? {
                    if key == "seed"
                        && v.kind() == ValueKind::Number
                        && let Ok(n) = i128::try_from(v.clone())
                    {
                        opts.seed = Some(super::password::Seed::Int(n));
                        continue;
                    }
                    let text = match (key, v.kind()) {
                        // A list of character specs, as the option's list form.
                        ("chars", ValueKind::Seq) => {
                            term_strings(&v.try_iter()?.collect::<Vec<_>>())?
                                .iter()
                                .map(|c| c.replace(',', ",,"))
                                .collect::<Vec<_>>()
                                .join(",")
                        }
                        _ => pyrepr::to_str(&v)?,
                    };
                    opts.set(key, &text)?;
                }
            }
            let base = state
                .lookup("playbook_dir")
                .and_then(|v| v.as_str().map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("."));
            term_strings(terms)?
                .iter()
                .map(|t| super::password::lookup(t, opts.clone(), &base).map(Value::from))
                .collect()
        }
        other => Err(invalid(format!(
            "unknown lookup `{other}`, expected one of {}",
            NAMES.join(", ")
        ))),
    }
}

/// `varnames`: the names of the variables a Python regular expression finds (searched, not
/// anchored), term after term, as plugins/lookup/varnames.py.
fn varnames(state: &State<'_, '_>, terms: &[Value]) -> Result<Vec<Value>, Error> {
    let scope = state.lookup(SELF_KEY).unwrap_or_default();
    let names: Vec<String> = scope
        .try_iter()?
        .filter_map(|k| k.as_str().map(str::to_string))
        .collect();
    let mut out = Vec::new();
    for t in terms {
        // Upstream's words.
        let Some(pattern) = t.as_str() else {
            return Err(invalid(format!(
                "Invalid setting identifier, \"{}\" is not a string, it is a <class '{}'>",
                pyrepr::to_str(t)?,
                super::filters::core::type_debug(t.clone())
            )));
        };
        let re = regex::Regex::new(pattern).map_err(|e| {
            invalid(format!(
                "Unable to use \"{pattern}\" as a search parameter: {}",
                python_regex_error(pattern, &e)
            ))
        })?;
        out.extend(names.iter().filter(|n| re.is_match(n)).map(Value::from));
    }
    Ok(out)
}

/// Python's `re` words for the common mistake of a repetition with nothing to repeat
/// (`*`, `+x`), the regex crate's own text otherwise.
fn python_regex_error(pattern: &str, e: &regex::Error) -> String {
    let text = e.to_string();
    if text.contains("repetition operator missing expression") {
        let b = pattern.as_bytes();
        let at = (0..b.len())
            .find(|&i| b"*+?{".contains(&b[i]) && (i == 0 || b"(|".contains(&b[i - 1])))
            .unwrap_or(0);
        return format!("nothing to repeat at position {at}");
    }
    text.lines().last().unwrap_or(&text).trim().to_string()
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
    "indexed_items",
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
    "varnames",
    "random_choice",
    "csvfile",
    "ini",
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

/// The `template` lookup's options: `template_vars`, the variable and comment delimiters
/// and `trim_blocks` (on by default); `convert_data` and `jinja2_native` are accepted and
/// change nothing, as in ansible-core 2.19.
struct TemplateOptions {
    extra: Option<Value>,
    file: super::FileOptions,
}

impl TemplateOptions {
    fn read(kwargs: &Kwargs) -> Result<Self, Error> {
        let extra = kwargs.get::<Option<Value>>("template_vars")?;
        let _ = kwargs.get::<Option<Value>>("convert_data")?;
        let _ = kwargs.get::<Option<Value>>("jinja2_native")?;
        let mut file = super::FileOptions {
            trim_blocks: kwargs.get::<Option<bool>>("trim_blocks")?.unwrap_or(true),
            ..super::FileOptions::default()
        };
        let get = |name: &str, default: &str| -> Result<(String, bool), Error> {
            Ok(match kwargs.get::<Option<String>>(name)? {
                Some(v) => (v, true),
                None => (default.to_string(), false),
            })
        };
        let (vs, a) = get("variable_start_string", "{{")?;
        let (ve, b) = get("variable_end_string", "}}")?;
        let (cs, c) = get("comment_start_string", "{#")?;
        let (ce, d) = get("comment_end_string", "#}")?;
        if a || b || c || d {
            file.delimiters = Some(super::Delimiters {
                block: ("{%".into(), "%}".into()),
                variable: (vs, ve),
                comment: (cs, ce),
                line_statement_prefix: None,
                line_comment_prefix: None,
            });
        }
        Ok(Self { extra, file })
    }
}

/// Render a template file's text with the current variables, the variables Ansible adds
/// for a template (`ansible_managed` unless set, `template_path`, `template_fullpath`,
/// `template_host`, `template_destpath`) and `template_vars` over them. Its
/// `{% include %}`s are searched in the file's folder, then in each `ansible_search_path`
/// entry's `templates/` and the entry itself; a template that writes nothing and has no
/// `{{ }}` gives `None`, as ansible-core's engine returns for a template without output.
fn render_template(
    state: &State<'_, '_>,
    term: &str,
    path: &Path,
    source: &str,
    opts: &TemplateOptions,
) -> Result<Value, Error> {
    let scope = state.lookup(SELF_KEY).unwrap_or_default();
    let full = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let mut added = vec![
        ("template_path", Value::from(term)),
        ("template_fullpath", Value::from(full.display().to_string())),
        ("template_host", Value::from(host)),
        ("template_destpath", Value::from(())),
    ];
    if state
        .lookup("ansible_managed")
        .is_none_or(|v| v.is_undefined())
    {
        added.push(("ansible_managed", Value::from("Ansible managed")));
    }
    let added = Value::from_iter(added);
    let ctx = match &opts.extra {
        Some(extra) if extra.kind() == ValueKind::Map => {
            minijinja::context! { ..extra.clone(), ..added, ..scope }
        }
        _ => minijinja::context! { ..added, ..scope },
    };
    let text = if super::loads_templates(source) || opts.file != super::FileOptions::default() {
        let mut search = vec![full.parent().map(Path::to_path_buf).unwrap_or_default()];
        search.extend(
            search_path(state)
                .into_iter()
                .flat_map(|p| [p.join("templates"), p]),
        );
        let env = super::file_env(state.env(), search, &opts.file)?;
        super::render::render_value_as(&env, source, &ctx, false)?
    } else {
        super::render::render_value_as(state.env(), source, &ctx, false)?
    };
    // A template whose output is one value gives it with its type, as ansible-core's
    // template lookup (rendered by the engine's native concatenation) does.
    if text.kind() != ValueKind::String {
        return Ok(text);
    }
    let text = text.as_str().unwrap_or_default().to_string();
    let var_start = opts
        .file
        .delimiters
        .as_ref()
        .map_or("{{", |d| d.variable.0.as_str());
    if text.is_empty() && !source.contains(var_start) {
        return Ok(Value::from(()));
    }
    Ok(Value::from(text))
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
    for d in dirs {
        let found = super::filters::paths::glob_files(&d, &file_pat)?;
        if !found.is_empty() {
            return Ok(found.iter().map(|p| p.display().to_string()).collect());
        }
    }
    Ok(Vec::new())
}
