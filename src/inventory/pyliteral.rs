//! Values of INI inventories: Ansible runs each through Python's `ast.literal_eval` and keeps
//! the text when that fails, so `x=1` is a number, `x=True` a boolean, `x=[1,2]` a list and
//! `x=yes` stays a string. This is a small parser for that literal subset.

use serde_json::{Map, Number, Value};

/// The typed value of `text`, or the text itself when it is not a Python literal.
pub fn parse_value(text: &str) -> Value {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    match p.value() {
        Some(v) => {
            p.ws();
            // A Python comment may follow the literal (`c="x y"  # why`).
            if p.i == p.s.len() || p.peek() == Some(b'#') {
                v
            } else {
                Value::String(text.to_string())
            }
        }
        None => Value::String(text.to_string()),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.ws();
        match self.peek()? {
            b'\'' | b'"' => self.strings(),
            // A prefixed literal (`b'x'`, `u'x'`, `r'x'`, `rb'x'`): ansible-core's INI parser
            // turns bytes into text, so `b'single'` is `single`.
            _ if self.prefix_len().is_some() => self.strings(),
            b'[' => self.seq(b'[', b']'),
            b'(' => self.seq(b'(', b')'),
            b'{' => self.dict(),
            // `...` (Ellipsis) has no JSON form either: its text.
            b'.' if self.s[self.i..].starts_with(b"...") => {
                self.i += 3;
                Some(Value::String("...".into()))
            }
            b'-' | b'+' | b'0'..=b'9' | b'.' => self.number(),
            _ => self.word(),
        }
    }

    fn word(&mut self) -> Option<Value> {
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        match &self.s[start..self.i] {
            b"True" => Some(Value::Bool(true)),
            b"False" => Some(Value::Bool(false)),
            b"None" => Some(Value::Null),
            // `set()`, the empty set: a list, as ansible-core turns sets into lists.
            b"set" if self.s[self.i..].starts_with(b"()") => {
                self.i += 2;
                Some(Value::Array(Vec::new()))
            }
            _ => None,
        }
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        let mut neg = false;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            neg = self.peek() == Some(b'-');
            self.i += 1;
        }
        let body_start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || matches!(self.s[self.i], b'.' | b'_'))
            || (self.i > body_start
                && matches!(self.s.get(self.i), Some(b'+' | b'-'))
                && matches!(self.s[self.i - 1], b'e' | b'E'))
        {
            self.i += 1;
        }
        let body = std::str::from_utf8(&self.s[body_start..self.i]).ok()?;
        if body.is_empty() || body.starts_with('_') || body.ends_with('_') || body.contains("__") {
            return None;
        }
        let clean = body.replace('_', "");
        let lower = clean.to_ascii_lowercase();
        // A complex number has no JSON form: ansible-core's INI parser keeps its text.
        if let Some(imag) = lower.strip_suffix('j')
            && imag.parse::<f64>().is_ok()
        {
            let text = std::str::from_utf8(&self.s[start..self.i]).ok()?;
            return Some(Value::String(text.trim().to_string()));
        }
        let radix = [("0x", 16), ("0o", 8), ("0b", 2)]
            .into_iter()
            .find(|(p, _)| lower.starts_with(p));
        if let Some((prefix, radix)) = radix {
            let n = i64::from_str_radix(&lower[prefix.len()..], radix).ok()?;
            return Some(Value::from(if neg { -n } else { n }));
        }
        let is_float = lower.contains(['.', 'e']);
        if !is_float {
            // Python rejects leading zeros in decimal integers (`01`), except `0` itself.
            if lower.len() > 1 && lower.starts_with('0') && lower.bytes().any(|b| b != b'0') {
                return None;
            }
            if !lower.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let n: i64 = lower.parse().ok()?;
            return Some(Value::from(if neg { -n } else { n }));
        }
        if !lower
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-'))
        {
            return None;
        }
        let f: f64 = lower.parse().ok()?;
        Number::from_f64(if neg { -f } else { f }).map(Value::Number)
    }

    /// Adjacent literals, concatenated as in Python.
    fn strings(&mut self) -> Option<Value> {
        let mut out = self.string()?;
        loop {
            self.ws();
            match self.peek() {
                Some(b'\'' | b'"') => out.push_str(&self.string()?),
                Some(_) if self.prefix_len().is_some() => out.push_str(&self.string()?),
                _ => break,
            }
        }
        Some(Value::String(out))
    }

    /// The length of a string prefix (`b`, `u`, `r`, `rb`, `br`, any case) at the cursor,
    /// when a quote follows it.
    fn prefix_len(&self) -> Option<usize> {
        let rest = &self.s[self.i..];
        let letters = rest
            .iter()
            .take(2)
            .take_while(|c| matches!(c, b'b' | b'B' | b'r' | b'R' | b'u' | b'U'))
            .count();
        (1..=letters)
            .rev()
            .find(|&n| matches!(rest.get(n), Some(b'\'' | b'"')))
    }

    fn string(&mut self) -> Option<String> {
        let prefix = self.prefix_len().unwrap_or(0);
        let raw = self.s[self.i..self.i + prefix]
            .iter()
            .any(|c| c.eq_ignore_ascii_case(&b'r'));
        self.i += prefix;
        let quote = self.peek()?;
        self.i += 1;
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == quote {
                return String::from_utf8(out).ok();
            }
            if c == b'\\' && raw {
                // A raw literal keeps its backslashes; one still escapes the quote.
                out.push(c);
                if let Some(e) = self.peek().filter(|e| *e == quote || *e == b'\\') {
                    out.push(e);
                    self.i += 1;
                }
            } else if c == b'\\' {
                let e = self.peek()?;
                self.i += 1;
                match e {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'0' => out.push(0),
                    b'\\' | b'\'' | b'"' => out.push(e),
                    b'\n' => {}
                    other => {
                        out.push(b'\\');
                        out.push(other);
                    }
                }
            } else {
                out.push(c);
            }
        }
        None
    }

    fn seq(&mut self, open: u8, close: u8) -> Option<Value> {
        self.eat(open);
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Some(Value::Array(items));
            }
            items.push(self.value()?);
            if !self.eat(b',') {
                return self.eat(close).then_some(Value::Array(items));
            }
        }
    }

    /// The rest of a set literal after its first item, as a list.
    fn set_rest(&mut self, first: Value) -> Option<Value> {
        let mut items = vec![first];
        loop {
            if self.eat(b'}') {
                return Some(Value::Array(items));
            }
            if !self.eat(b',') {
                return None;
            }
            if self.eat(b'}') {
                return Some(Value::Array(items));
            }
            items.push(self.value()?);
        }
    }

    fn dict(&mut self) -> Option<Value> {
        self.eat(b'{');
        let mut map = Map::new();
        loop {
            if self.eat(b'}') {
                return Some(Value::Object(map));
            }
            let first = self.value()?;
            // `{1, 2}` is a set: a list, as ansible-core turns sets into lists.
            if map.is_empty() && !self.eat(b':') {
                return self.set_rest(first);
            }
            let key = match first {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => if b { "True" } else { "False" }.to_string(),
                _ => return None,
            };
            if !map.is_empty() && !self.eat(b':') {
                return None;
            }
            let v = self.value()?;
            map.insert(key, v);
            if !self.eat(b',') {
                return self.eat(b'}').then_some(Value::Object(map));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_value;
    use serde_json::json;

    #[test]
    fn python_literals_become_typed_values() {
        let cases = [
            ("1", json!(1)),
            ("-3", json!(-3)),
            ("1_000", json!(1000)),
            ("0x1f", json!(31)),
            ("01", json!("01")),
            ("1.5", json!(1.5)),
            ("True", json!(true)),
            ("False", json!(false)),
            ("None", json!(null)),
            ("yes", json!("yes")),
            ("'q'", json!("q")),
            ("b'single'", json!("single")),
            ("{1, 2}", json!([1, 2])),
            ("set()", json!([])),
            ("...", json!("...")),
            ("1j", json!("1j")),
            (
                "[..., 1j, set(), {1, 2}, b'x']",
                json!(["...", "1j", [], [1, 2], "x"]),
            ),
            ("{'a': 1, 'b': {2}}", json!({"a": 1, "b": [2]})),
            ("b\"double\"", json!("double")),
            ("u'text' 'more'", json!("textmore")),
            ("r'a\\n'", json!("a\\n")),
            ("Rb'x'", json!("x")),
            ("bare", json!("bare")),
            ("rbx", json!("rbx")),
            ("\"a b\"", json!("a b")),
            ("\"a b\"  # why", json!("a b")),
            ("hello # not a literal", json!("hello # not a literal")),
            ("[1, 'a']", json!([1, "a"])),
            ("(1,)", json!([1])),
            ("{'k': 1}", json!({"k": 1})),
            ("{k:1}", json!("{k:1}")),
            ("10.0.0.1", json!("10.0.0.1")),
            ("1.2.3", json!("1.2.3")),
            ("/usr/bin/python3", json!("/usr/bin/python3")),
            ("", json!("")),
            ("1e3", json!(1000.0)),
            ("abc def", json!("abc def")),
        ];
        for (text, want) in cases {
            assert_eq!(parse_value(text), want, "{text}");
        }
    }
}
