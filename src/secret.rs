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

/// Why a hidden question could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("no terminal to ask on")]
    NoTerminal,
    #[error("cannot read from the terminal")]
    Read(#[source] std::io::Error),
}

/// Ask `question` on the terminal and read the answer without echo (`-k`, `-K`, vault
/// passwords). Without a terminal it fails at once rather than waiting for a line that
/// never comes.
pub fn ask_hidden(question: &str) -> Result<Secret, AskError> {
    use std::io::IsTerminal;
    let term = if std::io::stderr().is_terminal() {
        console::Term::stderr()
    } else if std::io::stdout().is_terminal() {
        console::Term::stdout()
    } else {
        return Err(AskError::NoTerminal);
    };
    if std::fs::File::open("/dev/tty").is_err() && !std::io::stdin().is_terminal() {
        return Err(AskError::NoTerminal);
    }
    term.write_str(question).map_err(AskError::Read)?;
    let line = term.read_secure_line().map_err(AskError::Read)?;
    Ok(Secret::new(line))
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
