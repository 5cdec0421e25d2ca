//! Turning `-i` arguments into an `Inventory`: INI or YAML/JSON files, folders of them, and
//! comma-separated host lists (`-i a,b,`), then the `group_vars/`/`host_vars/` beside them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Inventory, InventoryError, ini, ranges, vars_dirs, yaml};
use crate::vars::VarMap;

/// Extensions Ansible skips when an inventory is a folder (`INVENTORY_IGNORE_EXTS`).
const IGNORED_IN_DIRS: [&str; 13] = [
    ".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".ini", ".cfg",
    ".retry",
];

/// Load every source in order into one inventory; a source that does not exist is an error.
pub fn load(sources: &[String]) -> Result<Inventory, InventoryError> {
    let inv = load_for_playbooks(sources, &[])?;
    match inv.unparsed.first() {
        Some(path) => Err(missing(path)),
        None => Ok(inv),
    }
}

/// Load every source in order into one inventory, then the `group_vars/`/`host_vars/`
/// beside the playbooks (`playbook_dirs`), which win over the inventory's. A source that is
/// neither a file, a folder nor a host list is skipped into `unparsed` (its absolute path), as
/// ansible-core skips a source no inventory plugin accepts; one that exists and is invalid is
/// an error.
pub fn load_for_playbooks(
    sources: &[String],
    playbook_dirs: &[PathBuf],
) -> Result<Inventory, InventoryError> {
    let mut inv = Inventory::default();
    let mut dirs = Vec::new();
    for s in sources {
        match load_source(&mut inv, s) {
            Ok(Some(dir)) => dirs.push(dir),
            Ok(None) => {}
            Err(InventoryError::Read { path, source })
                if source.kind() == std::io::ErrorKind::NotFound && !path.exists() =>
            {
                inv.unparsed
                    .push(std::path::absolute(&path).unwrap_or(path));
            }
            Err(e) => return Err(e),
        }
    }
    for dir in &dirs {
        vars_dirs::load_vars_dirs(&mut inv, dir)?;
    }
    for dir in playbook_dirs {
        vars_dirs::load_playbook_vars_dirs(&mut inv, dir, &dirs)?;
    }
    inv.sources = super::Sources {
        sources: sources.to_vec(),
        playbook_dirs: playbook_dirs.to_vec(),
    };
    Ok(inv)
}

/// Add one `-i` source to `inv`; returns the folder whose `group_vars/`/`host_vars/` apply.
pub fn load_source(inv: &mut Inventory, source: &str) -> Result<Option<PathBuf>, InventoryError> {
    let path = Path::new(source);
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| InventoryError::Read {
                path: path.to_path_buf(),
                source: e,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                !name.starts_with('.') && !IGNORED_IN_DIRS.iter().any(|x| name.ends_with(x))
            })
            .collect();
        files.sort();
        for f in files {
            load_file(inv, &f)?;
        }
        return Ok(Some(path.to_path_buf()));
    }
    if path.exists() {
        load_file(inv, path)?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        return Ok(Some(if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        }));
    }
    if source.contains(',') {
        for item in source.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, port) = ini::split_port(item);
            let mut vars = VarMap::new();
            if let Some(p) = port {
                vars.insert("ansible_port".into(), Value::from(p));
            }
            for host in ranges::expand(name)? {
                inv.add_host(&host, Some("ungrouped"), vars.clone());
            }
        }
        return Ok(None);
    }
    Err(missing(path))
}

fn missing(path: &Path) -> InventoryError {
    InventoryError::Read {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file or folder (a host list needs a comma, e.g. `host1,`)",
        ),
    }
}

fn load_file(inv: &mut Inventory, path: &Path) -> Result<(), InventoryError> {
    let text = std::fs::read_to_string(path).map_err(|source| InventoryError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    // An inventory file may be vaulted whole, as Ansible's inventory plugins accept.
    let text = crate::vault::file_text(path, text)?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if matches!(ext, "yml" | "yaml" | "json") {
        yaml::parse(inv, path, &text)
    } else {
        ini::parse(inv, path, &text)
    }
}
