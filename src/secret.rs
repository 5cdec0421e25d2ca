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

/// Why a password file (`--connection-password-file`, `--become-password-file`) gave no
/// password. The texts are ansible-playbook's (`CLI.get_password_from_file`).
#[derive(Debug, thiserror::Error)]
pub enum PasswordFileError {
    #[error("The password file {0} was not found")]
    NotFound(String),
    #[error(
        "Problem occurred when trying to run the password script {0}. If this is not a script, \
         remove the executable bit from the file."
    )]
    Run(String, #[source] std::io::Error),
    #[error("The password script {path} returned an error (rc={rc}): {stderr}")]
    Script {
        path: String,
        rc: String,
        stderr: String,
    },
    #[error("Could not read password file {0:?}.")]
    Read(String, #[source] std::io::Error),
    #[error("Empty password was provided from file ({0})")]
    Empty(String),
}

/// A password from a file as ansible-playbook reads one: `-` is standard input, an executable
/// is run and its output taken, any other file is read; surrounding whitespace and line ends
/// are dropped. The path is made absolute first, as the option's `unfrack_path` does.
pub fn read_password_file(path: &str) -> Result<Secret, PasswordFileError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let absolute = match path {
        "-" => path.to_string(),
        _ => std::path::absolute(path)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.to_string()),
    };
    let path = absolute.as_str();
    let bytes = if path == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| PasswordFileError::Read(path.into(), e))?;
        b
    } else {
        let meta = std::fs::metadata(path).map_err(|_| PasswordFileError::NotFound(path.into()))?;
        if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            let out = std::process::Command::new(path)
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| PasswordFileError::Run(path.into(), e))?;
            if !out.status.success() {
                return Err(PasswordFileError::Script {
                    path: path.into(),
                    rc: out.status.code().map_or("signal".into(), |c| c.to_string()),
                    stderr: String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
                });
            }
            out.stdout
        } else {
            std::fs::read(path).map_err(|e| PasswordFileError::Read(path.into(), e))?
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let secret = text.trim();
    if secret.is_empty() {
        return Err(PasswordFileError::Empty(path.into()));
    }
    Ok(Secret::new(secret))
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
