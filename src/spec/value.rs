//! Typed reads from one mapping of a `*_spec` input: unknown keys are refused, and values
//! written as strings (the bracket form, `-e k=v`) are accepted wherever a number is expected.

use serde_json::{Map, Value};

use super::error::SpecError;
use super::size::Size;
use crate::extra_vars::json_kind;

/// One mapping (a rule, a host entry, an option) being read, with where it came from.
pub struct Entry<'a> {
    pub at: String,
    map: &'a Map<String, Value>,
}

impl<'a> Entry<'a> {
    /// Check that `value` is a mapping whose keys are all in `allowed`.
    pub fn new(at: String, value: &'a Value, allowed: &[&str]) -> Result<Self, SpecError> {
        let Value::Object(map) = value else {
            return Err(SpecError::WrongType {
                at,
                expected: "a mapping of `key: value`",
                found: json_kind(value),
            });
        };
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                return Err(SpecError::UnknownKey {
                    at,
                    key: key.clone(),
                    allowed: allowed
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        Ok(Self { at, map })
    }

    fn bad(&self, key: &str, value: &Value, expected: impl Into<String>) -> SpecError {
        SpecError::BadValue {
            at: self.at.clone(),
            key: key.to_string(),
            value: display(value),
            expected: expected.into(),
        }
    }

    /// A scalar as text (numbers and booleans are accepted and printed as JSON would).
    pub fn string(&self, key: &str) -> Result<Option<String>, SpecError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(self.bad(key, &Value::String(s.clone()), "a non-empty value"))
            }
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
            Some(v) => Err(self.bad(key, v, "a single value")),
        }
    }

    /// A whole number in `min..=max`, given as a number or as digits.
    pub fn count(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>, SpecError> {
        let Some(v) = self.map.get(key).filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let n = match v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                s.parse().ok()
            }
            _ => None,
        };
        match n.filter(|n| (min..=max).contains(n)) {
            Some(n) => Ok(Some(n)),
            None => Err(self.bad(key, v, format!("a whole number from {min} to {max}"))),
        }
    }

    pub fn size(&self, key: &str) -> Result<Option<Size>, SpecError> {
        let Some(v) = self.map.get(key).filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        size_value(v).map(Some).map_err(|error| SpecError::BadSize {
            at: self.at.clone(),
            key: key.to_string(),
            error,
        })
    }

    /// A list of strings; a single string is a one-item list.
    pub fn list(&self, key: &str) -> Result<Option<Vec<String>>, SpecError> {
        let Some(v) = self.map.get(key).filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let items: Vec<&Value> = match v {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        let mut out = Vec::new();
        for item in items {
            match item {
                Value::String(s) if !s.trim().is_empty() => out.push(s.trim().to_string()),
                Value::Number(_) => out.push(item.to_string()),
                _ => return Err(self.bad(key, v, "a name or a list of names")),
            }
        }
        if out.is_empty() {
            return Err(self.bad(key, v, "a name or a list of names"));
        }
        Ok(Some(out))
    }
}

/// A size from a JSON number (KiB) or a string such as `16GiB`.
pub fn size_value(v: &Value) -> Result<Size, super::size::SizeError> {
    match v {
        Value::String(s) => Size::parse(s),
        other => Size::parse(&other.to_string()),
    }
}

/// A value as the user wrote it: strings bare, everything else as JSON.
pub fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
