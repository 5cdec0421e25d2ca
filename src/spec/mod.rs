//! Cluster description inputs → one validated `ClusterSpec`: the spec string, the `*_spec`
//! options (JSON/YAML or the bracket form) and the extra vars that tune node defaults.
//! Nothing here knows about addresses or placement; `cluster/` expands a `ClusterSpec`.

mod capacity;
mod defaults;
mod error;
mod hypervisors;
mod input;
mod network;
mod node_rules;
mod shape;
mod size;
mod value;

pub use capacity::CapacityMargins;
pub use defaults::NodeDefaults;
pub use error::SpecError;
pub use hypervisors::{HypervisorSpec, parse_hypervisor_hosts, parse_hypervisor_hosts_spec};
pub use input::{InputError, parse_structured};
pub use network::{ClusterIdentity, NetworkSpec, parse_cluster_spec, parse_network_spec};
pub use node_rules::{NodeGroup, NodeRule, NodeType, Os, parse_node_rules};
pub use shape::{Distro, Shape, ShapeError};
pub use size::{Size, SizeError};

use crate::vars::VarMap;

/// The raw texts of the cluster options, as given on the command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpecInputs<'a> {
    pub spec: &'a str,
    pub cluster_nodes_spec: Option<&'a str>,
    pub hypervisor_hosts: Option<&'a str>,
    pub hypervisor_hosts_spec: Option<&'a str>,
    pub network_spec: Option<&'a str>,
    pub cluster_spec: Option<&'a str>,
}

/// Everything that describes a cluster, validated.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    pub shape: Shape,
    pub identity: ClusterIdentity,
    pub network: NetworkSpec,
    /// At most `shape.hypervisors` entries; missing ones get defaults during expansion.
    pub hypervisors: Vec<HypervisorSpec>,
    /// The user's rules, applied after the default ones.
    pub node_rules: Vec<NodeRule>,
    pub defaults: NodeDefaults,
    /// What `run-validations` allows for; checked here so a bad value stops the run early.
    pub capacity: CapacityMargins,
    /// `-e kinit_ignore_validations=true`: skip refusable checks such as Windows RAM.
    pub ignore_validations: bool,
}

impl ClusterSpec {
    pub fn from_inputs(inputs: &SpecInputs<'_>, extra_vars: &VarMap) -> Result<Self, SpecError> {
        let shape = Shape::parse(inputs.spec)?;
        let (option, hypervisors) = match (inputs.hypervisor_hosts_spec, inputs.hypervisor_hosts) {
            (Some(text), _) => (
                "--hypervisor-hosts-spec",
                parse_hypervisor_hosts_spec(text)?,
            ),
            (None, Some(text)) => ("--hypervisor-hosts", parse_hypervisor_hosts(text)?),
            (None, None) => ("", Vec::new()),
        };
        if hypervisors.len() > shape.hypervisors as usize {
            return Err(SpecError::TooManyHypervisors {
                option,
                spec: inputs.spec.to_string(),
                given: hypervisors.len(),
                wanted: shape.hypervisors,
            });
        }
        let default_name = format!("{}cluster", shape.distro.as_str());
        Ok(ClusterSpec {
            identity: parse_cluster_spec(inputs.cluster_spec, &default_name)?,
            network: match inputs.network_spec {
                Some(text) => parse_network_spec(text)?,
                None => NetworkSpec::default(),
            },
            hypervisors,
            node_rules: match inputs.cluster_nodes_spec {
                Some(text) => parse_node_rules(text)?,
                None => Vec::new(),
            },
            defaults: NodeDefaults::from_extra_vars(extra_vars)?,
            capacity: CapacityMargins::from_extra_vars(extra_vars)?,
            ignore_validations: crate::extra_vars::is_truthy(
                extra_vars.get("kinit_ignore_validations"),
            ),
            shape,
        })
    }
}

#[cfg(test)]
mod fuzz_tests;
