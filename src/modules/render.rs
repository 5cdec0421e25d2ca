//! What a task would write, without a host (`kinit plan --render`): the context, result types
//! and path helpers of the modules' `render` functions. A module that produces a file (a
//! rendered template, a copied file or `content`, a libvirt domain or network definition, the
//! files of a seed or config ISO, the PowerShell a `win_shell` sends) answers with that file,
//! built by the same functions its `run` uses; `modules::render_files` is the one dispatch.

use std::path::{Path, PathBuf};

use super::{ModuleError, Render};
use crate::vars::VarMap;

/// What a module's render may use: no connection, only local files and the task's variables.
pub struct RenderCtx<'a> {
    /// The task's name (names a rendered script).
    pub task: &'a str,
    /// Where relative `src` paths are looked up (as `ModuleCtx::search_paths`).
    pub search_paths: &'a [PathBuf],
    pub render: &'a dyn Render,
    pub vars: &'a VarMap,
}

impl RenderCtx<'_> {
    pub fn find_local(&self, path: &str) -> Result<PathBuf, ModuleError> {
        super::find_local(self.search_paths, path)
    }
}

/// Which machine a rendered file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The machine the task runs on (its `delegate_to` target, or the host): where a
    /// `template` or `copy` puts its file, the hypervisor a network is defined on.
    Target,
    /// The inventory host the task runs for: a guest's domain and seed, built on its
    /// hypervisor but describing the guest.
    Host,
}

/// One file of a task, named relative to its owner's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedFile {
    pub name: String,
    pub content: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub owner: Owner,
    pub files: Vec<RenderedFile>,
}

impl Rendered {
    pub fn target(files: Vec<RenderedFile>) -> Self {
        Self {
            owner: Owner::Target,
            files,
        }
    }
    pub fn host(files: Vec<RenderedFile>) -> Self {
        Self {
            owner: Owner::Host,
            files,
        }
    }
}

/// A path on a host as a relative path under its folder: `/etc/kubernetes/x.yaml` becomes
/// `files/etc/kubernetes/x.yaml`, `C:\k\start.ps1` becomes `files/C/k/start.ps1`. Parts that
/// would climb out (`..`) are dropped.
pub fn host_path(path: &str) -> String {
    let parts: Vec<&str> = path
        .split(['/', '\\'])
        .map(|p| p.trim_end_matches(':'))
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
        .collect();
    format!("files/{}", parts.join("/"))
}

/// `dest` with `base` appended when `dest` names a folder (ends in a separator).
pub fn dest_file(dest: &str, base: Option<&str>) -> String {
    match base {
        Some(b) if dest.ends_with('/') || dest.ends_with('\\') => format!("{dest}{b}"),
        _ => dest.to_string(),
    }
}

/// A task name as a file name: lowercase words joined by `-`.
pub fn slug(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') && !s.is_empty() {
            s.push('-');
        }
    }
    let s = s.trim_end_matches('-');
    if s.is_empty() {
        "task".into()
    } else {
        s.chars().take(80).collect()
    }
}

/// The local file `src`, read.
pub fn read_local(path: &Path) -> Result<Vec<u8>, ModuleError> {
    std::fs::read(path).map_err(|e| ModuleError::Failed {
        msg: format!("cannot read `{}`: {e}", path.display()),
    })
}

/// `copy`/`win_copy`: the file `content` or the local file `src` makes at `dest`; `None` for
/// a copy on the host (`remote_src`, nothing local to show) or of a local folder.
pub fn copied(
    ctx: &RenderCtx<'_>,
    remote_src: bool,
    content: Option<String>,
    src: Option<&str>,
    dest: &str,
    module: &'static str,
) -> Result<Option<Rendered>, ModuleError> {
    if remote_src {
        return Ok(None);
    }
    let (bytes, base) = match (content, src) {
        (Some(c), None) => (c.into_bytes(), None),
        (None, Some(src)) => {
            let local = ctx.find_local(src)?;
            if local.is_dir() {
                return Ok(None);
            }
            let base = local.file_name().map(|n| n.to_string_lossy().into_owned());
            (read_local(&local)?, base)
        }
        _ => {
            return Err(ModuleError::BadArgs {
                module,
                detail: "exactly one of `src` or `content` is required".into(),
            });
        }
    };
    Ok(Some(Rendered::target(vec![RenderedFile {
        name: host_path(&dest_file(dest, base.as_deref())),
        content: bytes,
    }])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_paths() {
        assert_eq!(
            host_path("/etc/kubernetes/kinit/kubeadm-init.yaml"),
            "files/etc/kubernetes/kinit/kubeadm-init.yaml"
        );
        assert_eq!(host_path(r"C:\k\start.ps1"), "files/C/k/start.ps1");
        assert_eq!(host_path("/a/../../b"), "files/a/b");
        assert_eq!(dest_file("/tmp/", Some("x")), "/tmp/x");
        assert_eq!(
            slug("Node components and kubeadm join (start.ps1)"),
            "node-components-and-kubeadm-join-start-ps1"
        );
    }
}
