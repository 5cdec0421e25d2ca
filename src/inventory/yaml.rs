//! Ansible YAML (and JSON) inventories: groups at the top level (usually `all`), each with
//! `hosts`, `vars` and `children`. Parsed into typed structs so every mistake is reported
//! with its file, line and column.

use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use super::ini::split_port;
use super::{Inventory, InventoryError, ranges};
use crate::vars::VarMap;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct YamlGroup {
    /// Host name (or range) to its variables.
    #[serde(default)]
    hosts: Option<IndexMap<String, Option<VarMap>>>,
    #[serde(default)]
    vars: Option<VarMap>,
    /// Child group name to its own definition.
    #[serde(default)]
    children: Option<IndexMap<String, Option<YamlGroup>>>,
}

/// Parse YAML inventory text from `path` into `inv`.
pub fn parse(inv: &mut Inventory, path: &Path, text: &str) -> Result<(), InventoryError> {
    if text.trim().is_empty() {
        return Ok(());
    }
    let doc = super::read_yaml(path, text, &mut inv.warnings)?;
    let top: Option<IndexMap<String, Option<YamlGroup>>> = match serde_json::from_value(doc) {
        Ok(top) => top,
        // The document reads but is not an inventory's shape. serde_yaml on the same text
        // names the line and column of the offending key; the values (decrypted, YAML 1.1)
        // came from `crate::yaml`.
        Err(shape) => {
            return Err(
                match serde_yaml::from_str::<Option<IndexMap<String, Option<YamlGroup>>>>(text) {
                    Err(source) => InventoryError::Yaml {
                        path: path.to_path_buf(),
                        source,
                    },
                    Ok(_) => InventoryError::Syntax {
                        path: path.to_path_buf(),
                        line: 0,
                        message: shape.to_string(),
                    },
                },
            );
        }
    };
    for (name, group) in top.unwrap_or_default() {
        add_group(inv, path, None, &name, group.unwrap_or_default())?;
    }
    Ok(())
}

fn add_group(
    inv: &mut Inventory,
    path: &Path,
    parent: Option<&str>,
    name: &str,
    group: YamlGroup,
) -> Result<(), InventoryError> {
    inv.group_mut(name);
    if let Some(parent) = parent
        && parent != "all"
    {
        inv.add_child(parent, name)
            .map_err(|l| InventoryError::GroupLoop {
                path: path.to_path_buf(),
                message: l.to_string(),
            })?;
    }
    if let Some(vars) = group.vars {
        crate::vars::combine(&mut inv.group_mut(name).vars, &vars);
    }
    for (pattern, vars) in group.hosts.unwrap_or_default() {
        let mut vars = vars.unwrap_or_default();
        let (pattern, port) = split_port(&pattern);
        if let Some(port) = port {
            vars.insert("ansible_port".into(), Value::from(port));
        }
        for host in ranges::expand(pattern)? {
            inv.add_host(&host, Some(name), vars.clone());
        }
    }
    for (child, def) in group.children.unwrap_or_default() {
        add_group(inv, path, Some(name), &child, def.unwrap_or_default())?;
    }
    Ok(())
}
