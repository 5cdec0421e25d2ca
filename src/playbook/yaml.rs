//! Playbook, role and task files as YAML documents with line numbers.
//!
//! `crate::yaml` reads the text as Ansible does and records the line of every node; `Node`
//! walks the value and its positions side by side. An alias's nodes carry the lines of the
//! anchored node they repeat.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::LoadError;
pub use crate::yaml::Pos;

/// A parsed YAML file: the value as JSON plus the position tree.
#[derive(Debug)]
pub struct Doc {
    pub file: Arc<PathBuf>,
    pub value: Value,
    pub pos: Pos,
    /// What the reader noticed (a key given twice), each naming file and line.
    pub warnings: Vec<String>,
}

/// A value inside a `Doc`, with its file and line.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub file: &'a Arc<PathBuf>,
    pub value: &'a Value,
    pub pos: &'a Pos,
}

static EMPTY: Pos = Pos {
    line: 0,
    children: Vec::new(),
};

impl<'a> Node<'a> {
    pub fn line(&self) -> usize {
        self.pos.line
    }

    /// The value under `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<Node<'a>> {
        let map = self.value.as_object()?;
        let idx = map.keys().position(|k| k == key)?;
        Some(self.child(idx, map.get(key)?))
    }

    /// Key/value pairs of a mapping, in file order.
    pub fn entries(&self) -> Vec<(&'a str, Node<'a>)> {
        match self.value.as_object() {
            Some(map) => map
                .iter()
                .enumerate()
                .map(|(i, (k, v))| (k.as_str(), self.child(i, v)))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Items of a sequence.
    pub fn items(&self) -> Vec<Node<'a>> {
        match self.value.as_array() {
            Some(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| self.child(i, v))
                .collect(),
            None => Vec::new(),
        }
    }

    fn child(&self, idx: usize, value: &'a Value) -> Node<'a> {
        let pos = match self.pos.children.get(idx) {
            Some(p) => p,
            // An alias (or any mismatch) has no positions below it: keep the parent's line.
            None => self.pos,
        };
        Node {
            file: self.file,
            value,
            pos: if pos.line == 0 { self.pos } else { pos },
        }
    }
}

impl Doc {
    pub fn root(&self) -> Node<'_> {
        Node {
            file: &self.file,
            value: &self.value,
            pos: if self.pos.line == 0 {
                &EMPTY
            } else {
                &self.pos
            },
        }
    }

    /// Read and parse `path` (one document).
    pub fn load(path: &Path) -> Result<Doc, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        // A whole-file vault (`ansible-vault encrypt vars.yml`) is read as its plaintext.
        let text = crate::vault::file_text(path, text)?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Doc, LoadError> {
        let vault = crate::vault::current();
        let parsed = crate::yaml::parse(text, path, Some(&vault)).map_err(|e| match e {
            crate::yaml::YamlError::Vault(d) => LoadError::from(d),
            e => LoadError::Syntax {
                file: path.to_path_buf(),
                line: e.line(),
                detail: e.detail_after_line(),
            },
        })?;
        Ok(Doc {
            file: Arc::new(path.to_path_buf()),
            value: parsed.value,
            pos: parsed.pos,
            warnings: parsed.warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_null_tag_is_null_as_pyyaml_reads_it() {
        let text = "a: !!null\nb: !!null   # none\nc: !!null null\nd: '!!null'\n";
        let doc = Doc::parse(Path::new("v.yml"), text).unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"a": null, "b": null, "c": null, "d": "!!null"})
        );
        assert_eq!(doc.root().get("b").unwrap().line(), 2);
    }

    #[test]
    fn nodes_know_their_lines() {
        let text = "- hosts: all\n  tasks:\n    - name: a\n      debug: msg=x\n\n    - name: b\n      when: x\n";
        let doc = Doc::parse(Path::new("p.yml"), text).unwrap();
        let root = doc.root();
        let play = root.items()[0];
        assert_eq!(play.line(), 1);
        let tasks = play.get("tasks").unwrap().items();
        assert_eq!(tasks[0].line(), 3);
        assert_eq!(tasks[1].line(), 6);
        assert_eq!(tasks[1].get("when").unwrap().line(), 7);
    }

    #[test]
    fn syntax_error_has_line() {
        let err = Doc::parse(Path::new("p.yml"), "- a: 1\n  b: [\n").unwrap_err();
        assert!(
            matches!(err, LoadError::Syntax { line, .. } if line >= 2),
            "{err}"
        );
    }
}
