//! `kinit run`, `kinit ssh` and `kinit state`: the orchestration around the playbook engine.
//!
//! `kinit run` validates its inputs exactly as `kinit plan` does, takes the cluster lock
//! (`lock`), prepares the state folder (`state`), finds the bundled playbooks (`locate`) and
//! runs the phase plays of `site.yml` one phase at a time (`phases`), each selected by its
//! tag, through one session for the whole run (connections, facts and reporter), so the
//! recap lists every phase with its duration.

mod atomic;
pub mod catalog;
mod locate;
mod lock;
mod phases;
mod ssh;
mod state;

pub use locate::NotFound as PlaybookDirNotFound;
pub use lock::{LockError, rfc3339};
pub use state::{StateDir, StateError};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use crate::cli::{PlanArgs, PlanFormat, RunArgs, StateArgs, StateCommand};
use crate::cluster::Cluster;
use crate::config::{ClusterConfig, PlanConfig, RunConfig};
use crate::inventory::Inventory;
use crate::playbook::{Loader, LoaderOptions, Playbook};
use crate::{Error, Outcome};

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

fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// The state folder of an expanded cluster.
fn state_of(cluster: &Cluster) -> Result<StateDir, Error> {
    Ok(StateDir::new(crate::cluster::state_dir::state_dir(
        &cluster.name,
    )?))
}

/// `kinit run`.
pub fn run(args: RunArgs) -> Result<Outcome, Error> {
    let cfg = RunConfig::from_args(&args, &cwd())?;
    // The playbooks are loaded and checked before anything on disk changes.
    let (loader, book) = load_site(args.playbook_dir.as_deref())?;
    let cluster = &cfg.cluster.cluster;
    let state = state_of(cluster)?;
    state.create().map_err(DeployError::from)?;
    let _lock = lock::acquire(
        &state.path(state::LOCK),
        &cluster.name,
        args.wait_lock,
        |msg| eprintln!("kinit: {msg}"),
    )
    .map_err(DeployError::from)?;
    let windows = cluster.nodes.iter().any(|n| n.os.is_windows());
    let prepared = state.prepare(windows).map_err(DeployError::from)?;
    let inventory = cluster_inventory(cluster, &state);
    state
        .write_inventory(&inventory)
        .map_err(DeployError::from)?;
    let stamp = rfc3339(std::time::SystemTime::now()).replace(':', "");
    let run_dir = state.new_run_dir(&stamp).map_err(DeployError::from)?;
    let mut extra_vars = state_vars(&state, &run_dir);
    if let Some(password) = &prepared.password {
        extra_vars.insert(
            "kinit_windows_admin_password".into(),
            json!(password.expose()),
        );
    }
    extra_vars.insert("kinit_purge_cache".into(), json!(cfg.purge_cache));
    // The user's -e wins over kinit's own values, as any extra var does.
    crate::vars::overlay(&mut extra_vars, &cfg.cluster.extra_vars);
    let job = phases::Job {
        loader,
        book,
        inventory,
        extra_vars,
        run_dir: run_dir.clone(),
        password: prepared.password,
    };
    let outcome = phases::run(&cfg, job)?;
    copy_report(&run_dir.join(phases::EVENTS), cfg.exec.log_json.as_deref())?;
    copy_report(&run_dir.join(phases::JUNIT), cfg.exec.junit.as_deref())?;
    println!("\nrun logs: {}", run_dir.display());
    let kubeconfig = state.path(state::KUBECONFIG);
    if kubeconfig.is_file() {
        println!(
            "kubeconfig: {}\n  export KUBECONFIG={}",
            kubeconfig.display(),
            kubeconfig.display()
        );
    }
    Ok(outcome)
}

fn copy_report(from: &Path, to: Option<&Path>) -> Result<(), DeployError> {
    let Some(to) = to else { return Ok(()) };
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|source| DeployError::CopyReport {
            path: to.to_path_buf(),
            source,
        })
}

/// Paths the playbooks use, as extra variables.
fn state_vars(state: &StateDir, run_dir: &Path) -> crate::vars::VarMap {
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

/// The expanded inventory, with the cluster key for the SSH guests.
fn cluster_inventory(cluster: &Cluster, state: &StateDir) -> Inventory {
    let mut inv = cluster.to_inventory();
    let key = state.path(state::PRIVATE_KEY).display().to_string();
    for n in &cluster.nodes {
        if !n.os.is_windows()
            && let Some(h) = inv.hosts.get_mut(&n.name)
            && !h.vars.contains_key("ansible_ssh_private_key_file")
        {
            h.vars
                .insert("ansible_ssh_private_key_file".into(), json!(key));
        }
    }
    inv
}

/// `kinit plan`: the expanded cluster, then each phase with the plays and tasks the bundled
/// playbooks give it. Reads only.
pub fn plan(args: PlanArgs) -> Result<Outcome, Error> {
    let cfg = PlanConfig::from_args(&args, Path::new("."))?;
    let cluster = &cfg.cluster.cluster;
    let (_, book) = load_site(args.playbook_dir.as_deref())?;
    let phases = catalog::listing(&book).map_err(DeployError::from)?;
    let text = match cfg.format {
        PlanFormat::Table => format!(
            "{}{}",
            crate::cluster::plan::render_table(cluster),
            catalog::render(&phases)
        ),
        PlanFormat::Json => crate::cluster::plan::render_json(cluster, &phases),
    };
    print!("{text}");
    Ok(Outcome::Success)
}

/// `site.yml` of the playbook folder `flag` names (or the default one), loaded, with every
/// play in exactly one phase, and the loader that loaded it (its roles and files).
fn load_site(flag: Option<&Path>) -> Result<(Arc<Loader>, Playbook), Error> {
    let dir = locate::playbook_dir(flag).map_err(DeployError::from)?;
    let loader = Arc::new(Loader::new(LoaderOptions {
        library_path: Vec::new(),
        roles_path: locate::roles_path(&dir),
    }));
    let book = loader.load_playbook(&dir.join(locate::ENTRY))?;
    for w in loader.take_warnings() {
        eprintln!("[WARNING]: {w}");
    }
    catalog::check(&book).map_err(DeployError::from)?;
    Ok((loader, book))
}

/// `kinit ssh`.
pub fn ssh(args: crate::cli::SshArgs) -> Result<Outcome, Error> {
    let cfg = ClusterConfig::from_args(&args.cluster, &cwd())?;
    let state = state_of(&cfg.cluster)?;
    let inventory = cluster_inventory(&cfg.cluster, &state);
    let argv = ssh::command(&cfg.cluster, &inventory, &state, &args.node, &args.command)?;
    Err(ssh::exec(argv).into())
}

/// `kinit state show|path`.
pub fn state(args: StateArgs) -> Result<Outcome, Error> {
    let (cluster, show) = match &args.command {
        StateCommand::Show { cluster } => (cluster, true),
        StateCommand::Path { cluster } => (cluster, false),
    };
    let cfg = ClusterConfig::from_args(cluster, &cwd())?;
    let state = state_of(&cfg.cluster)?;
    if show {
        print!("{}", state.describe());
    } else {
        println!("{}", state.root.display());
    }
    Ok(Outcome::Success)
}
