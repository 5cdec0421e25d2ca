//! Errors of the inventory layer: reading, parsing, host patterns and connection variables.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("cannot read inventory `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Vault(#[from] crate::vault::DecryptError),
    #[error("{}:{line}: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: invalid YAML inventory", path.display())]
    Yaml {
        path: PathBuf,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("{}: invalid JSON", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: expected a mapping of variables, found {found}", path.display())]
    NotAMapping { path: PathBuf, found: &'static str },
    #[error("{}: {message}", path.display())]
    GroupLoop { path: PathBuf, message: String },
    #[error("invalid host range `{pattern}`: {reason}")]
    Range { pattern: String, reason: String },
    #[error("invalid host pattern `{pattern}`: {reason}")]
    Pattern { pattern: String, reason: String },
    /// A connection variable that cannot be rendered, named by the keyword it sets.
    #[error("Error processing keyword '{keyword}': {reason}")]
    Keyword {
        keyword: &'static str,
        reason: String,
    },
    #[error("host `{host}`: variable `{var}` is `{value}`, expected {expected}")]
    HostVar {
        host: String,
        var: &'static str,
        /// The offending value (never the value of a password variable).
        value: String,
        expected: &'static str,
    },
    /// `[inventory] any_unparsed_is_failed`: a source that is neither a file, a folder nor a
    /// host list ends the run (ansible-core's words).
    #[error("Completely failed to parse inventory source {}", path.display())]
    Unparsed { path: PathBuf },
    /// `[inventory] unparsed_is_failed`: no source could be read.
    #[error("No inventory was parsed, please check your configuration and options.")]
    NoneParsed,
}
