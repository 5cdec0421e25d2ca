//! `ClusterSpec` → `Cluster`: names, default and user node rules (last match wins), addresses,
//! MACs, placement by `target_order`, and the layout checks. Pure: the same inputs give the
//! same cluster, byte for byte.

use std::collections::HashSet;

use super::address::{allocate, derive_mac};
use super::hypervisors::hypervisors;
use super::{Cluster, Network, Node, Resources, Role};
use crate::spec::{ClusterSpec, NodeRule, NodeType, Os, Size};

/// Windows Server 2022 with containerd and the Kubernetes node services needs this much.
pub const WINDOWS_MIN_RAM: Size = Size::from_gib(16);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error(
        "network `{network}` is too small: it has {pool} address(es) for nodes and DHCP, the cluster needs {needed} plus at least one for DHCP"
    )]
    NetworkTooSmall {
        network: String,
        pool: u64,
        needed: u64,
    },
    #[error(
        "node `{node}`: target_order [{order}] names no hypervisor of this cluster ({hypervisors})"
    )]
    NoTarget {
        node: String,
        order: String,
        hypervisors: String,
    },
    #[error("node `{node}`: os `windows` is only supported on compute nodes")]
    WindowsController { node: String },
    #[error(
        "node `{node}`: Windows needs at least {WINDOWS_MIN_RAM} of RAM, it has {ram}; set `ram` in --cluster-nodes-spec or pass `-e kinit_ignore_validations=true` to deploy anyway"
    )]
    WindowsRam { node: String, ram: Size },
    #[error("node `{node}`: maxvcpus {maxvcpus} is below vcpus {vcpus}")]
    MaxVcpus {
        node: String,
        vcpus: u32,
        maxvcpus: u32,
    },
    #[error(
        "`--cluster-nodes-spec` rule #{rule}: when_name [{patterns}] matches no node of this cluster ({nodes})"
    )]
    NameMatchesNothing {
        rule: usize,
        patterns: String,
        nodes: String,
    },
    #[error("the name `{name}` is used by two hypervisors or nodes")]
    DuplicateName { name: String },
}

/// Expand a validated spec into the concrete cluster.
pub fn expand(spec: &ClusterSpec) -> Result<Cluster, ExpandError> {
    let shape = &spec.shape;
    let hypervisors = hypervisors(spec);
    let hv_names: Vec<String> = hypervisors.iter().map(|h| h.name.clone()).collect();

    let alloc =
        allocate(spec.network.cidr, shape.controllers + shape.computes, 1).map_err(|pool| {
            ExpandError::NetworkTooSmall {
                network: spec.network.cidr.to_string(),
                pool,
                needed: u64::from(shape.controllers + shape.computes + 1),
            }
        })?;

    let mut names: Vec<(String, Role)> = Vec::new();
    names.extend((1..=shape.controllers).map(|i| (format!("controller-{i:02}"), Role::Controller)));
    names.extend((1..=shape.computes).map(|i| (format!("compute-{i:02}"), Role::Compute)));
    check_name_rules(&spec.node_rules, &names)?;

    let mut taken_macs = HashSet::new();
    let mut nodes = Vec::new();
    let cluster_ips = alloc.cluster.iter().copied();
    for ((name, role), ip) in names.into_iter().zip(cluster_ips) {
        let settings = apply_rules(spec, &name, role, &hv_names);
        let hypervisor = place(&name, &settings.target_order, &hv_names)?;
        let resources = Resources {
            vcpus: settings.vcpus,
            maxvcpus: settings.maxvcpus,
            ram: settings.ram,
            disk: settings.disk,
        };
        validate(spec, &name, role, settings.os, &resources)?;
        let placement = Placement {
            os: settings.os,
            ip,
            hypervisor,
            resources: Some(resources),
        };
        nodes.push(node(spec, name, role, placement, &mut taken_macs));
    }
    let service_hv = place("service", &[hv_names[0].clone()], &hv_names)?;
    let placement = Placement {
        os: Os::Debian,
        ip: alloc.service[0],
        hypervisor: service_hv,
        resources: None,
    };
    nodes.push(node(
        spec,
        "service".into(),
        Role::Service,
        placement,
        &mut taken_macs,
    ));

    let mut seen = HashSet::new();
    for n in hv_names.iter().chain(nodes.iter().map(|n| &n.name)) {
        if !seen.insert(n.as_str()) {
            return Err(ExpandError::DuplicateName { name: n.clone() });
        }
    }

    Ok(Cluster {
        spec: shape.to_string(),
        distro: shape.distro,
        name: spec.identity.name.clone(),
        domain: spec.identity.domain.clone(),
        network: Network {
            name: spec.network.name.clone(),
            cidr: spec.network.cidr,
            netmask: spec.network.cidr.netmask(),
            gateway: alloc.gateway,
            dhcp_start: alloc.dhcp_start,
            dhcp_end: alloc.dhcp_end,
            dns: alloc.service[0],
            dns_public: spec.network.dns_public.clone(),
        },
        hypervisors,
        nodes,
    })
}

/// Where a node goes and what it runs: its OS, address, hypervisor and size.
struct Placement {
    os: Os,
    ip: std::net::Ipv4Addr,
    hypervisor: String,
    resources: Option<Resources>,
}

fn node(
    spec: &ClusterSpec,
    name: String,
    role: Role,
    placement: Placement,
    taken_macs: &mut HashSet<String>,
) -> Node {
    let Placement {
        os,
        ip,
        hypervisor,
        resources,
    } = placement;
    let cluster = &spec.identity.name;
    Node {
        mac: derive_mac(cluster, &name, taken_macs),
        fqdn: format!("{name}.{cluster}.{}", spec.identity.domain),
        guest_name: format!("{cluster}-{name}"),
        ty: if role == Role::Service {
            NodeType::Container
        } else {
            NodeType::Virtual
        },
        name,
        role,
        os,
        ip,
        hypervisor,
        resources,
    }
}

struct Settings {
    os: Os,
    vcpus: u32,
    maxvcpus: u32,
    ram: Size,
    disk: Size,
    target_order: Vec<String>,
}

/// KubeInit's default rules, then the user's; each setting takes the last matching value.
/// Default placement is positional (first hypervisor for controllers, second then first for
/// computes) so it also holds when hypervisors are renamed with `host`.
fn apply_rules(spec: &ClusterSpec, name: &str, role: Role, hvs: &[String]) -> Settings {
    let d = &spec.defaults;
    let (ram, disk, target_order) = match role {
        Role::Controller => (d.controller_ram, d.controller_disk, vec![hvs[0].clone()]),
        _ => (
            d.compute_ram,
            d.compute_disk,
            hvs.iter().take(2).rev().cloned().collect(),
        ),
    };
    let mut s = Settings {
        os: Os::Debian,
        vcpus: d.vcpus,
        maxvcpus: d.maxvcpus,
        ram,
        disk,
        target_order,
    };
    let groups = Node::rule_groups(role);
    for rule in spec
        .node_rules
        .iter()
        .filter(|r| r.matches(name, groups, NodeType::Virtual, spec.shape.distro))
    {
        s.os = rule.os.unwrap_or(s.os);
        s.vcpus = rule.vcpus.unwrap_or(s.vcpus);
        s.maxvcpus = rule.maxvcpus.unwrap_or(s.maxvcpus);
        s.ram = rule.ram.unwrap_or(s.ram);
        s.disk = rule.disk.unwrap_or(s.disk);
        if let Some(order) = &rule.target_order {
            s.target_order = order.clone();
        }
    }
    s
}

/// The first hypervisor in `order` that exists.
fn place(node: &str, order: &[String], hvs: &[String]) -> Result<String, ExpandError> {
    order
        .iter()
        .find(|t| hvs.contains(t))
        .cloned()
        .ok_or_else(|| ExpandError::NoTarget {
            node: node.to_string(),
            order: order.join(", "),
            hypervisors: hvs.join(", "),
        })
}

fn validate(
    spec: &ClusterSpec,
    name: &str,
    role: Role,
    os: Os,
    r: &Resources,
) -> Result<(), ExpandError> {
    if os.is_windows() && role != Role::Compute {
        return Err(ExpandError::WindowsController { node: name.into() });
    }
    if r.maxvcpus < r.vcpus {
        return Err(ExpandError::MaxVcpus {
            node: name.into(),
            vcpus: r.vcpus,
            maxvcpus: r.maxvcpus,
        });
    }
    if os.is_windows() && r.ram < WINDOWS_MIN_RAM && !spec.ignore_validations {
        return Err(ExpandError::WindowsRam {
            node: name.into(),
            ram: r.ram,
        });
    }
    Ok(())
}

/// A `when_name` that selects nothing is almost always a typo (`compute-1` for `compute-01`).
fn check_name_rules(rules: &[NodeRule], names: &[(String, Role)]) -> Result<(), ExpandError> {
    for (i, rule) in rules.iter().enumerate() {
        if let Some((patterns, set)) = &rule.when_name
            && !names.iter().any(|(n, _)| set.is_match(n))
        {
            return Err(ExpandError::NameMatchesNothing {
                rule: i + 1,
                patterns: patterns.join(", "),
                nodes: names
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    Ok(())
}
