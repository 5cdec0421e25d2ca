//! The redaction layer: every sink (terminal, JSON log, JUnit) passes its text through
//! `Redactor::apply`, which replaces each known secret (inventory passwords, values used by
//! `no_log` tasks) with `********`. Secrets are registered before the events that may carry
//! them are sent, so no sink can see one first.

use std::sync::{Arc, RwLock};

/// Shorter values are not treated as secrets: masking every `1` or `ok` would garble output.
const MIN_LEN: usize = 4;

pub const MASK: &str = "********";

#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Arc<RwLock<Vec<String>>>,
}

impl Redactor {
    pub fn add(&self, secret: &str) {
        if secret.len() < MIN_LEN {
            return;
        }
        let mut s = self.secrets.write().unwrap();
        if !s.iter().any(|x| x == secret) {
            s.push(secret.to_string());
            // Longest first, so a secret that contains another is masked whole.
            s.sort_by_key(|x| std::cmp::Reverse(x.len()));
        }
    }

    /// Register every string inside a JSON value.
    pub fn add_value(&self, v: &serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                self.add(s);
                for line in s.lines() {
                    self.add(line.trim());
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| self.add_value(x)),
            serde_json::Value::Object(m) => m.values().for_each(|x| self.add_value(x)),
            _ => {}
        }
    }

    pub fn apply(&self, text: &str) -> String {
        let s = self.secrets.read().unwrap();
        let mut out = text.to_string();
        for secret in s.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), MASK);
            }
            // The JSON-escaped form of a secret with quotes or backslashes differs from it.
            let escaped = serde_json::to_string(secret).unwrap_or_default();
            let escaped = &escaped[1..escaped.len().saturating_sub(1)];
            if escaped != secret && out.contains(escaped) {
                out = out.replace(escaped, MASK);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_registered_values_everywhere() {
        let r = Redactor::default();
        r.add_value(&serde_json::json!({"pw": "s3cr\"et!"}));
        let json = serde_json::to_string(&serde_json::json!({"out": "x s3cr\"et! y"})).unwrap();
        assert!(!r.apply(&json).contains("s3cr"));
        assert_eq!(r.apply("a s3cr\"et! b"), "a ******** b");
    }
}
