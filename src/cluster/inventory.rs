//! `Cluster` → `Inventory`: the hosts and groups the bundled playbooks run against.
//!
//! Connection variables follow Ansible's names. Hypervisors use `ansible_connection: local`
//! (the default local hypervisor) or `ssh`. Guests are reached through their hypervisor:
//! `kinit_jump_host` is that hypervisor's SSH address as `user@host:port` (what the inventory
//! layer turns into a jump host) and `kinit_hypervisor` its inventory name; the jump is absent
//! when the hypervisor is the local machine, whose guest network is directly reachable.
//! Windows guests use WinRM over HTTPS.

use serde_json::{Value, json};

use super::{Cluster, Connection, Node};
use crate::inventory::Inventory;
use crate::vars::VarMap;

/// Groups every cluster inventory has, in this order, even when empty.
pub const GROUPS: [&str; 7] = [
    "hypervisors",
    "controller_nodes",
    "compute_nodes",
    "cluster_nodes",
    "service_nodes",
    "windows_nodes",
    "linux_nodes",
];

impl Cluster {
    /// The Ansible-style inventory of this cluster.
    pub fn to_inventory(&self) -> Inventory {
        let mut inv = Inventory::default();
        inv.groups["all"].vars = self.cluster_vars();
        for g in GROUPS {
            inv.group_mut(g);
        }
        for h in &self.hypervisors {
            let mut vars = VarMap::new();
            match h.connection {
                Connection::Local => {
                    vars.insert("ansible_connection".into(), json!("local"));
                    vars.insert("ansible_host".into(), json!("localhost"));
                }
                Connection::Ssh => {
                    vars.insert("ansible_connection".into(), json!("ssh"));
                    vars.insert("ansible_host".into(), json!(h.ansible_host));
                    vars.insert("ansible_user".into(), json!(h.ssh_user));
                    vars.insert("ansible_port".into(), json!(h.ssh_port));
                    vars.insert("kinit_ssh_hostname".into(), json!(h.ssh_hostname));
                }
            }
            let guests: Vec<&str> = self
                .nodes
                .iter()
                .filter(|n| n.hypervisor == h.name)
                .map(|n| n.name.as_str())
                .collect();
            vars.insert("kinit_guests".into(), json!(guests));
            inv.add_host(&h.name, Some("hypervisors"), vars);
        }
        for n in &self.nodes {
            let vars = self.node_vars(n);
            inv.add_host(&n.name, None, vars);
            for g in n.groups() {
                inv.add_host(&n.name, Some(g), VarMap::new());
            }
        }
        inv
    }

    fn cluster_vars(&self) -> VarMap {
        let net = &self.network;
        let v = json!({
            "kinit_spec": self.spec,
            "kinit_distro": self.distro,
            "kinit_cluster_name": self.name,
            "kinit_cluster_domain": self.domain,
            "kinit_cluster_fqdn": format!("{}.{}", self.name, self.domain),
            "kinit_network_name": net.name,
            "kinit_network": net.cidr.to_string(),
            "kinit_network_prefix": net.cidr.prefix_len(),
            "kinit_netmask": net.netmask.to_string(),
            "kinit_gateway": net.gateway.to_string(),
            "kinit_dhcp_start": net.dhcp_start.to_string(),
            "kinit_dhcp_end": net.dhcp_end.to_string(),
            "kinit_dns": net.dns.to_string(),
            "kinit_dns_public": net.dns_public.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
        });
        match v {
            Value::Object(m) => m,
            _ => unreachable!("a JSON object literal"),
        }
    }

    fn node_vars(&self, n: &Node) -> VarMap {
        let mut v = VarMap::new();
        let windows = n.os.is_windows();
        let conn = if windows { "winrm" } else { "ssh" };
        v.insert("ansible_connection".into(), json!(conn));
        v.insert("ansible_host".into(), json!(n.ip.to_string()));
        v.insert(
            "ansible_user".into(),
            json!(if windows { "Administrator" } else { "root" }),
        );
        v.insert(
            "ansible_port".into(),
            json!(if windows { 5986 } else { 22 }),
        );
        if windows {
            v.insert("ansible_winrm_scheme".into(), json!("https"));
            v.insert("ansible_winrm_transport".into(), json!("ntlm"));
            v.insert("ansible_shell_type".into(), json!("powershell"));
        }
        let hv = self.hypervisors.iter().find(|h| h.name == n.hypervisor);
        if let Some(h) = hv.filter(|h| h.connection == Connection::Ssh) {
            let jump = format!("{}@{}:{}", h.ssh_user, h.ansible_host, h.ssh_port);
            v.insert("kinit_jump_host".into(), json!(jump));
        }
        v.insert("kinit_hypervisor".into(), json!(n.hypervisor));
        v.insert("kinit_role".into(), json!(n.role));
        v.insert("kinit_type".into(), json!(n.ty));
        v.insert("kinit_os".into(), json!(n.os));
        v.insert("kinit_ip".into(), json!(n.ip.to_string()));
        v.insert("kinit_mac".into(), json!(n.mac));
        // The NIC's OVS interfaceid and OVN logical port, used when the cluster spans
        // several hypervisors.
        v.insert(
            "kinit_interface_id".into(),
            json!(crate::provider::ovs_network::interface_id(
                &self.name, &n.name
            )),
        );
        v.insert("kinit_fqdn".into(), json!(n.fqdn));
        v.insert("kinit_guest_name".into(), json!(n.guest_name));
        if let Some(r) = n.resources {
            v.insert("kinit_vcpus".into(), json!(r.vcpus));
            v.insert("kinit_maxvcpus".into(), json!(r.maxvcpus));
            v.insert("kinit_ram_kib".into(), json!(r.ram.kib()));
            v.insert("kinit_disk_kib".into(), json!(r.disk.kib()));
        }
        v
    }
}
