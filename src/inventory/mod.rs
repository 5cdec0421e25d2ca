//! The inventory: hosts, groups (with children) and their variables, as Ansible models them.
//! Loaders for INI/YAML files live beside this file; the cluster deployer builds an
//! `Inventory` in code from its expanded spec.
//!
//! Variables are kept where they were declared (group, host, inventory file or
//! `group_vars/`/`host_vars/` folder) and merged per host on demand in Ansible's order
//! (see `host_vars`), so `add_host`/`group_by` at run time need no re-merge.
//!
//! Over 300 lines because the model and the per-host merge belong together: the merge order
//! is what the model's places (group, host, file, folder) exist for.

mod connection;
mod dynamic;
mod error;
mod ini;
mod jump;
mod load;
mod pattern;
mod pyliteral;
mod ranges;
mod vars_dirs;
mod yaml;

pub use connection::{ConnectionDefaults, HostBecome, ResolvedHost, resolve_target};
pub use dynamic::{DynamicChange, Sources};
pub use error::InventoryError;
pub use ini::split_port as split_host_port;
pub use load::{load, load_for_playbooks, load_source};
pub use pattern::split_patterns;
pub use vars_dirs::{load_new_names, load_vars_dirs};

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::Value;

use crate::vars::VarMap;

/// The name Ansible creates on demand when a play targets `localhost` that the inventory
/// does not define.
pub const LOCALHOST: &str = "localhost";

/// Names that mean this machine when the inventory does not list them (Ansible's
/// `C.LOCALHOST`): the implicit local host, reached without SSH.
pub const IMPLICIT_LOCAL: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Host {
    pub name: String,
    /// Variables from the inventory file (or `add_host`).
    pub vars: VarMap,
    /// Variables from `host_vars/<name>` folders; they win over `vars`.
    pub dir_vars: VarMap,
    /// Variables from `host_vars/<name>` beside the playbook; they win over `dir_vars`.
    pub playbook_dir_vars: VarMap,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    pub name: String,
    /// Hosts directly in this group, in file order (a set: inventories of tens of thousands
    /// of hosts are checked for membership once per host).
    pub hosts: indexmap::IndexSet<String>,
    pub children: Vec<String>,
    /// Variables from the inventory file (`[g:vars]`, `vars:`).
    pub vars: VarMap,
    /// Variables from `group_vars/<name>` folders; they win over every group's `vars`.
    pub dir_vars: VarMap,
    /// Variables from `group_vars/<name>` beside the playbook.
    pub playbook_dir_vars: VarMap,
}

/// Hosts and groups; `all` and `ungrouped` always exist.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    pub hosts: IndexMap<String, Host>,
    pub groups: IndexMap<String, Group>,
    /// What reading the sources noticed that is not an error (a YAML key given twice), each
    /// naming file and line, for the command to show.
    pub warnings: Vec<String>,
    /// The folders whose `group_vars/`/`host_vars/` were read (the inventory's, then the
    /// playbooks'), for groups and hosts that `group_by`/`add_host` create while running.
    pub var_dirs: Vec<(PathBuf, bool)>,
    /// What it was read from (`meta: refresh_inventory` reads it again).
    pub sources: Sources,
    /// The run's `add_host`/`group_by` changes, made again after a refresh.
    pub dynamic: Vec<DynamicChange>,
    /// `host_vars/localhost` (and `127.0.0.1`, `::1`) for the implicit local host, the
    /// inventory's folders then the playbooks', as ansible-core reads them for it too.
    pub implicit_vars: IndexMap<String, VarMap>,
    /// Sources that are neither a file, a folder nor a host list (a path that does not
    /// exist), skipped as ansible-core skips them; `load` refuses them, the playbook command
    /// warns of them.
    pub unparsed: Vec<PathBuf>,
}

impl Default for Inventory {
    fn default() -> Self {
        let mut groups = IndexMap::new();
        for g in ["all", "ungrouped"] {
            groups.insert(
                g.to_string(),
                Group {
                    name: g.to_string(),
                    ..Group::default()
                },
            );
        }
        Self {
            hosts: IndexMap::new(),
            groups,
            warnings: Vec::new(),
            var_dirs: Vec::new(),
            sources: Sources::default(),
            dynamic: Vec::new(),
            implicit_vars: IndexMap::new(),
            unparsed: Vec::new(),
        }
    }
}

/// A YAML (or JSON) document of an inventory source, read as Ansible reads it, `!vault`
/// values decrypted; what the reader noticed goes to `warnings`.
fn read_yaml(path: &Path, text: &str, warnings: &mut Vec<String>) -> Result<Value, InventoryError> {
    let parsed =
        crate::yaml::parse(text, path, Some(&crate::vault::current())).map_err(|e| match e {
            crate::yaml::YamlError::Vault(d) => InventoryError::Vault(d),
            e => InventoryError::Syntax {
                path: path.to_path_buf(),
                line: e.line(),
                message: e.detail_after_line(),
            },
        })?;
    warnings.extend(parsed.warnings);
    Ok(parsed.value)
}

/// Groups that would contain each other: the chain of children, first and last the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLoop {
    pub chain: Vec<String>,
}

impl std::fmt::Display for GroupLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (parent, child) = (
            &self.chain[self.chain.len() - 2],
            &self.chain[self.chain.len() - 1],
        );
        write!(
            f,
            "adding group `{child}` as a child of `{parent}` makes a loop: {}",
            self.chain
                .iter()
                .map(|g| format!("`{g}`"))
                .collect::<Vec<_>>()
                .join(" -> ")
        )
    }
}

impl Inventory {
    /// Add (or update) a host and put it in `group` (creating the group when new).
    pub fn add_host(&mut self, name: &str, group: Option<&str>, vars: VarMap) {
        let host = self.hosts.entry(name.to_string()).or_insert_with(|| Host {
            name: name.to_string(),
            ..Host::default()
        });
        crate::vars::combine(&mut host.vars, &vars);
        if let Some(g) = group {
            let group = self.group_mut(g);
            if !group.hosts.contains(name) {
                group.hosts.insert(name.to_string());
            }
        }
    }

    /// The group named `name`, created (as a child of `all`) when missing.
    pub fn group_mut(&mut self, name: &str) -> &mut Group {
        if !self.groups.contains_key(name) {
            self.groups.insert(
                name.to_string(),
                Group {
                    name: name.to_string(),
                    ..Group::default()
                },
            );
        }
        &mut self.groups[name]
    }

    /// Make `child` a child group of `parent` (both created when missing). Refused when
    /// `parent` is already below `child`: the groups would contain each other, which Ansible
    /// refuses too ("creates a recursive dependency loop").
    pub fn add_child(&mut self, parent: &str, child: &str) -> Result<(), GroupLoop> {
        if let Some(mut chain) = self.path_down(child, parent) {
            chain.push(child.to_string());
            return Err(GroupLoop { chain });
        }
        self.group_mut(child);
        let p = self.group_mut(parent);
        if !p.children.iter().any(|c| c == child) {
            p.children.push(child.to_string());
        }
        Ok(())
    }

    /// The groups from `from` down through children to `to`, both included, if `to` is
    /// `from` or below it.
    fn path_down(&self, from: &str, to: &str) -> Option<Vec<String>> {
        fn walk(inv: &Inventory, g: &str, to: &str, path: &mut Vec<String>) -> bool {
            path.push(g.to_string());
            if g == to {
                return true;
            }
            if let Some(group) = inv.groups.get(g) {
                for c in &group.children {
                    if !path.iter().any(|p| p == c) && walk(inv, c, to, path) {
                        return true;
                    }
                }
            }
            path.pop();
            false
        }
        let mut path = Vec::new();
        walk(self, from, to, &mut path).then_some(path)
    }

    /// Whether `name` is the implicit local host: not in the inventory, named as localhost.
    pub fn is_implicit(&self, host: &str) -> bool {
        !self.hosts.contains_key(host) && IMPLICIT_LOCAL.contains(&host)
    }

    /// The address Ansible gives a host's `ansible_host` when no variable sets it: its
    /// name, or `127.0.0.1` for the implicit localhost (`_create_implicit_localhost`).
    pub fn default_address<'a>(&self, host: &'a str) -> &'a str {
        if self.is_implicit(host) {
            "127.0.0.1"
        } else {
            host
        }
    }

    /// Whether `name` is a host of this inventory or the implicit `localhost`.
    pub fn has_host(&self, name: &str) -> bool {
        self.hosts.contains_key(name) || IMPLICIT_LOCAL.contains(&name)
    }

    /// Direct parents of a group; groups nobody lists as a child hang off `all`.
    pub(crate) fn parents_of(&self, group: &str) -> Vec<&str> {
        if group == "all" {
            return Vec::new();
        }
        let mut parents: Vec<&str> = self
            .groups
            .values()
            .filter(|g| g.children.iter().any(|c| c == group))
            .map(|g| g.name.as_str())
            .collect();
        if parents.is_empty() {
            parents.push("all");
        }
        parents
    }

    /// Longest distance from `all`, which orders group variables (a child beats its parent).
    fn depth(&self, group: &str) -> usize {
        fn walk(inv: &Inventory, g: &str, seen: &mut Vec<String>) -> usize {
            if g == "all" || seen.iter().any(|s| s == g) {
                return 0;
            }
            seen.push(g.to_string());
            let d = inv
                .parents_of(g)
                .into_iter()
                .map(|p| walk(inv, p, seen) + 1)
                .max()
                .unwrap_or(0);
            seen.pop();
            d
        }
        walk(self, group, &mut Vec::new())
    }

    /// Every group `host` belongs to (directly or through children), `all` first, then by
    /// depth, `ansible_group_priority` and name: the order Ansible merges group variables in.
    pub fn groups_of(&self, host: &str) -> Vec<String> {
        let mut direct: Vec<&str> = self
            .groups
            .values()
            .filter(|g| g.name != "all" && g.hosts.contains(host))
            .map(|g| g.name.as_str())
            .collect();
        if direct.is_empty() && self.hosts.contains_key(host) {
            direct.push("ungrouped");
        }
        let mut all: Vec<String> = vec!["all".to_string()];
        let mut stack: Vec<&str> = direct;
        while let Some(g) = stack.pop() {
            if all.iter().any(|a| a == g) {
                continue;
            }
            all.push(g.to_string());
            stack.extend(self.parents_of(g));
        }
        let mut keyed: Vec<(usize, i64, String)> = all
            .into_iter()
            .map(|g| (self.depth(&g), self.priority(&g), g))
            .collect();
        keyed.sort();
        keyed.into_iter().map(|(_, _, g)| g).collect()
    }

    fn priority(&self, group: &str) -> i64 {
        let Some(g) = self.groups.get(group) else {
            return 1;
        };
        let v = g
            .dir_vars
            .get("ansible_group_priority")
            .or_else(|| g.vars.get("ansible_group_priority"));
        match v {
            Some(Value::Number(n)) => n.as_i64().unwrap_or(1),
            Some(Value::String(s)) => s.trim().parse().unwrap_or(1),
            _ => 1,
        }
    }

    /// Hosts of a group including those of its descendants (breadth first, each once);
    /// `all` lists every host in inventory order.
    pub fn hosts_of_group(&self, group: &str) -> Vec<String> {
        if group == "all" {
            // ansible-core's `all` lists its own hosts first (`add_host`'s, a YAML
            // inventory's `all: hosts:`), then its groups' (`Group._get_hosts`).
            let direct = self.groups.get("all").map(|g| &g.hosts);
            let mut out: Vec<String> = direct.into_iter().flatten().cloned().collect();
            out.extend(
                self.hosts
                    .keys()
                    .filter(|h| !direct.is_some_and(|d| d.contains(h.as_str())))
                    .cloned(),
            );
            return out;
        }
        if group == "ungrouped" {
            return self
                .hosts
                .keys()
                .filter(|h| {
                    self.groups
                        .get("ungrouped")
                        .is_some_and(|g| g.hosts.contains(h.as_str()))
                        || !self
                            .groups
                            .values()
                            .any(|g| g.name != "all" && g.hosts.contains(h.as_str()))
                })
                .cloned()
                .collect();
        }
        let mut out: indexmap::IndexSet<String> = indexmap::IndexSet::new();
        let mut order: Vec<&str> = vec![group];
        let mut i = 0;
        while i < order.len() {
            if let Some(g) = self.groups.get(order[i]) {
                for h in &g.hosts {
                    out.insert(h.clone());
                }
                for c in &g.children {
                    if !order.contains(&c.as_str()) {
                        order.push(c);
                    }
                }
            }
            i += 1;
        }
        out.into_iter().collect()
    }

    /// The `groups` magic variable: every group name to its hosts.
    pub fn groups_map(&self) -> VarMap {
        self.groups
            .keys()
            .map(|g| {
                let hosts = self.hosts_of_group(g).into_iter().map(Value::String);
                (g.clone(), Value::Array(hosts.collect()))
            })
            .collect()
    }

    /// A host's inventory variables merged in Ansible's order (`VARIABLE_PRECEDENCE`):
    /// inventory-file group vars (all < parent < child) < `group_vars/all` beside the
    /// inventory < beside the playbook < the other `group_vars/<group>` beside the inventory
    /// < beside the playbook < inventory-file host vars < `host_vars/<host>` beside the
    /// inventory < beside the playbook. Values are not templated yet. The implicit
    /// `localhost` gets `ansible_connection: local`.
    pub fn host_vars(&self, host: &str) -> VarMap {
        let mut out = VarMap::new();
        let groups: Vec<&Group> = self
            .groups_of(host)
            .iter()
            .filter_map(|g| self.groups.get(g))
            .collect();
        for g in &groups {
            crate::vars::combine(&mut out, &g.vars);
        }
        let (all, others): (Vec<&Group>, Vec<&Group>) =
            groups.iter().partition(|g| g.name == "all");
        for set in [all, others] {
            for g in &set {
                crate::vars::combine(&mut out, &g.dir_vars);
            }
            for g in &set {
                crate::vars::combine(&mut out, &g.playbook_dir_vars);
            }
        }
        match self.hosts.get(host) {
            Some(h) => {
                crate::vars::combine(&mut out, &h.vars);
                crate::vars::combine(&mut out, &h.dir_vars);
                crate::vars::combine(&mut out, &h.playbook_dir_vars);
            }
            None if IMPLICIT_LOCAL.contains(&host) => {
                out.insert("ansible_connection".into(), Value::from("local"));
                if let Some(v) = self.implicit_vars.get(host) {
                    crate::vars::combine(&mut out, v);
                }
            }
            None => {}
        }
        out
    }

    /// The per-host magic variables Ansible defines from the inventory.
    pub fn magic_vars(&self, host: &str) -> VarMap {
        let mut names: Vec<String> = self
            .groups_of(host)
            .into_iter()
            .filter(|g| g != "all" && g != "ungrouped")
            .collect();
        names.sort();
        let short = host.split('.').next().unwrap_or(host);
        let mut m = VarMap::new();
        m.insert("inventory_hostname".into(), Value::from(host));
        m.insert("inventory_hostname_short".into(), Value::from(short));
        m.insert("group_names".into(), Value::from(names));
        m
    }
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;
