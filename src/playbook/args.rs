//! Module arguments as written in a task: a mapping, free-form text (`k=v` pairs, or
//! `_raw_params` for command-like modules), or `action:`/`local_action:` text, merged with
//! `args:`.

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
            // A templated name (`{{ ansible_pkg_mgr }} name=x`) ends after its braces.
            let name_end = if s.starts_with("{{") {
                s.find("}}").map(|i| {
                    let after = i + 2;
                    after
                        + s[after..]
                            .find(char::is_whitespace)
                            .unwrap_or(s.len() - after)
                })
            } else {
                None
            };
            if let Some(end) = name_end {
                let rest = s[end..].trim();
                let args = if rest.is_empty() {
                    Value::Null
                } else {
                    Value::String(rest.to_string())
                };
                return Ok((s[..end].to_string(), args));
            }
            // `action: setup` alone has no arguments, not an empty free-form one.
            let Some((m, rest)) = s.split_once(char::is_whitespace) else {
                return Ok((s.to_string(), Value::Null));
            };
            Ok((m.to_string(), Value::String(rest.trim().to_string())))
        }
        Value::Object(map) => {
            let m = map
                .get("module")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid(n, "`action` mapping needs `module`"))?;
            let mut rest = map.clone();
            rest.remove("module");
            // An `args` mapping inside the mapping is merged into it, as ansible-core's
            // `ModuleArgsParser._normalize_parameters` does.
            match rest.remove("args") {
                Some(Value::Object(inner)) => rest.extend(inner),
                Some(Value::Null) | None => {}
                Some(other) => {
                    return Err(invalid(
                        n,
                        format!("`action`'s `args` must be a mapping, not `{other}`"),
                    ));
                }
            }
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
                // As ansible-core's parse_kv over split_args: `k=v` words naming an option
                // are options, every other word (newlines attached) is the command.
                let mut rest = Vec::new();
                let mut took_option = false;
                for word in split_args(s) {
                    match word.split_once('=') {
                        Some((k, v))
                            if matches!(
                                module,
                                "command" | "shell" | "win_shell" | "win_command"
                            ) && COMMAND_OPTIONS.contains(&k.trim()) =>
                        {
                            out.insert(
                                k.trim().to_string(),
                                Value::String(unquote(&decode_escapes(v.trim()))),
                            );
                            took_option = true;
                        }
                        _ => rest.push(word),
                    }
                }
                // Without options or continuation lines the text is the command as written.
                let raw = if took_option || s.contains('\\') {
                    join_args(&rest)
                } else {
                    s.clone()
                };
                out.insert("_raw_params".into(), Value::String(raw));
            } else if is_all_template(s) {
                // `add_host: "{{ host_spec }}"`: a mapping the template gives when the task
                // runs (ansible-core's `_variable_params`).
                out.insert(VARIABLE_PARAMS.into(), Value::String(s.clone()));
            } else if s.contains('=') {
                // ansible-core's `parse_kv`: the words `split_args` cuts (a quote inside a
                // `{{ }}` block does not end the word), each cut at its first unescaped `=`.
                // Words that are templates are arguments the task's variables give (a mapping
                // when it runs, as ansible-core templates the words left over; anything else
                // fails that task). Other words are the task's `_raw_params`, as `parse_kv`
                // keeps them: a module that takes none fails where a host reaches it.
                let mut templated = Vec::new();
                let mut words = Vec::new();
                for tok in split_args(s) {
                    let tok = decode_escapes(&tok);
                    let eq = tok
                        .char_indices()
                        .skip(1)
                        .find(|&(i, c)| c == '=' && !tok[..i].ends_with('\\'))
                        .map(|(i, _)| i);
                    let Some(eq) = eq else {
                        if is_all_template(tok.trim()) {
                            templated.push(tok.trim().to_string());
                        }
                        words.push(tok.trim().to_string());
                        continue;
                    };
                    out.insert(
                        tok[..eq].trim().to_string(),
                        Value::String(unquote(tok[eq + 1..].trim())),
                    );
                }
                if !words.is_empty() && templated.len() < words.len() {
                    out.insert("_raw_params".into(), Value::String(words.join(" ")));
                } else if !templated.is_empty() {
                    out.insert(VARIABLE_PARAMS.into(), Value::String(templated.join(" ")));
                }
            } else {
                out.insert("_raw_params".into(), Value::String(s.clone()));
            }
        }
        // ansible-core's `ModuleArgsParser` takes a mapping, a text or nothing.
        Value::Bool(_) | Value::Number(_) => {
            let class = match value {
                Value::Bool(_) => "bool",
                Value::Number(n) if n.is_f64() => "float",
                _ => "int",
            };
            return Err(invalid(
                at,
                format!("unexpected parameter type in action: <class '{class}'>"),
            ));
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

/// Free-form text cut into words as ansible-core's `split_args` cuts it: on spaces, but a
/// quoted string or a `{{ }}`/`{% %}`/`{# #}` block is one word, extra spaces stay with the
/// word before them, and each line's newline stays with its last word; a lone `\\` outside
/// quotes is dropped, and a line holding one is joined to the next (`echo a \\` + newline +
/// `b` is `echo a b` after `join_args`).
pub(crate) fn split_args(s: &str) -> Vec<String> {
    let mut params: Vec<String> = Vec::new();
    let mut quote: Option<char> = None;
    // Open `{{`, `{%` and `{#` blocks.
    let mut depth = [0i64; 3];
    const BLOCKS: [(&str, &str); 3] = [("{{", "}}"), ("{%", "%}"), ("{#", "#}")];
    let lines: Vec<&str> = s.split('\n').collect();
    for (li, line) in lines.iter().enumerate() {
        let mut continued = false;
        for (idx, word) in line.split(' ').enumerate() {
            if word.is_empty() && idx != 0 {
                match params.last_mut() {
                    Some(last) => last.push(' '),
                    None => params.push(" ".into()),
                }
                continue;
            }
            if word == "\\" && quote.is_none() {
                continued = true;
                continue;
            }
            let was_quoted = quote.is_some();
            quote = quote_state(word, quote);
            let quoted = quote.is_some();
            let in_block = depth.iter().any(|d| *d > 0);
            let mut appended = false;
            if quoted && !was_quoted && !in_block {
                params.push(word.to_string());
                appended = true;
            } else if in_block || quoted || was_quoted {
                if let Some(last) = params.last_mut() {
                    if idx > 0 {
                        last.push(' ');
                    }
                    last.push_str(word);
                } else {
                    params.push(word.to_string());
                }
                appended = true;
            }
            for (d, (open, close)) in depth.iter_mut().zip(BLOCKS) {
                let before = *d;
                // ansible-core's `_count_jinja2_blocks` never goes below zero.
                *d = (*d + word.matches(open).count() as i64 - word.matches(close).count() as i64)
                    .max(0);
                if *d != before && !appended {
                    params.push(word.to_string());
                    appended = true;
                }
            }
            if !depth.iter().any(|d| *d > 0) && !quoted && !appended && !word.is_empty() {
                params.push(word.to_string());
            }
        }
        if lines.len() > 1 && li != lines.len() - 1 && !continued {
            match params.last_mut() {
                Some(last) => last.push('\n'),
                None => params.push("\n".into()),
            }
        }
    }
    params
}

/// Words back into text as ansible-core's `join_args` joins them: with a space, except after
/// a newline.
pub(crate) fn join_args(words: &[String]) -> String {
    let mut out = String::new();
    for w in words {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// The open quote after `word`, given the one open before it: an unescaped quote character
/// opens a quote, or closes the open one of its kind.
fn quote_state(word: &str, mut quote: Option<char>) -> Option<char> {
    let mut prev = None;
    for c in word.chars() {
        if (c == '"' || c == '\'') && prev != Some('\\') {
            match quote {
                Some(q) if q == c => quote = None,
                Some(_) => {}
                None => quote = Some(c),
            }
        }
        prev = Some(c);
    }
    quote
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

    fn join_args_of(s: &str) -> String {
        join_args(&split_args(s))
    }

    #[test]
    fn a_lone_backslash_continues_the_line_as_ansible_joins_free_form_text() {
        assert_eq!(
            join_args_of("echo a \\\n\"b c\" \\\n\"d\ne\" | x\necho 'f \\ g'\n"),
            "echo a \"b c\" \"d\ne\" | x\necho 'f \\ g'\n"
        );
        assert_eq!(join_args_of("x \\\n"), "x");
        assert_eq!(join_args_of("a  \\ b\n  c"), "a  b  c");
        assert_eq!(join_args_of("a \\\n   "), "a   ");
        assert_eq!(join_args_of("no continuation\n"), "no continuation\n");
        assert_eq!(
            split_args("x=\"/a b\"\ny={{ v | d('p q') }}\necho  \"t\"\n"),
            ["x=\"/a b\"\n", "y={{ v | d('p q') }}\n", "echo ", "\"t\"\n"]
        );
    }

    #[test]
    fn free_form_splits_outside_quotes_and_braces() {
        assert_eq!(
            split_args(r#"msg="a b" var={{ x | default('y z') }} n=1"#),
            vec![r#"msg="a b""#, "var={{ x | default('y z') }}", "n=1"]
        );
        // A quote inside a `{{ }}` block inside a quoted value does not end the word.
        assert_eq!(
            split_args(r#"msg="v {{ 'a' if x else "b c" }} {{ y | default("-") }}" n=1"#),
            vec![
                r#"msg="v {{ 'a' if x else "b c" }} {{ y | default("-") }}""#,
                "n=1"
            ]
        );
    }
}
