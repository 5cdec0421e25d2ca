//! Python `re` patterns and `re.sub` replacement templates, for every place a playbook hands
//! kinit a regular expression (lineinfile, replace, the `regex_*` filters, the `match`/
//! `search`/`regex` tests, ...).
//!
//! A pattern is first translated from Python's syntax (`\Z`, octal and `\u` escapes, a `{` that
//! is no repetition, `(?#...)` comments, `[` inside a class) and compiled with the `regex`
//! crate: linear time, no per-match cost beyond it. Only a pattern that needs backtracking —
//! back-references (`\1`, `(?P=name)`), look-around (`(?=`, `(?!`, `(?<=`, `(?<!`), atomic
//! groups, conditionals — goes to `fancy-regex`. A match that exceeds `fancy-regex`'s
//! backtracking limit counts as no match (Python would run on for as long as it takes).
//!
//! Matching follows Python's iteration rules (`re.finditer`/`re.sub` since 3.7: an empty match
//! right after a non-empty one counts), and [`Template`] expands replacements as `re.sub`
//! does: `\1`, `\g<1>`, `\g<name>`, the character escapes, and an unmatched group expands to
//! the empty string (Python 3.5+).
//!
//! Without multi-line mode, Python's `$` also matches before a final newline: a pattern with
//! a `$` is also tried on the text without that newline (the leftmost match wins), which is
//! what Python's `$` amounts to unless the pattern itself reads that newline.

use std::fmt;

/// A pattern kinit cannot compile, or a replacement that does not fit its pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyReError {
    /// The engine's (or the template parser's) explanation.
    pub reason: String,
}

impl fmt::Display for PyReError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for PyReError {}

fn err(reason: impl Into<String>) -> PyReError {
    PyReError {
        reason: reason.into(),
    }
}

/// Python's `re` flags kinit's callers use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags {
    /// `re.I`.
    pub ignorecase: bool,
    /// `re.M`: `^`/`$` at every line.
    pub multiline: bool,
    /// `re.S`: `.` matches a newline too.
    pub dotall: bool,
}

/// Where a match must start and end (`re.search`, `re.match`, `re.fullmatch`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Anchor {
    #[default]
    Search,
    Match,
    FullMatch,
}

enum Engine {
    Plain(regex::Regex),
    Fancy(fancy_regex::Regex),
}

/// A compiled Python regular expression.
pub struct PyRegex {
    source: String,
    engine: Engine,
    /// Python's `$` without multi-line mode also matches before a final newline: such a
    /// pattern is also tried on the text without that newline.
    dollar_before_final_newline: bool,
    /// Group names by index (index 0, the whole match, has none).
    names: Vec<Option<String>>,
}

impl fmt::Debug for PyRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let engine = match self.engine {
            Engine::Plain(_) => "regex",
            Engine::Fancy(_) => "fancy-regex",
        };
        write!(f, "PyRegex({:?} via {engine})", self.source)
    }
}

/// One match: the spans of the whole match (0) and of each group, `None` when a group took no
/// part in it.
#[derive(Debug, Clone)]
pub struct Caps<'t> {
    text: &'t str,
    spans: Vec<Option<(usize, usize)>>,
}

impl<'t> Caps<'t> {
    /// Group `i`'s text (0: the whole match); `None` when it did not take part or is no group.
    pub fn get(&self, i: usize) -> Option<&'t str> {
        self.span(i).map(|(s, e)| &self.text[s..e])
    }

    /// Group `i`'s byte range in the searched text.
    pub fn span(&self, i: usize) -> Option<(usize, usize)> {
        self.spans.get(i).copied().flatten()
    }

    /// Start of the whole match.
    pub fn start(&self) -> usize {
        self.span(0).map_or(0, |s| s.0)
    }

    /// End of the whole match.
    pub fn end(&self) -> usize {
        self.span(0).map_or(0, |s| s.1)
    }

    /// The whole match.
    pub fn as_str(&self) -> &'t str {
        self.get(0).unwrap_or("")
    }
}

impl PyRegex {
    /// Compile a Python `re.search` pattern.
    pub fn new(pattern: &str) -> Result<Self, PyReError> {
        Self::with(pattern, Flags::default(), Anchor::Search)
    }

    /// Compile `pattern` with Python flags, anchored as `re.match`/`re.fullmatch` when asked.
    pub fn with(pattern: &str, flags: Flags, anchor: Anchor) -> Result<Self, PyReError> {
        let t = translate(pattern)?;
        let body = match anchor {
            Anchor::Search => t.pattern.clone(),
            Anchor::Match => format!(r"\A(?:{})", t.pattern),
            Anchor::FullMatch => format!(r"\A(?:{})\z", t.pattern),
        };
        let plain = || {
            regex::RegexBuilder::new(&body)
                .case_insensitive(flags.ignorecase)
                .multi_line(flags.multiline)
                .dot_matches_new_line(flags.dotall)
                .build()
        };
        let fancy = || {
            fancy_regex::RegexBuilder::new(&body)
                .case_insensitive(flags.ignorecase)
                .multi_line(flags.multiline)
                .dot_matches_new_line(flags.dotall)
                .build()
                .map_err(|e| err(e.to_string()))
        };
        let engine = if t.backtracking {
            Engine::Fancy(fancy()?)
        } else {
            match plain() {
                Ok(r) => Engine::Plain(r),
                // Something the translation did not spot may still be fancy-regex syntax;
                // otherwise the `regex` crate explains best what is wrong.
                Err(e) => match fancy() {
                    Ok(r) => Engine::Fancy(r),
                    Err(_) => return Err(err(e.to_string())),
                },
            }
        };
        let names = match &engine {
            Engine::Plain(r) => r.capture_names().map(|n| n.map(str::to_string)).collect(),
            Engine::Fancy(r) => r.capture_names().map(|n| n.map(str::to_string)).collect(),
        };
        Ok(PyRegex {
            source: pattern.to_string(),
            engine,
            dollar_before_final_newline: t.dollar && !flags.multiline,
            names,
        })
    }

    /// The pattern as the playbook wrote it.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The number of groups (Python's `groups`, the whole match not counted).
    pub fn groups(&self) -> usize {
        self.names.len().saturating_sub(1)
    }

    /// The name of group `i`, if it has one.
    pub fn group_name(&self, i: usize) -> Option<&str> {
        self.names.get(i).and_then(|n| n.as_deref())
    }

    /// The index of the group called `name`.
    pub fn group_index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n.as_deref() == Some(name))
    }

    /// `re.search(...) is not None`.
    pub fn is_match(&self, text: &str) -> bool {
        let on = |t: &str| match &self.engine {
            Engine::Plain(r) => r.is_match(t),
            Engine::Fancy(r) => r.is_match(t).unwrap_or(false),
        };
        on(text) || self.without_final_newline(text).is_some_and(on)
    }

    /// The text without its final newline, for a pattern whose `$` may match before it.
    fn without_final_newline<'t>(&self, text: &'t str) -> Option<&'t str> {
        if self.dollar_before_final_newline {
            text.strip_suffix('\n')
        } else {
            None
        }
    }

    /// `re.search`: the first match.
    pub fn search<'t>(&self, text: &'t str) -> Option<Caps<'t>> {
        self.search_at(text, 0)
    }

    /// The first match starting at or after byte `pos` (assertions still see the text
    /// before it).
    pub fn search_at<'t>(&self, text: &'t str, pos: usize) -> Option<Caps<'t>> {
        let whole = self.search_in(text, pos);
        // A `$` that matches before the final newline: the leftmost of both matches.
        let before = self
            .without_final_newline(text)
            .filter(|t| pos <= t.len())
            .and_then(|t| self.search_in(t, pos))
            .map(|c| Caps { text, ..c });
        match (whole, before) {
            (Some(w), Some(b)) if b.start() < w.start() => Some(b),
            (None, b) => b,
            (w, _) => w,
        }
    }

    fn search_in<'t>(&self, text: &'t str, pos: usize) -> Option<Caps<'t>> {
        let spans: Vec<Option<(usize, usize)>> = match &self.engine {
            Engine::Plain(r) => {
                let c = r.captures_at(text, pos)?;
                (0..c.len())
                    .map(|i| c.get(i).map(|m| (m.start(), m.end())))
                    .collect()
            }
            Engine::Fancy(r) => {
                let c = r.captures_from_pos(text, pos).ok()??;
                (0..self.names.len())
                    .map(|i| c.get(i).map(|m| (m.start(), m.end())))
                    .collect()
            }
        };
        Some(Caps { text, spans })
    }

    /// `re.finditer`: every non-overlapping match, left to right. As Python (3.7+), an
    /// empty match may directly follow a non-empty one, never another empty one at the
    /// same place.
    pub fn matches<'t>(&self, text: &'t str) -> Vec<Caps<'t>> {
        let mut out = Vec::new();
        let mut pos = 0;
        let mut last_empty_at: Option<usize> = None;
        while pos <= text.len() {
            let Some(mut c) = self.search_at(text, pos) else {
                break;
            };
            if c.start() == c.end() && last_empty_at == Some(c.start()) {
                // Not the same empty match twice: look again one character further on.
                let Some(next) = text[c.start()..].chars().next() else {
                    break;
                };
                match self.search_at(text, c.start() + next.len_utf8()) {
                    Some(n) => c = n,
                    None => break,
                }
            }
            last_empty_at = (c.start() == c.end()).then_some(c.end());
            pos = c.end();
            out.push(c);
        }
        out
    }

    /// `re.subn(template, text, count)`: the new text and how many matches were replaced
    /// (`count` 0: all).
    pub fn subn(&self, text: &str, template: &Template, count: usize) -> (String, usize) {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let mut n = 0;
        for c in self.matches(text) {
            if count > 0 && n == count {
                break;
            }
            out.push_str(&text[last..c.start()]);
            template.expand_into(&c, &mut out);
            last = c.end();
            n += 1;
        }
        out.push_str(&text[last..]);
        (out, n)
    }
}

/// The translated pattern and whether it needs the backtracking engine.
struct Translated {
    pattern: String,
    backtracking: bool,
    /// The pattern has a `$` outside a class.
    dollar: bool,
}

/// Characters the `regex` crate accepts escaped: anything else Python lets a playbook
/// escape is written as a code point.
const RUST_ESCAPABLE: &str = r"\.+*?()|[]{}^$#&-~";

fn push_char(out: &mut String, c: char) {
    if RUST_ESCAPABLE.contains(c) {
        out.push('\\');
        out.push(c);
    } else if c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii() {
        out.push(c);
    } else {
        out.push_str(&format!(r"\x{{{:X}}}", c as u32));
    }
}

/// Does `{` at the start of `rest` open a valid repetition (`{n}`, `{n,}`, `{,m}`, `{n,m}`)?
/// Returns its length and the form the `regex` crate takes.
fn repetition(rest: &str) -> Option<(usize, String)> {
    let close = rest.find('}')?;
    let inner = &rest[1..close];
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    let (lo, hi) = match inner.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (inner, None),
    };
    if !digits(lo) || !hi.is_none_or(digits) || (lo.is_empty() && hi.is_none()) {
        return None;
    }
    let lo = if lo.is_empty() { "0" } else { lo };
    let form = match hi {
        None => format!("{{{lo}}}"),
        Some(hi) => format!("{{{lo},{hi}}}"),
    };
    Some((close + 1, form))
}

/// Python pattern syntax in the form the `regex` crate (or `fancy-regex`) reads.
fn translate(p: &str) -> Result<Translated, PyReError> {
    let mut out = String::with_capacity(p.len() + 8);
    let mut backtracking = false;
    let mut dollar = false;
    let mut in_class = false;
    // Whether the class just opened (a `]` or `^]` there is a literal).
    let mut class_start = 0usize;
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let Some(&n) = chars.get(i + 1) else {
                return Err(err("bad escape (end of pattern)"));
            };
            i += 2;
            match n {
                'Z' if !in_class => out.push_str(r"\z"),
                '<' | '>' => out.push(n),
                'b' if in_class => out.push_str(r"\x08"),
                '0'..='7'
                    if n == '0'
                        || in_class
                        || (chars.get(i).is_some_and(|c| ('0'..='7').contains(c))
                            && chars.get(i + 1).is_some_and(|c| ('0'..='7').contains(c))) =>
                {
                    // An octal escape: `\0`, `\0oo`, or three octal digits.
                    let mut v = n.to_digit(8).unwrap_or(0);
                    let mut k = 1;
                    while k < 3 && chars.get(i).is_some_and(|c| ('0'..='7').contains(c)) {
                        v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                        i += 1;
                        k += 1;
                    }
                    out.push_str(&format!(r"\x{{{v:X}}}"));
                }
                '1'..='9' => {
                    // A back-reference to group 1..99.
                    backtracking = true;
                    out.push('\\');
                    out.push(n);
                    if chars.get(i).is_some_and(char::is_ascii_digit) {
                        out.push(chars[i]);
                        i += 1;
                    }
                }
                'u' | 'U' => {
                    let len = if n == 'u' { 4 } else { 8 };
                    let hex: String = chars.iter().skip(i).take(len).collect();
                    if hex.len() != len || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                        return Err(err(format!("incomplete escape \\{n}{hex}")));
                    }
                    i += len;
                    out.push_str(&format!(r"\x{{{hex}}}"));
                }
                c if c.is_ascii_alphanumeric() => {
                    out.push('\\');
                    out.push(c);
                }
                c => push_char(&mut out, c),
            }
            continue;
        }
        if in_class {
            match c {
                ']' if i != class_start => {
                    in_class = false;
                    out.push(']');
                }
                '[' | '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                }
                _ => out.push(c),
            }
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                out.push('[');
                i += 1;
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                class_start = i;
                continue;
            }
            '{' => {
                let rest: String = chars[i..].iter().collect();
                match repetition(&rest) {
                    Some((len, form)) => {
                        out.push_str(&form);
                        i += rest[..len].chars().count();
                    }
                    None => {
                        out.push_str(r"\{");
                        i += 1;
                    }
                }
                continue;
            }
            '}' => out.push_str(r"\}"),
            '(' if chars.get(i + 1) == Some(&'?') => {
                let rest: String = chars[i + 2..].iter().take(3).collect();
                if rest.starts_with('#') {
                    // A comment group: dropped.
                    while i < chars.len() && chars[i] != ')' {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                if rest.starts_with('=')
                    || rest.starts_with('!')
                    || rest.starts_with("<=")
                    || rest.starts_with("<!")
                    || rest.starts_with("P=")
                    || rest.starts_with('>')
                    || rest.starts_with('(')
                {
                    backtracking = true;
                }
                if rest.starts_with(|c: char| "aiLmsux-".contains(c)) {
                    // Inline flags: Python's `a` (ASCII classes) has no counterpart; kept
                    // Unicode.
                    out.push_str("(?");
                    i += 2;
                    while i < chars.len() && chars[i] != ')' && chars[i] != ':' {
                        if chars[i] != 'a' && chars[i] != 'L' {
                            out.push(chars[i]);
                        }
                        i += 1;
                    }
                    if out.ends_with("(?") && chars.get(i) == Some(&')') {
                        // Only dropped flags: nothing left to say.
                        out.truncate(out.len() - 2);
                        i += 1;
                    }
                    continue;
                }
                out.push('(');
            }
            '*' | '+' | '?' if chars.get(i + 1) == Some(&'+') => {
                // A possessive quantifier (Python 3.11).
                backtracking = true;
                out.push(c);
            }
            '$' => {
                dollar = true;
                out.push(c);
            }
            _ => out.push(c),
        }
        i += 1;
    }
    Ok(Translated {
        pattern: out,
        backtracking,
        dollar,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Group(usize),
}

/// A `re.sub` replacement, checked against its pattern's groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Parse `repl` as Python's `re.sub` does for `re_`: `\1`..`\99`, `\g<n>`, `\g<name>`,
    /// `\n`-style escapes, octal escapes; another escaped ASCII letter is an error, any other
    /// escaped character is kept with its backslash.
    pub fn new(repl: &str, re_: &PyRegex) -> Result<Self, PyReError> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let chars: Vec<char> = repl.chars().collect();
        let mut i = 0;
        let group = |n: usize, text: &mut String, pieces: &mut Vec<Piece>| {
            if n > re_.groups() {
                return Err(err(format!("invalid group reference {n}")));
            }
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(text)));
            }
            pieces.push(Piece::Group(n));
            Ok(())
        };
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            if c != '\\' {
                text.push(c);
                continue;
            }
            let Some(&n) = chars.get(i) else {
                return Err(err("bad escape (end of pattern)"));
            };
            i += 1;
            let simple = match n {
                'n' => Some('\n'),
                't' => Some('\t'),
                'r' => Some('\r'),
                'f' => Some('\x0c'),
                'v' => Some('\x0b'),
                'a' => Some('\x07'),
                'b' => Some('\x08'),
                '\\' => Some('\\'),
                _ => None,
            };
            if let Some(s) = simple {
                text.push(s);
                continue;
            }
            match n {
                'g' => {
                    if chars.get(i) != Some(&'<') {
                        return Err(err("missing < in \\g"));
                    }
                    let close = chars[i..]
                        .iter()
                        .position(|c| *c == '>')
                        .ok_or_else(|| err("missing >, unterminated name"))?;
                    let name: String = chars[i + 1..i + close].iter().collect();
                    i += close + 1;
                    let index = if !name.is_empty() && name.chars().all(|c| c.is_ascii_digit()) {
                        name.parse::<usize>()
                            .map_err(|_| err(format!("invalid group reference {name}")))?
                    } else {
                        re_.group_index(&name)
                            .ok_or_else(|| err(format!("unknown group name '{name}'")))?
                    };
                    group(index, &mut text, &mut pieces)?;
                }
                '0' => {
                    // Octal: `\0` and up to two more octal digits.
                    let mut v = 0;
                    let mut k = 0;
                    while k < 2 && chars.get(i).is_some_and(|c| ('0'..='7').contains(c)) {
                        v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                        i += 1;
                        k += 1;
                    }
                    text.push(char::from_u32(v).unwrap_or('\0'));
                }
                '1'..='9' => {
                    let octal = |c: Option<&char>| c.is_some_and(|c| ('0'..='7').contains(c));
                    if n <= '7' && octal(chars.get(i)) && octal(chars.get(i + 1)) {
                        // Three octal digits: a character.
                        let v = n.to_digit(8).unwrap_or(0) * 64
                            + chars[i].to_digit(8).unwrap_or(0) * 8
                            + chars[i + 1].to_digit(8).unwrap_or(0);
                        if v > 0o377 {
                            return Err(err(format!(
                                "octal escape value \\{n}{}{} outside of range 0-0o377",
                                chars[i],
                                chars[i + 1]
                            )));
                        }
                        i += 2;
                        text.push(char::from_u32(v).unwrap_or('\0'));
                        continue;
                    }
                    let mut index = n.to_digit(10).unwrap_or(0) as usize;
                    if chars.get(i).is_some_and(char::is_ascii_digit) {
                        index = index * 10 + chars[i].to_digit(10).unwrap_or(0) as usize;
                        i += 1;
                    }
                    group(index, &mut text, &mut pieces)?;
                }
                c if c.is_ascii_alphabetic() => {
                    return Err(err(format!("bad escape \\{c}")));
                }
                c => {
                    text.push('\\');
                    text.push(c);
                }
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Template { pieces })
    }

    /// Python's `Match.expand`: the template with `c`'s groups filled in.
    pub fn expand(&self, c: &Caps<'_>) -> String {
        let mut out = String::new();
        self.expand_into(c, &mut out);
        out
    }

    fn expand_into(&self, c: &Caps<'_>, out: &mut String) {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Group(i) => out.push_str(c.get(*i).unwrap_or("")),
            }
        }
    }
}

/// Python's `re.escape` (3.7+): every character that has a meaning in a pattern, and
/// whitespace, is escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "()[]{}?*+-|^$\\.&~# \t\n\r\x0b\x0c".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[path = "pyre_tests.rs"]
mod tests;
