//! Checking parameters against an argument spec, step for step as ansible-core 2.19's
//! `ArgumentSpecValidator.validate` (`module_utils/common/arg_spec.py`, `parameters.py`,
//! `validation.py`): aliases, `no_log` values, unsupported names, spec defaults, `required`,
//! types and `elements`, `choices`, then each nested `options` spec (with its
//! `mutually_exclusive`, `required_together`, `required_one_of`, `required_if`,
//! `required_by`), and last the unsupported names. The errors come in that order, worded as
//! Ansible words them, because playbooks and tests match on them.
//!
//! Only the errors (and the `no_log` values, for redaction) come out: the converted values
//! and the defaults filled in are thrown away, as the `validate_argument_spec` action does.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::argspec_types::{class_name, convert, py_eq, py_str, truthy, type_name};

/// What a validation found.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub errors: Vec<String>,
    /// Values of `no_log` options, as text.
    pub no_log: Vec<String>,
}

/// Validate `params` against `spec` (option name → attributes).
pub(crate) fn validate(spec: &Map<String, Value>, params: Map<String, Value>) -> Checked {
    let mut run = Run::default();
    let mut params = Params {
        map: params,
        ..Params::default()
    };
    let aliases = match handle_aliases(spec, &mut params.map) {
        Ok(a) => a,
        Err(e) => {
            run.errors.push(e);
            Vec::new()
        }
    };
    if let Err(e) = list_no_log(spec, &params.map, false, &mut run.no_log) {
        run.errors.push(e);
    }
    run.unsupported(spec, &params.map, &aliases, &[]);
    set_defaults(spec, &mut params.map, false, &mut run.no_log);
    run.push(check_required(spec, &params.map, &[]));
    run.check_types(spec, &mut params, &[]);
    run.check_choices(spec, &mut params.map, &[]);
    set_defaults(spec, &mut params.map, true, &mut run.no_log);
    run.sub_specs(spec, &mut params, &mut Vec::new());
    if let Some(e) = run.unsupported_error() {
        run.errors.push(e);
    }
    Checked {
        errors: run.errors,
        no_log: run.no_log,
    }
}

/// Parameters with what is known of where their values came from.
#[derive(Default)]
struct Params {
    map: Map<String, Value>,
    /// The whole map was made here (a dict parsed from a string), not read from YAML.
    made: bool,
    /// Options whose value a conversion made.
    made_values: HashSet<String>,
    /// List items a conversion made, by option and index.
    made_items: HashSet<(String, usize)>,
}

impl Params {
    fn made(&self, name: &str) -> bool {
        self.made || self.made_values.contains(name)
    }
}

#[derive(Default)]
struct Run {
    errors: Vec<String>,
    no_log: Vec<String>,
    /// Unsupported names with their option path, first seen first.
    unsupported: Vec<Vec<String>>,
    /// For each unsupported name: the options and aliases its level supports.
    supported: Vec<(Vec<String>, Vec<String>)>,
}

/// ` found in a -> b` (or the given prefix), when nested.
fn found_in(ctx: &[String], prefix: &str, quote: &str, suffix: &str) -> String {
    if ctx.is_empty() {
        return String::new();
    }
    format!("{prefix}{quote}{}{quote}{suffix}", ctx.join(" -> "))
}

fn attr<'a>(opts: &'a Value, key: &str) -> Option<&'a Value> {
    opts.get(key).filter(|v| !v.is_null())
}

/// An option's `type` (default `str`) as messages name it.
fn type_of(opts: &Value, key: &str) -> Option<String> {
    attr(opts, key).map(|t| match t {
        Value::String(s) => s.clone(),
        other => py_str(other),
    })
}

/// What `_handle_aliases` refuses in a spec: an option both required and defaulted, or
/// aliases that are no list (the first such option stops it).
fn spec_problem(spec: &Map<String, Value>) -> Option<String> {
    for (k, opts) in spec {
        if attr(opts, "default").is_some() && attr(opts, "required").is_some_and(truthy) {
            return Some(format!(
                "internal error: required and default are mutually exclusive for {k}"
            ));
        }
        if attr(opts, "aliases").is_some_and(|a| !a.is_array()) {
            return Some("internal error: aliases must be a list or tuple".into());
        }
    }
    None
}

/// Copy each alias's value to its option; the alias → option pairs.
fn handle_aliases(
    spec: &Map<String, Value>,
    params: &mut Map<String, Value>,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (k, opts) in spec {
        if let Some(problem) = spec_problem(&Map::from_iter([(k.clone(), opts.clone())])) {
            return Err(problem);
        }
        let Some(Value::Array(aliases)) = attr(opts, "aliases") else {
            continue;
        };
        for alias in aliases {
            let alias = py_str(alias);
            if let Some(v) = params.get(&alias).cloned() {
                params.insert(k.clone(), v);
            }
            out.push((alias, k.clone()));
        }
    }
    Ok(out)
}

/// The values of `no_log` options, nested ones too (`_list_no_log_values`). A nested spec's
/// value that is no dict is an error here already, as in Ansible.
fn list_no_log(
    spec: &Map<String, Value>,
    params: &Map<String, Value>,
    made: bool,
    out: &mut Vec<String>,
) -> Result<(), String> {
    for (name, opts) in spec {
        if attr(opts, "no_log").is_some_and(truthy)
            && let Some(v) = params.get(name).filter(|v| truthy(v))
        {
            secret_texts(v, out);
        }
        let Some(Value::Object(sub_spec)) = attr(opts, "options") else {
            continue;
        };
        let Some(sub) = params.get(name).filter(|v| !v.is_null()) else {
            continue;
        };
        if !holds_dicts(opts) {
            continue;
        }
        let items = match sub {
            Value::Array(a) => a.clone(),
            other => vec![other.clone()],
        };
        for item in items {
            let (item, made) = match &item {
                Value::String(_) => (convert("dict", &item, made)?, true),
                _ => (item, made),
            };
            let Value::Object(m) = &item else {
                return Err(format!(
                    "Value '{}' in the sub parameter field '{name}' must be a {}, not '{}'",
                    py_str(&item),
                    type_of(opts, "type").unwrap_or_default(),
                    class_name(&item, made)
                ));
            };
            list_no_log(sub_spec, m, made, out)?;
        }
    }
    Ok(())
}

fn secret_texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        Value::Number(_) => out.push(py_str(v)),
        Value::Array(a) => a.iter().for_each(|x| secret_texts(x, out)),
        Value::Object(m) => m.values().for_each(|x| secret_texts(x, out)),
        _ => {}
    }
}

/// Fill in spec defaults; with `all`, options without one become `None`.
fn set_defaults(
    spec: &Map<String, Value>,
    params: &mut Map<String, Value>,
    all: bool,
    no_log: &mut Vec<String>,
) {
    for (k, opts) in spec {
        let default = attr(opts, "default");
        if params.contains_key(k) || (default.is_none() && !all) {
            continue;
        }
        if let Some(d) = default
            && attr(opts, "no_log").is_some_and(truthy)
            && truthy(d)
        {
            secret_texts(d, no_log);
        }
        params.insert(k.clone(), default.cloned().unwrap_or(Value::Null));
    }
}

fn check_required(
    spec: &Map<String, Value>,
    params: &Map<String, Value>,
    ctx: &[String],
) -> Option<String> {
    let mut missing: Vec<&str> = spec
        .iter()
        .filter(|(k, o)| attr(o, "required").is_some_and(truthy) && !params.contains_key(*k))
        .map(|(k, _)| k.as_str())
        .collect();
    if missing.is_empty() {
        return None;
    }
    missing.sort_unstable();
    Some(format!(
        "missing required arguments: {}{}",
        missing.join(", "),
        found_in(ctx, " found in ", "", "")
    ))
}

/// How many of `term`'s names are set (`count_terms`: a name or a list of names).
fn count_terms(term: &Value, params: &Map<String, Value>) -> usize {
    match term {
        Value::String(s) => usize::from(params.contains_key(s)),
        Value::Array(a) => {
            let names: HashSet<String> = a.iter().map(py_str).collect();
            names.iter().filter(|n| params.contains_key(*n)).count()
        }
        _ => 0,
    }
}

/// `', '.join(names)` (`sep` between them).
fn join(names: &Value, sep: &str) -> String {
    match names {
        Value::Array(a) => a.iter().map(py_str).collect::<Vec<_>>().join(sep),
        Value::String(s) => s.chars().map(String::from).collect::<Vec<_>>().join(sep),
        other => py_str(other),
    }
}

fn items(v: Option<&Value>) -> &[Value] {
    match v {
        Some(Value::Array(a)) => a,
        _ => &[],
    }
}

fn mutually_exclusive(
    terms: Option<&Value>,
    params: &Map<String, Value>,
    ctx: &[String],
) -> Option<String> {
    let hits: Vec<String> = items(terms)
        .iter()
        .filter(|t| count_terms(t, params) > 1)
        .map(|t| join(t, "|"))
        .collect();
    (!hits.is_empty()).then(|| {
        format!(
            "parameters are mutually exclusive: {}{}",
            hits.join(", "),
            found_in(ctx, " found in ", "", "")
        )
    })
}

/// `required_together`, `required_one_of`, `required_if`, `required_by` of a nested spec;
/// each reports its first failing entry.
fn additional_checks(opts: &Value, params: &Map<String, Value>, ctx: &[String]) -> Vec<String> {
    let ctx_text = found_in(ctx, " found in ", "", "");
    let mut out = Vec::new();
    if let Some(t) = items(opts.get("required_together")).iter().find(|t| {
        let counts: Vec<usize> = items(Some(t))
            .iter()
            .map(|f| count_terms(f, params))
            .collect();
        counts.iter().any(|c| *c > 0) && counts.contains(&0)
    }) {
        out.push(format!(
            "parameters are required together: {}{ctx_text}",
            join(t, ", ")
        ));
    }
    if let Some(t) = items(opts.get("required_one_of"))
        .iter()
        .find(|t| count_terms(t, params) == 0)
    {
        out.push(format!(
            "one of the following is required: {}{ctx_text}",
            join(t, ", ")
        ));
    }
    for req in items(opts.get("required_if")) {
        let r = items(Some(req));
        let (Some(key), Some(val), Some(reqs)) = (r.first(), r.get(1), r.get(2)) else {
            continue;
        };
        let any = r.get(3).is_some_and(truthy);
        let max_missing = if any { items(Some(reqs)).len() } else { 0 };
        let key = py_str(key);
        let mut missing = Vec::new();
        if params.get(&key).is_some_and(|v| py_eq(v, val)) {
            for check in items(Some(reqs)) {
                if count_terms(check, params) == 0 {
                    missing.push(py_str(check));
                }
            }
        }
        if !missing.is_empty() && missing.len() >= max_missing {
            out.push(format!(
                "{key} is {} but {} of the following are missing: {}{ctx_text}",
                py_str(val),
                if any { "any" } else { "all" },
                missing.join(", ")
            ));
            break;
        }
    }
    if let Some(Value::Object(by)) = opts.get("required_by") {
        let set = |k: &str| params.get(k).is_some_and(|v| !v.is_null());
        for (key, wanted) in by {
            if !set(key) {
                continue;
            }
            let wanted = match wanted {
                Value::String(s) => vec![s.clone()],
                other => items(Some(other)).iter().map(py_str).collect(),
            };
            let missing: Vec<String> = wanted.into_iter().filter(|r| !set(r)).collect();
            if !missing.is_empty() {
                out.push(format!(
                    "missing parameter(s) required by '{key}': {}{ctx_text}",
                    missing.join(", ")
                ));
                break;
            }
        }
    }
    out
}

impl Run {
    fn push(&mut self, e: Option<String>) {
        self.errors.extend(e);
    }

    /// Names in `params` the spec does not know (`_get_unsupported_parameters`).
    fn unsupported(
        &mut self,
        spec: &Map<String, Value>,
        params: &Map<String, Value>,
        aliases: &[(String, String)],
        ctx: &[String],
    ) {
        let known = |k: &String| spec.contains_key(k) || aliases.iter().any(|(a, _)| a == k);
        // Naming what is supported reads the aliases again, and a bad spec fails there
        // again: Ansible then reports that instead of the unsupported names.
        if params.keys().any(|k| !known(k))
            && let Some(problem) = spec_problem(spec)
        {
            self.errors.push(problem);
            return;
        }
        for k in params.keys() {
            if known(k) {
                continue;
            }
            let mut path = ctx.to_vec();
            path.push(k.clone());
            if self.unsupported.contains(&path) {
                continue;
            }
            let names = aliases.iter().map(|(a, _)| a.clone()).collect::<Vec<_>>();
            let options = spec
                .keys()
                .filter(|o| !names.contains(o))
                .cloned()
                .collect();
            self.unsupported.push(path);
            self.supported.push((options, names));
        }
    }

    /// `a, b.c. Supported parameters include: x, y (alias).` Python lists the supported
    /// names of whichever unsupported name its set yields last; this takes the last found.
    fn unsupported_error(&self) -> Option<String> {
        let (mut options, mut aliases) = self.supported.last()?.clone();
        let mut names: Vec<String> = self.unsupported.iter().map(|p| p.join(".")).collect();
        names.sort();
        options.sort();
        aliases.sort();
        let mut supported = options.join(", ");
        if !aliases.is_empty() {
            supported.push_str(&format!(" ({})", aliases.join(", ")));
        }
        Some(format!(
            "{}. Supported parameters include: {supported}.",
            names.join(", ")
        ))
    }

    /// Convert each option to its `type` and check its `elements`
    /// (`_validate_argument_types`).
    fn check_types(&mut self, spec: &Map<String, Value>, params: &mut Params, ctx: &[String]) {
        for (name, opts) in spec {
            let Some(value) = params.map.get(name).cloned() else {
                continue;
            };
            let required = attr(opts, "required").is_some_and(truthy);
            if value.is_null() && !required && attr(opts, "default").is_none() {
                continue;
            }
            let wanted = type_of(opts, "type").unwrap_or_else(|| "str".into());
            let made = params.made(name);
            let fail = |e: String| {
                format!(
                    "argument '{name}' is of type {}{} and we were unable to convert to {wanted}: {e}",
                    type_name(&value),
                    found_in(ctx, " found in ", "'", ".")
                )
            };
            let converted = match convert(&wanted, &value, made) {
                Ok(c) => c,
                Err(e) => {
                    self.errors.push(fail(e));
                    continue;
                }
            };
            let made = made || converted != value;
            if made {
                params.made_values.insert(name.clone());
            }
            params.map.insert(name.clone(), converted.clone());
            let Some(elements) = attr(opts, "elements").filter(|e| truthy(e)) else {
                continue;
            };
            let elements = match elements {
                Value::String(s) => s.clone(),
                other => py_str(other),
            };
            let list = match &converted {
                Value::Array(a) => a.clone(),
                other => {
                    self.errors.push(format!(
                        "Invalid type {wanted} for option '{}'{}, elements value check is supported only with 'list' type",
                        py_str(other),
                        found_in(ctx, " found in ", "'", ".")
                    ));
                    match other {
                        Value::String(s) => s.chars().map(|c| Value::String(c.into())).collect(),
                        Value::Object(m) => m.keys().map(|k| Value::String(k.clone())).collect(),
                        _ => {
                            self.errors.push(fail(format!(
                                "'{}' object is not iterable",
                                class_name(other, made)
                            )));
                            continue;
                        }
                    }
                }
            };
            let mut kept = Vec::new();
            for (i, item) in list.iter().enumerate() {
                let item_made = made || params.made_items.contains(&(name.clone(), i));
                match convert(&elements, item, item_made) {
                    Ok(c) => {
                        if item_made || c != *item {
                            params.made_items.insert((name.clone(), kept.len()));
                        }
                        kept.push(c);
                    }
                    Err(e) => self.errors.push(format!(
                        "Elements value for option '{name}'{} is of type {} and we were unable to convert to {elements}: {e}",
                        found_in(ctx, " found in ", "'", ""),
                        type_name(item)
                    )),
                }
            }
            params.map.insert(name.clone(), Value::Array(kept));
        }
    }

    /// `choices` (`_validate_argument_values`).
    fn check_choices(
        &mut self,
        spec: &Map<String, Value>,
        params: &mut Map<String, Value>,
        ctx: &[String],
    ) {
        let ctx_text = found_in(ctx, " found in ", "", "");
        for (name, opts) in spec {
            let Some(choices) = attr(opts, "choices") else {
                continue;
            };
            let Value::Array(choices) = choices else {
                self.errors.push(format!(
                    "internal error: choices for argument {name} are not iterable: {}{ctx_text}",
                    py_str(choices)
                ));
                continue;
            };
            let Some(value) = params.get(name).cloned() else {
                continue;
            };
            let listed = |v: &Value| choices.iter().any(|c| py_eq(c, v));
            let texts = |vs: &[Value]| vs.iter().map(py_str).collect::<Vec<_>>().join(", ");
            if let Value::Array(given) = &value {
                let off: Vec<Value> = given.iter().filter(|v| !listed(v)).cloned().collect();
                if !off.is_empty() {
                    self.errors.push(format!(
                        "value of {name} must be one or more of: {}. Got no match for: {}{ctx_text}",
                        texts(choices),
                        texts(&off)
                    ));
                }
                continue;
            }
            if listed(&value) {
                continue;
            }
            // YAML may have turned `yes` into the string `True`; a single boolean word among
            // the choices takes its place.
            let value = match bool_word(&value, choices) {
                Some(w) => w,
                None => value,
            };
            if !listed(&value) {
                self.errors.push(format!(
                    "value of {name} must be one of: {}, got: {}{ctx_text}",
                    texts(choices),
                    py_str(&value)
                ));
            }
        }
    }

    /// Each nested `options` spec, for each of its dicts (`_validate_sub_spec`).
    fn sub_specs(&mut self, spec: &Map<String, Value>, params: &mut Params, ctx: &mut Vec<String>) {
        for (name, opts) in spec {
            if !holds_dicts(opts) {
                continue;
            }
            let sub_spec = match attr(opts, "options") {
                Some(Value::Object(s)) => Some(s),
                _ => None,
            };
            if attr(opts, "apply_defaults").is_some_and(truthy) {
                let Some(_) = sub_spec else { continue };
                if params.map.get(name).is_none_or(Value::is_null) {
                    params.map.insert(name.clone(), Value::Object(Map::new()));
                }
            } else if sub_spec.is_none() || params.map.get(name).is_none_or(Value::is_null) {
                continue;
            }
            let Some(sub_spec) = sub_spec else { continue };
            ctx.push(name.clone());
            let elements: Vec<(Value, bool)> = match params.map.get(name) {
                Some(Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let made =
                            params.made(name) || params.made_items.contains(&(name.clone(), i));
                        (v.clone(), made)
                    })
                    .collect(),
                Some(other) => vec![(other.clone(), params.made(name))],
                None => Vec::new(),
            };
            for (item, made) in elements {
                let Value::Object(map) = item else {
                    self.errors.push(format!(
                        "value of '{name}' must be of type dict or list of dicts"
                    ));
                    continue;
                };
                let mut sub = Params {
                    map,
                    made,
                    ..Params::default()
                };
                self.sub_spec(sub_spec, opts, &mut sub, ctx);
            }
            ctx.pop();
        }
    }

    fn sub_spec(
        &mut self,
        spec: &Map<String, Value>,
        opts: &Value,
        params: &mut Params,
        ctx: &mut Vec<String>,
    ) {
        let aliases = match handle_aliases(spec, &mut params.map) {
            Ok(a) => a,
            Err(e) => {
                self.errors.push(e);
                Vec::new()
            }
        };
        if let Err(e) = list_no_log(spec, &params.map, params.made, &mut self.no_log) {
            self.errors.push(e);
        }
        self.unsupported(spec, &params.map, &aliases, ctx);
        self.push(mutually_exclusive(
            opts.get("mutually_exclusive"),
            &params.map,
            ctx,
        ));
        set_defaults(spec, &mut params.map, false, &mut self.no_log);
        self.push(check_required(spec, &params.map, ctx));
        self.check_types(spec, params, ctx);
        self.check_choices(spec, &mut params.map, ctx);
        self.errors
            .extend(additional_checks(opts, &params.map, ctx));
        set_defaults(spec, &mut params.map, true, &mut self.no_log);
        self.sub_specs(spec, params, ctx);
    }
}

/// The one choice a `True`/`False` string stands for, if exactly one boolean word of that
/// truth is among the choices.
fn bool_word(value: &Value, choices: &[Value]) -> Option<Value> {
    let (words, number) = match value.as_str()? {
        "False" => (["n", "no", "off", "0", "false", "f"], 0.0),
        "True" => (["y", "yes", "on", "1", "true", "t"], 1.0),
        _ => return None,
    };
    let mut hits: Vec<&Value> = choices
        .iter()
        .filter(|c| c.as_str().is_some_and(|s| words.contains(&s)))
        .collect();
    // `0`, `0.0` and `False` are one member of Python's set.
    if let Some(n) = choices
        .iter()
        .find(|c| py_eq(c, &Value::from(number)) && !c.is_string())
    {
        hits.push(n);
    }
    match hits.as_slice() {
        [one] => Some((*one).clone()),
        _ => None,
    }
}

/// Whether an option holds dicts: `type: dict`, or `type: list` with `elements: dict` (the
/// options whose nested `options` apply).
fn holds_dicts(opts: &Value) -> bool {
    let wanted = type_of(opts, "type");
    wanted.as_deref() == Some("dict")
        || (wanted.as_deref() == Some("list")
            && type_of(opts, "elements").as_deref() == Some("dict"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(spec: Value, params: Value) -> Vec<String> {
        let (Value::Object(s), Value::Object(p)) = (spec, params) else {
            panic!("objects expected");
        };
        validate(&s, p).errors
    }

    #[test]
    fn errors_come_in_ansibles_order_and_words() {
        let spec = json!({
            "name": {"type": "str", "required": true},
            "count": {"type": "int"},
            "mode": {"choices": ["fast", "slow"]},
            "items": {"type": "list", "elements": "int"},
            "cfg": {"type": "dict", "options": {"a": {"type": "str", "required": true}, "b": {"type": "int"}},
                    "mutually_exclusive": [["a", "b"]]},
        });
        let got = errors(
            spec,
            json!({"count": "abc", "mode": "medium", "items": [1, "x"], "cfg": {"a": 1, "b": 2, "c": 3}, "extra": 1}),
        );
        assert_eq!(
            got,
            vec![
                "missing required arguments: name",
                "argument 'count' is of type str and we were unable to convert to int: \"'abc'\" cannot be converted to an int",
                "Elements value for option 'items' is of type str and we were unable to convert to int: \"'x'\" cannot be converted to an int",
                "value of mode must be one of: fast, slow, got: medium",
                "parameters are mutually exclusive: a|b found in cfg",
                "cfg.c, extra. Supported parameters include: a, b.",
            ]
        );
    }

    #[test]
    fn nested_list_of_dicts_checks_each_item() {
        let spec = json!({"lst": {"type": "list", "elements": "dict",
            "options": {"k": {"required": true, "choices": ["a", "b"]}, "v": {"type": "int"},
                        "sub": {"type": "dict", "options": {"z": {"type": "int"}}}},
            "required_together": [["v", "sub"]],
            "required_if": [["k", "a", ["v", "sub"]]],
            "required_by": {"k": ["v"]}}});
        let got = errors(
            spec,
            json!({"lst": [{"k": "a"}, {"k": "c", "sub": {"z": "q"}}, 7]}),
        );
        assert_eq!(
            got,
            vec![
                "Value '7' in the sub parameter field 'lst' must be a list, not '_AnsibleTaggedInt'",
                "Elements value for option 'lst' is of type int and we were unable to convert to dict: <class 'ansible.module_utils._internal._datatag._AnsibleTaggedInt'> cannot be converted to a dict",
                "k is a but all of the following are missing: v, sub found in lst",
                "missing parameter(s) required by 'k': v found in lst",
                "value of k must be one of: a, b, got: c found in lst",
                "parameters are required together: v, sub found in lst",
                "missing parameter(s) required by 'k': v found in lst",
                "argument 'z' is of type str found in 'lst -> sub'. and we were unable to convert to int: \"'q'\" cannot be converted to an int",
            ]
        );
        assert!(errors(json!({"a": {"type": "int", "default": 3}}), json!({})).is_empty());
    }
}
