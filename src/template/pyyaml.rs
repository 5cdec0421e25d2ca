//! A YAML writer that produces what PyYAML's `yaml.dump` (as Ansible's `to_yaml` and
//! `to_nice_yaml` call it) produces: sorted keys, indentless sequences under mapping keys,
//! flow style for leaf collections when `auto_flow`, PyYAML's choice between plain, single-
//! and double-quoted scalars (YAML 1.1 look-alikes such as `yes`, `010`, `1.0` get quoted),
//! and line folding at 80 columns.
//!
//! One file on purpose: the scalar-style choice and the emitter share PyYAML's rules, which
//! only read correctly side by side.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value as Json;

use super::pyrepr;

const WIDTH: usize = 80;

/// Dump `v`; `auto_flow` is PyYAML's `default_flow_style=None`, otherwise block style.
pub fn dump(v: &Json, indent: usize, auto_flow: bool) -> String {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
        indent: None,
        indents: Vec::new(),
        best_indent: indent,
        flow_level: 0,
        auto_flow,
    };
    e.node(v, Ctx::default());
    if !e.out.ends_with('\n') {
        e.out.push('\n');
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
    flow_level: usize,
    auto_flow: bool,
}

fn is_scalar(v: &Json) -> bool {
    !matches!(v, Json::Array(_) | Json::Object(_))
}

fn sorted(m: &serde_json::Map<String, Json>) -> Vec<(&String, &Json)> {
    let mut items: Vec<(&String, &Json)> = m.iter().collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
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

    fn node(&mut self, v: &Json, ctx: Ctx) {
        match v {
            Json::Array(a) => {
                let flow = self.flow_level > 0
                    || a.is_empty()
                    || (self.auto_flow && a.iter().all(is_scalar));
                if flow {
                    self.flow_sequence(a);
                } else {
                    self.block_sequence(a, ctx);
                }
            }
            Json::Object(m) => {
                let flow = self.flow_level > 0
                    || m.is_empty()
                    || (self.auto_flow && m.values().all(is_scalar));
                if flow {
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

    fn flow_sequence(&mut self, a: &[Json]) {
        self.indicator("[", true, true, false);
        self.flow_level += 1;
        self.increase_indent(true, false);
        for (i, item) in a.iter().enumerate() {
            if i > 0 {
                self.indicator(",", false, false, false);
            }
            if self.column > WIDTH {
                self.write_indent();
            }
            self.node(item, Ctx::default());
        }
        self.pop_indent();
        self.flow_level -= 1;
        self.indicator("]", false, false, false);
    }

    fn flow_mapping(&mut self, m: &serde_json::Map<String, Json>) {
        self.indicator("{", true, true, false);
        self.flow_level += 1;
        self.increase_indent(true, false);
        for (i, (k, v)) in sorted(m).into_iter().enumerate() {
            if i > 0 {
                self.indicator(",", false, false, false);
            }
            if self.column > WIDTH {
                self.write_indent();
            }
            let key_ctx = Ctx {
                mapping: true,
                simple_key: true,
            };
            self.node(&Json::String(k.clone()), key_ctx);
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
        self.flow_level -= 1;
        self.indicator("}", false, false, false);
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
        for (k, v) in sorted(m) {
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
        let text = match v {
            Json::Null => "null".to_string(),
            Json::Bool(b) => b.to_string(),
            Json::Number(n) if n.is_f64() => yaml_float(n.as_f64().unwrap_or(0.0)),
            Json::Number(n) => n.to_string(),
            Json::String(s) => {
                self.string(s, ctx);
                return;
            }
            _ => unreachable!("collections are not scalars"),
        };
        self.plain(&text, true);
    }

    fn string(&mut self, s: &str, ctx: Ctx) {
        let a = analyze(s);
        let implicit_str = !resolves_to_other_type(s);
        let plain_ok = if self.flow_level > 0 {
            a.allow_flow_plain
        } else {
            a.allow_block_plain
        };
        if implicit_str && !(ctx.simple_key && (a.empty || a.multiline)) && plain_ok {
            self.plain(s, !ctx.simple_key);
        } else if a.allow_single_quoted && !(ctx.simple_key && a.multiline) {
            self.single_quoted(s, !ctx.simple_key);
        } else {
            self.double_quoted(s);
        }
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
                if split && self.column > WIDTH && !w.is_empty() && !words[i - 1].is_empty() {
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
                if single && split && self.column > WIDTH {
                    self.write_indent();
                } else {
                    self.write(" ");
                }
                i += 1;
            } else if c == '\n' {
                // PyYAML folds: a break is written as an empty line, then the indent.
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

    fn double_quoted(&mut self, s: &str) {
        self.indicator("\"", true, false, false);
        let mut buf = String::new();
        for c in s.chars() {
            match c {
                '"' => buf.push_str("\\\""),
                '\\' => buf.push_str("\\\\"),
                '\0' => buf.push_str("\\0"),
                '\x07' => buf.push_str("\\a"),
                '\x08' => buf.push_str("\\b"),
                '\t' => buf.push_str("\\t"),
                '\n' => buf.push_str("\\n"),
                '\x0b' => buf.push_str("\\v"),
                '\x0c' => buf.push_str("\\f"),
                '\r' => buf.push_str("\\r"),
                '\x1b' => buf.push_str("\\e"),
                '\u{85}' => buf.push_str("\\N"),
                '\u{a0}' => buf.push_str("\\_"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    buf.push_str(&format!("\\x{:02X}", c as u32));
                }
                c => buf.push(c),
            }
        }
        self.write(&buf);
        self.indicator("\"", false, false, false);
    }
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
}

/// PyYAML's `Emitter.analyze_scalar` (with `allow_unicode=True`).
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
        if !(c == '\n' || (' '..='~').contains(&c)) {
            let printable_unicode = (c == '\u{85}'
                || ('\u{a0}'..='\u{d7ff}').contains(&c)
                || ('\u{e000}'..='\u{fffd}').contains(&c)
                || ('\u{10000}'..'\u{10ffff}').contains(&c))
                && c != '\u{feff}';
            if !printable_unicode {
                special = true;
            }
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
    };
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
    use super::dump;
    use serde_json::json;

    #[test]
    fn matches_pyyaml_output() {
        // Expected texts were produced by ansible-core 2.19's to_yaml/to_nice_yaml.
        let d = json!({"b": [1, 2], "a": {"c": [], "e": {}}, "l": [{"x": 1, "y": [1]}, [1, [2]]]});
        assert_eq!(
            dump(&d, 2, true),
            "a:\n  c: []\n  e: {}\nb: [1, 2]\nl:\n- x: 1\n  y: [1]\n- - 1\n  - [2]\n"
        );
        assert_eq!(
            dump(&d, 2, false),
            "a:\n  c: []\n  e: {}\nb:\n- 1\n- 2\nl:\n- x: 1\n  y:\n  - 1\n- - 1\n  - - 2\n"
        );
        let m = json!({"b": 1, "a": [1, {"c": 2}], "s": "yes", "e": ""});
        assert_eq!(
            dump(&m, 4, false),
            "a:\n- 1\n-   c: 2\nb: 1\ne: ''\ns: 'yes'\n"
        );
        let s = json!({"s": "multi\nline\n", "t": "tab\there", "u": "ünï", "colon": "a:b",
            "hash": "a #b", "star": "*x", "dash": "- x", "lead": " x", "num": "010",
            "ver": "1.2.3", "on": "on", "tilde": "~", "date": "2021-01-01"});
        assert_eq!(
            dump(&s, 4, false),
            "colon: a:b\ndash: '- x'\ndate: '2021-01-01'\nhash: 'a #b'\nlead: ' x'\n\
             num: '010'\n'on': 'on'\ns: 'multi\n\n    line\n\n    '\nstar: '*x'\n\
             t: \"tab\\there\"\ntilde: '~'\nu: ünï\nver: 1.2.3\n"
        );
        assert_eq!(
            dump(&s, 2, true),
            "{colon: 'a:b', dash: '- x', date: '2021-01-01', hash: 'a #b', lead: ' x', num: '010',\n  \
             'on': 'on', s: 'multi\n\n    line\n\n    ', star: '*x', t: \"tab\\there\", tilde: '~', u: ünï, ver: 1.2.3}\n"
        );
        let long = json!(
            "aaaaaaaaa bbbbbbbbbbb cccccccccc dddddddddd eeeeeeeee fffffffff gggggggg hhhhhhhhh iiiiiiiiii jjjjjjjj"
        );
        assert_eq!(
            dump(&long, 2, true),
            "aaaaaaaaa bbbbbbbbbbb cccccccccc dddddddddd eeeeeeeee fffffffff gggggggg hhhhhhhhh\n  iiiiiiiiii jjjjjjjj\n"
        );
        assert_eq!(dump(&json!(5), 2, true), "5\n");
        assert_eq!(dump(&json!([1, 2]), 2, true), "[1, 2]\n");
        assert_eq!(dump(&json!({"a": 1}), 4, false), "a: 1\n");
    }
}
