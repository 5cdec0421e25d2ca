//! `kinit plan`: the expanded cluster, as a table for people or as JSON for scripts
//! (everything a deployer needs: network, gateway, DNS, every node's hypervisor, OS, address
//! and size). The phases and their tasks come from the playbooks (`deploy::catalog`); the
//! JSON form carries them as the caller passes them. Rendering only; nothing is touched.

use std::fmt::Write as _;

use serde::Serialize;

use super::{Cluster, Connection, Hypervisor, Network};
use crate::spec::{Distro, NodeType, Os};

/// The plan as a table.
pub fn render_table(c: &Cluster) -> String {
    let net = &c.network;
    let mut out = String::new();
    let upstream: Vec<String> = net.dns_public.iter().map(|a| a.to_string()).collect();
    let _ = writeln!(out, "cluster   {}.{} ({})", c.name, c.domain, c.spec);
    let _ = writeln!(
        out,
        "network   {} {}, gateway {}, DNS {} (upstream {}), DHCP {}-{}",
        net.name,
        net.cidr,
        net.gateway,
        net.dns,
        upstream.join(", "),
        net.dhcp_start,
        net.dhcp_end
    );
    out.push('\n');

    let mut rows = vec![row(["HYPERVISOR", "CONNECTION", "ADDRESS"])];
    for h in &c.hypervisors {
        let address = match h.connection {
            Connection::Local => "localhost".to_string(),
            Connection::Ssh => format!("{}@{}:{}", h.ssh_user, h.ansible_host, h.ssh_port),
        };
        let conn = match h.connection {
            Connection::Local => "local",
            Connection::Ssh => "ssh",
        };
        rows.push(vec![h.name.clone(), conn.into(), address]);
    }
    table(&mut out, &rows);
    out.push('\n');

    let mut rows = vec![row([
        "NODE",
        "ROLE",
        "OS",
        "IP",
        "MAC",
        "HYPERVISOR",
        "VCPU",
        "RAM",
        "DISK",
    ])];
    for n in &c.nodes {
        let (cpu, ram, disk) = match n.resources {
            Some(r) => (
                format!("{}/{}", r.vcpus, r.maxvcpus),
                r.ram.to_string(),
                r.disk.to_string(),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        rows.push(vec![
            n.name.clone(),
            n.role.as_str().into(),
            n.os.as_str().into(),
            n.ip.to_string(),
            n.mac.clone(),
            n.hypervisor.clone(),
            cpu,
            ram,
            disk,
        ]);
    }
    table(&mut out, &rows);
    out.push('\n');

    out
}

fn row<const N: usize>(cells: [&str; N]) -> Vec<String> {
    cells.iter().map(|s| s.to_string()).collect()
}

/// Left-aligned columns two spaces apart, no trailing spaces.
fn table(out: &mut String, rows: &[Vec<String>]) {
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let _ = write!(line, "{:<w$}  ", cell, w = widths[i]);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

#[derive(Serialize)]
struct PlanJson<'a, P: Serialize> {
    spec: &'a str,
    distro: Distro,
    cluster: ClusterJson<'a>,
    network: &'a Network,
    hypervisors: &'a [Hypervisor],
    nodes: Vec<NodeJson<'a>>,
    /// The phases with their plays and tasks, as the caller read them from the playbooks.
    phases: &'a P,
}

#[derive(Serialize)]
struct ClusterJson<'a> {
    name: &'a str,
    domain: &'a str,
    fqdn: String,
}

#[derive(Serialize)]
struct NodeJson<'a> {
    name: &'a str,
    role: &'a str,
    #[serde(rename = "type")]
    ty: NodeType,
    os: Os,
    ip: String,
    mac: &'a str,
    fqdn: &'a str,
    guest_name: &'a str,
    hypervisor: &'a str,
    groups: Vec<&'static str>,
    vcpus: Option<u32>,
    maxvcpus: Option<u32>,
    ram_kib: Option<u64>,
    disk_kib: Option<u64>,
}

/// The plan as pretty-printed JSON (with a trailing newline); `phases` is what the caller
/// read from the deployment's playbooks.
pub fn render_json<P: Serialize>(c: &Cluster, phases: &P) -> String {
    let plan = PlanJson {
        spec: &c.spec,
        distro: c.distro,
        cluster: ClusterJson {
            name: &c.name,
            domain: &c.domain,
            fqdn: format!("{}.{}", c.name, c.domain),
        },
        network: &c.network,
        hypervisors: &c.hypervisors,
        nodes: c
            .nodes
            .iter()
            .map(|n| NodeJson {
                name: &n.name,
                role: n.role.as_str(),
                ty: n.ty,
                os: n.os,
                ip: n.ip.to_string(),
                mac: &n.mac,
                fqdn: &n.fqdn,
                guest_name: &n.guest_name,
                hypervisor: &n.hypervisor,
                groups: n.groups(),
                vcpus: n.resources.map(|r| r.vcpus),
                maxvcpus: n.resources.map(|r| r.maxvcpus),
                ram_kib: n.resources.map(|r| r.ram.kib()),
                disk_kib: n.resources.map(|r| r.disk.kib()),
            })
            .collect(),
        phases,
    };
    let mut s = serde_json::to_string_pretty(&plan).expect("plan serializes");
    s.push('\n');
    s
}
