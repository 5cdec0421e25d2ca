//! `Secret`: a string that never prints itself.
//!
//! Passwords, passphrases and generated credentials travel as `Secret` so that a `{:?}` in an
//! error or an event cannot leak them. The redaction layer of the reporters (`report/`) is the
//! second line of defence for values that reach output as plain strings (`no_log`).

use std::fmt;

#[derive(Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The plain value, for the one place that must send it (an auth exchange, a file).
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(********)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("********")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_formats_its_value() {
        let s = Secret::new("hunter2");
        assert!(!format!("{s} {s:?}").contains("hunter2"));
        assert_eq!(s.expose(), "hunter2");
    }
}
