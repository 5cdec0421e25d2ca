//! `kinit ssh NODE`: the OpenSSH command line for a node of the expanded inventory, with the
//! cluster key and known_hosts, jumping through the node's hypervisor when that is remote;
//! then `exec` (the user's terminal goes straight to `ssh`).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use super::DeployError;
use super::state::{self, StateDir};
use crate::cluster::{Cluster, Connection};
use crate::inventory::Inventory;

/// `ssh` and its arguments for `node` (then `command`, if any).
pub fn command(
    cluster: &Cluster,
    inv: &Inventory,
    state: &StateDir,
    node: &str,
    command: &[String],
) -> Result<Vec<OsString>, DeployError> {
    let mut argv: Vec<OsString> = vec!["ssh".into()];
    if let Some(h) = cluster.hypervisors.iter().find(|h| h.name == node) {
        // A hypervisor is reached with the user's own SSH setup, as kinit's playbooks do.
        if h.connection == Connection::Local {
            argv.push("localhost".into());
        } else {
            argv.extend(["-p".into(), h.ssh_port.to_string().into()]);
            argv.push(format!("{}@{}", h.ssh_user, h.ansible_host).into());
        }
    } else {
        let Some(n) = cluster.nodes.iter().find(|n| n.name == node) else {
            let known: Vec<&str> = cluster
                .hypervisors
                .iter()
                .map(|h| h.name.as_str())
                .chain(cluster.nodes.iter().map(|n| n.name.as_str()))
                .collect();
            return Err(DeployError::UnknownNode {
                name: node.to_string(),
                cluster: cluster.name.clone(),
                known: known.join(", "),
            });
        };
        if n.os.is_windows() {
            return Err(DeployError::WindowsNode {
                name: node.to_string(),
            });
        }
        let vars = inv.host_vars(node);
        let s = |k: &str| vars.get(k).and_then(|v| v.as_str()).map(str::to_string);
        argv.push("-i".into());
        argv.push(state.path(state::PRIVATE_KEY).into());
        let mut kh = OsString::from("UserKnownHostsFile=");
        kh.push(state.path(state::KNOWN_HOSTS));
        argv.extend(["-o".into(), kh]);
        // Guests are re-created with new host keys; the cluster's own file records them.
        argv.extend(["-o".into(), "StrictHostKeyChecking=accept-new".into()]);
        argv.extend(["-o".into(), "IdentitiesOnly=yes".into()]);
        if let Some(jump) = s("kinit_jump_host") {
            argv.extend(["-J".into(), jump.into()]);
        }
        let user = s("ansible_user").unwrap_or_else(|| "root".into());
        argv.push(format!("{user}@{}", n.ip).into());
    }
    if !command.is_empty() {
        argv.push("--".into());
        argv.extend(command.iter().map(OsString::from));
    }
    Ok(argv)
}

/// Replace this process with `ssh`; only returns on failure.
pub fn exec(argv: Vec<OsString>) -> DeployError {
    let source = std::process::Command::new(&argv[0]).args(&argv[1..]).exec();
    DeployError::Exec { source }
}
