//! The orchestration around the playbook engine that `kinit run`, `plan`, `ssh` and `state`
//! (`commands`) use: the cluster lock (`lock`), the state folder (`state`), the bundled
//! playbooks (`locate`) and their phases (`catalog`), and running the phase plays of
//! `site.yml` one phase at a time (`phases`), each selected by its tag, through one session
//! for the whole run (connections, facts and reporter), so the recap lists every phase with
//! its duration; and `kinit plan --render`, the same plays walked in render mode (`render`).

pub mod catalog;
mod locate;
pub mod lock;
pub mod phases;
pub mod render;
mod render_dir;
pub mod ssh;
pub mod state;

pub use locate::NotFound as PlaybookDirNotFound;
pub use lock::{LockError, rfc3339};
pub use state::{StateDir, StateError};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use crate::Error;
use crate::cluster::Cluster;
use crate::inventory::Inventory;
use crate::playbook::{Loader, LoaderOptions, Playbook};

#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    PlaybookDir(#[from] PlaybookDirNotFound),
    #[error(transparent)]
    Catalog(#[from] catalog::CatalogError),
    #[error(transparent)]
    Render(#[from] render::RenderError),
    #[error("node `{name}` is not in cluster `{cluster}`; its nodes are: {known}")]
    UnknownNode {
        name: String,
        cluster: String,
        known: String,
    },
    #[error("node `{name}` is a Windows node reached over WinRM, not SSH")]
    WindowsNode { name: String },
    #[error("cannot run `ssh`")]
    Exec {
        #[source]
        source: std::io::Error,
    },
    #[error("cannot copy the run's report to `{}`", path.display())]
    CopyReport {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub(crate) fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// The state folder of an expanded cluster.
pub(crate) fn state_of(cluster: &Cluster) -> Result<StateDir, Error> {
    Ok(StateDir::new(crate::cluster::state_dir::state_dir(
        &cluster.name,
    )?))
}

pub(crate) fn copy_report(from: &Path, to: Option<&Path>) -> Result<(), DeployError> {
    let Some(to) = to else { return Ok(()) };
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|source| DeployError::CopyReport {
            path: to.to_path_buf(),
            source,
        })
}

/// Paths the playbooks use, as extra variables.
pub(crate) fn state_vars(state: &StateDir, run_dir: &Path) -> crate::vars::VarMap {
    let p = |f: &str| json!(state.path(f).display().to_string());
    let mut v = crate::vars::VarMap::new();
    v.insert(
        "kinit_state_dir".into(),
        json!(state.root.display().to_string()),
    );
    v.insert("kinit_run_dir".into(), json!(run_dir.display().to_string()));
    v.insert("kinit_ssh_private_key".into(), p(state::PRIVATE_KEY));
    v.insert("kinit_ssh_public_key".into(), p(state::PUBLIC_KEY));
    v.insert("kinit_known_hosts".into(), p(state::KNOWN_HOSTS));
    v.insert("kinit_kubeconfig".into(), p(state::KUBECONFIG));
    v
}

/// The expanded inventory, with the cluster key for the SSH guests and the cluster's WinRM
/// CA as the only trust of the Windows guests (`provider::winrm_cert` issues their
/// certificates). Hosts outside the cluster are not in it: a user's own Windows hosts keep
/// the system trust store.
pub fn cluster_inventory(cluster: &Cluster, state: &StateDir) -> Inventory {
    let mut inv = cluster.to_inventory();
    let key = state.path(state::PRIVATE_KEY).display().to_string();
    let ca = state.path(state::WINRM_CA).display().to_string();
    for n in &cluster.nodes {
        let Some(h) = inv.hosts.get_mut(&n.name) else {
            continue;
        };
        let (var, value) = if n.os.is_windows() {
            ("ansible_winrm_ca_trust_path", &ca)
        } else {
            ("ansible_ssh_private_key_file", &key)
        };
        if !h.vars.contains_key(var) {
            h.vars.insert(var.into(), json!(value));
        }
    }
    inv
}

/// `site.yml` of the playbook folder `flag` names (or the default one), loaded, with every
/// play in exactly one phase, and the loader that loaded it (its roles and files).
pub(crate) fn load_site(flag: Option<&Path>) -> Result<(Arc<Loader>, Playbook), Error> {
    let dir = locate::playbook_dir(flag).map_err(DeployError::from)?;
    let loader = Arc::new(Loader::new(LoaderOptions {
        library_path: Vec::new(),
        filter_plugins: Vec::new(),
        test_plugins: Vec::new(),
        lookup_plugins: Vec::new(),
        collections_path: None,
        roles_path: locate::roles_path(&dir),
        extra_vars: Default::default(),
    }));
    let book = loader.load_playbook(&dir.join(locate::ENTRY))?;
    for w in loader.take_warnings() {
        eprintln!("[WARNING]: {w}");
    }
    catalog::check(&book).map_err(DeployError::from)?;
    Ok((loader, book))
}
