//! Unit tests of the expansion and the inventory built from it.

use serde_json::json;

use super::*;
use crate::spec::{ClusterSpec, SpecInputs};
use crate::vars::VarMap;

fn cluster(inputs: SpecInputs<'_>) -> Cluster {
    expand(&ClusterSpec::from_inputs(&inputs, &VarMap::new()).unwrap()).unwrap()
}

fn by_name<'a>(c: &'a Cluster, name: &str) -> &'a Node {
    c.nodes.iter().find(|n| n.name == name).unwrap()
}

#[test]
fn only_the_named_compute_becomes_windows() {
    let c = cluster(SpecInputs {
        spec: "k8s-libvirt-1-3-2",
        cluster_nodes_spec: Some("[[when_name=compute-02,os=windows]]"),
        ..SpecInputs::default()
    });
    let oses: Vec<_> = c.nodes.iter().map(|n| n.os.as_str()).collect();
    assert_eq!(oses, ["debian", "debian", "windows", "debian", "debian"]);
    assert_eq!(
        by_name(&c, "compute-02").groups(),
        ["compute_nodes", "cluster_nodes", "windows_nodes"]
    );
}

/// Every Linux `os` reaches the inventory under the name the roles key their images by.
#[test]
fn linux_guests_choose_their_os() {
    let c = cluster(SpecInputs {
        spec: "k8s-libvirt-1-3-1",
        cluster_nodes_spec: Some(
            "[[when_group=controller_nodes,os=debian13],[when_name=compute-01,os=ubuntu],\
             [when_name=compute-02,os=centos]]",
        ),
        ..SpecInputs::default()
    });
    let inv = c.to_inventory();
    let os = |h: &str| inv.hosts[h].vars["kinit_os"].clone();
    assert_eq!(os("controller-01"), "debian13");
    assert_eq!(os("compute-01"), "ubuntu");
    assert_eq!(os("compute-02"), "centos");
    assert_eq!(os("compute-03"), "debian");
    assert_eq!(inv.groups["linux_nodes"].hosts.len(), 5);
}

#[test]
fn last_matching_rule_wins_per_setting() {
    let c = cluster(SpecInputs {
        spec: "k8s-libvirt-1-2-1",
        cluster_nodes_spec: Some(
            r#"[{"vcpus":2,"maxvcpus":4},{"when_group":"compute_nodes","vcpus":4,"ram":"32G"},{"when_name":"compute-0[2]","ram":"12G"}]"#,
        ),
        ..SpecInputs::default()
    });
    let r = |n: &str| by_name(&c, n).resources.unwrap();
    assert_eq!(
        (r("controller-01").vcpus, r("controller-01").maxvcpus),
        (2, 4)
    );
    assert_eq!(
        (r("compute-01").vcpus, r("compute-01").ram.to_string()),
        (4, "32 GiB".into())
    );
    assert_eq!(r("compute-02").ram.to_string(), "12 GiB");
    assert_eq!(r("compute-02").maxvcpus, 4);
}

#[test]
fn placement_follows_target_order_with_renamed_hypervisors() {
    let c = cluster(SpecInputs {
        spec: "k8s-libvirt-1-2-3",
        hypervisor_hosts_spec: Some(
            r#"[{"host":"nyctea"},{"host":"tyto"},{"host":"strix","ansible_host":"10.1.1.3","ssh_user":"kinit","ssh_port":2200}]"#,
        ),
        cluster_nodes_spec: Some("[[when_name=compute-02,target_order=[missing,strix]]]"),
        ..SpecInputs::default()
    });
    let hv: Vec<_> = c
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.hypervisor.as_str()))
        .collect();
    assert_eq!(
        hv,
        [
            ("controller-01", "nyctea"),
            ("compute-01", "tyto"),
            ("compute-02", "strix"),
            ("service", "nyctea")
        ]
    );
    // Named hypervisors are reached over SSH at their name unless `ansible_host` says otherwise.
    assert_eq!(c.hypervisors[0].connection, Connection::Ssh);
    assert_eq!(c.hypervisors[0].ansible_host, "nyctea");
    assert_eq!(c.hypervisors[2].ansible_host, "10.1.1.3");
}

#[test]
fn inventory_has_groups_connection_vars_and_jump_hosts() {
    let c = cluster(SpecInputs {
        spec: "k8s-libvirt-1-2-2",
        hypervisor_hosts: Some("localhost,tyto"),
        cluster_nodes_spec: Some("[[when_name=compute-01,os=windows]]"),
        ..SpecInputs::default()
    });
    let inv = c.to_inventory();
    let members = |g: &str| inv.groups[g].hosts.iter().cloned().collect::<Vec<_>>();
    assert_eq!(members("hypervisors"), ["hypervisor-01", "hypervisor-02"]);
    assert_eq!(members("controller_nodes"), ["controller-01"]);
    assert_eq!(members("compute_nodes"), ["compute-01", "compute-02"]);
    assert_eq!(
        members("cluster_nodes"),
        ["controller-01", "compute-01", "compute-02"]
    );
    assert_eq!(members("service_nodes"), ["service"]);
    assert_eq!(members("windows_nodes"), ["compute-01"]);
    assert_eq!(
        members("linux_nodes"),
        ["controller-01", "compute-02", "service"]
    );

    let vars = |h: &str| serde_json::Value::Object(inv.hosts[h].vars.clone());
    assert_eq!(vars("hypervisor-01")["ansible_connection"], "local");
    assert_eq!(vars("hypervisor-02")["ansible_connection"], "ssh");
    assert_eq!(vars("hypervisor-02")["ansible_host"], "tyto");
    assert_eq!(
        vars("hypervisor-02")["kinit_guests"],
        json!(["compute-01", "compute-02"])
    );
    // Guests on the remote hypervisor go through it; those on the local one are direct.
    let win = vars("compute-01");
    assert_eq!(win["ansible_connection"], "winrm");
    assert_eq!(win["ansible_port"], 5986);
    assert_eq!(win["kinit_jump_host"], "root@tyto:22");
    assert_eq!(win["kinit_hypervisor"], "hypervisor-02");
    assert_eq!(win["ansible_host"], "10.0.0.2");
    let ctl = vars("controller-01");
    assert_eq!(ctl["ansible_connection"], "ssh");
    assert_eq!(ctl.get("kinit_jump_host"), None);
    assert_eq!(ctl["kinit_ram_kib"], 25165824);
    let all = serde_json::Value::Object(inv.groups["all"].vars.clone());
    assert_eq!(all["kinit_gateway"], "10.0.0.254");
    assert_eq!(all["kinit_dns"], "10.0.0.253");
}

#[test]
fn expansion_is_deterministic() {
    let inputs = SpecInputs {
        spec: "k8s-libvirt-5-20-3",
        ..SpecInputs::default()
    };
    assert_eq!(cluster(inputs), cluster(inputs));
}

#[test]
fn inventory_snapshot() {
    let c = cluster(SpecInputs {
        spec: "k8s-libvirt-1-1-2",
        hypervisor_hosts: Some("localhost,tyto"),
        cluster_nodes_spec: Some("[[when_group=compute_nodes,os=windows]]"),
        ..SpecInputs::default()
    });
    let inv = c.to_inventory();
    let groups: serde_json::Map<String, serde_json::Value> = inv
        .groups
        .values()
        .map(|g| (g.name.clone(), json!({"hosts": g.hosts, "vars": g.vars})))
        .collect();
    let hosts: serde_json::Map<String, serde_json::Value> = inv
        .hosts
        .values()
        .map(|h| (h.name.clone(), serde_json::Value::Object(h.vars.clone())))
        .collect();
    insta::assert_json_snapshot!(json!({"groups": groups, "hosts": hosts}));
}

/// The inventory layer turns every host of a cluster inventory into a connection target, and
/// a guest on a remote hypervisor is reached through that hypervisor.
#[test]
fn every_cluster_host_resolves_to_a_connection_target() {
    use crate::inventory::{ConnectionDefaults, resolve_target};
    use crate::transport::ConnectionKind;

    let c = cluster(SpecInputs {
        spec: "k8s-libvirt-1-1-2",
        hypervisor_hosts_spec: Some(
            "[[ansible_host=localhost],[ansible_host=tyto,ssh_user=kinit,ssh_port=2222]]",
        ),
        cluster_nodes_spec: Some("[[when_group=compute_nodes,os=windows]]"),
        ..SpecInputs::default()
    });
    let inv = c.to_inventory();
    for name in inv.hosts.keys() {
        let vars = inv.host_vars(name);
        let resolved = resolve_target(name, &vars, &ConnectionDefaults::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let t = resolved.target;
        match name.as_str() {
            "hypervisor-01" => assert_eq!(t.connection, ConnectionKind::Local),
            "hypervisor-02" => {
                assert_eq!((t.address.as_str(), t.port), ("tyto", Some(2222)));
                assert_eq!(t.user.as_deref(), Some("kinit"));
            }
            "compute-01" => {
                assert_eq!(t.connection, ConnectionKind::WinRm);
                assert_eq!(t.address, "10.0.0.2");
                assert_eq!(t.jump.len(), 1);
                let j = &t.jump[0];
                assert_eq!(
                    (j.address.as_str(), j.port, j.user.as_deref()),
                    ("tyto", 2222, Some("kinit"))
                );
            }
            "controller-01" | "service" => {
                assert_eq!(t.connection, ConnectionKind::Ssh);
                assert!(t.jump.is_empty(), "{name} is on the local hypervisor");
            }
            other => panic!("unexpected host {other}"),
        }
    }
}
