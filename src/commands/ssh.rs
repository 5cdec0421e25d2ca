//! `kinit ssh NODE [COMMAND]`: ssh to a cluster node with the cluster's key and known hosts
//! (through its hypervisor when it has one), replacing this process.

use crate::config::ClusterConfig;
use crate::deploy::{cluster_inventory, cwd, ssh, state_of};
use crate::{Error, Outcome};

/// `kinit ssh`.
pub fn ssh(args: crate::cli::SshArgs) -> Result<Outcome, Error> {
    let cfg = ClusterConfig::from_args(&args.cluster, &cwd())?;
    let state = state_of(&cfg.cluster)?;
    let inventory = cluster_inventory(&cfg.cluster, &state);
    let argv = ssh::command(&cfg.cluster, &inventory, &state, &args.node, &args.command)?;
    Err(ssh::exec(argv).into())
}
