//! The create-network and cleanup-hypervisors phases, exactly as bundled, run by
//! `kinit playbook` on a local hypervisor against libvirt's test driver (`test:///default`,
//! in-process; kinit keeps one connection per URI for the run, so the driver's state lasts
//! the whole run). Each phase runs twice in one run: the second time must change nothing.

use serde_json::{Value, json};

use crate::cluster_content::fixture::{Compute, inventory, repo};
use crate::support::Test;

/// The inventory of k8s-libvirt-1-1-1 (with a Linux or Windows compute) on the local machine
/// as its hypervisor, as YAML; `adjust` changes a host's variables.
pub(super) fn inventory_yaml(
    compute: Compute,
    state: &std::path::Path,
    adjust: impl Fn(&str, &mut serde_json::Map<String, Value>),
) -> String {
    let mut inv = inventory(compute);
    for (name, host) in inv.hosts.iter_mut() {
        adjust(name, &mut host.vars);
    }
    let mut all_vars = inv.groups["all"].vars.clone();
    all_vars.insert("kinit_state_dir".into(), json!(state.display().to_string()));
    let mut children = serde_json::Map::new();
    let mut placed = std::collections::HashSet::new();
    for (name, group) in &inv.groups {
        if name == "all" || name == "ungrouped" {
            continue;
        }
        let mut hosts = serde_json::Map::new();
        for h in &group.hosts {
            let vars = if placed.insert(h.clone()) {
                Value::Object(inv.hosts[h].vars.clone())
            } else {
                json!({})
            };
            hosts.insert(h.clone(), vars);
        }
        children.insert(name.clone(), json!({ "hosts": hosts }));
    }
    serde_yaml::to_string(&json!({
        "all": {
            "vars": all_vars,
            "hosts": { "localhost": { "ansible_connection": "local" } },
            "children": children,
        }
    }))
    .unwrap()
}

/// The status line (`changed`/`ok`/`skipping`) of each run of task `name` (in a role or
/// not: `TASK [role : name]`), in order.
pub(super) fn statuses(stdout: &str, name: &str) -> Vec<String> {
    let header = format!("TASK [{name}]");
    let in_role = format!(" : {name}]");
    let lines: Vec<&str> = stdout.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim();
            l == header || (l.starts_with("TASK [") && l.ends_with(&in_role))
        })
        .map(|(i, _)| lines[i + 1].split(':').next().unwrap().to_string())
        .collect()
}

#[test]
fn create_network_and_cleanup_phases_are_idempotent_on_the_libvirt_test_driver() {
    let test = Test::new();
    let (dir, state) = super::workspace(&test, None);
    let pool = dir.join("pool");
    std::fs::create_dir_all(&pool).unwrap();
    std::fs::write(state.join("known_hosts"), "stale\n").unwrap();
    let phases = |p: &str| {
        format!(
            "- import_playbook: {}\n",
            repo().join("playbooks").join(p).display()
        )
    };
    let playbook = [
        phases("create-network.yml"),
        phases("create-network.yml"),
        phases("cleanup-hypervisors.yml"),
        phases("cleanup-hypervisors.yml"),
    ]
    .concat();
    std::fs::write(dir.join("phases.yml"), playbook).unwrap();
    std::fs::write(
        dir.join("inventory.yml"),
        inventory_yaml(Compute::Windows, &state, |_, _| {}),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kinit"))
        .current_dir(&dir)
        .args(["playbook", "phases.yml", "-i", "inventory.yml"])
        .args(["-e", "libvirt_uri=test:///default"])
        .args(["-e", &format!("libvirt_pool_path={}", pool.display())])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        statuses(&stdout, "Cluster network"),
        ["changed", "ok"],
        "{stdout}"
    );
    assert_eq!(
        statuses(&stdout, "Cluster storage pool"),
        ["changed", "ok"],
        "{stdout}"
    );
    assert_eq!(
        statuses(&stdout, "Network of this cluster removed"),
        ["changed", "ok"],
        "{stdout}"
    );
    assert_eq!(
        statuses(&stdout, "Storage pool of this cluster removed"),
        ["changed", "ok"],
        "{stdout}"
    );
    assert!(
        !state.join("known_hosts").exists(),
        "the cluster's known_hosts is forgotten"
    );
    assert_eq!(
        statuses(&stdout, "Storage pool folder removed (when empty)"),
        ["changed", "ok"],
        "{stdout}"
    );
    assert!(!pool.exists(), "the empty pool folder is removed");
}
