//! Module arguments as written in a task: a mapping, free-form text (`k=v` pairs, or
//! `_raw_params` for command-like modules), or `action:`/`local_action:` text, merged with
//! `args:`.

pub use crate::template::kv::split_kv;
pub(crate) use crate::template::kv::{decode_escapes, unquote};
use serde_json::{Map, Value};

use super::LoadError;
use super::error::invalid;
use super::yaml::Node;

/// Modules whose free-form text is a command line, not `k=v` pairs.
const RAW_MODULES: &[&str] = &[
    "command",
    "shell",
    "raw",
    "script",
    "win_shell",
    "win_command",
    "meta",
    "include_tasks",
    "import_tasks",
    "include_vars",
    "win_powershell",
];

/// The argument key holding a template that gives the module's arguments as a mapping when the
/// task runs: `module: "{{ spec }}"` or `args: "{{ spec }}"`. Arguments written beside it win.
pub const VARIABLE_PARAMS: &str = "_variable_params";

/// Whether `s` is one whole `{{ ... }}` expression (ansible-core's `is_possibly_all_template`).
fn is_all_template(s: &str) -> bool {
    let t = s.trim();
    t.starts_with("{{") && t.ends_with("}}") && t[2..t.len() - 2].find("}}").is_none()
}

/// Options that `command`/`shell` accept inside their free-form text.
const COMMAND_OPTIONS: &[&str] = &["creates", "removes", "chdir", "executable", "stdin"];

pub fn contains_template(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("{{") || s.contains("{%"),
        Value::Array(a) => a.iter().any(contains_template),
        Value::Object(m) => m.values().any(contains_template),
        _ => false,
    }
}

/// `action: copy src=a dest=b` or `action: {module: copy, src: a}`.
pub(crate) fn split_action_value(n: &Node<'_>) -> Result<(String, Value), LoadError> {
    match n.value {
        Value::String(s) => {
            let s = s.trim();
            let (m, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
            Ok((m.to_string(), Value::String(rest.trim().to_string())))
        }
        Value::Object(map) => {
            let m = map
                .get("module")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid(n, "`action` mapping needs `module`"))?;
            let mut rest = map.clone();
            rest.remove("module");
            Ok((m.to_string(), Value::Object(rest)))
        }
        _ => Err(invalid(n, "`action` must be a string or a mapping")),
    }
}

/// The module's argument map from its value (mapping, free-form string or null) and `args:`.
pub(crate) fn build_args(
    module: &str,
    value: &Value,
    args_kw: Option<&Node<'_>>,
    at: &Node<'_>,
) -> Result<Value, LoadError> {
    let mut out = Map::new();
    match value {
        Value::Null => {}
        Value::Object(m) => out = m.clone(),
        Value::String(s) => {
            if RAW_MODULES.contains(&module) {
                let mut rest = Vec::new();
                let mut took_option = false;
                for tok in split_kv(s) {
                    match tok.split_once('=') {
                        Some((k, v))
                            if matches!(
                                module,
                                "command" | "shell" | "win_shell" | "win_command"
                            ) && COMMAND_OPTIONS.contains(&k) =>
                        {
                            out.insert(k.to_string(), Value::String(unquote(&decode_escapes(v))));
                            took_option = true;
                        }
                        _ => rest.push(tok),
                    }
                }
                // Without options the text is the command as written, newlines and spacing
                // kept (a `win_shell: |` script), as Ansible's parse_kv/join_args keep them.
                let raw = if took_option {
                    rest.join(" ")
                } else {
                    s.clone()
                };
                out.insert("_raw_params".into(), Value::String(raw));
            } else if is_all_template(s) {
                // `add_host: "{{ host_spec }}"`: a mapping the template gives when the task
                // runs (ansible-core's `_variable_params`).
                out.insert(VARIABLE_PARAMS.into(), Value::String(s.clone()));
            } else if s.contains('=') {
                for tok in split_kv(s) {
                    let (k, v) = tok.split_once('=').ok_or_else(|| {
                        invalid(at, format!("expected `key=value` arguments, got `{tok}`"))
                    })?;
                    out.insert(k.to_string(), Value::String(unquote(&decode_escapes(v))));
                }
            } else {
                out.insert("_raw_params".into(), Value::String(s.clone()));
            }
        }
        Value::Bool(_) | Value::Number(_) => {
            out.insert("_raw_params".into(), value.clone());
        }
        Value::Array(_) => {
            return Err(invalid(
                at,
                format!("arguments of `{module}` cannot be a list"),
            ));
        }
    }
    if let Some(a) = args_kw {
        match a.value {
            Value::Object(m) => {
                for (k, v) in m {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Null => {}
            Value::String(s) if is_all_template(s) => {
                out.insert(VARIABLE_PARAMS.into(), Value::String(s.clone()));
            }
            _ => {
                return Err(invalid(
                    a,
                    "`args` must be a mapping, or a template that gives one",
                ));
            }
        }
    }
    Ok(Value::Object(out))
}

pub(crate) fn raw_param(args: &Value, key: &str) -> Option<String> {
    args.get("_raw_params")
        .or_else(|| args.get(key))
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_value_text_decodes_backslash_escapes_as_ansible_does() {
        assert_eq!(decode_escapes(r"a\nb\t\\x\x41\u00e9\q"), "a\nb\t\\xAé\\q");
        assert_eq!(decode_escapes("plain"), "plain");
    }

    #[test]
    fn free_form_splits_outside_quotes_and_braces() {
        assert_eq!(
            split_kv(r#"msg="a b" var={{ x | default('y z') }} n=1"#),
            vec![r#"msg="a b""#, "var={{ x | default('y z') }}", "n=1"]
        );
    }
}
