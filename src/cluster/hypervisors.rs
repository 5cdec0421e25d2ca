//! The cluster's hypervisors: `hypervisor-01..` completed from the user's entries.

use super::{Connection, Hypervisor};
use crate::spec::ClusterSpec;

/// Hypervisors `hypervisor-01..`, completed from the user's entries. An unspecified first
/// hypervisor is the local machine, as is one whose `ansible_host` is `localhost`; any other
/// is reached by SSH at `ansible_host`, defaulting to its name (an `/etc/hosts` or
/// `~/.ssh/config` alias, as KubeInit expected).
pub(super) fn hypervisors(spec: &ClusterSpec) -> Vec<Hypervisor> {
    (0..spec.shape.hypervisors as usize)
        .map(|i| {
            let given = spec.hypervisors.get(i);
            let name = given
                .and_then(|g| g.host.clone())
                .unwrap_or_else(|| format!("hypervisor-{:02}", i + 1));
            let ansible_host = given.and_then(|g| g.ansible_host.clone());
            let local = match &ansible_host {
                None => i == 0 && given.is_none(),
                Some(h) => h == "localhost" || h == "127.0.0.1",
            };
            let ansible_host = ansible_host.unwrap_or_else(|| {
                if local {
                    "localhost".to_string()
                } else {
                    name.clone()
                }
            });
            Hypervisor {
                ssh_hostname: given
                    .and_then(|g| g.ssh_hostname.clone())
                    .unwrap_or_else(|| ansible_host.clone()),
                ssh_user: given
                    .and_then(|g| g.ssh_user.clone())
                    .unwrap_or_else(|| "root".into()),
                ssh_port: given.and_then(|g| g.ssh_port).unwrap_or(22),
                connection: if local {
                    Connection::Local
                } else {
                    Connection::Ssh
                },
                name,
                ansible_host,
            }
        })
        .collect()
}
