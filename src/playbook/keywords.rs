//! Task keywords: sorting a task's keyword entries into `Keywords`, with Ansible's forms
//! (booleans as yes/no, conditions as strings or lists, `with_*` loops, `loop_control`).
//!
//! Over 300 lines because every task keyword is sorted here in one `match`, beside the value
//! forms they share (Ansible's booleans, conditions, templated values); one place to check
//! the keyword list against Ansible's.

use serde_json::Value;

use super::error::{invalid, scalar_string};
use super::yaml::Node;
use super::{Keywords, LoadError, LoopControl, LoopKind, LoopSpec, did_you_mean};
use crate::vars::VarMap;

/// Keywords a task may carry (besides its action).
pub const TASK_KEYWORDS: &[&str] = &[
    "name",
    "when",
    "loop",
    "loop_control",
    "register",
    "until",
    "retries",
    "delay",
    "changed_when",
    "failed_when",
    "ignore_errors",
    "ignore_unreachable",
    "notify",
    "listen",
    "tags",
    "delegate_to",
    "remote_user",
    "connection",
    "port",
    "async",
    "poll",
    "delegate_facts",
    "run_once",
    "become",
    "become_user",
    "become_method",
    "become_flags",
    "environment",
    "module_defaults",
    "no_log",
    "vars",
    "check_mode",
    "diff",
    "timeout",
    "any_errors_fatal",
    "args",
    "action",
    "local_action",
    "collections",
    "throttle",
    "debugger",
];

const LOOP_FORMS: &[(&str, LoopKind)] = &[
    ("with_items", LoopKind::Items),
    ("with_list", LoopKind::List),
    ("with_dict", LoopKind::Dict),
    ("with_indexed_items", LoopKind::IndexedItems),
    ("with_sequence", LoopKind::Sequence),
];

/// Ansible booleans: true/false and the YAML 1.1 words (yes/no/on/off), case-insensitive.
/// A keyword whose value is a template (`ignore_errors: "{{ x }}"`) is kept as text in
/// `templated`, to be rendered when a task runs (`set_templated`); any other value is parsed
/// now with `parse`. A word that does not parse (`diff: yes.`) is kept the same way, so it
/// fails the tasks that reach it, as ansible-core fails them when it validates the keyword.
fn templated_or<T>(
    n: &Node<'_>,
    key: &str,
    templated: &mut Vec<(String, String)>,
    parse: impl Fn(&Node<'_>, &str) -> Result<T, LoadError>,
) -> Result<Option<T>, LoadError> {
    let mut defer = |s: &String| {
        templated.retain(|(k, _)| k != key);
        templated.push((key.to_string(), s.clone()));
        Ok(None)
    };
    match n.value {
        Value::String(s) if super::args::contains_template(n.value) => defer(s),
        Value::String(s) => match parse(n, key) {
            Ok(v) => Ok(Some(v)),
            Err(_) => defer(s),
        },
        _ => parse(n, key).map(Some),
    }
}

/// Set keyword `key` of `kw` from its rendered template `value`; an error says what the
/// keyword expects.
pub fn set_templated(kw: &mut Keywords, key: &str, value: &str) -> Result<(), String> {
    let b = || -> Result<bool, String> {
        match value.trim().to_lowercase().as_str() {
            "yes" | "true" | "on" | "y" | "1" => Ok(true),
            "no" | "false" | "off" | "n" | "0" | "" | "none" => Ok(false),
            // ansible-core's words (`FieldAttribute` validation).
            _ => Err(format!(
                "The value {} could not be converted to 'bool'.",
                crate::template::py_quote(value)
            )),
        }
    };
    match key {
        "ignore_errors" => kw.ignore_errors = Some(b()?),
        "ignore_unreachable" => kw.ignore_unreachable = Some(b()?),
        "delegate_facts" => kw.delegate_facts = Some(b()?),
        "run_once" => kw.run_once = Some(b()?),
        "become" => kw.become_ = Some(b()?),
        "no_log" => kw.no_log = Some(b()?),
        "check_mode" => kw.check_mode = Some(b()?),
        "diff" => kw.diff = Some(b()?),
        "any_errors_fatal" => kw.any_errors_fatal = Some(b()?),
        // ansible-core's words (`StrategyBase._queue_task`, Python's `int()`).
        "throttle" => {
            kw.throttle = Some(value.trim().parse().map_err(|_| {
                format!(
                    "Failed to convert the throttle value to an integer: invalid literal for \
                     int() with base 10: {}",
                    crate::template::py_quote(value)
                )
            })?)
        }
        "timeout" | "async" | "poll" => {
            let secs: i64 = value.trim().parse().map_err(|_| {
                format!(
                    "The value {} could not be converted to 'int'.",
                    crate::template::py_quote(value)
                )
            })?;
            let unsigned = || {
                u64::try_from(secs)
                    .map(Some)
                    .map_err(|_| format!("`{key}` expects seconds, got `{value}`"))
            };
            match key {
                "timeout" => kw.timeout = Some(secs),
                "async" => kw.async_ = unsigned()?,
                _ => kw.poll = unsigned()?,
            }
        }
        _ => return Err(format!("`{key}` cannot be templated")),
    }
    Ok(())
}

/// `register`'s variable name, checked as ansible-core's `validate_variable_name` checks it.
fn register_name(n: &Node<'_>) -> Result<String, LoadError> {
    match crate::template::invalid_variable_name(n.value) {
        None => Ok(n.value.as_str().unwrap_or_default().to_string()),
        Some(why) => Err(invalid(n, format!("Invalid 'register' specified: {why}"))),
    }
}

pub fn parse_bool(n: &Node<'_>, key: &str) -> Result<bool, LoadError> {
    match n.value {
        Value::Bool(b) => Ok(*b),
        Value::Number(x) if x.as_i64() == Some(0) || x.as_i64() == Some(1) => {
            Ok(x.as_i64() == Some(1))
        }
        Value::String(s) => match s.to_lowercase().as_str() {
            "yes" | "true" | "on" | "y" | "1" => Ok(true),
            "no" | "false" | "off" | "n" | "0" => Ok(false),
            _ => Err(invalid(n, format!("`{key}` expects a boolean, got `{s}`"))),
        },
        other => Err(invalid(
            n,
            format!("`{key}` expects a boolean, got `{other}`"),
        )),
    }
}

/// A condition list: a string, a bool, or a list of either (all must hold).
pub(crate) fn conditions(n: &Node<'_>) -> Result<Vec<String>, LoadError> {
    let one = |v: &Value| -> Result<String, LoadError> {
        match v {
            // An unquoted `yes`/`no`/`on`/`off` is a YAML 1.1 boolean to Ansible (PyYAML);
            // the YAML loader here reads YAML 1.2, where it is a string.
            Value::String(s) => Ok(match s.as_str() {
                "yes" | "Yes" | "YES" | "on" | "On" | "ON" => "True".into(),
                "no" | "No" | "NO" | "off" | "Off" | "OFF" => "False".into(),
                // `when: "{{ x }}"` stays as written: the conditional renders it and takes
                // a string it gives as an expression only when trusted (see
                // `Templar::eval_condition`).
                _ => s.trim().to_string(),
            }),
            // Anything else fails where the task runs (`Conditional expressions must be
            // strings.`), as in ansible-core.
            other => Ok(crate::template::non_string_condition(other)),
        }
    };
    match n.value {
        Value::Array(items) => items.iter().map(one).collect(),
        Value::Null => Ok(Vec::new()),
        v => Ok(vec![one(v)?]),
    }
}

/// A `collections` keyword (a play's, or a role's `meta/main.yml`): the collections short
/// module names are looked up in.
pub(crate) fn collection_list(n: &Node<'_>) -> Result<Vec<String>, LoadError> {
    string_list(n).map_err(|_| {
        invalid(
            n,
            format!(
                "`collections` must be a list of collection names (`namespace.collection`), \
                 not `{}`",
                n.value
            ),
        )
    })
}

pub(crate) fn string_list(n: &Node<'_>) -> Result<Vec<String>, LoadError> {
    match n.value {
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(x) => Ok(x.to_string()),
                _ => Err(invalid(n, "expected a list of strings")),
            })
            .collect(),
        Value::String(s) => Ok(s
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect()),
        Value::Number(x) => Ok(vec![x.to_string()]),
        Value::Null => Ok(Vec::new()),
        _ => Err(invalid(n, "expected a string or a list of strings")),
    }
}

/// A `vars:` keyword (play, block, task): each name checked as ansible-core's
/// `_validate_variable_keys` checks it, at the key's line. The YAML loader keeps keys as
/// text, so a key YAML 1.1 reads as a boolean or number (`on:`, `yes:`, `1:`) is named with
/// the type Python would give it (`Invalid variable name 'True' of type 'bool'.`).
pub fn keyword_vars(n: &Node<'_>) -> Result<VarMap, LoadError> {
    for (key, value) in n.entries() {
        let as_loaded = match key {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            k => match k.parse::<i64>() {
                Ok(i) => Value::from(i),
                Err(_) => Value::String(k.to_string()),
            },
        };
        if let Some(why) = crate::template::invalid_variable_name(&as_loaded) {
            return Err(invalid(&value, why));
        }
    }
    var_map(n)
}

pub fn var_map(n: &Node<'_>) -> Result<VarMap, LoadError> {
    match n.value {
        Value::Object(m) => Ok(m.clone()),
        Value::Null => Ok(VarMap::new()),
        _ => Err(invalid(n, "`vars` must be a mapping")),
    }
}

/// Parse keyword entries (already known to be keywords) into `Keywords`.
/// `debugger` loads and does nothing: kinit runs without a terminal to debug at. A literal
/// that is none of ansible-core's values is refused in its words (`_post_validate_debugger`).
pub(crate) fn check_debugger(n: &Node<'_>) -> Result<(), LoadError> {
    const VALID: [&str; 5] = [
        "always",
        "on_failed",
        "on_unreachable",
        "on_skipped",
        "never",
    ];
    match n.value.as_str() {
        Some(v) if !v.is_empty() && !v.contains("{{") && !VALID.contains(&v) => Err(invalid(
            n,
            format!(
                "'{v}' is not a valid value for debugger. Must be one of {}",
                VALID.join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

pub fn parse_keywords(
    entries: &[(&str, Node<'_>)],
    what: &'static str,
) -> Result<Keywords, LoadError> {
    let mut kw = Keywords::default();
    for (key, n) in entries {
        match *key {
            "name" | "args" | "action" | "local_action" | "collections" => {}
            "debugger" => check_debugger(n)?,
            "when" => kw.when = conditions(n)?,
            "loop" => {
                kw.loop_ = Some(LoopSpec {
                    kind: LoopKind::Loop,
                    value: n.value.clone(),
                    action: None,
                })
            }
            k if k.starts_with("with_") => {
                let lookup = &k["with_".len()..];
                let kind = LOOP_FORMS
                    .iter()
                    .find(|(f, _)| *f == k)
                    .map(|(_, kind)| kind.clone())
                    .or_else(|| {
                        crate::template::LOOKUPS
                            .contains(&lookup)
                            .then(|| LoopKind::Lookup(lookup.to_string()))
                    })
                    .ok_or_else(|| {
                        let forms: Vec<String> = crate::template::LOOKUPS
                            .iter()
                            .map(|l| format!("with_{l}"))
                            .chain(LOOP_FORMS.iter().map(|(f, _)| f.to_string()))
                            .collect();
                        LoadError::UnknownKeyword {
                            file: n.file.to_path_buf(),
                            line: n.line(),
                            what,
                            key: k.to_string(),
                            suggestion: did_you_mean(k, forms.iter().map(String::as_str)),
                        }
                    })?;
                if kw.loop_.is_some() {
                    return Err(invalid(n, "only one of `loop`/`with_*` per task"));
                }
                kw.loop_ = Some(LoopSpec {
                    kind,
                    value: n.value.clone(),
                    action: None,
                });
            }
            "loop_control" => kw.loop_control = loop_control(n)?,
            "register" => kw.register = Some(register_name(n)?),
            "until" => kw.until = conditions(n)?.into_iter().next(),
            "retries" => kw.retries = Some(n.value.clone()),
            "delay" => kw.delay = Some(n.value.clone()),
            "changed_when" => kw.changed_when = Some(conditions(n)?),
            "failed_when" => kw.failed_when = Some(conditions(n)?),
            "ignore_errors" => {
                kw.ignore_errors = templated_or(n, key, &mut kw.templated, parse_bool)?
            }
            "ignore_unreachable" => {
                kw.ignore_unreachable = templated_or(n, key, &mut kw.templated, parse_bool)?
            }
            "notify" => kw.notify = string_list(n)?,
            "listen" => kw.listen = string_list(n)?,
            "tags" => kw.tags = string_list(n)?,
            "delegate_to" => kw.delegate_to = Some(scalar_string(n)?),
            "async" | "poll" => {
                let secs = templated_or(n, key, &mut kw.templated, |n, key| {
                    n.value
                        .as_u64()
                        .or_else(|| n.value.as_str().and_then(|s| s.trim().parse().ok()))
                        .ok_or_else(|| invalid(n, format!("`{key}` expects seconds")))
                })?;
                if *key == "async" {
                    kw.async_ = secs;
                } else {
                    kw.poll = secs;
                }
            }
            "remote_user" => kw.remote_user = Some(scalar_string(n)?),
            "connection" => kw.connection = Some(scalar_string(n)?),
            "port" => kw.port = Some(scalar_string(n)?),
            "delegate_facts" => {
                kw.delegate_facts = templated_or(n, key, &mut kw.templated, parse_bool)?
            }
            "run_once" => kw.run_once = templated_or(n, key, &mut kw.templated, parse_bool)?,
            "become" => kw.become_ = templated_or(n, key, &mut kw.templated, parse_bool)?,
            "become_user" => kw.become_user = Some(scalar_string(n)?),
            "become_method" => kw.become_method = Some(scalar_string(n)?),
            "become_flags" => kw.become_flags = Some(scalar_string(n)?),
            "environment" => kw.environment = Some(n.value.clone()),
            "module_defaults" => kw.module_defaults = Some(n.value.clone()),
            "no_log" => kw.no_log = templated_or(n, key, &mut kw.templated, parse_bool)?,
            "vars" => kw.vars = keyword_vars(n)?,
            "check_mode" => kw.check_mode = templated_or(n, key, &mut kw.templated, parse_bool)?,
            "diff" => kw.diff = templated_or(n, key, &mut kw.templated, parse_bool)?,
            "timeout" => {
                kw.timeout = templated_or(n, key, &mut kw.templated, |n, _| {
                    n.value
                        .as_i64()
                        .ok_or_else(|| invalid(n, "`timeout` expects whole seconds"))
                })?
            }
            "any_errors_fatal" => {
                kw.any_errors_fatal = templated_or(n, key, &mut kw.templated, parse_bool)?
            }
            "throttle" => {
                kw.throttle = templated_or(n, key, &mut kw.templated, |n, _| {
                    n.value
                        .as_u64()
                        .or_else(|| n.value.as_str().and_then(|s| s.trim().parse().ok()))
                        .ok_or_else(|| invalid(n, "`throttle` expects a whole number of hosts"))
                })?
            }
            other => {
                return Err(LoadError::UnknownKeyword {
                    file: n.file.to_path_buf(),
                    line: n.line(),
                    what,
                    key: other.to_string(),
                    suggestion: did_you_mean(other, TASK_KEYWORDS.iter().copied()),
                });
            }
        }
    }
    Ok(kw)
}

pub(crate) fn loop_control(n: &Node<'_>) -> Result<LoopControl, LoadError> {
    let mut lc = LoopControl::default();
    for (k, v) in n.entries() {
        match k {
            "loop_var" => lc.loop_var = Some(scalar_string(&v)?),
            "index_var" => lc.index_var = Some(scalar_string(&v)?),
            "label" => lc.label = Some(scalar_string(&v)?),
            "pause" => lc.pause = v.value.as_f64(),
            "extended" => lc.extended = parse_bool(&v, k)?,
            "extended_allitems" => lc.without_allitems = !parse_bool(&v, k)?,
            "break_when" => lc.break_when = conditions(&v)?,
            other => {
                return Err(LoadError::UnknownKeyword {
                    file: v.file.to_path_buf(),
                    line: v.line(),
                    what: "loop_control",
                    key: other.to_string(),
                    suggestion: did_you_mean(
                        other,
                        [
                            "loop_var",
                            "index_var",
                            "label",
                            "pause",
                            "extended",
                            "extended_allitems",
                            "break_when",
                        ],
                    ),
                });
            }
        }
    }
    Ok(lc)
}
