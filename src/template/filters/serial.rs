//! JSON and YAML in and out: `to_json`/`to_nice_json` (and Jinja2's `tojson`) write what
//! Python's `json.dumps` writes (`", "` separators, non-ASCII escaped, floats as Python
//! prints them), `to_yaml`/`to_nice_yaml` what PyYAML writes (see `pyyaml`),
//! `from_json`/`from_yaml` parse.

use minijinja::value::Kwargs;
use minijinja::{Error, ErrorKind, Value};
use serde_json::Value as Json;

use super::data::json;
use crate::template::{pyrepr, pyyaml};

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// Python's `json.dumps` with `ensure_ascii=True`.
pub fn dumps(v: &Json, indent: Option<usize>, sort_keys: bool) -> String {
    let mut out = String::new();
    write_json(&mut out, v, indent, sort_keys, 0);
    out
}

fn write_json(out: &mut String, v: &Json, indent: Option<usize>, sort: bool, level: usize) {
    let newline = |out: &mut String, level: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * level));
        }
    };
    let item_sep = if indent.is_some() { "," } else { ", " };
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => out.push_str(&match pyrepr::float(f).as_str() {
                "inf" => "Infinity".to_string(),
                "-inf" => "-Infinity".to_string(),
                "nan" => "NaN".to_string(),
                s => s.to_string(),
            }),
            _ => out.push_str(&n.to_string()),
        },
        Json::String(s) => write_json_str(out, s),
        Json::Array(a) if a.is_empty() => out.push_str("[]"),
        Json::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, level + 1);
                write_json(out, x, indent, sort, level + 1);
            }
            newline(out, level);
            out.push(']');
        }
        Json::Object(m) if m.is_empty() => out.push_str("{}"),
        Json::Object(m) => {
            out.push('{');
            let mut keys: Vec<&String> = m.keys().collect();
            if sort {
                keys.sort();
            }
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, level + 1);
                write_json_str(out, k);
                out.push_str(": ");
                write_json(out, &m[k], indent, sort, level + 1);
            }
            newline(out, level);
            out.push('}');
        }
    }
}

fn write_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `to_json(indent=None, sort_keys=False)`.
pub fn to_json(value: Value, kwargs: Kwargs) -> Result<String, Error> {
    let indent = kwargs.get::<Option<usize>>("indent")?;
    let sort = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    Ok(dumps(&json(&value)?, indent, sort))
}

/// Jinja2's `tojson(indent=None)`: `json.dumps` with the environment's default
/// `sort_keys=True`, then `<`, `>`, `&` and `'` escaped for HTML (`htmlsafe_json_dumps`).
pub fn tojson(value: Value, indent: Option<usize>, kwargs: Kwargs) -> Result<String, Error> {
    if value.is_undefined() {
        return Err(Error::new(ErrorKind::UndefinedError, "undefined value"));
    }
    let indent = match indent {
        Some(n) => Some(n),
        None => kwargs.get::<Option<usize>>("indent")?,
    };
    kwargs.assert_all_used()?;
    Ok(dumps(&json(&value)?, indent, true)
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\'', "\\u0027"))
}

/// `to_nice_json(indent=4, sort_keys=True)`.
pub fn to_nice_json(value: Value, kwargs: Kwargs) -> Result<String, Error> {
    let indent = kwargs.get::<Option<usize>>("indent")?.unwrap_or(4);
    let sort = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(true);
    kwargs.assert_all_used()?;
    Ok(dumps(&json(&value)?, Some(indent), sort))
}

pub fn from_json(value: Value) -> Result<Value, Error> {
    let s = pyrepr::to_str(&value)?;
    let j: Json = serde_json::from_str(&s).map_err(|e| invalid(format!("invalid JSON: {e}")))?;
    Ok(Value::from_serialize(j))
}

/// `to_yaml(default_flow_style=None, **kwargs)`: `yaml.dump` with `allow_unicode=True`.
pub fn to_yaml(value: Value, kwargs: Kwargs) -> Result<String, Error> {
    let opts = yaml_options(&kwargs, None, pyyaml::FlowStyle::Auto)?;
    Ok(pyyaml::dump(&json(&value)?, &opts))
}

/// `to_nice_yaml(indent=4, default_flow_style=False, **kwargs)`.
pub fn to_nice_yaml(value: Value, indent: Option<Value>, kwargs: Kwargs) -> Result<String, Error> {
    let mut opts = yaml_options(&kwargs, Some(4), pyyaml::FlowStyle::Block)?;
    if let Some(i) = indent {
        if kwargs.has("indent") {
            return Err(invalid(
                "to_nice_yaml() got multiple values for argument 'indent'".into(),
            ));
        }
        opts.indent = yaml_int(&i, "indent")?;
    }
    Ok(pyyaml::dump(&json(&value)?, &opts))
}

/// The keyword arguments of `yaml.dump` that shape the text, read as Python reads them
/// (any value for the flags, by truth). The encoding ones (`encoding`, `line_break`,
/// `version`, `tags`) are refused by name; an unknown one in PyYAML's words.
fn yaml_options(
    kwargs: &Kwargs,
    indent: Option<i64>,
    flow: pyyaml::FlowStyle,
) -> Result<pyyaml::Options, Error> {
    const KNOWN: [&str; 8] = [
        "indent",
        "width",
        "default_flow_style",
        "sort_keys",
        "explicit_start",
        "explicit_end",
        "default_style",
        "canonical",
    ];
    for name in kwargs.args() {
        if matches!(name, "encoding" | "line_break" | "version" | "tags") {
            return Err(invalid(format!(
                "kinit's YAML writer does not support `{name}`"
            )));
        }
        if name == "allow_unicode" {
            return Err(invalid(
                "yaml.dump() got multiple values for keyword argument 'allow_unicode'".into(),
            ));
        }
        if !KNOWN.contains(&name) {
            return Err(invalid(format!(
                "dump_all() got an unexpected keyword argument '{name}'"
            )));
        }
    }
    let get = |name: &str| -> Result<Option<Value>, Error> {
        Ok(kwargs.get::<Option<Value>>(name)?.filter(|v| !v.is_none()))
    };
    let flag = |name: &str, default: bool| -> Result<bool, Error> {
        Ok(get(name)?.map_or(default, |v| v.is_true()))
    };
    let opts = pyyaml::Options {
        indent: match get("indent")? {
            Some(v) => yaml_int(&v, "indent")?,
            None => indent,
        },
        width: match get("width")? {
            Some(v) => yaml_int(&v, "width")?,
            None => None,
        },
        flow: match kwargs.get::<Option<Value>>("default_flow_style")? {
            Some(v) if v.is_none() => pyyaml::FlowStyle::Auto,
            Some(v) if v.is_true() => pyyaml::FlowStyle::Flow,
            Some(_) => pyyaml::FlowStyle::Block,
            None => flow,
        },
        sort_keys: flag("sort_keys", true)?,
        explicit_start: flag("explicit_start", false)?,
        explicit_end: flag("explicit_end", false)?,
        style: get("default_style")?
            .and_then(|v| v.as_str().and_then(pyyaml::ScalarStyle::from_indicator)),
        canonical: flag("canonical", false)?,
    };
    kwargs.assert_all_used()?;
    Ok(opts)
}

fn yaml_int(v: &Value, name: &str) -> Result<Option<i64>, Error> {
    if v.is_none() {
        return Ok(None);
    }
    i64::try_from(v.clone())
        .map(Some)
        .map_err(|_| invalid(format!("`{name}` must be an integer, got {v}")))
}

pub fn from_yaml(value: Value) -> Result<Value, Error> {
    // As ansible-core: `None` stays `None`, a value that is not text comes back unchanged.
    if value.is_none() || (!value.is_undefined() && value.as_str().is_none()) {
        return Ok(value);
    }
    let s = pyrepr::to_str(&value)?;
    let j = crate::yaml::parse_value(&s).map_err(|e| invalid(format!("invalid YAML: {e}")))?;
    Ok(Value::from_serialize(j))
}

pub fn from_yaml_all(value: Value) -> Result<Value, Error> {
    // As ansible-core: `None` is no documents, a value that is not text comes back unchanged.
    if value.is_none() {
        return Ok(Value::from(Vec::<Value>::new()));
    }
    if !value.is_undefined() && value.as_str().is_none() {
        return Ok(value);
    }
    let s = pyrepr::to_str(&value)?;
    let docs = crate::yaml::parse_all(&s).map_err(|e| invalid(format!("invalid YAML: {e}")))?;
    Ok(Value::from_serialize(docs))
}
