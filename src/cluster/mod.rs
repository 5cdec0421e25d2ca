//! A validated `ClusterSpec` expanded into the concrete cluster: hypervisors, nodes with
//! addresses, MACs and placement (pure and deterministic), the deployment phases, the
//! Ansible-style inventory built from it, and `kinit plan`.

mod address;
mod expand;
mod hypervisors;
mod inventory;
mod phase;
pub mod plan;
pub mod state_dir;

pub use expand::{ExpandError, expand};
pub use phase::{Phase, PhaseError, PhaseWindow};

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::spec::{Distro, NodeGroup, NodeType, Os, Size};

/// The expanded cluster.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Cluster {
    /// The spec string as given (e.g. `k8s-libvirt-1-1-1-h`).
    pub spec: String,
    pub distro: Distro,
    pub name: String,
    pub domain: String,
    pub network: Network,
    pub hypervisors: Vec<Hypervisor>,
    /// Controllers, then computes, then the service node.
    pub nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Network {
    /// The libvirt network's name.
    pub name: String,
    pub cidr: Ipv4Net,
    pub netmask: Ipv4Addr,
    pub gateway: Ipv4Addr,
    /// The range left for DHCP after every node has its static address.
    pub dhcp_start: Ipv4Addr,
    pub dhcp_end: Ipv4Addr,
    /// The cluster's own resolver (the service node).
    pub dns: Ipv4Addr,
    /// Upstream resolvers the cluster DNS forwards to.
    pub dns_public: Vec<Ipv4Addr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Connection {
    /// The machine kinit runs on.
    Local,
    Ssh,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hypervisor {
    /// Inventory name (`hypervisor-01` unless the user named it).
    pub name: String,
    pub connection: Connection,
    /// What SSH connects to (`localhost` for the local hypervisor).
    pub ansible_host: String,
    /// `Hostname` for generated ssh configs.
    pub ssh_hostname: String,
    pub ssh_user: String,
    pub ssh_port: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Controller,
    Compute,
    Service,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Controller => "controller",
            Role::Compute => "compute",
            Role::Service => "service",
        }
    }
}

/// Guest sizing; the service node (a container on its hypervisor) has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Resources {
    pub vcpus: u32,
    pub maxvcpus: u32,
    pub ram: Size,
    pub disk: Size,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Node {
    pub name: String,
    pub role: Role,
    #[serde(rename = "type")]
    pub ty: NodeType,
    pub os: Os,
    pub ip: Ipv4Addr,
    pub mac: String,
    pub fqdn: String,
    /// libvirt domain and disk name, `<cluster>-<node>`.
    pub guest_name: String,
    /// Name of the hypervisor the node runs on.
    pub hypervisor: String,
    pub resources: Option<Resources>,
}

impl Node {
    /// The inventory groups this node belongs to, in a fixed order.
    pub fn groups(&self) -> Vec<&'static str> {
        let mut g = match self.role {
            Role::Controller => vec!["controller_nodes", "cluster_nodes"],
            Role::Compute => vec!["compute_nodes", "cluster_nodes"],
            Role::Service => vec!["service_nodes"],
        };
        g.push(if self.os.is_windows() {
            "windows_nodes"
        } else {
            "linux_nodes"
        });
        g
    }

    /// The groups `cluster_nodes_spec` rules select on.
    pub(crate) fn rule_groups(role: Role) -> &'static [NodeGroup] {
        match role {
            Role::Controller => &[NodeGroup::ControllerNodes, NodeGroup::ClusterNodes],
            Role::Compute => &[NodeGroup::ComputeNodes, NodeGroup::ClusterNodes],
            Role::Service => &[],
        }
    }
}

#[cfg(test)]
mod tests;
