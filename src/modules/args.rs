//! Module argument parsing shared by every module: serde errors turned into messages that
//! name the module and the argument (with a "did you mean"), and lenient deserializers for
//! the loosely typed values Ansible accepts (`yes`/`no` booleans, numbers as strings, a list
//! given as one comma-separated string).

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer};
use serde_json::Value;

use super::ModuleError;

/// Deserialize a module's typed params; an error names the module and the argument.
pub fn parse<T: DeserializeOwned>(module: &'static str, args: &Value) -> Result<T, ModuleError> {
    // A module called with no arguments (`ping:`) arrives as null.
    let no_args;
    let args = if args.is_null() {
        no_args = Value::Object(Default::default());
        &no_args
    } else {
        args
    };
    // Deserialize from the borrowed value: this runs per task per host, and cloning the
    // argument tree first (as `serde_json::from_value` needs) is pure overhead.
    match T::deserialize(args) {
        Ok(p) => Ok(p),
        Err(_) => parse_slowly(module, args.clone()),
    }
}

/// The error path of `parse`, deserializing again with the path of the failing value known:
/// a number or boolean where a string is expected becomes its Python text and the arguments
/// are read again (ansible-core's `str` type converts them: `content: 3` writes "3"); any
/// other error names the argument it is about.
fn parse_slowly<T: DeserializeOwned>(
    module: &'static str,
    mut args: Value,
) -> Result<T, ModuleError> {
    // Each round converts one value; a bound keeps a pathological argument tree finite.
    for _ in 0..64 {
        let err = match serde_path_to_error::deserialize::<_, T>(&args) {
            Ok(p) => return Ok(p),
            Err(e) => e,
        };
        let detail = err.inner().to_string();
        let converted = detail.ends_with("expected a string")
            && value_at(&mut args, err.path()).is_some_and(to_python_str);
        if !converted {
            let detail = explain(&detail);
            let path = err.path().to_string();
            // serde names unknown and missing fields itself; `.` is the top level.
            let detail = if path == "." || detail.contains('`') && !detail.starts_with("invalid") {
                detail
            } else {
                format!("argument `{path}`: {detail}")
            };
            return Err(ModuleError::BadArgs { module, detail });
        }
    }
    Err(ModuleError::BadArgs {
        module,
        detail: "too many values of the wrong type".into(),
    })
}

/// The value at `path` in `args` (mappings and lists).
fn value_at<'v>(args: &'v mut Value, path: &serde_path_to_error::Path) -> Option<&'v mut Value> {
    use serde_path_to_error::Segment;
    let mut v = args;
    for seg in path.iter() {
        v = match (seg, v) {
            (Segment::Map { key }, Value::Object(m)) => m.get_mut(key)?,
            (Segment::Seq { index }, Value::Array(a)) => a.get_mut(*index)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Replace a number or boolean with the text Python's `str()` gives it; false for any other
/// value.
fn to_python_str(v: &mut Value) -> bool {
    let text = match v {
        Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Value::Number(n) if n.is_f64() => {
            crate::template::pyrepr::float(n.as_f64().unwrap_or_default())
        }
        Value::Number(n) => n.to_string(),
        _ => return false,
    };
    *v = Value::String(text);
    true
}

/// Load-time check of a task's arguments. Arguments may still hold `{{ templates }}` whose
/// type is only known after rendering: then the arguments are checked again without the
/// templated ones, so unknown argument names and bad literal values are still caught at load
/// time, and the templated values are checked when the module runs.
pub fn validate<T: DeserializeOwned>(
    module: &'static str,
    args: &Value,
) -> Result<(), ModuleError> {
    let err = match parse::<T>(module, args) {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    let (Value::Object(map), ModuleError::BadArgs { detail, .. }) = (args, &err) else {
        return Err(err);
    };
    if !has_template(args) || detail.starts_with("unknown argument") {
        return Err(err);
    }
    let templated: Vec<&String> = map
        .iter()
        .filter(|(_, v)| has_template(v))
        .map(|(k, _)| k)
        .collect();
    let rest: serde_json::Map<String, Value> = map
        .iter()
        .filter(|(k, _)| !templated.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    match parse::<T>(module, &Value::Object(rest)) {
        Ok(_) => Ok(()),
        Err(ModuleError::BadArgs { detail, .. })
            if detail.starts_with("missing required argument")
                && templated.iter().any(|k| detail.contains(&format!("`{k}`"))) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn has_template(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("{{") || s.contains("{%"),
        Value::Array(a) => a.iter().any(has_template),
        Value::Object(o) => o.values().any(has_template),
        _ => false,
    }
}

/// Rewrite serde's `unknown field`/`unknown variant` messages into "unknown argument `x`,
/// did you mean `y`?" / "unknown value `x`, did you mean `y`?", listing the valid ones.
pub fn explain(serde_msg: &str) -> String {
    let (what, rest) = if let Some(r) = serde_msg.strip_prefix("unknown field `") {
        ("argument", r)
    } else if let Some(r) = serde_msg.strip_prefix("unknown variant `") {
        ("value", r)
    } else {
        return serde_msg.replace("missing field", "missing required argument");
    };
    let Some((word, tail)) = rest.split_once('`') else {
        return serde_msg.to_string();
    };
    let valid: Vec<&str> = tail
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.is_empty())
        .collect();
    let mut msg = format!("unknown {what} `{word}`");
    if let Some(best) = suggest(word, valid.iter().copied()) {
        msg.push_str(&format!(", did you mean `{best}`?"));
    }
    if !valid.is_empty() {
        let list: Vec<String> = valid.iter().map(|v| format!("`{v}`")).collect();
        msg.push_str(&format!(" (valid {what}s: {})", list.join(", ")));
    }
    msg
}

/// An argument error (`explain`'s text) in ansible-core's words, see `ModuleError::run_time_text`.
/// Other details keep kinit's text, prefixed with the module.
pub fn ansible_text(module: &str, detail: &str) -> String {
    if let Some(rest) = detail.strip_prefix("missing required argument `") {
        let name = rest.split('`').next().unwrap_or_default();
        return format!("missing required arguments: {name}");
    }
    let Some(rest) = detail.strip_prefix("unknown argument `") else {
        return format!("module `{module}`: {detail}");
    };
    let (word, tail) = rest.split_once('`').unwrap_or((rest, ""));
    // Free-form words given to a module that takes none (ansible-core's
    // `Task._post_validate_args`).
    if word == "_raw_params" {
        return format!(
            "Task failed: Action 'ansible.builtin.{module}' does not support raw params."
        );
    }
    let suggestion = tail
        .strip_prefix(", did you mean `")
        .and_then(|t| t.split('`').next());
    let mut valid: Vec<&str> = tail
        .split_once("(valid arguments: ")
        .map(|(_, l)| l.split('`').skip(1).step_by(2).collect())
        .unwrap_or_default();
    valid.sort_unstable();
    let mut msg = format!("Unsupported parameters for ({module}) module: {word}.");
    if !valid.is_empty() {
        msg.push_str(&format!(
            " Supported parameters include: {}.",
            valid.join(", ")
        ));
    }
    if let Some(s) = suggestion {
        msg.push_str(&format!(" Did you mean {s}?"));
    }
    msg
}

/// The candidate closest to `word`, if any is close enough to be a plausible typo.
pub fn suggest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// A boolean as Ansible reads it: `true`/`yes`/`on`/`1` and their opposites, any case.
pub fn boolish<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match Value::deserialize(d)? {
        Value::Bool(b) => Ok(b),
        Value::Number(n) => Ok(n.as_f64() != Some(0.0)),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" | "y" | "t" => Ok(true),
            "false" | "no" | "off" | "0" | "n" | "f" | "" => Ok(false),
            other => Err(de::Error::custom(format!(
                "expected a boolean (yes/no/true/false), got `{other}`"
            ))),
        },
        other => Err(de::Error::custom(format!(
            "expected a boolean, got `{other}`"
        ))),
    }
}

/// `Option<bool>` with the same leniency as [`boolish`].
pub fn opt_boolish<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    boolish(d).map(Some)
}

/// An unsigned number given as a number or a numeric string.
pub fn opt_u64ish<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .map(Some)
            .ok_or_else(|| de::Error::custom(format!("expected a non-negative number, got `{n}`"))),
        Value::String(s) => s
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| de::Error::custom(format!("expected a number, got `{s}`"))),
        other => Err(de::Error::custom(format!(
            "expected a number, got `{other}`"
        ))),
    }
}

/// A list given as a YAML list or as one comma-separated string (`name: "a,b"`).
pub fn list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(s
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()),
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(de::Error::custom(format!(
                    "expected a list of strings, got item `{other}`"
                ))),
            })
            .collect(),
        Value::Number(n) => Ok(vec![n.to_string()]),
        other => Err(de::Error::custom(format!(
            "expected a list or a comma-separated string, got `{other}`"
        ))),
    }
}

/// A string that may have been given as a number (`value: 1` for sysctl, `uid: 1001`).
pub fn opt_stringish<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(if b { "1" } else { "0" }.to_string())),
        other => Err(de::Error::custom(format!(
            "expected a string, got `{other}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct P {
        dest: String,
        #[serde(default, deserialize_with = "boolish")]
        force: bool,
    }

    #[test]
    fn argument_errors_read_as_ansible_core_words_them_at_run_time() {
        assert_eq!(
            ansible_text("file", "missing required argument `path`"),
            "missing required arguments: path"
        );
        assert_eq!(
            ansible_text(
                "file",
                "unknown argument `pth`, did you mean `path`? (valid arguments: `state`, `path`)"
            ),
            "Unsupported parameters for (file) module: pth. Supported parameters include: \
             path, state. Did you mean path?"
        );
        assert_eq!(
            ansible_text("copy", "expected a boolean"),
            "module `copy`: expected a boolean"
        );
    }

    #[test]
    fn unknown_argument_gets_a_suggestion() {
        let err = parse::<P>("copy", &serde_json::json!({"dst": "/x"})).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("module `copy`: unknown argument `dst`"),
            "{msg}"
        );
        assert!(msg.contains("did you mean `dest`?"), "{msg}");
    }

    #[test]
    fn far_off_argument_gets_no_suggestion() {
        let msg = explain("unknown field `zzzz`, expected one of `dest`, `force`");
        assert_eq!(
            msg,
            "unknown argument `zzzz` (valid arguments: `dest`, `force`)"
        );
    }

    #[test]
    fn yes_no_strings_are_booleans() {
        let p: P = parse("copy", &serde_json::json!({"dest": "/x", "force": "yes"})).unwrap();
        assert!(p.force);
        let err = parse::<P>("copy", &serde_json::json!({"dest": "/x", "force": "maybe"}));
        assert!(err.unwrap_err().to_string().contains("`maybe`"));
    }

    #[test]
    fn templated_values_wait_but_unknown_names_do_not() {
        let ok = serde_json::json!({"dest": "/x", "force": "{{ f }}"});
        assert!(validate::<P>("copy", &ok).is_ok());
        let ok = serde_json::json!({"dest": "{{ d }}"});
        assert!(validate::<P>("copy", &ok).is_ok());
        let bad = serde_json::json!({"force": "{{ f }}", "dest": "/x", "colour": 1});
        let err = validate::<P>("copy", &bad).unwrap_err().to_string();
        assert!(err.contains("unknown argument `colour`"), "{err}");
        let bad = serde_json::json!({"dest": "{{ d }}", "force": "maybe"});
        assert!(validate::<P>("copy", &bad).is_err());
    }

    #[test]
    fn missing_argument_is_named() {
        let err = parse::<P>("copy", &serde_json::json!({})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "module `copy`: missing required argument `dest`"
        );
    }
}
