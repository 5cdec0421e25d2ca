//! Differential tests against ansible-core (the venv `ci/test.sh` builds; `KINIT_VENV`):
//! the inventory fixtures must load into the same hosts, group members and merged variables
//! as `ansible-inventory --list` reports, and the templating expectations kinit's unit tests
//! use (`tests/fixtures/templating/expected.json`) must still be what ansible-core renders.
//! Without ansible-core the tests print why and pass.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's `bin/` folder when it has ansible-core, else `None` (reason printed).
fn venv_bin() -> Option<PathBuf> {
    let venv = std::env::var_os("KINIT_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/venv"));
    let bin = venv.join("bin");
    if bin.join("ansible-inventory").is_file() {
        Some(bin)
    } else {
        crate::support::cannot_run(format!(
            "no ansible-inventory in {} (run ci/test.sh or set KINIT_VENV)",
            bin.display()
        ));
        None
    }
}

fn ansible_inventory(bin: &Path, source: &str) -> Value {
    let out = Command::new(bin.join("ansible-inventory"))
        .args(["-i", source, "--list"])
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .expect("run ansible-inventory");
    assert!(
        out.status.success(),
        "ansible-inventory failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ansible-inventory JSON")
}

/// Every host of `group` in ansible-inventory's output, through its children.
fn ansible_members(list: &Value, group: &str, out: &mut BTreeSet<String>) {
    let g = &list[group];
    for h in g["hosts"].as_array().into_iter().flatten() {
        out.insert(h.as_str().unwrap().to_string());
    }
    for c in g["children"].as_array().into_iter().flatten() {
        ansible_members(list, c.as_str().unwrap(), out);
    }
}

fn compare_inventory(bin: &Path, source: &str) {
    let list = ansible_inventory(bin, source);
    let inv = kinit::inventory::load(&[source.to_string()]).expect("kinit loads the inventory");
    let hostvars = list["_meta"]["hostvars"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut theirs_all = BTreeSet::new();
    ansible_members(&list, "all", &mut theirs_all);
    let ours_all: BTreeSet<String> = inv.hosts_of_group("all").into_iter().collect();
    assert_eq!(ours_all, theirs_all, "{source}: hosts");
    for host in &ours_all {
        let want = hostvars
            .get(host)
            .cloned()
            .unwrap_or(Value::Object(Default::default()));
        let got = Value::Object(inv.host_vars(host));
        assert_eq!(got, want, "{source}: variables of {host}");
    }
    for (group, def) in list.as_object().unwrap() {
        if group == "_meta" {
            continue;
        }
        let mut theirs = BTreeSet::new();
        ansible_members(&list, group, &mut theirs);
        let ours: BTreeSet<String> = inv.hosts_of_group(group).into_iter().collect();
        assert_eq!(ours, theirs, "{source}: members of {group}");
        if let Some(direct) = def["hosts"].as_array() {
            let direct: Vec<&str> = direct.iter().filter_map(Value::as_str).collect();
            let ours: Vec<&str> = inv.groups[group.as_str()]
                .hosts
                .iter()
                .map(String::as_str)
                .filter(|h| group != "ungrouped" || direct.contains(h))
                .collect();
            if group != "ungrouped" {
                assert_eq!(ours, direct, "{source}: direct hosts of {group}, in order");
            }
        }
    }
}

#[test]
fn inventories_load_like_ansible_inventory() {
    let Some(bin) = venv_bin() else { return };
    for rel in ["ini/hosts", "yaml/hosts.yml"] {
        let path = root().join("tests/fixtures/inventory").join(rel);
        compare_inventory(&bin, path.to_str().unwrap());
    }
    compare_inventory(&bin, "alpha,beta:2200,");
}

#[test]
fn templating_expectations_are_what_ansible_renders() {
    let Some(bin) = venv_bin() else { return };
    let dir = root().join("tests/fixtures/templating");
    let out = Command::new(bin.join("python"))
        .arg(dir.join("ansible_render.py"))
        .arg(dir.join("vars.json"))
        .arg(dir.join("cases.txt"))
        .output()
        .expect("run ansible_render.py");
    assert!(
        out.status.success(),
        "ansible_render.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh: Value = serde_json::from_slice(&out.stdout).expect("JSON from ansible_render.py");
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    assert_eq!(
        fresh, stored,
        "expected.json is stale: regenerate it with ansible_render.py"
    );
}
