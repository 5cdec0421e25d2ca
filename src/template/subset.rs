//! The variables a template can reach, so the `&VarMap` entry points of `Templar` copy only
//! those into a scope instead of every variable of the host (hostvars included) per call:
//! the names the template reads, then, transitively, the names read by the templated values
//! of those variables. Anything that can reach variables by a computed name (`vars`,
//! `lookup`, `query`) makes the whole map needed, and so does a slice (`x[:3]`): minijinja's
//! variable tracking does not visit the sliced expression, so `x` would be missed.

use std::collections::HashSet;

use minijinja::Environment;
use serde_json::Value;

use super::scope::is_template;
use crate::vars::VarMap;

/// Names that read variables by computed name.
const NEEDS_ALL: [&str; 4] = ["vars", "lookup", "query", "q"];

/// What a scope for these templates needs: `Some(subset)`, or `None` for the whole map.
pub(crate) fn needed(
    env: &Environment<'_>,
    templates: &[&str],
    expressions: &[&str],
    vars: &VarMap,
) -> Option<VarMap> {
    // Names Jinja treats specially are not reported as undeclared; keep them when defined.
    let mut names: Vec<String> = ["self", "loop", "super", "caller", "varargs", "kwargs"]
        .into_iter()
        .map(str::to_string)
        .collect();
    for t in templates {
        names.extend(template_names(env, t)?);
    }
    for e in expressions {
        if has_slice(e) {
            return None;
        }
        let compiled = env.compile_expression(e).ok()?;
        names.extend(compiled.undeclared_variables(false));
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = VarMap::new();
    if let Some(d) = vars.get(super::scope::DATA_KEY) {
        out.insert(super::scope::DATA_KEY.to_string(), d.clone());
    }
    while let Some(name) = names.pop() {
        if NEEDS_ALL.contains(&name.as_str()) {
            return None;
        }
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(v) = vars.get(&name) {
            if super::scope::is_data(vars, &name) {
                out.insert(name, v.clone());
                continue;
            }
            collect_templates(v, &mut |s| match template_names(env, s) {
                Some(found) => {
                    names.extend(found);
                    true
                }
                None => false,
            })
            .then_some(())?;
            out.insert(name, v.clone());
        }
    }
    Some(out)
}

fn template_names(env: &Environment<'_>, source: &str) -> Option<HashSet<String>> {
    if has_slice(source) {
        return None;
    }
    let tmpl = env.template_from_str(source).ok()?;
    Some(tmpl.undeclared_variables(false))
}

/// Whether `source` may hold a slice subscript: a `:` after a `[` with no quote or `]`
/// between them. Errs towards yes (a dict inside a list literal counts too).
fn has_slice(source: &str) -> bool {
    source.split('[').skip(1).any(|after| {
        after
            .split([']', '\'', '"'])
            .next()
            .is_some_and(|inside| inside.contains(':'))
    })
}

/// Call `f` on every templated string in `v`; false as soon as `f` gives up.
fn collect_templates(v: &Value, f: &mut dyn FnMut(&str) -> bool) -> bool {
    match v {
        Value::String(s) if is_template(s) => f(s),
        Value::Array(items) => items.iter().all(|i| collect_templates(i, f)),
        Value::Object(m) => m.values().all(|x| collect_templates(x, f)),
        _ => true,
    }
}

/// Every templated string inside `v` (keys are never templated).
pub(crate) fn templates_in(v: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    fn walk<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) if is_template(s) => out.push(s),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(m) => m.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}
