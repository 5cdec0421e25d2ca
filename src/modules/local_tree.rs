//! The local side of `copy` and `win_copy` when `src` is a folder: its subfolders and files,
//! in name order, as paths relative to the folder the host receives, joined with the host's
//! path separator.

use std::path::{Path, PathBuf};

use super::ModuleError;

#[derive(Debug, Default)]
pub struct LocalTree {
    /// Relative folder paths, parents before children.
    pub dirs: Vec<String>,
    /// Relative file paths with the local file each comes from.
    pub files: Vec<(String, PathBuf)>,
}

impl LocalTree {
    /// The first symbolic link at or below `path` (name order), if any.
    pub fn first_link(path: &Path) -> Option<PathBuf> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if meta.file_type().is_symlink() {
            return Some(path.to_path_buf());
        }
        if !meta.is_dir() {
            return None;
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        entries.iter().find_map(|e| Self::first_link(e))
    }

    /// Everything below `dir`, each relative path prefixed with `base` (empty: none) and
    /// its parts joined with `sep`.
    pub fn read(dir: &Path, base: &str, sep: char) -> Result<Self, ModuleError> {
        let mut tree = LocalTree::default();
        tree.walk(dir, base, sep).map_err(|e| ModuleError::Failed {
            msg: format!("cannot read `{}`: {e}", dir.display()),
        })?;
        Ok(tree)
    }

    fn walk(&mut self, dir: &Path, rel: &str, sep: char) -> std::io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}{sep}{name}")
            };
            if e.file_type()?.is_dir() {
                self.dirs.push(r.clone());
                self.walk(&e.path(), &r, sep)?;
            } else {
                self.files.push((r, e.path()));
            }
        }
        Ok(())
    }
}

/// Where relative path `rel` lands under `root` (`root` itself for the empty path).
pub fn remote_path(root: &str, rel: &str, join: impl Fn(&str, &str) -> String) -> String {
    if rel.is_empty() {
        root.to_string()
    } else {
        join(root, rel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_is_sorted_and_joined_with_the_separator() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("b/c")).unwrap();
        std::fs::write(dir.path().join("b/c/f"), "x").unwrap();
        std::fs::write(dir.path().join("a"), "y").unwrap();
        let t = LocalTree::read(dir.path(), "top", '\\').unwrap();
        assert_eq!(t.dirs, ["top\\b", "top\\b\\c"]);
        let rels: Vec<&str> = t.files.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(rels, ["top\\a", "top\\b\\c\\f"]);
        assert_eq!(t.files[1].1, dir.path().join("b/c/f"));
        assert_eq!(remote_path("/d", "", |a, b| format!("{a}/{b}")), "/d");
        assert_eq!(remote_path("/d", "x", |a, b| format!("{a}/{b}")), "/d/x");
    }
}
