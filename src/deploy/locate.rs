//! Where the bundled cluster content (`playbooks/site.yml` and `roles/`) is found, first hit
//! wins: `--playbook-dir`, `KINIT_PLAYBOOK_DIR`, `<exe>/../share/kinit/playbooks` (an
//! installed kinit), then the source tree kinit was built from.

use std::path::{Path, PathBuf};

pub const ENTRY: &str = "site.yml";

#[derive(Debug, thiserror::Error)]
#[error(
    "cannot find the cluster playbooks (`{ENTRY}`); looked in: {}. \
     Pass `--playbook-dir DIR` or set KINIT_PLAYBOOK_DIR to the folder holding `{ENTRY}`",
    tried.iter().map(|p| format!("`{}`", p.display())).collect::<Vec<_>>().join(", ")
)]
pub struct NotFound {
    pub tried: Vec<PathBuf>,
}

/// The playbook folder (holding `site.yml`). A folder named explicitly (flag or variable)
/// must hold it; the built-in candidates are tried in turn.
pub fn playbook_dir(flag: Option<&Path>) -> Result<PathBuf, NotFound> {
    let mut tried = Vec::new();
    let explicit = flag
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("KINIT_PLAYBOOK_DIR").map(PathBuf::from));
    let candidates: Vec<PathBuf> = match explicit {
        Some(p) => vec![p],
        None => {
            let mut c = Vec::new();
            if let Some(bin) = std::env::current_exe().ok().and_then(|e| {
                e.parent()
                    .and_then(Path::parent)
                    .map(|p| p.join("share/kinit/playbooks"))
            }) {
                c.push(bin);
            }
            c.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("playbooks"));
            c
        }
    };
    for c in candidates {
        if c.join(ENTRY).is_file() {
            return Ok(c);
        }
        tried.push(c);
    }
    Err(NotFound { tried })
}

/// Role folders for a playbook folder: `roles/` beside it, then `KINIT_ROLES_PATH`.
pub fn roles_path(playbook_dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(parent) = playbook_dir.parent() {
        v.push(parent.join("roles"));
    }
    if let Some(extra) = std::env::var_os("KINIT_ROLES_PATH") {
        v.extend(std::env::split_paths(&extra));
    }
    v
}
