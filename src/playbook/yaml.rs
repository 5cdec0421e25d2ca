//! YAML documents with line numbers.
//!
//! `serde_yaml` gives the values (its scalar typing is the one every other kinit loader uses)
//! but no positions, so the same text is also run through `yaml-rust2`'s event parser, which
//! marks every node. `Node` walks both trees side by side: a value plus the line it starts on.
//! Aliases resolve to a value without positions of their own; their nodes report the alias's
//! line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

use super::LoadError;

/// Positions of one YAML node and its children (mapping values in key order, or items).
#[derive(Debug, Default, Clone)]
pub struct Pos {
    pub line: usize,
    pub children: Vec<Pos>,
}

/// A parsed YAML file: the value as JSON plus the position tree.
#[derive(Debug)]
pub struct Doc {
    pub file: Arc<PathBuf>,
    pub value: Value,
    pub pos: Pos,
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
        let file = Arc::new(path.to_path_buf());
        let text = &*explicit_empty_nulls(text);
        let mut yaml: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| LoadError::Syntax {
                file: path.to_path_buf(),
                line: e.location().map(|l| l.line()).unwrap_or(0),
                detail: e.to_string(),
            })?;
        crate::vault::yaml::decrypt_tags(&mut yaml, text, path, &crate::vault::current())?;
        let value = to_json(yaml);
        let mut rec = Recorder::default();
        let mut parser = Parser::new_from_str(text);
        // serde_yaml accepted the text; if the marker parser still disagrees, lines degrade to 0.
        let pos = match parser.load(&mut rec, false) {
            Ok(()) => rec.root.unwrap_or_default(),
            Err(_) => Pos::default(),
        };
        Ok(Doc { file, value, pos })
    }
}

/// `!!null` with no value (`key: !!null`) is YAML's null, as PyYAML reads it; serde_yaml
/// refuses the empty scalar behind the tag ("expected null"), so such a tag gets an explicit
/// `~`. Lines and columns stay where they were for everything before it on the line.
fn explicit_empty_nulls(text: &str) -> std::borrow::Cow<'_, str> {
    static EMPTY_NULL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?m)!!null([ \t]*)(#.*)?$").expect("valid regex")
    });
    if !text.contains("!!null") {
        return std::borrow::Cow::Borrowed(text);
    }
    EMPTY_NULL.replace_all(text, "!!null ~$1$2")
}

/// Convert a YAML value to JSON (mapping keys become strings; tags are dropped, `!vault`
/// values having been decrypted before).
pub fn to_json(v: serde_yaml::Value) -> Value {
    use serde_yaml::Value as Y;
    match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                serde_json::Number::from_f64(n.as_f64().unwrap_or(0.0))
                    .map(Value::Number)
                    .unwrap_or(Value::Null)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(to_json).collect()),
        Y::Mapping(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    Y::Null => "null".to_string(),
                    other => to_json(other).to_string(),
                };
                out.insert(key, to_json(v));
            }
            Value::Object(out)
        }
        Y::Tagged(t) => to_json(t.value),
    }
}

/// Builds the position tree from marked parser events.
#[derive(Default)]
struct Recorder {
    /// Open collections: (node, is_mapping, items seen).
    stack: Vec<(Pos, bool, usize)>,
    root: Option<Pos>,
}

impl Recorder {
    fn leaf(&mut self, pos: Pos) {
        match self.stack.last_mut() {
            Some((parent, is_map, seen)) => {
                // In a mapping, even positions are keys; only values are kept.
                if !*is_map || *seen % 2 == 1 {
                    parent.children.push(pos);
                }
                *seen += 1;
            }
            None => self.root = Some(pos),
        }
    }
}

impl MarkedEventReceiver for Recorder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line();
        match ev {
            Event::Scalar(..) | Event::Alias(_) => self.leaf(Pos {
                line,
                children: Vec::new(),
            }),
            Event::SequenceStart(..) => self.stack.push((
                Pos {
                    line,
                    children: Vec::new(),
                },
                false,
                0,
            )),
            Event::MappingStart(..) => self.stack.push((
                Pos {
                    line,
                    children: Vec::new(),
                },
                true,
                0,
            )),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((pos, _, _)) = self.stack.pop() {
                    self.leaf(pos);
                }
            }
            _ => {}
        }
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
