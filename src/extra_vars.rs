//! `-e` / `--extra-vars` arguments, with ansible-playbook's semantics:
//!
//! - `@file.yml` loads a YAML (or JSON) file holding a mapping; the path is relative to the
//!   folder the command runs in;
//! - an argument starting with `{` or `[` is inline YAML/JSON and must be a mapping
//!   (`-e '{"nodes": [1, 2], "debug": true}'`), which is how typed values are passed;
//! - anything else is `key=value` pairs separated by spaces; values stay strings, quotes
//!   (`msg="a b"`) group words and are removed, `\=` is a literal `=`; a word without `=` is
//!   an error for kinit's own commands, and for `kinit playbook` goes to the variable
//!   `_raw_params` as ansible-playbook keeps it (`-e 'a: 1'` is then not an error);
//! - a path without `@` (`/x.yml`, `./x.yml`) is refused, as Ansible does.
//!
//! Later arguments override earlier ones key by key (Ansible's `hash_behaviour=replace`).
//! Errors name the argument's position and key, never a value: values may be secrets.

use std::path::{Path, PathBuf};

use crate::vars::VarMap;

#[derive(Debug, thiserror::Error)]
pub enum ExtraVarsError {
    #[error(transparent)]
    Vault(#[from] crate::vault::DecryptError),
    #[error("extra vars #{index}: `@` must be followed by a file name")]
    EmptyFileName { index: usize },
    #[error("extra vars #{index}: cannot read `{path}`")]
    Read {
        index: usize,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("extra vars #{index}: `{path}`{}: {message}", position(*line, *column))]
    FileSyntax {
        index: usize,
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("extra vars #{index}: `{path}` must hold a mapping of names to values, not {found}")]
    FileNotMapping {
        index: usize,
        path: PathBuf,
        found: &'static str,
    },
    // No position: the text is one short argument, and the parser reports the end of input.
    #[error("extra vars #{index}: inline YAML/JSON is invalid: {message}")]
    InlineSyntax { index: usize, message: String },
    #[error(
        "extra vars #{index}: inline YAML/JSON must be a mapping of names to values, not {found}"
    )]
    InlineNotMapping { index: usize, found: &'static str },
    #[error("extra vars #{index}: file name `{arg}` needs a leading `@` (`-e @{arg}`)")]
    MissingAt { index: usize, arg: String },
    #[error("extra vars #{index}: `{word}` is not `key=value`")]
    NotKeyValue { index: usize, word: String },
    #[error(
        "extra vars #{index}: `{name}` is not a valid variable name (letters, digits and `_`, not starting with a digit)"
    )]
    BadName { index: usize, name: String },
    #[error("extra vars #{index}: unterminated {quote} quote")]
    UnterminatedQuote { index: usize, quote: char },
}

/// `:line:column`, or nothing when the parser did not say where (line 0).
fn position(line: usize, column: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}:{column}")
    }
}

/// Parse every `-e` argument in order and merge them (later wins). Relative `@file` paths
/// are resolved against `base_dir`. A word without `=` is an error.
pub fn parse_extra_vars(args: &[String], base_dir: &Path) -> Result<VarMap, ExtraVarsError> {
    parse_all(args, base_dir, false)
}

/// [`parse_extra_vars`] as ansible-playbook parses them: the words of an argument that are not
/// `key=value` are kept, joined by spaces, as the variable `_raw_params` (ansible-core's
/// `parse_kv`), so `-e 'a: 1'` is not an error there.
pub fn parse_playbook_extra_vars(
    args: &[String],
    base_dir: &Path,
) -> Result<VarMap, ExtraVarsError> {
    parse_all(args, base_dir, true)
}

fn parse_all(args: &[String], base_dir: &Path, raw_ok: bool) -> Result<VarMap, ExtraVarsError> {
    let mut out = VarMap::new();
    for (i, arg) in args.iter().enumerate() {
        let vars = parse_arg(arg, i + 1, base_dir, raw_ok)?;
        crate::vars::combine(&mut out, &vars);
    }
    Ok(out)
}

/// One `-e` argument; `index` is its 1-based position, used in errors.
pub fn parse_one(arg: &str, index: usize, base_dir: &Path) -> Result<VarMap, ExtraVarsError> {
    parse_arg(arg, index, base_dir, false)
}

fn parse_arg(
    arg: &str,
    index: usize,
    base_dir: &Path,
    raw_ok: bool,
) -> Result<VarMap, ExtraVarsError> {
    if arg.is_empty() {
        return Ok(VarMap::new());
    }
    if let Some(file) = arg.strip_prefix('@') {
        return load_file(file, index, base_dir);
    }
    if arg.starts_with('/') || arg.starts_with('.') {
        return Err(ExtraVarsError::MissingAt {
            index,
            arg: arg.to_string(),
        });
    }
    if arg.starts_with('{') || arg.starts_with('[') {
        let value: serde_json::Value =
            crate::yaml::parse_value(arg).map_err(|e| ExtraVarsError::InlineSyntax {
                index,
                message: e.detail(),
            })?;
        return into_map(value, index, |found| ExtraVarsError::InlineNotMapping {
            index,
            found,
        });
    }
    parse_kv(arg, index, raw_ok)
}

fn load_file(file: &str, index: usize, base_dir: &Path) -> Result<VarMap, ExtraVarsError> {
    if file.is_empty() {
        return Err(ExtraVarsError::EmptyFileName { index });
    }
    let path = base_dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|source| ExtraVarsError::Read {
        index,
        path: PathBuf::from(file),
        source,
    })?;
    // `-e @secrets.yml` may be vaulted whole or hold `!vault` values, as in Ansible.
    let text = crate::vault::file_text(&path, text)?;
    let value = crate::yaml::parse(&text, &path, Some(&crate::vault::current()))
        .map_err(|e| match e {
            crate::yaml::YamlError::Vault(d) => ExtraVarsError::from(d),
            e => ExtraVarsError::FileSyntax {
                index,
                path: PathBuf::from(file),
                line: e.line(),
                column: e.column(),
                message: e.detail(),
            },
        })?
        .value;
    into_map(value, index, |found| ExtraVarsError::FileNotMapping {
        index,
        path: PathBuf::from(file),
        found,
    })
}

/// The YAML error text without its trailing " at line L column C" (the error carries those).
fn into_map(
    value: serde_json::Value,
    index: usize,
    not_mapping: impl FnOnce(&'static str) -> ExtraVarsError,
) -> Result<VarMap, ExtraVarsError> {
    match value {
        serde_json::Value::Object(map) => {
            for name in map.keys() {
                check_name(name, index)?;
            }
            Ok(map)
        }
        other => Err(not_mapping(json_kind(&other))),
    }
}

/// A short name for a JSON value's type, for error messages.
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "an empty document",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

fn check_name(name: &str, index: usize) -> Result<(), ExtraVarsError> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(ExtraVarsError::BadName {
            index,
            name: name.to_string(),
        })
    }
}

/// `k=v k2="a b"`: Ansible's `parse_kv`; a word without `=` is an error, or with `raw_ok` goes
/// to the free-form `_raw_params` as the words were written.
fn parse_kv(arg: &str, index: usize, raw_ok: bool) -> Result<VarMap, ExtraVarsError> {
    let mut out = VarMap::new();
    let mut raw: Vec<String> = Vec::new();
    for word in split_words(arg, index)? {
        let Some(eq) = find_unescaped_eq(&word) else {
            if raw_ok {
                raw.push(word);
                continue;
            }
            // Show the key-less word only up to a reasonable length; it is not a value.
            return Err(ExtraVarsError::NotKeyValue {
                index,
                word: word.chars().take(40).collect(),
            });
        };
        let key = word[..eq].trim();
        check_name(key, index)?;
        let value = unquote(word[eq + 1..].trim()).replace("\\=", "=");
        out.insert(key.to_string(), serde_json::Value::String(value));
    }
    if !raw.is_empty() {
        out.insert(
            "_raw_params".to_string(),
            serde_json::Value::String(raw.join(" ")),
        );
    }
    Ok(out)
}

fn find_unescaped_eq(word: &str) -> Option<usize> {
    let bytes = word.as_bytes();
    (0..bytes.len()).find(|&i| bytes[i] == b'=' && (i == 0 || bytes[i - 1] != b'\\'))
}

/// Split on whitespace outside quotes and Jinja blocks (`{{ }}`, `{% %}`, `{# #}`), keeping the
/// quotes in the words, like Ansible's `split_args`. Backslash escapes are decoded.
fn split_words(arg: &str, index: usize) -> Result<Vec<String>, ExtraVarsError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut jinja_depth = 0usize;
    let mut chars = arg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => cur.push('\n'),
                Some('t') => cur.push('\t'),
                Some('r') => cur.push('\r'),
                Some('\\') => cur.push('\\'),
                Some(q @ ('"' | '\'')) => cur.push(q),
                Some(other) => {
                    cur.push('\\');
                    cur.push(other);
                }
                None => cur.push('\\'),
            },
            '"' | '\'' if jinja_depth == 0 => {
                match quote {
                    None => quote = Some(c),
                    Some(q) if q == c => quote = None,
                    Some(_) => {}
                }
                cur.push(c);
            }
            '{' if matches!(chars.peek(), Some('{' | '%' | '#')) => {
                jinja_depth += 1;
                cur.push(c);
                cur.push(chars.next().unwrap_or('{'));
            }
            '}' | '%' | '#' if jinja_depth > 0 && chars.peek() == Some(&'}') => {
                jinja_depth -= 1;
                cur.push(c);
                cur.push(chars.next().unwrap_or('}'));
            }
            c if c.is_whitespace() && quote.is_none() && jinja_depth == 0 => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if let Some(q) = quote {
        return Err(ExtraVarsError::UnterminatedQuote { index, quote: q });
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    Ok(words)
}

/// Remove one pair of matching outer quotes.
fn unquote(s: &str) -> String {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return s[1..s.len() - 1].to_string();
        }
    }
    s.to_string()
}

/// Ansible's truthiness for a variable given as a string or bool (`true`, `yes`, `on`, `1`).
pub fn is_truthy(v: Option<&serde_json::Value>) -> bool {
    match v {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(serde_json::Value::String(s)) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "true" | "yes" | "on" | "1" | "y" | "t"
        ),
        _ => false,
    }
}

#[cfg(test)]
#[path = "extra_vars_tests.rs"]
mod tests;
