//! What a run changes in its inventory (`add_host`, `group_by`) and `meta: refresh_inventory`,
//! which reads the sources again and keeps those changes, as ansible-core's
//! `InventoryManager.refresh_inventory` replays its cached dynamic hosts and groups.

use std::path::PathBuf;

use serde_json::json;

use super::{IMPLICIT_LOCAL, Inventory, InventoryError, load_for_playbooks, load_new_names};
use crate::vars::VarMap;

/// A change a task made, kept to be made again after a refresh.
#[derive(Debug, Clone, PartialEq)]
pub enum DynamicChange {
    AddHost {
        name: String,
        groups: Vec<String>,
        vars: VarMap,
    },
    GroupBy {
        host: String,
        key: String,
        parents: Vec<String>,
    },
}

/// Where an inventory was read from, to read it again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sources {
    pub sources: Vec<String>,
    pub playbook_dirs: Vec<PathBuf>,
}

impl Inventory {
    /// `add_host`: add (or update) `name` with `vars` and put it in `groups`; whether that
    /// changed anything, as ansible-core's `add_dynamic_host` judges it (a new host, new or
    /// different variables, a group the host was not in).
    pub fn add_dynamic_host(
        &mut self,
        name: &str,
        groups: &[String],
        vars: VarMap,
    ) -> Result<bool, InventoryError> {
        let before = self.hosts.get(name).map(|h| h.vars.clone());
        let new_groups: Vec<String> = groups
            .iter()
            .filter(|g| !self.groups.contains_key(*g))
            .cloned()
            .collect();
        let new_host: Vec<String> = before
            .is_none()
            .then(|| name.to_string())
            .into_iter()
            .collect();
        // A member of `all` itself, as ansible-core adds it (so it comes first in `all`).
        self.add_host(name, Some("all"), vars.clone());
        let mut changed = before.as_ref() != self.hosts.get(name).map(|h| &h.vars);
        for g in groups {
            changed |= !self.groups.get(g).is_some_and(|x| x.hosts.contains(name));
            self.add_host(name, Some(g), VarMap::new());
            let is_child = self.groups.values().any(|x| x.children.contains(g));
            if g != "all" && !is_child {
                let all = self.group_mut("all");
                if !all.children.contains(g) {
                    all.children.push(g.clone());
                }
            }
        }
        load_new_names(self, &new_groups, &new_host)?;
        self.dynamic.push(DynamicChange::AddHost {
            name: name.to_string(),
            groups: groups.to_vec(),
            vars,
        });
        Ok(changed)
    }

    /// `group_by`: put `host` in group `key`, a child of each of `parents`; whether the host
    /// joined the group (ansible-core's `add_dynamic_group`).
    pub fn add_dynamic_group(
        &mut self,
        host: &str,
        key: &str,
        parents: &[String],
    ) -> Result<bool, InventoryError> {
        // As ansible-core's `add_dynamic_group`: changed when the host was not yet in the
        // group (its subgroups' hosts count as in it) or a parent group, or a parent's link
        // to the group, is new.
        // `all` is a new parent of a group that so far hung off other groups only.
        let joined = !self.hosts_of_group(key).iter().any(|h| h == host);
        let new_parent = parents
            .iter()
            .any(|p| !self.groups.contains_key(key) || !self.parents_of(key).contains(&p.as_str()));
        let changed = joined || new_parent;
        let new_groups: Vec<String> = std::iter::once(key)
            .chain(parents.iter().map(String::as_str))
            .filter(|g| !self.groups.contains_key(*g))
            .map(str::to_string)
            .collect();
        if !self.hosts.contains_key(host) && IMPLICIT_LOCAL.contains(&host) {
            // The implicit localhost joins the group as it is: still reached locally.
            let mut local = VarMap::new();
            local.insert("ansible_connection".into(), json!("local"));
            self.add_host(host, None, local);
        }
        self.add_host(host, Some(key), VarMap::new());
        for p in parents {
            // A group nobody lists hangs off `all` already; one with other parents is linked
            // to `all` as well, as ansible-core links it.
            if p != "all" || !self.parents_of(key).contains(&"all") {
                let g = self.group_mut(p);
                if !g.children.contains(&key.to_string()) {
                    g.children.push(key.to_string());
                }
            }
        }
        load_new_names(self, &new_groups, &[])?;
        self.dynamic.push(DynamicChange::GroupBy {
            host: host.to_string(),
            key: key.to_string(),
            parents: parents.to_vec(),
        });
        Ok(changed)
    }

    /// `meta: refresh_inventory`: the sources read again (a host or group they no longer
    /// have is gone), then the run's `add_host` and `group_by` changes made again; a
    /// `group_by` of a host the sources no longer have is left out (and kept for a later
    /// refresh), as ansible-core does.
    pub fn refreshed(&self) -> Result<Inventory, InventoryError> {
        let mut fresh = load_for_playbooks(&self.sources.sources, &self.sources.playbook_dirs)?;
        for change in &self.dynamic {
            match change {
                DynamicChange::AddHost { name, groups, vars } => {
                    fresh.add_dynamic_host(name, groups, vars.clone())?;
                }
                DynamicChange::GroupBy { host, key, parents } => {
                    if fresh.hosts.contains_key(host) || IMPLICIT_LOCAL.contains(&host.as_str()) {
                        fresh.add_dynamic_group(host, key, parents)?;
                    }
                }
            }
        }
        fresh.dynamic = self.dynamic.clone();
        Ok(fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refresh_reads_the_sources_again_and_keeps_the_runs_changes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hosts.ini");
        std::fs::write(&file, "one parity=odd\ntwo parity=even\n").unwrap();
        let source = file.display().to_string();
        let mut inv = load_for_playbooks(std::slice::from_ref(&source), &[]).unwrap();
        assert!(
            inv.add_dynamic_host("yolo", &["extra".into()], VarMap::new())
                .unwrap()
        );
        assert!(inv.add_dynamic_group("two", "even", &[]).unwrap());
        assert!(!inv.add_dynamic_group("two", "even", &[]).unwrap());
        assert!(inv.add_dynamic_group("one", "odd", &[]).unwrap());
        std::fs::write(&file, "two parity=even\nfour parity=even\n").unwrap();
        let fresh = inv.refreshed().unwrap();
        let hosts: Vec<&str> = fresh.hosts.keys().map(String::as_str).collect();
        assert_eq!(hosts, ["two", "four", "yolo"], "`one` is not brought back");
        assert_eq!(fresh.hosts_of_group("extra"), ["yolo"]);
        assert_eq!(fresh.hosts_of_group("even"), ["two"]);
        assert_eq!(fresh.dynamic, inv.dynamic, "kept for a later refresh");
        // A source that is gone is skipped with its hosts, as ansible-core skips a source it
        // cannot parse; the run's own hosts stay.
        std::fs::remove_file(&file).unwrap();
        let fresh = inv.refreshed().unwrap();
        assert_eq!(fresh.unparsed, [file]);
        assert_eq!(fresh.hosts.keys().collect::<Vec<_>>(), ["yolo"]);
    }
}
