//! The top-level error: one variant per layer, each wrapping that layer's own typed error.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("`kinit {command}` is not implemented yet")]
    NotImplemented { command: &'static str },
    #[error("cannot read `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    ExtraVars(#[from] crate::extra_vars::ExtraVarsError),
    #[error(transparent)]
    Transport(#[from] crate::transport::TransportError),
}
