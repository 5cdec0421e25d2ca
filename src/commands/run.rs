//! `kinit run`: validate the spec exactly as `kinit plan` does, load the bundled playbooks,
//! then take the cluster lock, prepare the state folder and run the phases through one
//! session (`deploy::phases`). Prints where the run's logs and the kubeconfig are.

use serde_json::json;

use crate::cli::RunArgs;
use crate::config::RunConfig;
use crate::deploy::lock::{self, rfc3339};
use crate::deploy::{
    DeployError, cluster_inventory, copy_report, cwd, load_site, phases, state, state_of,
    state_vars,
};
use crate::{Error, Outcome};

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
