//! Fixtures: the repository's content files, the k8s-libvirt-1-1-1 inventory, and variable
//! contexts built the way a play sees them (cluster vars, role defaults, host vars, `groups`,
//! `hostvars`), with templated variables resolved lazily as Ansible does.

use std::path::{Path, PathBuf};

use kinit::inventory::Inventory;
use kinit::spec::{ClusterSpec, SpecInputs};
use kinit::template::Templar;
use kinit::vars::VarMap;
use serde_json::{Value, json};

/// The repository root (where `playbooks/` and `roles/` live).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn read(rel: &str) -> String {
    let path = repo().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A YAML file of the repository as JSON values (the shape kinit's loader works on).
pub fn yaml(rel: &str) -> Value {
    serde_yaml::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every file under `dir` (relative to the repository) whose name ends with `suffix`.
pub fn files_under(dir: &str, suffix: &str) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, suffix: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, suffix, out);
            } else if path.to_string_lossy().ends_with(suffix) {
                out.push(
                    path.strip_prefix(base)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo(), &repo().join(dir), suffix, &mut out);
    out.sort();
    out
}

/// Which OS the compute node of the 1-1-1 cluster runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Compute {
    Linux,
    Windows,
}

/// The k8s-libvirt-1-1-1 cluster as `kinit run` expands it (kinit's own spec expansion):
/// controller-01 at .1, compute-01 at .2, the service node at .253, gateway .254, all on one
/// hypervisor; with `Compute::Windows` the compute node runs Windows (seed 004's
/// `[[when_group=compute_nodes,os=windows]]`).
pub fn inventory(compute: Compute) -> Inventory {
    let mut inv = cluster(compute).to_inventory();
    // Set by `kinit run` from the state folder; not part of the expansion.
    inv.groups["all"].vars.insert(
        "kinit_state_dir".into(),
        json!("/var/lib/kinit-test/k8scluster"),
    );
    inv
}

/// The expanded k8s-libvirt-1-1-1 cluster `inventory` is made from.
pub fn cluster(compute: Compute) -> kinit::cluster::Cluster {
    let rules = match compute {
        Compute::Linux => None,
        Compute::Windows => Some("[[when_group=compute_nodes,os=windows]]"),
    };
    let inputs = SpecInputs {
        spec: "k8s-libvirt-1-1-1",
        cluster_nodes_spec: rules,
        ..SpecInputs::default()
    };
    let spec = ClusterSpec::from_inputs(&inputs, &VarMap::new()).expect("spec");
    kinit::cluster::expand(&spec).expect("expand")
}

/// `groups` as a play sees it: group name → host names (children not used by this inventory).
fn groups(inv: &Inventory) -> Value {
    let mut map = serde_json::Map::new();
    map.insert("all".into(), json!(inv.hosts.keys().collect::<Vec<_>>()));
    for (name, group) in &inv.groups {
        if name != "all" {
            map.insert(name.clone(), json!(group.hosts));
        }
    }
    Value::Object(map)
}

/// Variables of a play on `host` that includes `role`, with `extra` (`-e`) on top:
/// role defaults < playbooks/vars/cluster.yml < inventory < extra vars. Values stay
/// unrendered; kinit's Templar templates them lazily when a template reads them, as Ansible
/// does. `hostvars` holds every host's inventory variables.
pub fn context(inv: &Inventory, host: &str, role: &str, extra: &Value) -> VarMap {
    let inventory_vars = |h: &str| -> VarMap {
        let mut vars = inv.groups["all"].vars.clone();
        kinit::vars::overlay(&mut vars, &inv.hosts[h].vars);
        vars.insert("inventory_hostname".into(), json!(h));
        vars
    };
    let mut vars = VarMap::new();
    let defaults = repo().join(format!("roles/{role}/defaults/main.yml"));
    if defaults.exists() {
        let d: Value = serde_yaml::from_str(&std::fs::read_to_string(defaults).unwrap()).unwrap();
        kinit::vars::overlay(&mut vars, d.as_object().unwrap());
    }
    kinit::vars::overlay(
        &mut vars,
        yaml("playbooks/vars/cluster.yml").as_object().unwrap(),
    );
    kinit::vars::overlay(&mut vars, &inventory_vars(host));
    kinit::vars::overlay(&mut vars, extra.as_object().unwrap());
    vars.insert("groups".into(), groups(inv));
    let hostvars: serde_json::Map<String, Value> = inv
        .hosts
        .keys()
        .map(|h| (h.clone(), Value::Object(inventory_vars(h))))
        .collect();
    vars.insert("hostvars".into(), Value::Object(hostvars));
    vars
}

/// Render a template of the repository with `vars`.
pub fn render(rel: &str, vars: &VarMap) -> String {
    Templar::new()
        .render_str(&read(rel), vars)
        .unwrap_or_else(|e| panic!("render {rel}: {e}"))
}

/// The backends kinit supports, as `-e` extra vars.
pub fn backends() -> [(&'static str, Value); 2] {
    [
        ("host-gw", json!({})),
        ("vxlan", json!({"flannel_backend": "vxlan"})),
    ]
}

/// The task named `name` in a tasks file.
pub fn task(rel: &str, name: &str) -> Value {
    yaml(rel)
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{rel} has no task named `{name}`"))
        .clone()
}
