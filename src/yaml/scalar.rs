//! What a YAML scalar means, as PyYAML's YAML 1.1 resolver and Ansible's constructor read it.
//!
//! A plain (unquoted) scalar is typed by its text: `yes`/`no`/`on`/`off` are booleans, `0644`
//! is octal, `1_000` and `1:30` (sexagesimal) are integers, `1e3` is a string (a float needs a
//! dot), `0o17` is a string. The rules are PyYAML's `Resolver.add_implicit_resolver` table in
//! `yaml/resolver.py` (the first matching resolver for the scalar's first character wins) and
//! its `SafeConstructor.construct_yaml_*` functions, which Ansible's loader builds on.
//! Quoted and block scalars are always strings.
//!
//! Dates and timestamps are strings: PyYAML makes `date`/`datetime` objects of them, and a
//! template renders such an object as Python's `str()` does (`2001-12-14`,
//! `2001-12-14 21:59:43.100000-05:00`), which is the text kinit keeps.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// What a plain scalar resolves to.
pub(super) enum Plain {
    Value(Value),
    /// `<<`, a merge key (only meaningful as a mapping key).
    Merge,
    /// `=`, which PyYAML resolves to a tag no safe constructor knows.
    ValueTag,
}

static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    )
    .expect("valid regex")
});

static INT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
    )
    .expect("valid regex")
});

fn is_bool(s: &str) -> bool {
    matches!(
        s,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]*))?(?:[ \t]*(Z|([-+])([0-9]{1,2})(?::([0-9]{2}))?))?)$",
    )
    .expect("valid regex")
});

/// `construct_yaml_timestamp` followed by Python's `str()`: a date stays as written; a
/// date and time gets zero-padded fields, a space, microseconds when a fraction was given,
/// and `+HH:MM` when a zone was (`Z` is `+00:00`).
fn timestamp(s: &str) -> Option<String> {
    let c = TIMESTAMP.captures(s)?;
    let Some(year) = c.get(1) else {
        return Some(s.to_string());
    };
    let num = |i: usize| {
        c.get(i)
            .map_or(0, |m| m.as_str().parse::<u32>().unwrap_or(0))
    };
    let mut out = format!(
        "{}-{:02}-{:02} {:02}:{:02}:{:02}",
        year.as_str(),
        num(2),
        num(3),
        num(4),
        num(5),
        num(6)
    );
    if let Some(frac) = c.get(7).map(|m| m.as_str()).filter(|f| !f.is_empty()) {
        let micros: String = frac.chars().chain(std::iter::repeat('0')).take(6).collect();
        if micros != "000000" {
            out.push('.');
            out.push_str(&micros);
        }
    }
    if let Some(zone) = c.get(8) {
        if zone.as_str() == "Z" {
            out.push_str("+00:00");
        } else {
            let sign = c.get(9).map_or("+", |m| m.as_str());
            out.push_str(&format!("{sign}{:02}:{:02}", num(10), num(11)));
        }
    }
    Some(out)
}

fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

/// Resolve a plain scalar. The resolvers are tried in PyYAML's order for the first
/// character: bool, float, int, merge, null, (timestamp: a string here), value.
pub(super) fn plain(s: &str) -> Plain {
    let Some(first) = s.chars().next() else {
        return Plain::Value(Value::Null);
    };
    match first {
        'y' | 'Y' | 'n' | 'N' | 't' | 'T' | 'f' | 'F' | 'o' | 'O' if is_bool(s) => {
            Plain::Value(Value::Bool(bool_word(s).unwrap_or(false)))
        }
        '-' | '+' | '.' | '0'..='9' => {
            if FLOAT.is_match(s) {
                return Plain::Value(float(s).unwrap_or_else(|| Value::String(s.to_string())));
            }
            if first != '.' && INT.is_match(s) {
                return Plain::Value(int(s).unwrap_or_else(|| Value::String(s.to_string())));
            }
            if first.is_ascii_digit()
                && let Some(t) = timestamp(s)
            {
                return Plain::Value(Value::String(t));
            }
            Plain::Value(Value::String(s.to_string()))
        }
        '<' if s == "<<" => Plain::Merge,
        '~' | 'n' | 'N' if is_null(s) => Plain::Value(Value::Null),
        '=' if s == "=" => Plain::ValueTag,
        _ => Plain::Value(Value::String(s.to_string())),
    }
}

/// `construct_yaml_bool`: the word, case-insensitively.
pub(super) fn bool_word(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "yes" | "true" | "on" => Some(true),
        "no" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// `construct_yaml_int`: underscores dropped; `0b`, `0x`, a leading `0` (octal) and
/// `a:b:c` (base 60) as PyYAML reads them. `None` when the text is no integer.
pub(super) fn int(s: &str) -> Option<Value> {
    let digits = s.replace('_', "");
    let (neg, body) = match digits.as_bytes().first()? {
        b'-' => (true, &digits[1..]),
        b'+' => (false, &digits[1..]),
        _ => (false, &digits[..]),
    };
    let magnitude: i128 = if body == "0" {
        0
    } else if let Some(bin) = body.strip_prefix("0b") {
        i128::from_str_radix(bin, 2).ok()?
    } else if let Some(hex) = body.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()?
    } else if body.starts_with('0') {
        i128::from_str_radix(body, 8).ok()?
    } else if body.contains(':') {
        let mut total: i128 = 0;
        for part in body.split(':') {
            total = total
                .checked_mul(60)?
                .checked_add(part.parse::<i128>().ok()?)?;
        }
        total
    } else {
        body.parse::<i128>().ok()?
    };
    let n = if neg { -magnitude } else { magnitude };
    Some(if let Ok(i) = i64::try_from(n) {
        Value::from(i)
    } else if let Ok(u) = u64::try_from(n) {
        Value::from(u)
    } else {
        // Beyond 64 bits (a Python int has no limit): the nearest float.
        number(n as f64)
    })
}

/// `construct_yaml_float`: underscores dropped, `.inf`/`.nan`, base 60, or a decimal.
pub(super) fn float(s: &str) -> Option<Value> {
    let text = s.replace('_', "").to_ascii_lowercase();
    let (sign, body) = match text.as_bytes().first()? {
        b'-' => (-1.0, &text[1..]),
        b'+' => (1.0, &text[1..]),
        _ => (1.0, &text[..]),
    };
    let magnitude = if body == ".inf" {
        f64::INFINITY
    } else if body == ".nan" {
        f64::NAN
    } else if body.contains(':') {
        let mut total = 0.0;
        for part in body.split(':') {
            total = total * 60.0 + part.parse::<f64>().ok()?;
        }
        total
    } else {
        // Python reads `1.` and `1.e+3`; Rust wants a digit after the dot before an exponent.
        body.replace(".e", ".0e").parse::<f64>().ok()?
    };
    Some(number(sign * magnitude))
}

/// A float as JSON. JSON has no infinity or NaN: those keep Python's spelling of them
/// (`inf`, `-inf`, `nan`), which is how a template renders them and what `float` reads back.
fn number(f: f64) -> Value {
    match serde_json::Number::from_f64(f) {
        Some(n) => Value::Number(n),
        None if f.is_nan() => Value::String("nan".into()),
        None if f > 0.0 => Value::String("inf".into()),
        None => Value::String("-inf".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(s: &str) -> Value {
        match plain(s) {
            Plain::Value(v) => v,
            Plain::Merge => json!("<merge>"),
            Plain::ValueTag => json!("<value>"),
        }
    }

    /// Each expectation is what `AnsibleLoader(text).get_single_data()` returns (ansible-core
    /// 2.19.4, PyYAML 6).
    #[test]
    fn plain_scalars_resolve_as_pyyaml_does() {
        for (text, want) in [
            ("yes", json!(true)),
            ("No", json!(false)),
            ("ON", json!(true)),
            ("off", json!(false)),
            ("y", json!("y")),
            ("True", json!(true)),
            ("0644", json!(420)),
            ("0_7", json!(7)),
            ("00", json!(0)),
            ("-0", json!(0)),
            ("+1_0", json!(10)),
            ("1_000", json!(1000)),
            ("0x1F", json!(31)),
            ("0b101", json!(5)),
            ("0o17", json!("0o17")),
            ("1:30", json!(90)),
            ("190:20:30", json!(685230)),
            ("1e3", json!("1e3")),
            ("1e+3", json!("1e+3")),
            ("1.0e+3", json!(1000.0)),
            ("1.", json!(1.0)),
            ("1.e+3", json!(1000.0)),
            (".5", json!(0.5)),
            ("-.inf", json!("-inf")),
            (".NaN", json!("nan")),
            ("2001-12-14", json!("2001-12-14")),
            ("2020-01-01T12:42:42", json!("2020-01-01 12:42:42")),
            (
                "2020-01-01T12:42:42-07:00",
                json!("2020-01-01 12:42:42-07:00"),
            ),
            (
                "2001-12-14 21:59:43.10 -5",
                json!("2001-12-14 21:59:43.100000-05:00"),
            ),
            ("2001-1-2t3:04:05Z", json!("2001-01-02 03:04:05+00:00")),
            ("2001-12-14t21:59:43.0", json!("2001-12-14 21:59:43")),
            ("~", json!(null)),
            ("Null", json!(null)),
            ("", json!(null)),
            ("nil", json!("nil")),
            ("-", json!("-")),
            ("1.2.3", json!("1.2.3")),
            ("08", json!("08")),
            ("<<", json!("<merge>")),
            ("=", json!("<value>")),
            ("99999999999999999999", json!(1e20)),
        ] {
            assert_eq!(v(text), want, "{text:?}");
        }
    }

    #[test]
    fn explicit_tags_construct_as_pyyaml_does() {
        assert_eq!(int("0x1f"), Some(json!(31)));
        assert_eq!(int("abc"), None);
        assert_eq!(float("1"), Some(json!(1.0)));
        assert_eq!(bool_word("Yes"), Some(true));
        assert_eq!(bool_word("y"), None);
    }
}
