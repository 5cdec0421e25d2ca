//! `group_vars/` and `host_vars/` folders beside an inventory (or a playbook): files named
//! after a group or host (`web`, `web.yml`, `web.yaml`, `web.json`) or folders of such files,
//! read in sorted order, later files winning.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Inventory, InventoryError};
use crate::vars::VarMap;

const EXTENSIONS: [&str; 4] = ["", ".yml", ".yaml", ".json"];

/// Load `<dir>/group_vars` and `<dir>/host_vars` into the `dir_vars` of the inventory's
/// groups and hosts. Files for names the inventory does not know are ignored, as Ansible does.
pub fn load_vars_dirs(inv: &mut Inventory, dir: &Path) -> Result<(), InventoryError> {
    let (groups, hosts) = names(inv);
    inv.var_dirs.push((dir.to_path_buf(), false));
    load_into(inv, dir, false, &groups, &hosts)
}

/// Every group and host the inventory knows now.
fn names(inv: &Inventory) -> (Vec<String>, Vec<String>) {
    (
        inv.groups.keys().cloned().collect(),
        inv.hosts.keys().cloned().collect(),
    )
}

/// Read the files of groups and hosts created while the playbook runs (`group_by`,
/// `add_host`) from the folders the inventory was read with, as ansible-core's
/// `host_group_vars` plugin reads them whenever it is asked for a group's variables.
pub fn load_new_names(
    inv: &mut Inventory,
    groups: &[String],
    hosts: &[String],
) -> Result<(), InventoryError> {
    for (dir, playbook) in inv.var_dirs.clone() {
        load_into(inv, &dir, playbook, groups, hosts)?;
    }
    Ok(())
}

/// The same beside a playbook, into `playbook_dir_vars` (they win over the inventory's, as
/// ansible-core's `host_group_vars` plugin run for the playbook's folder). A folder already
/// read as the inventory's is not read again.
pub fn load_playbook_vars_dirs(
    inv: &mut Inventory,
    dir: &Path,
    inventory_dirs: &[PathBuf],
) -> Result<(), InventoryError> {
    let same = |d: &PathBuf| std::fs::canonicalize(d).ok() == std::fs::canonicalize(dir).ok();
    if inventory_dirs.iter().any(same) {
        return Ok(());
    }
    let (groups, hosts) = names(inv);
    inv.var_dirs.push((dir.to_path_buf(), true));
    load_into(inv, dir, true, &groups, &hosts)
}

fn load_into(
    inv: &mut Inventory,
    dir: &Path,
    playbook: bool,
    groups: &[String],
    hosts: &[String],
) -> Result<(), InventoryError> {
    for g in groups {
        let vars = vars_for(&dir.join("group_vars"), g, &mut inv.warnings)?;
        let group = inv.group_mut(g);
        let layer = match playbook {
            true => &mut group.playbook_dir_vars,
            false => &mut group.dir_vars,
        };
        crate::vars::combine(layer, &vars);
    }
    for h in hosts {
        let vars = vars_for(&dir.join("host_vars"), h, &mut inv.warnings)?;
        if let Some(host) = inv.hosts.get_mut(h) {
            let layer = match playbook {
                true => &mut host.playbook_dir_vars,
                false => &mut host.dir_vars,
            };
            crate::vars::combine(layer, &vars);
        }
    }
    for name in super::IMPLICIT_LOCAL {
        if inv.hosts.contains_key(name) {
            continue;
        }
        let vars = vars_for(&dir.join("host_vars"), name, &mut inv.warnings)?;
        if !vars.is_empty() {
            crate::vars::combine(
                inv.implicit_vars.entry(name.to_string()).or_default(),
                &vars,
            );
        }
    }
    Ok(())
}

/// Everything `<base>/<name>{,.yml,.yaml,.json}` and `<base>/<name>/**` define.
fn vars_for(base: &Path, name: &str, warnings: &mut Vec<String>) -> Result<VarMap, InventoryError> {
    let mut out = VarMap::new();
    if !base.is_dir() {
        return Ok(out);
    }
    for ext in EXTENSIONS {
        let p = base.join(format!("{name}{ext}"));
        if p.is_file() {
            crate::vars::combine(&mut out, &read_vars_file(&p, warnings)?);
        } else if ext.is_empty() && p.is_dir() {
            for file in files_under(&p)? {
                crate::vars::combine(&mut out, &read_vars_file(&file, warnings)?);
            }
        }
    }
    Ok(out)
}

/// Variable files in a folder, recursively, sorted by path; hidden and backup files skipped.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>, InventoryError> {
    let read = |source| InventoryError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        let fname = p.file_name().and_then(|f| f.to_str()).unwrap_or_default();
        if fname.starts_with('.') || fname.ends_with('~') {
            continue;
        }
        if p.is_dir() {
            out.extend(files_under(&p)?);
        } else {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            if matches!(ext, "yml" | "yaml" | "json" | "") {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// A YAML or JSON file holding one mapping of variables (an empty file is no variables).
/// What the reader notices (a key given twice) is added to `warnings`.
fn read_vars_file(path: &Path, warnings: &mut Vec<String>) -> Result<VarMap, InventoryError> {
    let text = std::fs::read_to_string(path).map_err(|source| InventoryError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    // group_vars/host_vars files may be vaulted whole or hold `!vault` values.
    let text = crate::vault::file_text(path, text)?;
    let value = super::read_yaml(path, &text, warnings)?;
    match value {
        Value::Null => Ok(VarMap::new()),
        Value::Object(m) => Ok(m),
        other => Err(InventoryError::NotAMapping {
            path: path.to_path_buf(),
            found: kind_name(&other),
        }),
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
