//! YAML as Ansible reads it, with the line of every node.
//!
//! Ansible loads YAML with PyYAML over libyaml, which is YAML 1.1: `enabled: no` is false,
//! `mode: 0644` is 420, merge keys (`<<: *defaults`) are applied, and a key given twice keeps
//! its last value with a warning. kinit builds its values from the events of `libyaml-safer`
//! (libyaml in safe Rust: the same grammar, so the same texts are accepted and refused) with
//! the same rules (`scalar` holds PyYAML's resolver and constructors), so every loader (playbooks,
//! roles, vars files, inventories, `-e`, `from_yaml`) reads a document as ansible-playbook
//! does. The same pass records the line of every node (`Pos`), which error messages name, and
//! decrypts `!vault` values.
//!
//! Tags: `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!map`, `!!seq` and `!!set` construct
//! as PyYAML's safe constructor does; `!!timestamp` and `!!binary` keep their text (PyYAML
//! makes a datetime and bytes); `!!omap` and `!!pairs` keep their list of one-key mappings
//! (PyYAML makes pairs; Ansible deprecates both); `!vault`/`!vault-encrypted` are decrypted.
//! `!unsafe` marks text that Ansible never templates: kinit resolves the scalar as if it had no
//! tag and turns a string holding template markers into a template of exactly that text
//! (`untemplated`). Any other tag is refused with PyYAML's message, as ansible-playbook
//! refuses it.

mod scalar;

use std::collections::HashMap;
use std::path::Path;

use indexmap::IndexMap;
use libyaml_safer::{EventData, Parser, ScalarStyle};
use serde_json::{Map, Value};

use crate::vault::{DecryptError, Vault, VaultError};

/// Positions of one YAML node and its children (mapping values in key order, or items).
#[derive(Debug, Default, Clone)]
pub struct Pos {
    pub line: usize,
    pub children: Vec<Pos>,
}

/// A parsed document: its value as JSON, where each node is, and what the reader noticed.
#[derive(Debug)]
pub struct Parsed {
    pub value: Value,
    pub pos: Pos,
    /// Ansible's warnings about the text (a key given twice).
    pub warnings: Vec<String>,
}

/// Why a document could not be read. Lines are 1-based.
#[derive(Debug, Clone, thiserror::Error)]
pub enum YamlError {
    #[error("{msg} at line {line} column {column}{}", context.as_ref().map(|c| format!(", {c}")).unwrap_or_default())]
    Syntax {
        line: usize,
        column: usize,
        msg: String,
        /// What the parser was in (`while parsing a block mapping at line 1 column 3`).
        context: Option<String>,
    },
    #[error("expected a single document in the stream, but found another document (line {line})")]
    SecondDocument { line: usize },
    #[error("could not determine a constructor for the tag '{tag}' (line {line})")]
    UnknownTag { line: usize, tag: String },
    #[error("{msg} (line {line})")]
    Construct { line: usize, msg: String },
    #[error(transparent)]
    Vault(#[from] DecryptError),
}

impl YamlError {
    /// The line the problem is on (0 when unknown).
    pub fn line(&self) -> usize {
        match self {
            YamlError::Syntax { line, .. }
            | YamlError::SecondDocument { line }
            | YamlError::UnknownTag { line, .. }
            | YamlError::Construct { line, .. } => *line,
            YamlError::Vault(e) => e.line.unwrap_or(0),
        }
    }

    /// The problem and, for a syntax error, its column: for messages that name file and line.
    pub fn detail_after_line(&self) -> String {
        match self {
            YamlError::Syntax {
                msg,
                column,
                context,
                ..
            } => match context {
                Some(c) => format!("{msg} at column {column}, {c}"),
                None => format!("{msg} at column {column}"),
            },
            e => e.detail(),
        }
    }

    /// The column of a syntax error (0 otherwise).
    pub fn column(&self) -> usize {
        match self {
            YamlError::Syntax { column, .. } => *column,
            _ => 0,
        }
    }

    /// The problem without its position, for messages that name it themselves.
    pub fn detail(&self) -> String {
        match self {
            YamlError::Syntax { msg, context, .. } => match context {
                Some(c) => format!("{msg}, {c}"),
                None => msg.clone(),
            },
            YamlError::Construct { msg, .. } => msg.clone(),
            YamlError::SecondDocument { .. } => {
                "expected a single document in the stream, but found another document".into()
            }
            YamlError::UnknownTag { tag, .. } => {
                format!("could not determine a constructor for the tag '{tag}'")
            }
            YamlError::Vault(e) => e.reason.to_string(),
        }
    }
}

/// How deep collections may nest: far beyond any real document, and shallow enough that
/// everything walking a value recursively (templating, dropping it) stays within its stack.
const MAX_DEPTH: usize = 256;

/// How many values aliases may copy in one text.
const ALIAS_BUDGET: usize = 1_000_000;

/// The template function an undecryptable `!vault` value calls: it fails with its argument
/// (registered by kinit's templating).
pub const UNDECRYPTABLE: &str = "__kinit_undecryptable__";

/// Read one document of `text` (from `file`, for vault messages). `vault` decrypts `!vault`
/// values; without it they are an error naming the line. An empty text is null.
pub fn parse(text: &str, file: &Path, vault: Option<&Vault>) -> Result<Parsed, YamlError> {
    let (mut docs, warnings) = build(text, file, vault, false)?;
    let (value, pos) = match docs.pop() {
        Some(n) => (n.value, n.pos),
        None => (Value::Null, Pos::default()),
    };
    Ok(Parsed {
        value,
        pos,
        warnings,
    })
}

/// Read a document's value only (no vault): `-e '{...}'`, the `from_yaml` filter.
pub fn parse_value(text: &str) -> Result<Value, YamlError> {
    parse(text, Path::new(""), None).map(|p| p.value)
}

/// Every document of `text` (no vault): the `from_yaml_all` filter.
pub fn parse_all(text: &str) -> Result<Vec<Value>, YamlError> {
    let (docs, _) = build(text, Path::new(""), None, true)?;
    Ok(docs.into_iter().map(|n| n.value).collect())
}

/// `build_unguarded`, with a panic inside the parser turned into an error naming where it
/// stopped. libyaml-safer 0.3 still has a few `panic!`s and `unwrap`s where libyaml reports an
/// error or reads on (a tag followed by `,` in a flow collection, `[!,`); kinit reports those
/// texts instead of crashing on them, and keeps that crate's panic messages off the terminal.
fn build(
    text: &str,
    file: &Path,
    vault: Option<&Vault>,
    multi: bool,
) -> Result<(Vec<Node>, Vec<String>), YamlError> {
    quiet_parser_panics();
    let last_line = std::cell::Cell::new(0);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        build_unguarded(text, file, vault, multi, &last_line)
    }))
    .unwrap_or_else(|_| {
        Err(YamlError::Syntax {
            line: last_line.get(),
            column: 0,
            msg: "the YAML reader cannot read this text (libyaml-safer stopped on it; \
                  ansible-playbook may read it)"
                .into(),
            context: None,
        })
    })
}

/// The block scalar a text ends in, read with the line break `build_unguarded` added after
/// the text's last line, back to the value PyYAML gives without it: `key: |` and a last line
/// `x` give `x`, not `x\n`. Where that last line is blank the added break only counts with
/// the keep indicator (`|+`), the one chomping that keeps trailing empty lines.
/// `padded` is the text with the break, `header` the byte offset of the scalar's `|`/`>`.
fn unpad_block_scalar(value: &mut String, padded: &str, header: usize) {
    let body = &padded[..padded.len() - 1];
    let last_line_blank = body
        .rsplit(['\n', '\r'])
        .next()
        .is_some_and(|l| l.trim_matches([' ', '\t']).is_empty());
    let keep = padded
        .get(header..)
        .and_then(|h| h.split(['\n', '\r']).next())
        .is_some_and(|h| h.contains('+'));
    if value.ends_with('\n') && (!last_line_blank || keep) {
        value.pop();
    }
}

/// Panics raised inside libyaml-safer are caught by `build`; their messages are not shown.
fn quiet_parser_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info
                .location()
                .is_some_and(|l| l.file().contains("libyaml-safer"))
            {
                return;
            }
            default(info)
        }));
    });
}

fn build_unguarded(
    text: &str,
    file: &Path,
    vault: Option<&Vault>,
    multi: bool,
    last_line: &std::cell::Cell<usize>,
) -> Result<(Vec<Node>, Vec<String>), YamlError> {
    let mut b = Builder {
        stack: Vec::new(),
        anchors: HashMap::new(),
        alias_budget: ALIAS_BUDGET,
        warnings: Vec::new(),
        vault,
        file,
        root: None,
    };
    let mut docs = Vec::new();
    let original_len = text.len();
    // libyaml reads past the end of its input as NUL; libyaml-safer 0.3 has no such padding
    // and panics on a text that ends inside a block scalar (`key: |` and its last line with
    // no line break after it, a common end of a file) or in the backslash of an escape (`"\`).
    // A final line break gives it something to read. The only value it can change is the
    // block scalar the text ends in, which would gain a final newline: `unpad_block_scalar`
    // takes it off again, so the value is PyYAML's.
    let padded;
    let text = if !text.is_empty() && !text.ends_with(['\n', '\r']) {
        padded = format!("{text}\n");
        padded.as_str()
    } else {
        text
    };
    let padded_text = text.len() != original_len;
    let mut input = text.as_bytes();
    let mut parser = Parser::new();
    parser.set_input_string(&mut input);
    loop {
        let event = parser.parse().map_err(|e| {
            let mark = e.problem_mark().unwrap_or_default();
            YamlError::Syntax {
                line: mark.line as usize + 1,
                column: mark.column as usize + 1,
                msg: e.problem().to_string(),
                context: e.context().map(|c| match e.context_mark() {
                    Some(m) => format!("{c} at line {} column {}", m.line + 1, m.column + 1),
                    None => c.to_string(),
                }),
            }
        })?;
        let line = event.start_mark.line as usize + 1;
        last_line.set(line);
        match event.data {
            EventData::StreamEnd => break,
            EventData::DocumentStart { .. } => {
                if !multi && !docs.is_empty() {
                    return Err(YamlError::SecondDocument { line });
                }
            }
            EventData::DocumentEnd { .. } => {
                docs.push(b.root.take().unwrap_or(Node {
                    value: Value::Null,
                    pos: Pos::default(),
                    merge_key: false,
                }));
                // Anchors do not reach across documents.
                b.anchors.clear();
            }
            EventData::Scalar {
                anchor,
                tag,
                mut value,
                style,
                ..
            } => {
                if padded_text
                    && matches!(style, ScalarStyle::Literal | ScalarStyle::Folded)
                    && event.end_mark.index >= original_len as u64
                {
                    unpad_block_scalar(&mut value, text, event.start_mark.index as usize);
                }
                let node = b.scalar(Scalar {
                    text: value,
                    style,
                    tag,
                    line,
                })?;
                b.push(node, anchor);
            }
            EventData::Alias { anchor } => {
                let Some((node, size)) = b.anchors.get(&anchor).cloned() else {
                    return Err(YamlError::Construct {
                        line,
                        msg: format!("found undefined alias '{anchor}'"),
                    });
                };
                // PyYAML shares an aliased object; kinit copies it, so a document of aliases
                // of aliases ("billion laughs") is stopped before it fills memory.
                b.alias_budget = b
                    .alias_budget
                    .checked_sub(size)
                    .ok_or(YamlError::Construct {
                        line,
                        msg: format!("aliases expand to more than {ALIAS_BUDGET} values"),
                    })?;
                b.push(node, None);
            }
            EventData::SequenceStart { .. } | EventData::MappingStart { .. }
                if b.stack.len() >= MAX_DEPTH =>
            {
                return Err(YamlError::Construct {
                    line,
                    msg: format!("collections nested more than {MAX_DEPTH} deep"),
                });
            }
            EventData::SequenceStart { anchor, tag, .. } => {
                check_collection_tag(tag.as_deref(), line, true)?;
                let mut frame = Frame::new(anchor, line, false, false);
                frame.unsafe_ = tag.as_deref() == Some(UNSAFE);
                b.stack.push(frame);
            }
            EventData::MappingStart { anchor, tag, .. } => {
                check_collection_tag(tag.as_deref(), line, false)?;
                let set = tag.as_deref() == Some(SET);
                let mut frame = Frame::new(anchor, line, true, set);
                frame.unsafe_ = tag.as_deref() == Some(UNSAFE);
                b.stack.push(frame);
            }
            EventData::SequenceEnd | EventData::MappingEnd => {
                let mut frame = b.stack.pop().expect("the parser balances collections");
                let anchor = frame.anchor.take();
                let node = b.finish(frame)?;
                b.push(node, anchor);
            }
            EventData::StreamStart { .. } => {}
        }
    }
    Ok((docs, b.warnings))
}

/// A finished node.
#[derive(Debug, Clone)]
struct Node {
    value: Value,
    pos: Pos,
    /// A plain `<<`: a merge key when it stands as a mapping key.
    merge_key: bool,
}

/// A scalar as the parser gives it.
struct Scalar {
    text: String,
    style: ScalarStyle,
    tag: Option<String>,
    line: usize,
}

/// A collection being built.
struct Frame {
    anchor: Option<String>,
    line: usize,
    is_map: bool,
    /// `!!set`: a mapping whose values are all null.
    set: bool,
    /// Tagged `!unsafe`: every string inside is kept from templating.
    unsafe_: bool,
    items: Vec<Node>,
}

impl Frame {
    fn new(anchor: Option<String>, line: usize, is_map: bool, set: bool) -> Self {
        Frame {
            anchor,
            line,
            is_map,
            set,
            unsafe_: false,
            items: Vec::new(),
        }
    }
}

struct Builder<'a> {
    stack: Vec<Frame>,
    /// Anchored nodes, each with how many values it holds.
    anchors: HashMap<String, (Node, usize)>,
    alias_budget: usize,
    warnings: Vec<String>,
    vault: Option<&'a Vault>,
    file: &'a Path,
    root: Option<Node>,
}

/// YAML's core tags (`!!str`...) as the parser spells them.
const CORE: &str = "tag:yaml.org,2002:";
const SET: &str = "tag:yaml.org,2002:set";
const UNSAFE: &str = "!unsafe";

fn check_collection_tag(tag: Option<&str>, line: usize, seq: bool) -> Result<(), YamlError> {
    let Some(t) = tag else { return Ok(()) };
    let known = match t.strip_prefix(CORE) {
        Some(core) if seq => matches!(core, "seq" | "omap" | "pairs"),
        Some(core) => matches!(core, "map" | "set"),
        None => matches!(t, "!" | "!unsafe"),
    };
    if known {
        Ok(())
    } else {
        Err(YamlError::UnknownTag {
            line,
            tag: t.to_string(),
        })
    }
}

impl Builder<'_> {
    fn push(&mut self, node: Node, anchor: Option<String>) {
        if let Some(anchor) = anchor {
            let size = count_values(&node.value);
            self.anchors.insert(anchor, (node.clone(), size));
        }
        match self.stack.last_mut() {
            Some(frame) => frame.items.push(node),
            None => self.root = Some(node),
        }
    }

    fn scalar(&mut self, sc: Scalar) -> Result<Node, YamlError> {
        // `!unsafe` (on this scalar or a collection around it) resolves the scalar as if it had
        // no tag, then keeps its text from templating (ansible-core's
        // `construct_yaml_unsafe`). Mapping keys are never templated.
        let is_key = self
            .stack
            .last()
            .is_some_and(|f| f.is_map && f.items.len() % 2 == 0);
        let in_unsafe = self.stack.iter().any(|f| f.unsafe_);
        let (tag, unsafe_) = match sc.tag {
            Some(t) if t == UNSAFE => (None, !is_key),
            t => (t, in_unsafe && !is_key),
        };
        let node = self.typed_scalar(Scalar { tag, ..sc })?;
        Ok(if unsafe_ {
            Node {
                value: untemplated(node.value),
                ..node
            }
        } else {
            node
        })
    }

    /// A scalar's value from its text, style and tag.
    fn typed_scalar(&mut self, sc: Scalar) -> Result<Node, YamlError> {
        let Scalar {
            text: s,
            style,
            tag,
            line,
        } = sc;
        let leaf = |value| Node {
            value,
            pos: Pos {
                line,
                children: Vec::new(),
            },
            merge_key: false,
        };
        let Some(tag) = tag else {
            if style != ScalarStyle::Plain {
                return Ok(leaf(Value::String(s)));
            }
            return match scalar::plain(&s) {
                scalar::Plain::Value(v) => Ok(leaf(v)),
                scalar::Plain::Merge => Ok(Node {
                    merge_key: true,
                    ..leaf(Value::String(s))
                }),
                scalar::Plain::ValueTag => Err(YamlError::UnknownTag {
                    line,
                    tag: "tag:yaml.org,2002:value".into(),
                }),
            };
        };
        let bad = |what: &str| YamlError::Construct {
            line,
            msg: format!("{what}: {s:?}"),
        };
        let unknown = || YamlError::UnknownTag {
            line,
            tag: tag.clone(),
        };
        let value = match tag.strip_prefix(CORE) {
            Some("str" | "timestamp" | "binary") => Value::String(s.clone()),
            Some("null") => Value::Null,
            Some("bool") => Value::Bool(scalar::bool_word(&s).ok_or_else(|| bad("not a boolean"))?),
            Some("int") => scalar::int(&s).ok_or_else(|| bad("invalid literal for int()"))?,
            Some("float") => {
                scalar::float(&s).ok_or_else(|| bad("could not convert string to float"))?
            }
            Some(_) => return Err(unknown()),
            // `!` alone is the non-specific tag: a string.
            None => match tag.as_str() {
                "!" => Value::String(s.clone()),
                // A decrypted value is data, never a template (ansible-core 2.19 does not
                // trust vaulted text for templating).
                "!vault" | "!vault-encrypted" => self.decrypt(&s, line),
                _ => return Err(unknown()),
            },
        };
        Ok(leaf(value))
    }

    /// The plaintext of a `!vault` value on `line` (the tag's line, as Ansible names it).
    /// A value that cannot be decrypted (no secret, no matching secret, a damaged envelope)
    /// fails where it is used, not where it is read, as in ansible-core 2.19 ("Attempt to
    /// use undecryptable variable"): a play that never reads it runs.
    fn decrypt(&self, cipher: &str, line: usize) -> Value {
        let fail = |reason| DecryptError {
            file: self.file.to_path_buf(),
            line: Some(line),
            reason,
        };
        let plain = match self.vault {
            None => Err(fail(VaultError::NoSecrets)),
            Some(vault) => vault.decrypt_text(cipher).map_err(fail),
        };
        match plain {
            Ok(text) => {
                crate::vault::remember_vaulted_text(&text);
                untemplated(Value::String(text))
            }
            Err(e) => Value::String(undecryptable(&e)),
        }
    }

    fn finish(&mut self, frame: Frame) -> Result<Node, YamlError> {
        let line = frame.line;
        if !frame.is_map {
            let (values, children) = frame.items.into_iter().map(|n| (n.value, n.pos)).unzip();
            return Ok(Node {
                value: Value::Array(values),
                pos: Pos { line, children },
                merge_key: false,
            });
        }
        // PyYAML's flatten_mapping (6.0.2 and later): the pairs of merged mappings come first,
        // in the order of the `<<` list, then the mapping's own pairs; a key keeps the place
        // where it first appears and the value that comes last. So a later mapping of a `<<`
        // list wins over an earlier one, and own keys win over merged ones. (PyYAML before
        // 6.0.2 let the earlier mapping win.)
        let mut merged: Vec<(String, Node, usize)> = Vec::new();
        let mut own: Vec<(String, Node, usize)> = Vec::new();
        let mut items = frame.items.into_iter();
        while let Some(key) = items.next() {
            let value = items.next().unwrap_or(Node {
                value: Value::Null,
                pos: Pos::default(),
                merge_key: false,
            });
            if key.merge_key {
                for src in merge_sources(value, key.pos.line)? {
                    merged.extend(src.into_iter().map(|(k, n)| {
                        let line = n.pos.line;
                        (k, n, line)
                    }));
                }
                continue;
            }
            let key_line = key.pos.line;
            let mut value = if frame.set { null_node(value) } else { value };
            if value.value.is_null() && value.pos.children.is_empty() && value.pos.line > key_line {
                // An empty value (`key:`) is marked where the next token starts: it is on the
                // key's line.
                value.pos.line = key_line;
            }
            own.push((key_text(key.value), value, key_line));
        }
        let mut entries: IndexMap<String, Node> = IndexMap::new();
        for (k, v, key_line) in merged.into_iter().chain(own) {
            if entries.contains_key(&k) {
                // Ansible 2.19 (DUPLICATE_YAML_DICT_KEY=warn) warns about every key that repeats
                // one before it, merged ones included.
                self.warnings.push(format!(
                    "{}:{key_line}: Found duplicate mapping key '{k}'. Using last defined value only.",
                    self.file.display()
                ));
            }
            entries.insert(k, v);
        }
        let mut map = Map::with_capacity(entries.len());
        let mut children = Vec::with_capacity(entries.len());
        for (k, n) in entries {
            map.insert(k, n.value);
            children.push(n.pos);
        }
        Ok(Node {
            value: Value::Object(map),
            pos: Pos { line, children },
            merge_key: false,
        })
    }
}

/// An `!unsafe` string as kinit keeps it from templating: text holding template markers
/// becomes a template that renders to exactly that text (`{{ '...' }}`: quotes joined in with
/// `~ "'" ~`, as kinit's templating reads backslashes in literals as themselves); other
/// values are left as they are.
fn untemplated(v: Value) -> Value {
    match v {
        Value::String(s) if s.contains("{{") || s.contains("{%") || s.contains("{#") => {
            Value::String(format!("{{{{ {} }}}}", literal(&s)))
        }
        other => other,
    }
}

/// A `!vault` value that could not be decrypted, as a template that fails with `error` (file,
/// line and reason; never the ciphertext) when something renders it (see
/// `UNDECRYPTABLE`).
fn undecryptable(error: &DecryptError) -> String {
    format!(
        "{{{{ {}({}) }}}}",
        UNDECRYPTABLE,
        literal(&error.to_string())
    )
}

/// `s` as a template string literal (quotes joined in with `~ "'" ~`, as kinit's templating
/// reads backslashes in literals as themselves).
fn literal(s: &str) -> String {
    let parts: Vec<String> = s.split('\'').map(|p| format!("'{p}'")).collect();
    parts.join(" ~ \"'\" ~ ")
}

fn count_values(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(count_values).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(count_values).sum::<usize>(),
        _ => 1,
    }
}

fn null_node(n: Node) -> Node {
    Node {
        value: Value::Null,
        ..n
    }
}

/// The entries a `<<` value brings: one mapping, or a list of mappings.
fn merge_sources(value: Node, line: usize) -> Result<Vec<Vec<(String, Node)>>, YamlError> {
    let not_mapping = |found: &Value| YamlError::Construct {
        line,
        msg: format!(
            "while constructing a mapping: expected a mapping or list of mappings for merging, but found {}",
            kind(found)
        ),
    };
    match value.value {
        Value::Object(_) => Ok(vec![entries_of(value)]),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, v) in items.into_iter().enumerate() {
                if !v.is_object() {
                    return Err(not_mapping(&v));
                }
                let pos = value.pos.children.get(i).cloned().unwrap_or_default();
                out.push(entries_of(Node {
                    value: v,
                    pos,
                    merge_key: false,
                }));
            }
            Ok(out)
        }
        other => Err(not_mapping(&other)),
    }
}

fn entries_of(n: Node) -> Vec<(String, Node)> {
    let Value::Object(map) = n.value else {
        return Vec::new();
    };
    map.into_iter()
        .enumerate()
        .map(|(i, (k, value))| {
            let pos = n.pos.children.get(i).cloned().unwrap_or_default();
            (
                k,
                Node {
                    value,
                    pos,
                    merge_key: false,
                },
            )
        })
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "mapping",
        Value::Array(_) => "sequence",
        _ => "scalar",
    }
}

/// A mapping key as text: strings as they are, other scalars as JSON writes them (`true`,
/// `1`, `null`), collections as their JSON.
fn key_text(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
