//! `--cluster-nodes-spec`: an ordered list of rules applied to every cluster node (controllers
//! and computes); the last matching rule wins for each setting it sets, as in KubeInit. Beyond
//! KubeInit, `when_name` selects nodes by name or glob (`compute-02`, `compute-0[23]`).

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;

use super::error::SpecError;
use super::input::parse_structured;
use super::shape::{Distro, KNOWN_UNSUPPORTED_DISTROS};
use super::size::Size;
use super::value::Entry;
use crate::extra_vars::json_kind;

const OPTION: &str = "`--cluster-nodes-spec`";
const KEYS: &[&str] = &[
    "when_group",
    "when_distro",
    "when_type",
    "when_name",
    "os",
    "vcpus",
    "maxvcpus",
    "ram",
    "disk",
    "target_order",
];

/// The guest operating systems kinit can install (each Linux one is a cloud image in the
/// kinit_libvirt role's `cloud_images`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    /// Debian 12 (bookworm), the default.
    Debian,
    /// Debian 13 (trixie).
    Debian13,
    /// Ubuntu 24.04 (noble).
    Ubuntu,
    /// CentOS Stream 9.
    Centos,
    Windows,
}

impl Os {
    pub const ALL: [Os; 5] = [
        Os::Debian,
        Os::Debian13,
        Os::Ubuntu,
        Os::Centos,
        Os::Windows,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Os::Debian => "debian",
            Os::Debian13 => "debian13",
            Os::Ubuntu => "ubuntu",
            Os::Centos => "centos",
            Os::Windows => "windows",
        }
    }

    pub fn is_windows(self) -> bool {
        self == Os::Windows
    }
}

/// The groups a rule can select with `when_group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeGroup {
    ControllerNodes,
    ComputeNodes,
    ClusterNodes,
}

impl NodeGroup {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeGroup::ControllerNodes => "controller_nodes",
            NodeGroup::ComputeNodes => "compute_nodes",
            NodeGroup::ClusterNodes => "cluster_nodes",
        }
    }
}

/// How a node runs (`when_type`): cluster nodes are libvirt guests, the service node a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeType {
    Virtual,
    Container,
}

/// One rule: selectors (all given ones must match) and the settings it applies.
#[derive(Debug, Clone, Default)]
pub struct NodeRule {
    pub when_group: Option<NodeGroup>,
    pub when_distro: Option<Vec<String>>,
    pub when_type: Option<NodeType>,
    /// The patterns as written, and compiled.
    pub when_name: Option<(Vec<String>, GlobSet)>,
    pub os: Option<Os>,
    pub vcpus: Option<u32>,
    pub maxvcpus: Option<u32>,
    pub ram: Option<Size>,
    pub disk: Option<Size>,
    pub target_order: Option<Vec<String>>,
}

impl NodeRule {
    /// Does this rule apply to a node with these properties?
    pub fn matches(&self, name: &str, groups: &[NodeGroup], ty: NodeType, distro: Distro) -> bool {
        let group = self.when_group.unwrap_or(NodeGroup::ClusterNodes);
        groups.contains(&group)
            && self.when_type.is_none_or(|t| t == ty)
            && self
                .when_distro
                .as_ref()
                .is_none_or(|ds| ds.iter().any(|d| d == distro.as_str()))
            && self
                .when_name
                .as_ref()
                .is_none_or(|(_, set)| set.is_match(name))
    }
}

/// Parse the option's text (JSON/YAML list, or `[[k=v,..],..]`).
pub fn parse_node_rules(text: &str) -> Result<Vec<NodeRule>, SpecError> {
    let value = parse_structured(text).map_err(|error| SpecError::Syntax {
        at: OPTION.to_string(),
        error,
    })?;
    let items = match &value {
        Value::Array(items) => items.as_slice(),
        // A single mapping is a one-rule list, which is what a user typing `[k=v]` means.
        Value::Object(_) => std::slice::from_ref(&value),
        other => {
            return Err(SpecError::WrongType {
                at: OPTION.to_string(),
                expected: "a list of rules",
                found: json_kind(other),
            });
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| rule(Entry::new(format!("{OPTION} rule #{}", i + 1), item, KEYS)?))
        .collect()
}

fn rule(e: Entry<'_>) -> Result<NodeRule, SpecError> {
    let bad = |key: &str, value: String, expected: &str| SpecError::BadValue {
        at: e.at.clone(),
        key: key.to_string(),
        value,
        expected: expected.to_string(),
    };
    let when_group = match e.string("when_group")?.as_deref() {
        None => None,
        Some("controller_nodes") => Some(NodeGroup::ControllerNodes),
        Some("compute_nodes") => Some(NodeGroup::ComputeNodes),
        Some("cluster_nodes") => Some(NodeGroup::ClusterNodes),
        Some(other) => {
            return Err(bad(
                "when_group",
                other.to_string(),
                "`controller_nodes`, `compute_nodes` or `cluster_nodes`",
            ));
        }
    };
    let when_distro = e.list("when_distro")?;
    for d in when_distro.iter().flatten() {
        if d != "k8s" && !KNOWN_UNSUPPORTED_DISTROS.contains(&d.as_str()) {
            return Err(bad(
                "when_distro",
                d.clone(),
                "a distro (`k8s`, `okd`, `ocp`, `eks`, `rke`, `cdk`, `kid`)",
            ));
        }
    }
    let when_type = match e.string("when_type")?.as_deref() {
        None => None,
        Some("virtual") => Some(NodeType::Virtual),
        Some("container") => Some(NodeType::Container),
        Some(other) => {
            return Err(bad(
                "when_type",
                other.to_string(),
                "`virtual` or `container`",
            ));
        }
    };
    let when_name = match e.list("when_name")? {
        None => None,
        Some(patterns) => {
            let mut set = GlobSetBuilder::new();
            for p in &patterns {
                let glob = Glob::new(p).map_err(|_| {
                    bad(
                        "when_name",
                        p.clone(),
                        "a node name or glob (`compute-02`, `compute-*`)",
                    )
                })?;
                set.add(glob);
            }
            let set = set
                .build()
                .map_err(|err| bad("when_name", patterns.join(","), &err.to_string()))?;
            Some((patterns, set))
        }
    };
    let os = match e.string("os")? {
        None => None,
        Some(s) => Some(
            Os::ALL
                .into_iter()
                .find(|o| o.as_str() == s)
                .ok_or_else(|| {
                    bad(
                        "os",
                        s,
                        "`debian`, `debian13`, `ubuntu`, `centos` or `windows`",
                    )
                })?,
        ),
    };
    let vcpus = e.count("vcpus", 1, 1024)?.map(|n| n as u32);
    let maxvcpus = e.count("maxvcpus", 1, 1024)?.map(|n| n as u32);
    Ok(NodeRule {
        when_group,
        when_distro,
        when_type,
        when_name,
        os,
        vcpus,
        maxvcpus,
        ram: e.size("ram")?,
        disk: e.size("disk")?,
        target_order: e.list("target_order")?,
    })
}
