//! The option types of an argument spec (`str`, `list`, `dict`, `bool`, `int`, `float`,
//! `path`, `raw`, `jsonarg`/`json`, `bytes`, `bits`) and how a value converts to each, with
//! the texts ansible-core 2.19 gives when it cannot (`module_utils/common/validation.py`,
//! `check_type_*`), plus the Python views of a JSON value those texts use: `str()`, `repr()`,
//! the type's name, `==`.
//!
//! Values that come from YAML are tagged in Ansible 2.19 (`_AnsibleTaggedStr`...), and a few
//! texts print the class (`<class '..._AnsibleTaggedStr'> cannot be converted to a float`);
//! a value this validation made itself (a list split from a string) is a plain one. The caller
//! says which with `plain`.

use serde_json::{Map, Value};

/// Python's `str()` of a value: strings as they are, anything else as `repr()`.
pub(crate) fn py_str(v: &Value) -> String {
    crate::template::py_str(v)
}

/// Python's `repr()` of a value.
pub(crate) fn py_repr(v: &Value) -> String {
    match v {
        Value::String(s) => crate::template::py_quote(s),
        other => py_str(other),
    }
}

/// `type(value).__name__` without Ansible's tags (`native_type_name`).
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `type(value).__name__` as Ansible 2.19 has it: YAML values are tagged subclasses (never
/// `bool` or `None`, which cannot be subclassed).
pub(crate) fn class_name(v: &Value, plain: bool) -> String {
    let base = type_name(v);
    if plain || matches!(v, Value::Null | Value::Bool(_)) {
        return base.to_string();
    }
    let mut cap = base.to_string();
    cap[..1].make_ascii_uppercase();
    format!("_AnsibleTagged{cap}")
}

/// `repr(type(value))`: `<class 'str'>`, or the tagged class with its module.
pub(crate) fn class_repr(v: &Value, plain: bool) -> String {
    let name = class_name(v, plain);
    if name.starts_with("_AnsibleTagged") {
        format!("<class 'ansible.module_utils._internal._datatag.{name}'>")
    } else {
        format!("<class '{name}'>")
    }
}

/// Python's `==`: numbers by value (`True == 1 == 1.0`), containers item by item.
pub(crate) fn py_eq(a: &Value, b: &Value) -> bool {
    let num = |v: &Value| match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if !x.is_f64() && !y.is_f64() => {
            x.as_i128() == y.as_i128()
        }
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
    }
}

/// Python truthiness.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

/// The strings and numbers Ansible reads as booleans (`convert_bool.BOOLEANS_TRUE`/`_FALSE`).
const TRUE_WORDS: [&str; 6] = ["y", "yes", "on", "1", "true", "t"];
const FALSE_WORDS: [&str; 6] = ["n", "no", "off", "0", "false", "f"];

/// `BOOLEANS` as the error text lists it. Python prints a frozenset in hash order, which for
/// strings changes from run to run; this is one such order.
const BOOLEANS_TEXT: &str =
    "0, 1, 'off', 'no', 'on', 't', 'n', 'yes', 'f', 'y', '1', 'false', 'true', '0'";

/// What a value of a type converts to, or why it cannot (the text after `...to <type>: `).
pub(crate) fn convert(wanted: &str, v: &Value, plain: bool) -> Result<Value, String> {
    match wanted {
        "str" => Ok(Value::String(to_str(v))),
        "list" => match v {
            Value::Array(_) => Ok(v.clone()),
            Value::String(s) => Ok(Value::Array(
                s.split(',').map(|x| Value::String(x.into())).collect(),
            )),
            Value::Number(_) | Value::Bool(_) => Ok(Value::Array(vec![Value::String(py_str(v))])),
            _ => Err(format!(
                "{} cannot be converted to a list",
                class_repr(v, plain)
            )),
        },
        "dict" => to_dict(v, plain),
        "bool" => to_bool(v, plain).map(Value::Bool),
        "int" => to_int(v),
        "float" => to_float(v)
            .ok_or_else(|| format!("{} cannot be converted to a float", class_repr(v, plain))),
        "path" => Ok(Value::String(expand_path(&to_str(v)))),
        "raw" => Ok(v.clone()),
        "jsonarg" | "json" => match v {
            Value::String(s) => Ok(Value::String(s.trim().to_string())),
            Value::Array(_) | Value::Object(_) => Ok(Value::String(v.to_string())),
            _ => Err(format!(
                "{} cannot be converted to a json string",
                class_repr(v, plain)
            )),
        },
        "bytes" | "bits" => {
            let bits = wanted == "bits";
            human_to_bytes(&py_str(v), bits)
                .map(Value::from)
                .ok_or_else(|| {
                    let what = if bits { "Bit" } else { "Byte" };
                    format!(
                        "{} cannot be converted to a {what} value",
                        class_repr(v, plain)
                    )
                })
        }
        // An unknown type name has no checker: Python calls `None` and says so.
        _ => Err("'NoneType' object is not callable".into()),
    }
}

/// `check_type_str`: `None` becomes `''` (2.19's stand-in for the old templating), anything
/// else its `str()`.
fn to_str(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => py_str(other),
    }
}

pub(crate) fn to_bool(v: &Value, plain: bool) -> Result<bool, String> {
    let word = match v {
        Value::Bool(b) => return Ok(*b),
        Value::String(s) => s.trim().to_lowercase(),
        Value::Number(n) => match n.as_f64() {
            Some(1.0) => return Ok(true),
            Some(0.0) => return Ok(false),
            _ => String::new(),
        },
        _ => {
            return Err(format!(
                "{} cannot be converted to a bool",
                class_repr(v, plain)
            ));
        }
    };
    if TRUE_WORDS.contains(&word.as_str()) {
        return Ok(true);
    }
    if FALSE_WORDS.contains(&word.as_str()) {
        return Ok(false);
    }
    Err(format!(
        "The value '{}' is not a valid boolean. Valid booleans include: {BOOLEANS_TEXT}",
        py_str(v)
    ))
}

/// `check_type_int`: an int stays; a string or float whose decimal value is whole converts.
fn to_int(v: &Value) -> Result<Value, String> {
    let fail = || format!("\"{}\" cannot be converted to an int", py_repr(v));
    match v {
        Value::Bool(_) => Ok(v.clone()),
        Value::Number(n) if !n.is_f64() => Ok(v.clone()),
        Value::Number(n) => whole(n.as_f64().unwrap_or(f64::NAN)).ok_or_else(fail),
        Value::String(s) => {
            let t = s.trim();
            if let Ok(i) = t.replace('_', "").parse::<i64>()
                && decimal_syntax(t)
            {
                return Ok(Value::from(i));
            }
            if !decimal_syntax(t) {
                return Err(fail());
            }
            t.replace('_', "")
                .parse::<f64>()
                .ok()
                .and_then(whole)
                .ok_or_else(fail)
        }
        _ => Err(fail()),
    }
}

/// A float that is a whole number, as an int.
fn whole(f: f64) -> Option<Value> {
    (f.is_finite() && f.fract() == 0.0).then(|| {
        if f.abs() < 9.0e15 {
            Value::from(f as i64)
        } else {
            Value::from(f)
        }
    })
}

/// Python's `Decimal(str)` syntax for finite numbers: sign, digits with an optional point,
/// an optional exponent; `_` only between digits.
fn decimal_syntax(t: &str) -> bool {
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mant, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let digits = |s: &str| {
        !s.is_empty()
            && !s.starts_with('_')
            && !s.ends_with('_')
            && !s.contains("__")
            && s.chars().all(|c| c.is_ascii_digit() || c == '_')
    };
    let mant_ok = match mant.split_once('.') {
        Some((a, b)) => (a.is_empty() || digits(a)) && (b.is_empty() || digits(b)) && mant != ".",
        None => digits(mant),
    };
    let exp_ok = exp.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mant_ok && exp_ok
}

/// `float(value)`.
fn to_float(v: &Value) -> Option<Value> {
    let f = match v {
        Value::Number(n) if n.is_f64() => return Some(v.clone()),
        Value::Number(n) => n.as_f64()?,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => {
            let t = s.trim();
            let lower = t.to_ascii_lowercase();
            let word = lower.trim_start_matches(['+', '-']);
            if matches!(word, "inf" | "infinity" | "nan") || decimal_syntax(t) {
                t.replace('_', "").parse::<f64>().ok()?
            } else {
                return None;
            }
        }
        _ => return None,
    };
    serde_json::Number::from_f64(f).map(Value::Number)
}

/// `check_type_dict`: a dict stays; a string is JSON (`{...}`) or `k=v k2=v2` pairs. Python
/// literals (`{'a': 1}`), which Ansible also tries with `literal_eval`, are not read.
fn to_dict(v: &Value, plain: bool) -> Result<Value, String> {
    let s = match v {
        Value::Object(_) => return Ok(v.clone()),
        Value::String(s) => s,
        _ => {
            return Err(format!(
                "{} cannot be converted to a dict",
                class_repr(v, plain)
            ));
        }
    };
    if s.starts_with('{') {
        return match serde_json::from_str::<Value>(s) {
            Ok(parsed) => Ok(parsed),
            Err(_) => Err("unable to evaluate string as dictionary".into()),
        };
    }
    if !s.contains('=') {
        return Err("dictionary requested, could not parse JSON or key=value".into());
    }
    let mut fields = Vec::new();
    let mut buf = String::new();
    let mut quote: Option<char> = None;
    let mut escape = false;
    for c in s.trim().chars() {
        if escape {
            buf.push(c);
            escape = false;
        } else if c == '\\' {
            escape = true;
        } else if quote.is_none() && (c == '\'' || c == '"') {
            quote = Some(c);
        } else if quote == Some(c) {
            quote = None;
        } else if quote.is_none() && (c == ',' || c == ' ') {
            if !buf.is_empty() {
                fields.push(std::mem::take(&mut buf));
            }
        } else {
            buf.push(c);
        }
    }
    if !buf.is_empty() {
        fields.push(buf);
    }
    let mut out = Map::new();
    for f in fields {
        let Some((k, v)) = f.split_once('=') else {
            return Err(
                "unable to evaluate string in the \"key=value\" format as dictionary".into(),
            );
        };
        out.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(Value::Object(out))
}

/// `os.path.expanduser(os.path.expandvars(p))` on the controller.
fn expand_path(p: &str) -> String {
    let out = crate::template::expand_vars(p, &mut |name| Some(std::env::var(name).ok()))
        .unwrap_or_else(|| p.to_string());
    match (out.strip_prefix('~'), std::env::var("HOME")) {
        (Some(tail), Ok(home)) if tail.is_empty() || tail.starts_with('/') => {
            format!("{home}{tail}")
        }
        _ => out,
    }
}

/// `human_to_bytes`: `10M` is 10485760 (bytes), `1Mb` with `bits` 1048576 bits.
fn human_to_bytes(text: &str, bits: bool) -> Option<i64> {
    crate::template::human_to_bytes(text, None, bits).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn conversions_follow_ansibles_check_type_functions() {
        assert_eq!(convert("int", &json!(" 12 "), false), Ok(json!(12)));
        assert_eq!(convert("int", &json!("1.0"), false), Ok(json!(1)));
        assert_eq!(convert("int", &json!("1e3"), false), Ok(json!(1000)));
        assert_eq!(
            convert("int", &json!("abc"), false),
            Err("\"'abc'\" cannot be converted to an int".into())
        );
        assert_eq!(
            convert("int", &json!(2.5), false),
            Err("\"2.5\" cannot be converted to an int".into())
        );
        assert_eq!(convert("list", &json!("a,b"), false), Ok(json!(["a", "b"])));
        assert_eq!(convert("list", &json!(5), false), Ok(json!(["5"])));
        assert_eq!(
            convert("dict", &json!("a=1 b='x y'"), false),
            Ok(json!({"a": "1", "b": "x y"}))
        );
        assert_eq!(convert("bool", &json!(" Yes "), false), Ok(json!(true)));
        assert_eq!(convert("bytes", &json!("1.5K"), false), Ok(json!(1536)));
        assert_eq!(convert("bits", &json!("1Mb"), false), Ok(json!(1048576)));
        assert!(convert("bits", &json!("1MB"), false).is_err());
        assert_eq!(
            convert("str", &json!([1, "x"]), false),
            Ok(json!("[1, 'x']"))
        );
        assert_eq!(convert("str", &json!(null), false), Ok(json!("")));
        assert_eq!(
            convert("float", &json!("x"), false),
            Err("<class 'ansible.module_utils._internal._datatag._AnsibleTaggedStr'> cannot be converted to a float".into())
        );
        assert_eq!(
            convert("float", &json!("x"), true),
            Err("<class 'str'> cannot be converted to a float".into())
        );
        assert!(py_eq(&json!(true), &json!(1.0)));
        assert!(!py_eq(&json!("1"), &json!(1)));
    }
}
