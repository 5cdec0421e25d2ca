//! Module arguments as written in a task: a mapping, free-form text (`k=v` pairs, or
//! `_raw_params` for command-like modules), or `action:`/`local_action:` text, merged with
//! `args:`.

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
                    join_continued_lines(s)
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

/// Free-form text as ansible-core's `split_args`/`join_args` hand it to a module: a lone `\\`
/// word outside quotes is dropped and, ending a line, joins the next line to it with a space
/// (`echo a \\` + newline + `b` is `echo a b`); everything else (spacing, newlines, text in
/// quotes) stays as written.
pub(crate) fn join_continued_lines(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut quote: Option<char> = None;
    // The separator owed before the next line's text: a newline, or a space after a
    // continuation (only before text that does not start with a space).
    let mut pending: Option<char> = None;
    for line in s.split('\n') {
        let mut kept: Vec<&str> = Vec::new();
        let mut continued = false;
        for word in line.split(' ') {
            if word == "\\" && quote.is_none() {
                continued = true;
                continue;
            }
            quote = quote_state(word, quote);
            kept.push(word);
        }
        let text = kept.join(" ");
        match pending {
            Some('\n') => out.push('\n'),
            // A line's leading space stands in for the joining one.
            Some(c) if !text.is_empty() && !text.starts_with(' ') => out.push(c),
            _ => {}
        }
        out.push_str(&text);
        pending = Some(if continued { ' ' } else { '\n' });
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

/// Split free-form `k=v` text on whitespace outside quotes and `{{ }}` / `{% %}`.
pub fn split_kv(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quote, mut depth) = (None::<char>, 0usize);
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (None, '\'' | '"') if depth == 0 => quote = Some(c),
            (None, '{') if matches!(next, Some('{') | Some('%')) => depth += 1,
            (None, '}' | '%') if next == Some('}') && depth > 0 => depth -= 1,
            (None, c) if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        cur.push(c);
        i += 1;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The backslash escapes ansible-core decodes in `k=v` text (`_decode_escapes` in
/// `parsing/splitter.py`): `\\n`, `\\t` and the other one-letter escapes, `\\\\`, quotes, and
/// `\\xHH`/`\\uHHHH`/`\\UHHHHHHHH`. Anything else stays as written.
pub(crate) fn decode_escapes(v: &str) -> String {
    if !v.contains('\\') {
        return v.to_string();
    }
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let hex = |n: usize| {
            tail.get(1..=n)
                .filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32)
                .map(|c| (c, n + 1))
        };
        let one = |c: char| Some((c, 1));
        let decoded = match tail.chars().next() {
            Some('n') => one('\n'),
            Some('t') => one('\t'),
            Some('r') => one('\r'),
            Some('a') => one('\u{7}'),
            Some('b') => one('\u{8}'),
            Some('f') => one('\u{c}'),
            Some('v') => one('\u{b}'),
            Some(c @ ('\\' | '\'' | '"')) => one(c),
            Some('x') => hex(2),
            Some('u') => hex(4),
            Some('U') => hex(8),
            _ => None,
        };
        match decoded {
            Some((c, used)) => {
                out.push(c);
                rest = &tail[used..];
            }
            None => {
                out.push('\\');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

pub(crate) fn unquote(v: &str) -> String {
    let b = v.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        v[1..v.len() - 1].to_string()
    } else {
        v.to_string()
    }
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
    fn a_lone_backslash_continues_the_line_as_ansible_joins_free_form_text() {
        assert_eq!(
            join_continued_lines("echo a \\\n\"b c\" \\\n\"d\ne\" | x\necho 'f \\ g'\n"),
            "echo a \"b c\" \"d\ne\" | x\necho 'f \\ g'\n"
        );
        assert_eq!(join_continued_lines("x \\\n"), "x");
        assert_eq!(join_continued_lines("a  \\ b\n  c"), "a  b  c");
        assert_eq!(join_continued_lines("a \\\n   "), "a   ");
        assert_eq!(join_continued_lines("no continuation\n"), "no continuation\n");
    }

    #[test]
    fn free_form_splits_outside_quotes_and_braces() {
        assert_eq!(
            split_kv(r#"msg="a b" var={{ x | default('y z') }} n=1"#),
            vec![r#"msg="a b""#, "var={{ x | default('y z') }}", "n=1"]
        );
    }
}
