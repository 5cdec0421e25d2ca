//! Modules kinit does not implement that are installed where ansible-playbook finds them: in
//! a collection (the `collections/` folder beside the playbook, ansible.cfg's
//! `collections_path`, then the controller Python's `sys.path`) or in the controller's
//! ansible-core (`ansible/modules/`), short names also in the collections a play's or role's
//! `collections` keyword lists (kept while the playbook loads; a file first included at run
//! time sees none), with the redirects that route a name elsewhere:
//! ansible-core's `config/ansible_builtin_runtime.yml` (bare `ufw` is
//! `community.general.ufw`) and a collection's `meta/runtime.yml`
//! (`plugin_routing.modules.<name>.redirect`). kinit runs what it finds as it runs a
//! `library/` module (`modules::pymodule`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use super::Loader;
use crate::modules::pybundle::controller;

/// How many redirects are followed before giving up (a loop of redirects finds nothing).
const MAX_REDIRECTS: usize = 8;

/// The file of the installed module `name` (short, `ansible.builtin.x`, or `ns.coll.x`). A
/// short name is looked up first in the collections the `collections` keyword lists, as
/// ansible-core searches them before `ansible.builtin`.
pub fn module(loader: &Loader, name: &str) -> Option<PathBuf> {
    if !name.contains('.') {
        let listed = loader.collections_in_scope();
        if let Some(found) = listed
            .iter()
            .find_map(|c| find(loader, &format!("{c}.{name}")))
        {
            return Some(found);
        }
    }
    find(loader, name)
}

fn find(loader: &Loader, name: &str) -> Option<PathBuf> {
    let mut name = name.to_string();
    for _ in 0..MAX_REDIRECTS {
        let parts: Vec<&str> = name.split('.').collect();
        let next = match parts.as_slice() {
            [short] | ["ansible", "builtin" | "legacy", short] => {
                let root = controller().ansible.as_ref()?;
                let file = root.join("ansible/modules").join(format!("{short}.py"));
                if file.is_file() {
                    return Some(file);
                }
                redirect(
                    &root.join("ansible/config/ansible_builtin_runtime.yml"),
                    short,
                )?
            }
            [ns, coll, short] => {
                let coll_dir = collection(loader, ns, coll)?;
                let file = coll_dir.join("plugins/modules").join(format!("{short}.py"));
                if is_python_module(&file) {
                    return Some(file);
                }
                redirect(&coll_dir.join("meta/runtime.yml"), short)?
            }
            _ => return None,
        };
        name = next;
    }
    None
}

/// Whether `file` is a Python module kinit can run. A Windows module (`ansible.windows.win_acl`)
/// is PowerShell beside a `.py` file that only documents it: that one is not.
fn is_python_module(file: &Path) -> bool {
    file.is_file() && !file.with_extension("ps1").is_file()
}

/// The folder of the installed collection `ns.coll`, the first found in search order.
fn collection(loader: &Loader, ns: &str, coll: &str) -> Option<PathBuf> {
    let rel = Path::new("ansible_collections").join(ns).join(coll);
    loader
        .collection_roots()
        .iter()
        .chain(controller().collections.iter())
        .map(|r| r.join(&rel))
        .find(|d| d.is_dir())
}

/// Where a routing file sends module `name`, if it redirects it.
fn redirect(file: &Path, name: &str) -> Option<String> {
    static ROUTING: Mutex<Option<HashMap<PathBuf, Value>>> = Mutex::new(None);
    let mut cache = ROUTING.lock().unwrap();
    let map = cache.get_or_insert_with(HashMap::new);
    let routing = map.entry(file.to_path_buf()).or_insert_with(|| {
        std::fs::read_to_string(file)
            .ok()
            .and_then(|t| serde_yaml::from_str::<Value>(&t).ok())
            .unwrap_or_default()
    });
    routing["plugin_routing"]["modules"][name]["redirect"]
        .as_str()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_powershell_module_documented_in_python_is_not_run_as_python() {
        let d = tempfile::tempdir().unwrap();
        for f in ["win_acl.py", "win_acl.ps1", "greet.py"] {
            std::fs::write(d.path().join(f), "").unwrap();
        }
        assert!(!is_python_module(&d.path().join("win_acl.py")));
        assert!(is_python_module(&d.path().join("greet.py")));
        assert!(!is_python_module(&d.path().join("missing.py")));
    }

    #[test]
    fn a_routing_file_redirects_module_names() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("runtime.yml");
        std::fs::write(
            &f,
            "plugin_routing:\n  modules:\n    old:\n      redirect: ns.coll.new\n    gone:\n      tombstone: {}\n",
        )
        .unwrap();
        assert_eq!(redirect(&f, "old").as_deref(), Some("ns.coll.new"));
        assert_eq!(redirect(&f, "gone"), None);
        assert_eq!(redirect(&d.path().join("missing.yml"), "old"), None);
    }
}
