//! Where vault passwords come from, in ansible-playbook's order (`CLI.build_vault_ids` and
//! `CLI.setup_vault_secrets` in ansible-core's `cli/__init__.py`): ansible.cfg's
//! `vault_identity_list`, then each `--vault-id [label@]source`, then each
//! `--vault-password-file` and the configured `vault_password_file` (as `default@file`), then
//! `--ask-vault-pass` (as `default@prompt`).
//!
//! A source is `prompt` (ask on the terminal), an executable (run it; its stdout, without the
//! trailing newline, is the password; a name ending in `-client` is also passed
//! `--vault-id <label>`), or a file (its content, stripped of surrounding whitespace). A file
//! that is itself vaulted is decrypted with the secrets found before it. A source that fails
//! is a warning while another one works, and the error when none does; a failed prompt is
//! always the error.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{DEFAULT_ID, Vault};
use crate::secret::Secret;

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("The vault password file `{}` was not found", path.display())]
    NotFound { path: PathBuf },
    #[error("The vault password file `{}` can not be a directory", path.display())]
    Directory { path: PathBuf },
    #[error("could not read vault password file `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("problem running vault password script `{}`", path.display())]
    Run {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("vault password script `{}` returned non-zero ({code})", path.display())]
    ScriptFailed { path: PathBuf, code: i32 },
    #[error("vault password client script `{}` did not find a secret for vault-id={label}", path.display())]
    ClientNoSecret { path: PathBuf, label: String },
    #[error("Invalid vault password was provided from {what} (`{}`): it is empty", path.display())]
    Empty { what: &'static str, path: PathBuf },
    #[error("the vault password from `{}` is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf },
    #[error("the vault password file `{}` is vaulted and did not decrypt", path.display())]
    Vaulted {
        path: PathBuf,
        #[source]
        source: super::VaultError,
    },
    #[error(
        "cannot prompt for the vault password ({label}): no terminal; give it with \
         --vault-password-file or --vault-id LABEL@FILE instead"
    )]
    NoTerminal { label: String },
    #[error("cannot read the vault password ({label}) from the terminal")]
    Prompt {
        label: String,
        #[source]
        source: std::io::Error,
    },
    #[error("Invalid vault password was provided from the prompt ({label}): it is empty")]
    EmptyPrompt { label: String },
}

/// Every place a run's vault secrets may come from, as given.
#[derive(Debug, Clone, Default)]
pub struct SecretSources {
    /// ansible.cfg `vault_identity_list` / `ANSIBLE_VAULT_IDENTITY_LIST`.
    pub identity_list: Vec<String>,
    /// `--vault-id`, in order.
    pub vault_ids: Vec<String>,
    /// `--vault-password-file`, in order.
    pub password_files: Vec<PathBuf>,
    /// ansible.cfg `vault_password_file` / `ANSIBLE_VAULT_PASSWORD_FILE`.
    pub configured_password_file: Option<PathBuf>,
    /// `--ask-vault-pass` / `-J`.
    pub ask: bool,
    /// ansible.cfg `vault_id_match` / `ANSIBLE_VAULT_ID_MATCH`.
    pub id_match: bool,
}

/// One `[label@]source`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// `prompt`; `ask_style` is `--ask-vault-pass`'s own prompt text.
    Prompt {
        ask_style: bool,
    },
    Path(PathBuf),
}

/// `label@source` split at the first `@`, as `CLI.split_vault_id`.
fn split(slug: &str) -> (Option<String>, Source) {
    let (label, source) = match slug.split_once('@') {
        Some((l, s)) => (Some(l.to_string()), s),
        None => (None, slug),
    };
    let source = match source {
        "prompt" => Source::Prompt { ask_style: false },
        "prompt_ask_vault_pass" => Source::Prompt { ask_style: true },
        p => Source::Path(PathBuf::from(p)),
    };
    (label, source)
}

/// Read every secret `sources` names. `warn` gets the failures that others made up for.
pub fn load_secrets(
    sources: &SecretSources,
    warn: &mut dyn FnMut(String),
) -> Result<Vault, SecretError> {
    let mut slugs: Vec<(Option<String>, Source)> = sources
        .identity_list
        .iter()
        .chain(&sources.vault_ids)
        .map(|s| split(s))
        .collect();
    for f in sources
        .password_files
        .iter()
        .chain(&sources.configured_password_file)
    {
        slugs.push((Some(DEFAULT_ID.into()), Source::Path(f.clone())));
    }
    if sources.ask {
        slugs.push((Some(DEFAULT_ID.into()), Source::Prompt { ask_style: true }));
    }
    let mut found: Vec<(String, Secret)> = Vec::new();
    let mut last_error = None;
    for (label, source) in slugs {
        let id = label.clone().unwrap_or_else(|| DEFAULT_ID.to_string());
        match source {
            Source::Prompt { ask_style } => {
                let secret = prompt(&id, ask_style)?;
                found.push((id, secret));
            }
            Source::Path(path) => {
                match from_path(&path, label.as_deref(), &Vault::new(found.clone())) {
                    Ok(secret) => found.push((id, secret)),
                    Err(e) => {
                        warn(format!("Error getting vault password file ({id}): {e}"));
                        last_error = Some(e);
                    }
                }
            }
        }
    }
    match last_error {
        Some(e) if found.is_empty() => Err(e),
        _ => Ok(Vault::new(found).matching_ids_only(sources.id_match)),
    }
}

fn from_path(path: &Path, label: Option<&str>, earlier: &Vault) -> Result<Secret, SecretError> {
    let meta = std::fs::metadata(path).map_err(|_| SecretError::NotFound {
        path: path.to_path_buf(),
    })?;
    if meta.is_dir() {
        return Err(SecretError::Directory {
            path: path.to_path_buf(),
        });
    }
    let bytes = if meta.permissions().mode() & 0o111 != 0 {
        run_script(path, label)?
    } else {
        read_file(path, earlier)?
    };
    let text = String::from_utf8(bytes).map_err(|_| SecretError::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    Ok(Secret::new(text))
}

/// A password file: its content with surrounding whitespace removed (`FileVaultSecret`).
fn read_file(path: &Path, earlier: &Vault) -> Result<Vec<u8>, SecretError> {
    let raw = std::fs::read(path).map_err(|source| SecretError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut bytes = raw.trim_ascii().to_vec();
    if super::is_vaulted(&bytes) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        bytes = earlier
            .decrypt(&text)
            .map_err(|source| SecretError::Vaulted {
                path: path.to_path_buf(),
                source,
            })?;
    }
    let bytes = trim_newlines(&bytes).to_vec();
    if bytes.is_empty() {
        return Err(SecretError::Empty {
            what: "file",
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// A password script: its stdout without surrounding CR/LF (`ScriptVaultSecret`). Its stderr
/// stays the terminal's, so a script can prompt. A `*-client` script is asked for `label`
/// (`ClientScriptVaultSecret`: exit code 2 means it has no such secret).
fn run_script(path: &Path, label: Option<&str>) -> Result<Vec<u8>, SecretError> {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let client = stem.as_deref().is_some_and(|s| s.ends_with("-client"));
    // A bare name is the file in the working directory, not a command looked up in PATH.
    let mut cmd = Command::new(if path.is_relative() {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    });
    let label = label.unwrap_or(DEFAULT_ID);
    if client {
        cmd.args(["--vault-id", label]);
    }
    let out = cmd
        .stdin(Stdio::inherit())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| SecretError::Run {
            path: path.to_path_buf(),
            source,
        })?;
    match out.status.code() {
        Some(0) => {}
        Some(2) if client => {
            return Err(SecretError::ClientNoSecret {
                path: path.to_path_buf(),
                label: label.to_string(),
            });
        }
        code => {
            return Err(SecretError::ScriptFailed {
                path: path.to_path_buf(),
                code: code.unwrap_or(-1),
            });
        }
    }
    let bytes = trim_newlines(&out.stdout).to_vec();
    if bytes.is_empty() {
        return Err(SecretError::Empty {
            what: "script",
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

fn trim_newlines(b: &[u8]) -> &[u8] {
    let is_nl = |c: &u8| *c == b'\r' || *c == b'\n';
    let start = b.iter().position(|c| !is_nl(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !is_nl(c)).map_or(start, |i| i + 1);
    &b[start..end]
}

/// Ask on the terminal without echo: `Vault password: ` for `--ask-vault-pass`,
/// `Vault password (label): ` for `--vault-id label@prompt`. Without a terminal this is an
/// error at once rather than a read that never ends.
fn prompt(label: &str, ask_style: bool) -> Result<Secret, SecretError> {
    let text = if ask_style {
        "Vault password: ".to_string()
    } else {
        format!("Vault password ({label}): ")
    };
    let answer = crate::secret::ask_hidden(&text).map_err(|e| match e {
        crate::secret::AskError::NoTerminal => SecretError::NoTerminal {
            label: label.into(),
        },
        crate::secret::AskError::Read(source) => SecretError::Prompt {
            label: label.into(),
            source,
        },
    })?;
    let line = answer.expose().trim();
    if line.is_empty() {
        return Err(SecretError::EmptyPrompt {
            label: label.into(),
        });
    }
    Ok(Secret::new(line))
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;
