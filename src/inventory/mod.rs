//! The inventory: hosts, groups (with children) and their variables, as Ansible models them.
//! Loaders for INI/YAML files live beside this file; the cluster deployer builds an
//! `Inventory` in code from its expanded spec.

use indexmap::IndexMap;

use crate::vars::VarMap;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Host {
    pub name: String,
    pub vars: VarMap,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    pub name: String,
    /// Hosts directly in this group, in file order.
    pub hosts: Vec<String>,
    pub children: Vec<String>,
    pub vars: VarMap,
}

/// Hosts and groups; `all` and `ungrouped` always exist.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    pub hosts: IndexMap<String, Host>,
    pub groups: IndexMap<String, Group>,
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
        }
    }
}

impl Inventory {
    /// Add (or update) a host and put it in `group` (creating the group when new).
    pub fn add_host(&mut self, name: &str, group: Option<&str>, vars: VarMap) {
        let host = self.hosts.entry(name.to_string()).or_insert_with(|| Host {
            name: name.to_string(),
            vars: VarMap::new(),
        });
        crate::vars::overlay(&mut host.vars, &vars);
        if let Some(g) = group {
            let group = self.group_mut(g);
            if !group.hosts.iter().any(|h| h == name) {
                group.hosts.push(name.to_string());
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
}
