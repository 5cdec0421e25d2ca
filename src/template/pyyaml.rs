//! A YAML writer that produces what `yaml.dump` with libyaml's emitter (ansible-core's
//! `AnsibleDumper` is PyYAML's `CSafeDumper` where libyaml is installed) produces for Ansible's
//! `to_yaml` and `to_nice_yaml`: keys sorted unless `sort_keys=False`, indentless sequences
//! under mapping keys, flow style for leaf collections under `default_flow_style=None`, the
//! choice between plain, quoted and block scalars (YAML 1.1 look-alikes such as `yes`, `010`,
//! `1.0` get quoted), line folding at `width`, `default_style`, `explicit_start`/`_end` and
//! `canonical`.
//!
//! One file on purpose: the scalar-style choice and the emitter share libyaml's rules
//! (`emitter.c`), which only read correctly side by side.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value as Json;

use super::pyrepr;

/// `default_flow_style`: `None` picks flow for collections of plain scalars only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowStyle {
    Auto,
    Block,
    Flow,
}

/// A scalar style as `default_style` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    Single,
    Double,
    Literal,
    Folded,
}

impl ScalarStyle {
    /// PyYAML's reading of `default_style`: one of `'"|>`, anything else is no style.
    pub fn from_indicator(s: &str) -> Option<ScalarStyle> {
        match s {
            "'" => Some(ScalarStyle::Single),
            "\"" => Some(ScalarStyle::Double),
            "|" => Some(ScalarStyle::Literal),
            ">" => Some(ScalarStyle::Folded),
            _ => None,
        }
    }
}

/// `yaml.dump`'s keyword arguments that shape the text.
#[derive(Clone, Debug)]
pub struct Options {
    pub indent: Option<i64>,
    pub width: Option<i64>,
    pub flow: FlowStyle,
    pub sort_keys: bool,
    pub explicit_start: bool,
    pub explicit_end: bool,
    pub style: Option<ScalarStyle>,
    pub canonical: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            indent: None,
            width: None,
            flow: FlowStyle::Auto,
            sort_keys: true,
            explicit_start: false,
            explicit_end: false,
            style: None,
            canonical: false,
        }
    }
}

/// Dump `v` as one YAML document.
pub fn dump(v: &Json, opts: &Options) -> String {
    // libyaml's `yaml_emitter_emit_stream_start`: an indent outside 2..=9 is 2; a width
    // not above twice the indent is 80; a negative width is no limit.
    let indent = match opts.indent {
        Some(i @ 2..=9) => i as usize,
        _ => 2,
    };
    let width = match opts.width {
        Some(w) if w < 0 => usize::MAX,
        Some(w) if w as usize > indent * 2 => w as usize,
        _ => 80,
    };
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
        indent: None,
        indents: Vec::new(),
        best_indent: indent,
        best_width: width,
        flow_level: 0,
        open_ended: false,
        opts: opts.clone(),
    };
    if opts.explicit_start || opts.canonical {
        e.indicator("---", true, false, false);
        if opts.canonical {
            e.write_indent();
        }
    }
    e.node(v, Ctx::default());
    if !e.out.ends_with('\n') {
        e.out.push('\n');
    }
    if opts.explicit_end || e.open_ended {
        e.out.push_str("...\n");
    }
    e.out
}

#[derive(Clone, Copy, Default)]
struct Ctx {
    mapping: bool,
    simple_key: bool,
}

struct Emitter {
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
    indent: Option<usize>,
    indents: Vec<Option<usize>>,
    best_indent: usize,
    best_width: usize,
    flow_level: usize,
    /// A `|+`/`>+` scalar kept its last breaks: the document needs its `...` end.
    open_ended: bool,
    opts: Options,
}

/// A scalar a collection may be written in flow style for (`best_style` of PyYAML's
/// representer): a scalar without a style of its own.
fn is_unstyled_scalar(v: &Json, opts: &Options) -> bool {
    !matches!(v, Json::Array(_) | Json::Object(_)) && opts.style.is_none()
}

fn ordered(m: &serde_json::Map<String, Json>, sort: bool) -> Vec<(&String, &Json)> {
    let mut items: Vec<(&String, &Json)> = m.iter().collect();
    if sort {
        items.sort_by(|a, b| a.0.cmp(b.0));
    }
    items
}

impl Emitter {
    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        self.indent = match self.indent {
            None if flow => Some(self.best_indent),
            None => Some(0),
            Some(i) if !indentless => Some(i + self.best_indent),
            Some(i) => Some(i),
        };
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().flatten();
    }

    fn write(&mut self, s: &str) {
        self.column += s.chars().count();
        self.out.push_str(s);
    }

    fn line_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indent(&mut self) {
        let indent = self.indent.unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.line_break();
        }
        if self.column < indent {
            self.whitespace = true;
            let pad = " ".repeat(indent - self.column);
            self.write(&pad);
        }
    }

    fn indicator(&mut self, ind: &str, need_ws: bool, ws_after: bool, indention: bool) {
        let data = if self.whitespace || !need_ws {
            ind.to_string()
        } else {
            format!(" {ind}")
        };
        self.whitespace = ws_after;
        self.indention = self.indention && indention;
        self.write(&data);
    }

    /// Collections are flow where libyaml makes them so: inside flow, empty, canonical, or
    /// as `default_flow_style` says.
    fn flow_collection<'a>(&self, empty: bool, mut items: impl Iterator<Item = &'a Json>) -> bool {
        self.flow_level > 0
            || empty
            || self.opts.canonical
            || match self.opts.flow {
                FlowStyle::Flow => true,
                FlowStyle::Block => false,
                FlowStyle::Auto => items.all(|v| is_unstyled_scalar(v, &self.opts)),
            }
    }

    fn node(&mut self, v: &Json, ctx: Ctx) {
        match v {
            Json::Array(a) => {
                if self.flow_collection(a.is_empty(), a.iter()) {
                    self.canonical_tag("!!seq");
                    self.flow_sequence(a);
                } else {
                    self.block_sequence(a, ctx);
                }
            }
            Json::Object(m) => {
                if self.flow_collection(m.is_empty(), m.values()) {
                    self.canonical_tag("!!map");
                    self.flow_mapping(m);
                } else {
                    self.block_mapping(m);
                }
            }
            scalar => {
                self.increase_indent(true, false);
                self.scalar(scalar, ctx);
                self.pop_indent();
            }
        }
    }

    fn canonical_tag(&mut self, tag: &str) {
        if self.opts.canonical {
            self.indicator(tag, true, false, false);
        }
    }

    /// Before a flow item: canonical output puts each on its own line, other output only
    /// once past the width.
    fn flow_item_break(&mut self) {
        if self.opts.canonical || self.column > self.best_width {
            self.write_indent();
        }
    }

    /// After the last flow item: canonical output ends it with a comma and a line.
    fn flow_end(&mut self, empty: bool, close: &str) {
        self.pop_indent();
        self.flow_level -= 1;
        if self.opts.canonical && !empty {
            self.indicator(",", false, false, false);
            self.write_indent();
        }
        self.indicator(close, false, false, false);
    }

    fn flow_sequence(&mut self, a: &[Json]) {
        self.indicator("[", true, true, false);
        self.flow_level += 1;
        self.increase_indent(true, false);
        for (i, item) in a.iter().enumerate() {
            if i > 0 {
                self.indicator(",", false, false, false);
            }
            self.flow_item_break();
            self.node(item, Ctx::default());
        }
        self.flow_end(a.is_empty(), "]");
    }

    fn flow_mapping(&mut self, m: &serde_json::Map<String, Json>) {
        self.indicator("{", true, true, false);
        self.flow_level += 1;
        self.increase_indent(true, false);
        for (i, (k, v)) in ordered(m, self.opts.sort_keys).into_iter().enumerate() {
            if i > 0 {
                self.indicator(",", false, false, false);
            }
            self.flow_item_break();
            let key = Json::String(k.clone());
            if self.opts.canonical {
                // Canonical keys are never simple: `? key` then `: value` on a line of its own.
                self.indicator("?", true, false, false);
                self.node(&key, Ctx::default());
                self.write_indent();
                self.indicator(":", true, false, false);
            } else {
                let key_ctx = Ctx {
                    mapping: true,
                    simple_key: true,
                };
                self.node(&key, key_ctx);
                self.indicator(":", false, false, false);
            }
            self.node(
                v,
                Ctx {
                    mapping: true,
                    simple_key: false,
                },
            );
        }
        self.flow_end(m.is_empty(), "}");
    }

    fn block_sequence(&mut self, a: &[Json], ctx: Ctx) {
        let indentless = ctx.mapping && !self.indention;
        self.increase_indent(false, indentless);
        for item in a {
            self.write_indent();
            self.indicator("-", true, false, true);
            self.node(item, Ctx::default());
        }
        self.pop_indent();
    }

    fn block_mapping(&mut self, m: &serde_json::Map<String, Json>) {
        self.increase_indent(false, false);
        for (k, v) in ordered(m, self.opts.sort_keys) {
            self.write_indent();
            self.node(
                &Json::String(k.clone()),
                Ctx {
                    mapping: true,
                    simple_key: true,
                },
            );
            self.indicator(":", false, false, false);
            self.node(
                v,
                Ctx {
                    mapping: true,
                    simple_key: false,
                },
            );
        }
        self.pop_indent();
    }

    fn scalar(&mut self, v: &Json, ctx: Ctx) {
        let (text, tag) = match v {
            Json::Null => ("null".to_string(), "!!null"),
            Json::Bool(b) => (b.to_string(), "!!bool"),
            Json::Number(n) if n.is_f64() => (yaml_float(n.as_f64().unwrap_or(0.0)), "!!float"),
            Json::Number(n) => (n.to_string(), "!!int"),
            Json::String(s) => (s.clone(), "!!str"),
            _ => unreachable!("collections are not scalars"),
        };
        let is_str = v.is_string();
        let style = self.choose_style(&text, is_str, ctx);
        if self.opts.canonical {
            self.indicator(tag, true, false, false);
        } else if !is_str && style != ScalarStyle::Plain {
            // libyaml's `yaml_emitter_select_scalar_style`: a scalar that only resolves to
            // its type when plain is marked non-specific (`!`) when quoted.
            self.indicator("!", true, false, false);
        }
        let split = !ctx.simple_key;
        match style {
            ScalarStyle::Plain => self.plain(&text, split),
            ScalarStyle::Single => self.single_quoted(&text, split),
            ScalarStyle::Double => self.double_quoted(&text, split),
            ScalarStyle::Literal => self.block_scalar(&text, false),
            ScalarStyle::Folded => self.block_scalar(&text, true),
        }
    }

    /// libyaml's `yaml_emitter_select_scalar_style`. A string is plain-implicit unless it
    /// would load back as another type; other scalars always are.
    fn choose_style(&self, text: &str, is_str: bool, ctx: Ctx) -> ScalarStyle {
        let a = analyze(text);
        let mut style = self.opts.style.unwrap_or(ScalarStyle::Plain);
        if self.opts.canonical || (ctx.simple_key && a.multiline) {
            style = ScalarStyle::Double;
        }
        if style == ScalarStyle::Plain {
            let plain_ok = if self.flow_level > 0 {
                a.allow_flow_plain
            } else {
                a.allow_block_plain
            };
            let plain_implicit = !is_str || !resolves_to_other_type(text);
            if !plain_ok || (a.empty && (self.flow_level > 0 || ctx.simple_key)) || !plain_implicit
            {
                style = ScalarStyle::Single;
            }
        }
        if style == ScalarStyle::Single && !a.allow_single_quoted {
            style = ScalarStyle::Double;
        }
        if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded)
            && (!a.allow_block || self.flow_level > 0 || ctx.simple_key)
        {
            style = ScalarStyle::Double;
        }
        style
    }

    fn plain(&mut self, s: &str, split: bool) {
        if s.is_empty() {
            return;
        }
        if !self.whitespace {
            self.write(" ");
        }
        self.whitespace = false;
        self.indention = false;
        let words: Vec<&str> = s.split(' ').collect();
        for (i, w) in words.iter().enumerate() {
            if i > 0 {
                // A single space may become a line break once past the width.
                if split
                    && self.column > self.best_width
                    && !w.is_empty()
                    && !words[i - 1].is_empty()
                {
                    self.write_indent();
                    self.whitespace = false;
                    self.indention = false;
                } else {
                    self.write(" ");
                }
            }
            self.write(w);
        }
    }

    fn single_quoted(&mut self, s: &str, split: bool) {
        self.indicator("'", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == ' ' {
                let single =
                    i > 0 && i + 1 < chars.len() && chars[i - 1] != ' ' && chars[i + 1] != ' ';
                if single && split && self.column > self.best_width {
                    self.write_indent();
                } else {
                    self.write(" ");
                }
                i += 1;
            } else if c == '\n' {
                // libyaml folds: a break is written as an empty line, then the indent.
                let start = i;
                while i < chars.len() && chars[i] == '\n' {
                    i += 1;
                }
                if chars[start] == '\n' {
                    self.line_break();
                }
                for _ in start..i {
                    self.line_break();
                }
                self.write_indent();
            } else {
                if c == '\'' {
                    self.write("''");
                } else {
                    self.write(&c.to_string());
                }
                i += 1;
            }
        }
        self.indicator("'", false, false, false);
    }

    /// libyaml's `yaml_emitter_write_double_quoted`: what is not printable is escaped, and
    /// past the width a single space becomes a line break (a run of spaces keeps its first
    /// as `\`).
    fn double_quoted(&mut self, s: &str, split: bool) {
        self.indicator("\"", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if split
                    && !spaces
                    && self.column > self.best_width
                    && i != 0
                    && i + 1 != chars.len()
                {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.write("\\");
                    }
                } else {
                    self.write(" ");
                }
                spaces = true;
                continue;
            }
            spaces = false;
            let escaped = match c {
                '"' => "\\\"".to_string(),
                '\\' => "\\\\".to_string(),
                '\0' => "\\0".to_string(),
                '\x07' => "\\a".to_string(),
                '\x08' => "\\b".to_string(),
                '\t' => "\\t".to_string(),
                '\n' => "\\n".to_string(),
                '\x0b' => "\\v".to_string(),
                '\x0c' => "\\f".to_string(),
                '\r' => "\\r".to_string(),
                '\x1b' => "\\e".to_string(),
                '\u{85}' => "\\N".to_string(),
                '\u{a0}' => "\\_".to_string(),
                '\u{2028}' => "\\L".to_string(),
                '\u{2029}' => "\\P".to_string(),
                c if printable(c) => c.to_string(),
                c if (c as u32) <= 0xff => format!("\\x{:02X}", c as u32),
                c if (c as u32) <= 0xffff => format!("\\u{:04X}", c as u32),
                c => format!("\\U{:08X}", c as u32),
            };
            self.write(&escaped);
        }
        self.indicator("\"", false, false, false);
    }

    /// libyaml's `yaml_emitter_write_literal` and `_folded`, with the block scalar hints: an
    /// indentation indicator when the text starts with a space or break, `-` when it does
    /// not end with a break, `+` when it ends with two (or is one).
    fn block_scalar(&mut self, s: &str, folded: bool) {
        self.indicator(if folded { ">" } else { "|" }, true, false, false);
        let chars: Vec<char> = s.chars().collect();
        if matches!(chars.first(), Some(' ' | '\n')) {
            self.indicator(&self.best_indent.to_string(), false, false, false);
        }
        let keep = match chars.as_slice() {
            [] => Some("-"),
            [.., last] if !is_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_break(*before) => Some("+"),
            _ => None,
        };
        if let Some(hint) = keep {
            self.indicator(hint, false, false, false);
            self.open_ended = hint == "+";
        }
        self.line_break();
        let mut breaks = true;
        let mut leading_spaces = true;
        for (i, &c) in chars.iter().enumerate() {
            if is_break(c) {
                if folded && !breaks && !leading_spaces && c == '\n' {
                    // A break between two lines of text is doubled, or it would fold.
                    let next = chars[i..].iter().find(|c| !is_break(**c));
                    if next.is_some_and(|c| *c != ' ' && *c != '\t') {
                        self.line_break();
                    }
                }
                self.out.push(c);
                self.column = 0;
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                    leading_spaces = c == ' ' || c == '\t';
                }
                if folded
                    && !breaks
                    && c == ' '
                    && chars.get(i + 1) != Some(&' ')
                    && self.column > self.best_width
                {
                    self.write_indent();
                } else {
                    self.write(&c.to_string());
                }
                self.indention = false;
                breaks = false;
            }
        }
    }
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `IS_PRINTABLE` (with `allow_unicode`), less the byte order mark. It reads
/// UTF-8 up to three bytes long: NEL and characters past the BMP (emoji) are escaped.
fn printable(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
        && c != '\u{feff}'
}

fn yaml_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let s = pyrepr::float(f);
    // PyYAML keeps a `.0` before an exponent (`1.0e+20`).
    match s.split_once('e') {
        Some((m, e)) if !m.contains('.') => format!("{m}.0e{e}"),
        _ => s,
    }
}

#[derive(Default)]
struct Analysis {
    empty: bool,
    multiline: bool,
    allow_flow_plain: bool,
    allow_block_plain: bool,
    allow_single_quoted: bool,
    allow_block: bool,
}

/// libyaml's `yaml_emitter_analyze_scalar` (with `allow_unicode=True`).
fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            empty: true,
            allow_block_plain: true,
            allow_single_quoted: true,
            ..Analysis::default()
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let ws = |c: char| {
        matches!(
            c,
            '\0' | ' ' | '\t' | '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    let brk = |c: char| matches!(c, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}');
    let (mut block_ind, mut flow_ind) = (false, false);
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    if s.starts_with("---") || s.starts_with("...") {
        block_ind = true;
        flow_ind = true;
    }
    let mut preceded_by_ws = true;
    let mut followed_by_ws = chars.len() == 1 || ws(chars[1]);
    let last = chars.len() - 1;
    for (i, &c) in chars.iter().enumerate() {
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(c) {
                flow_ind = true;
                block_ind = true;
            }
            if c == '?' || c == ':' {
                flow_ind = true;
                if followed_by_ws {
                    block_ind = true;
                }
            }
            if c == '-' && followed_by_ws {
                flow_ind = true;
                block_ind = true;
            }
        } else {
            if ",?[]{}".contains(c) {
                flow_ind = true;
            }
            if c == ':' {
                flow_ind = true;
                if followed_by_ws {
                    block_ind = true;
                }
            }
            if c == '#' && preceded_by_ws {
                flow_ind = true;
                block_ind = true;
            }
        }
        if brk(c) {
            line_breaks = true;
        }
        if !printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i == last {
                trailing_space = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if brk(c) {
            if i == 0 {
                leading_break = true;
            }
            if i == last {
                trailing_break = true;
            }
            if prev_space {
                space_break = true;
            }
            prev_space = false;
            prev_break = true;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_by_ws = ws(c);
        followed_by_ws = i + 2 >= chars.len() || ws(chars[i + 2]);
    }
    let mut a = Analysis {
        empty: false,
        multiline: line_breaks,
        allow_flow_plain: true,
        allow_block_plain: true,
        allow_single_quoted: true,
        allow_block: true,
    };
    if trailing_space {
        a.allow_block = false;
    }
    if leading_space || leading_break || trailing_space || trailing_break {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
    }
    if break_space {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
        a.allow_single_quoted = false;
    }
    if space_break || special {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
        a.allow_single_quoted = false;
        a.allow_block = false;
    }
    if line_breaks {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
    }
    if flow_ind {
        a.allow_flow_plain = false;
    }
    if block_ind {
        a.allow_block_plain = false;
    }
    a
}

/// PyYAML's implicit resolvers (YAML 1.1): text that would load back as something else.
static IMPLICIT: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
        r"^(?:<<)$",
        r"^(?:~|null|Null|NULL|)$",
        r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
        r"^(?:=)$",
    ]
    .iter()
    .map(|r| Regex::new(r).expect("static regex"))
    .collect()
});

fn resolves_to_other_type(s: &str) -> bool {
    IMPLICIT.iter().any(|r| r.is_match(s))
}

#[cfg(test)]
mod tests {
    use super::{FlowStyle, Options, dump};
    use serde_json::json;

    fn opts(indent: i64, auto_flow: bool) -> Options {
        Options {
            indent: Some(indent),
            flow: if auto_flow {
                FlowStyle::Auto
            } else {
                FlowStyle::Block
            },
            ..Options::default()
        }
    }

    #[test]
    fn matches_pyyaml_output() {
        // Expected texts were produced by ansible-core 2.19's to_yaml/to_nice_yaml.
        let d = json!({"b": [1, 2], "a": {"c": [], "e": {}}, "l": [{"x": 1, "y": [1]}, [1, [2]]]});
        assert_eq!(
            dump(&d, &opts(2, true)),
            "a:\n  c: []\n  e: {}\nb: [1, 2]\nl:\n- x: 1\n  y: [1]\n- - 1\n  - [2]\n"
        );
        assert_eq!(
            dump(&d, &opts(2, false)),
            "a:\n  c: []\n  e: {}\nb:\n- 1\n- 2\nl:\n- x: 1\n  y:\n  - 1\n- - 1\n  - - 2\n"
        );
        let m = json!({"b": 1, "a": [1, {"c": 2}], "s": "yes", "e": ""});
        assert_eq!(
            dump(&m, &opts(4, false)),
            "a:\n- 1\n-   c: 2\nb: 1\ne: ''\ns: 'yes'\n"
        );
        let s = json!({"s": "multi\nline\n", "t": "tab\there", "u": "ünï", "colon": "a:b",
            "hash": "a #b", "star": "*x", "dash": "- x", "lead": " x", "num": "010",
            "ver": "1.2.3", "on": "on", "tilde": "~", "date": "2021-01-01"});
        assert_eq!(
            dump(&s, &opts(4, false)),
            "colon: a:b\ndash: '- x'\ndate: '2021-01-01'\nhash: 'a #b'\nlead: ' x'\n\
             num: '010'\n'on': 'on'\ns: 'multi\n\n    line\n\n    '\nstar: '*x'\n\
             t: \"tab\\there\"\ntilde: '~'\nu: ünï\nver: 1.2.3\n"
        );
        assert_eq!(
            dump(&s, &opts(2, true)),
            "{colon: 'a:b', dash: '- x', date: '2021-01-01', hash: 'a #b', lead: ' x', num: '010',\n  \
             'on': 'on', s: 'multi\n\n    line\n\n    ', star: '*x', t: \"tab\\there\", tilde: '~', u: ünï, ver: 1.2.3}\n"
        );
        let long = json!(
            "aaaaaaaaa bbbbbbbbbbb cccccccccc dddddddddd eeeeeeeee fffffffff gggggggg hhhhhhhhh iiiiiiiiii jjjjjjjj"
        );
        assert_eq!(
            dump(&long, &opts(2, true)),
            "aaaaaaaaa bbbbbbbbbbb cccccccccc dddddddddd eeeeeeeee fffffffff gggggggg hhhhhhhhh\n  iiiiiiiiii jjjjjjjj\n"
        );
        assert_eq!(dump(&json!(5), &opts(2, true)), "5\n");
        assert_eq!(dump(&json!([1, 2]), &opts(2, true)), "[1, 2]\n");
        assert_eq!(dump(&json!({"a": 1}), &opts(4, false)), "a: 1\n");
    }
}
