//! Python's `str()` and `repr()` of template values: how Jinja2 under Ansible prints a list
//! or dict inside a larger string (`['a', 1]`, `{'k': True}`), and what the `string` filter
//! returns.

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, Value};

use super::filters::group::GroupTuple;

/// `str(value)`: strings unchanged, everything else as `repr`. An undefined value, also
/// one inside a list or dict (`[u, 1]`), is an error, as Ansible's undefined refuses to
/// become text.
pub fn to_str(value: &Value) -> Result<String, Error> {
    if value.is_undefined() {
        return Err(Error::new(ErrorKind::UndefinedError, "undefined value"));
    }
    if let Some(s) = value.as_str() {
        return Ok(s.to_string());
    }
    let mut out = String::new();
    repr_into(value, &mut out)?;
    Ok(out)
}

/// `repr(value)`: a string quoted, everything else as `str`.
pub fn to_repr(value: &Value) -> Result<String, Error> {
    let mut out = String::new();
    repr_into(value, &mut out)?;
    Ok(out)
}

fn repr_into(value: &Value, out: &mut String) -> Result<(), Error> {
    match value.kind() {
        ValueKind::Undefined => {
            return Err(Error::new(ErrorKind::UndefinedError, "undefined value"));
        }
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number => out.push_str(&number(value)),
        ValueKind::String => out.push_str(&quote_str(value.as_str().unwrap_or_default())),
        ValueKind::Bytes => {
            out.push('b');
            let b = value.as_bytes().unwrap_or_default();
            out.push_str(&quote_str(&String::from_utf8_lossy(b)));
        }
        ValueKind::Map => {
            out.push('{');
            for (i, key) in value.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(&key, out)?;
                out.push_str(": ");
                repr_into(&value.get_item(&key)?, out)?;
            }
            out.push('}');
        }
        ValueKind::Seq if value.downcast_object_ref::<GroupTuple>().is_some() => {
            // A named tuple prints as a tuple.
            out.push('(');
            for (i, item) in value.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(&item, out)?;
            }
            out.push(')');
        }
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            for (i, item) in value.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(&item, out)?;
            }
            out.push(']');
        }
        _ => out.push_str(&value.to_string()),
    }
    Ok(())
}

/// A number as Python prints it: integers plainly, floats always with a `.` or exponent.
pub fn number(value: &Value) -> String {
    if value.is_integer() {
        return value.to_string();
    }
    match f64::try_from(value.clone()) {
        Ok(f) => float(f),
        Err(_) => value.to_string(),
    }
}

pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e16).contains(&abs) {
        let s = format!("{f:e}");
        // Rust writes `1e20`, Python `1e+20`; mantissas keep their digits.
        return match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e:0>2}"),
            Some((m, e)) => format!("{m}e-{:0>2}", &e[1..]),
            None => s,
        };
    }
    if f.fract() == 0.0 {
        format!("{f:.1}")
    } else {
        format!("{f}")
    }
}

/// Python's repr of a string: single quotes unless the text has one and no double quote.
pub fn quote_str(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// The Python type name of a value, as a `TypeError` would print it.
pub(super) fn py_type(v: &Value) -> &'static str {
    match v.kind() {
        ValueKind::Bool => "bool",
        ValueKind::Number if v.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Bytes => "bytes",
        ValueKind::None => "NoneType",
        ValueKind::Seq => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}
