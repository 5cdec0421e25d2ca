//! Type conversions and small helpers: `bool`, `int`, `float`, `string`, `ternary`,
//! `mandatory`, `type_debug`, `to_uuid`, `quote`, `extract`, and the `dict()` global, with
//! Ansible's (Python's) rules.
//!
//! One file: each is a short conversion following the same Python rules (truthiness, type
//! names, `str()`), which read best side by side.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, State, Value};
use sha1::{Digest, Sha1};

use crate::template::pyrepr;

fn reject_undefined(value: &Value) -> Result<(), Error> {
    if value.is_undefined() {
        return Err(Error::new(ErrorKind::UndefinedError, "undefined value"));
    }
    Ok(())
}

/// The `bool` filter: `to_bool` of a defined value.
pub fn bool_filter(value: Value) -> Result<bool, Error> {
    reject_undefined(&value)?;
    Ok(to_bool(value))
}

/// Ansible's `bool`: `yes`/`on`/`1`/`true` (any case) and 1 are true, everything else false.
pub fn to_bool(value: Value) -> bool {
    match value.kind() {
        ValueKind::Bool => value.is_true(),
        ValueKind::Number => f64::try_from(value).is_ok_and(|f| f == 1.0),
        ValueKind::String => matches!(
            value
                .as_str()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
                .as_str(),
            "yes" | "on" | "1" | "true" | "y" | "t"
        ),
        _ => false,
    }
}

/// Jinja2's `int`: parse (in `base`), else truncate a float, else `default`.
pub fn to_int(value: Value, default: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let base: u32 = kwargs.get::<Option<u32>>("base")?.unwrap_or(10);
    let default = match kwargs.get::<Option<Value>>("default")? {
        Some(d) => d,
        None => default.unwrap_or(Value::from(0)),
    };
    kwargs.assert_all_used()?;
    reject_undefined(&value)?;
    if value.kind() == ValueKind::Bool {
        return Ok(Value::from(i64::from(value.is_true())));
    }
    if value.is_integer() {
        return Ok(value);
    }
    if let Some(s) = value.as_str() {
        match parse_int(s, base) {
            Ok(n) => return Ok(int_value(n)),
            Err(IntError::TooLarge) => return Err(too_large(s)),
            Err(IntError::NotAnInt) => {}
        }
        return match parse_float(s) {
            Some(f) => float_to_int(f).ok_or_else(|| too_large(s)),
            None => Ok(default),
        };
    }
    if value.kind() == ValueKind::Number {
        return match f64::try_from(value.clone()) {
            Ok(f) => float_to_int(f).ok_or_else(|| too_large(&value.to_string())),
            Err(_) => Ok(default),
        };
    }
    Ok(default)
}

/// Python's integers have no upper bound; kinit's stop at 128 bits, and a value past that is
/// an error rather than a silently different number (an i64 would saturate).
fn too_large(s: &str) -> Error {
    Error::new(
        minijinja::ErrorKind::InvalidOperation,
        format!("`{}` does not fit a 128-bit integer", s.trim()),
    )
}

/// An integer as the smallest value kind that holds it (i64 where it fits, as before).
fn int_value(n: i128) -> Value {
    i64::try_from(n).map_or_else(|_| Value::from(n), Value::from)
}

/// `int(float)`: truncated toward zero; `None` for NaN, infinities and values past 128 bits
/// (Python raises for the first two and is exact for the last).
fn float_to_int(f: f64) -> Option<Value> {
    let t = f.trunc();
    if !t.is_finite() || t.abs() >= 1.7e38 {
        return None;
    }
    Some(int_value(t as i128))
}

enum IntError {
    NotAnInt,
    TooLarge,
}

/// Python's `int(s, base)`: surrounding whitespace, a sign, `_` between digits and a
/// `0x`/`0o`/`0b` prefix matching the base are accepted.
fn parse_int(s: &str, base: u32) -> Result<i128, IntError> {
    let t = s.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let lower = t.to_ascii_lowercase();
    let digits = match base {
        16 => lower.strip_prefix("0x").unwrap_or(&lower),
        8 => lower.strip_prefix("0o").unwrap_or(&lower),
        2 => lower.strip_prefix("0b").unwrap_or(&lower),
        _ => &lower,
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') {
        return Err(IntError::NotAnInt);
    }
    let clean = digits.replace('_', "");
    if !clean.chars().all(|c| c.is_digit(base)) {
        return Err(IntError::NotAnInt);
    }
    let n = i128::from_str_radix(&clean, base).map_err(|_| IntError::TooLarge)?;
    Ok(if neg { -n } else { n })
}

/// Python's `float(s)`.
fn parse_float(s: &str) -> Option<f64> {
    let t = s.trim().to_ascii_lowercase();
    match t.as_str() {
        "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ if t.chars().all(|c| c.is_ascii_digit() || "+-.e_".contains(c)) => {
            t.replace('_', "").parse().ok()
        }
        _ => None,
    }
}

/// Jinja2's `float`.
pub fn to_float(value: Value, default: Option<Value>) -> Result<Value, Error> {
    reject_undefined(&value)?;
    let default = default.unwrap_or(Value::from(0.0));
    Ok(match value.kind() {
        ValueKind::Bool => Value::from(if value.is_true() { 1.0 } else { 0.0 }),
        ValueKind::Number => f64::try_from(value).map_or(default, Value::from),
        ValueKind::String => {
            parse_float(value.as_str().unwrap_or_default()).map_or(default, Value::from)
        }
        _ => default,
    })
}

/// `string`: Python's `str()`.
pub fn to_string(value: Value) -> Result<String, Error> {
    pyrepr::to_str(&value)
}

/// `cond | ternary(a, b[, none_value])`.
pub fn ternary(value: Value, yes: Value, no: Value, none: Option<Value>) -> Value {
    match none {
        Some(n) if value.is_none() => n,
        _ if value.is_true() => yes,
        _ => no,
    }
}

/// `mandatory`: fail on an undefined value.
pub fn mandatory(value: Value, msg: Option<String>) -> Result<Value, Error> {
    if value.is_undefined() {
        // The variable's name goes in where the template is known (`undefined::explain`).
        let msg = msg.unwrap_or_else(|| MANDATORY_UNNAMED.into());
        return Err(Error::new(
            ErrorKind::UndefinedError,
            format!("The filter plugin 'ansible.builtin.mandatory' failed: {msg}"),
        ));
    }
    Ok(value)
}

/// ansible-core's message for `mandatory` on an undefined value whose name it does not know.
pub(in crate::template) const MANDATORY_UNNAMED: &str = "Mandatory variable not defined.";

/// `type_debug`: the Python type name.
pub fn type_debug(value: Value) -> &'static str {
    match value.kind() {
        ValueKind::Undefined => "AnsibleUndefined",
        ValueKind::None => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number if value.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Bytes => "bytes",
        ValueKind::Seq | ValueKind::Iterable => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}

/// The namespace Ansible's `to_uuid` uses by default.
const ANSIBLE_UUID_NAMESPACE: &str = "361E6D51-FAEC-444A-9079-341386DA8E2E";

/// `to_uuid`: a name-based (version 5) UUID.
pub fn to_uuid(value: Value, namespace: Option<Value>, kwargs: Kwargs) -> Result<String, Error> {
    let namespace = kwargs.get::<Option<Value>>("namespace")?.or(namespace);
    kwargs.assert_all_used()?;
    // ansible-core's words around Python's `uuid.UUID(namespace)`'s: a string of 32 hex
    // digits, with or without `urn:uuid:`, braces and hyphens.
    let bad = |shown: &Value, why: String| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("Invalid value '{shown}' for 'namespace': {why}"),
        )
    };
    let ns = match &namespace {
        None => ANSIBLE_UUID_NAMESPACE.to_string(),
        Some(v) => match v.as_str() {
            Some(s) => s.to_string(),
            None => {
                return Err(bad(
                    v,
                    format!(
                        "'{}' object has no attribute 'replace'",
                        type_debug(v.clone())
                    ),
                ));
            }
        },
    };
    let digits: String = ns
        .strip_prefix("urn:uuid:")
        .unwrap_or(&ns)
        .trim_matches(['{', '}'])
        .replace('-', "");
    let ns_bytes = hex::decode(&digits).ok().filter(|b| b.len() == 16);
    let Some(ns_bytes) = ns_bytes else {
        return Err(bad(
            &Value::from(ns.as_str()),
            "badly formed hexadecimal UUID string".into(),
        ));
    };
    let mut h = Sha1::new();
    h.update(&ns_bytes);
    h.update(pyrepr::to_str(&value)?.as_bytes());
    let mut b: [u8; 16] = h.finalize()[..16].try_into().expect("sha1 is 20 bytes");
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x = hex::encode(b);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &x[..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..]
    ))
}

/// `quote`: Python's `shlex.quote`.
pub fn quote(value: Value) -> Result<String, Error> {
    // `None` quotes as the empty string (ansible-core's filter), not as `None`.
    if value.is_none() {
        return Ok("''".into());
    }
    let s = pyrepr::to_str(&value)?;
    if s.is_empty() {
        return Ok("''".into());
    }
    let safe = s
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || "@%+=:,./-".contains(c));
    if safe {
        return Ok(s);
    }
    Ok(format!("'{}'", s.replace('\'', "'\"'\"'")))
}

/// `key | extract(container[, morekeys])`: `container[key]`, then deeper keys.
pub fn extract(
    state: &State<'_, '_>,
    key: Value,
    container: Value,
    more: Option<Value>,
) -> Result<Value, Error> {
    let mut keys = vec![key];
    if let Some(more) = more {
        match more.kind() {
            ValueKind::Seq => keys.extend(more.try_iter()?),
            _ => keys.push(more),
        }
    }
    let mut v = container;
    for k in keys {
        if v.is_undefined() {
            break;
        }
        let next = v.get_item(&k)?;
        // A missing key: an error in ansible-core's words, met again with chainable undefined
        // values when a guard follows (`('k' | extract(d)).x | default(1)`, see `undefined`).
        if next.is_undefined() && state.undefined_behavior() == minijinja::UndefinedBehavior::Strict
        {
            let reason = match v.kind() {
                ValueKind::Seq => format!("list object has no element {k}"),
                kind => format!(
                    "object of type '{}' has no attribute '{k}'",
                    match kind {
                        ValueKind::Map => "dict",
                        ValueKind::String => "str",
                        ValueKind::Number => "int",
                        _ => "object",
                    }
                ),
            };
            return Err(Error::new(ErrorKind::UndefinedError, reason));
        }
        v = next;
    }
    Ok(v)
}

/// Jinja2's `round(precision=0, method='common')`: `common` is Python's `round` (half to
/// even), `ceil` and `floor` always round up or down; a float stays a float and an integer is
/// returned unchanged, as in Jinja2.
pub fn round(value: Value, precision: Option<i32>, method: Option<String>) -> Result<Value, Error> {
    reject_undefined(&value)?;
    if value.is_integer() {
        return Ok(value);
    }
    let x = f64::try_from(value.clone()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("round: a {} is not a number", value.kind()),
        )
    })?;
    let scale = 10f64.powi(precision.unwrap_or(0));
    let scaled = x * scale;
    let r = match method.as_deref().unwrap_or("common") {
        "common" => scaled.round_ties_even(),
        "ceil" => scaled.ceil(),
        "floor" => scaled.floor(),
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("round: method `{other}` must be common, ceil or floor"),
            ));
        }
    };
    Ok(Value::from(r / scale))
}

/// The `dict()` global as Jinja2 has it: Python's `dict`, so besides a mapping and keyword
/// arguments it takes a list of key/value pairs (`dict(keys | zip(values))`).
pub fn dict(value: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let mut out: Vec<(Value, Value)> = Vec::new();
    match value {
        None => {}
        Some(v) if v.is_undefined() => {
            return Err(Error::new(ErrorKind::UndefinedError, "undefined value"));
        }
        Some(v) if v.kind() == ValueKind::Map => {
            for k in v.try_iter()? {
                let item = v.get_item(&k)?;
                out.push((k, item));
            }
        }
        Some(v) if matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable) => {
            for (i, pair) in v.try_iter()?.enumerate() {
                let items: Vec<Value> = match pair.kind() {
                    ValueKind::Seq | ValueKind::Iterable | ValueKind::String => {
                        pair.try_iter()?.collect()
                    }
                    _ => {
                        return Err(Error::new(
                            ErrorKind::InvalidOperation,
                            format!(
                                "cannot convert dictionary update sequence element #{i} \
                                 to a sequence"
                            ),
                        ));
                    }
                };
                if items.len() != 2 {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        format!(
                            "dictionary update sequence element #{i} has length {}; 2 \
                             is required",
                            items.len()
                        ),
                    ));
                }
                out.push((items[0].clone(), items[1].clone()));
            }
        }
        Some(v) => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("'{}' object is not iterable", type_debug(v.clone())),
            ));
        }
    }
    for key in kwargs.args() {
        out.push((Value::from(key), kwargs.get::<Value>(key)?));
    }
    Ok(Value::from_iter(out))
}
