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
    #[error("`--forks` must be at least 1")]
    Forks,
    #[error(
        "`--purge-cache` acts in `cleanup-hypervisors`, which this run leaves out (its phases \
         are `{first}` to `{last}`)"
    )]
    PurgeWithoutCleanup {
        first: crate::cluster::Phase,
        last: crate::cluster::Phase,
    },
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ExpandError),
    #[error(transparent)]
    Phase(#[from] crate::cluster::PhaseError),
    #[error(transparent)]
    StateDir(#[from] crate::cluster::state_dir::StateDirError),
    #[error(transparent)]
    ExtraVars(#[from] crate::extra_vars::ExtraVarsError),
    #[error(transparent)]
    Playbook(#[from] crate::playbook::LoadError),
    #[error(transparent)]
    Inventory(#[from] crate::inventory::InventoryError),
    #[error(transparent)]
    VaultSecret(#[from] crate::vault::SecretError),
    #[error(transparent)]
    PasswordFile(#[from] crate::secret::PasswordFileError),
    #[error("cannot ask for the {what} ({flag}); give it in the inventory instead")]
    AskPassword {
        what: &'static str,
        flag: &'static str,
        #[source]
        source: crate::secret::AskError,
    },
    #[error(transparent)]
    AnsibleCfg(#[from] crate::ansible_cfg::AnsibleCfgError),
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    #[error("cannot start the async runtime")]
    Runtime {
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Ci(#[from] crate::ci::CiError),
    #[error(transparent)]
    Deploy(#[from] crate::deploy::DeployError),
    #[error(transparent)]
    Transport(#[from] crate::transport::TransportError),
}
