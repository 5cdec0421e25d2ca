//! Text of a `*_spec` option → a JSON value. Three notations are accepted:
//!
//! - JSON or YAML (`'[{"when_group":"compute_nodes","os":"windows"}]'`, `'{network: 10.1.0.0/24}'`);
//! - the bracket form of KubeInit's 2022 docs and blog: `[k=v,k=v]` is a mapping and
//!   `[[k=v,..],[k=v]]` a list of mappings. A value may itself be a list, `[a,b]`. Values stay
//!   strings; the typed layer above converts them.
//!
//! YAML would read the bracket form as a list of lists of `"k=v"` strings (which KubeInit then
//! silently ignored), so the bracket form is recognised first: text starting with `[` whose
//! first word, after any `[`, contains `=` before any `,`, `]`, `:` or quote.

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("invalid JSON/YAML{}: {message}", position(*line, *column))]
    Yaml {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("invalid `[k=v,..]` form at column {column}: {message}")]
    Bracket {
        column: usize,
        message: &'static str,
    },
}

/// ` at line L column C`, or nothing when the parser did not say where (line 0).
fn position(line: usize, column: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(" at line {line} column {column}")
    }
}

/// Parse one option's text in whichever notation it uses.
pub fn parse_structured(text: &str) -> Result<Value, InputError> {
    if looks_like_bracket_form(text) {
        return Bracket::new(text).document();
    }
    serde_yaml::from_str::<Value>(text).map_err(|e| {
        let msg = e.to_string();
        let message = match msg.find(" at line ") {
            Some(pos) => msg[..pos].to_string(),
            None => msg,
        };
        InputError::Yaml {
            line: e.location().map_or(0, |l| l.line()),
            column: e.location().map_or(0, |l| l.column()),
            message,
        }
    })
}

fn looks_like_bracket_form(text: &str) -> bool {
    let t = text.trim_start();
    if !t.starts_with('[') {
        return false;
    }
    let rest = t.trim_start_matches(|c: char| c == '[' || c.is_whitespace());
    for c in rest.chars() {
        match c {
            '=' => return true,
            ',' | ']' | ':' | '"' | '\'' | '{' => return false,
            _ => {}
        }
    }
    false
}

/// Recursive-descent parser over the bracket form; `pos` is a byte offset into `text`.
struct Bracket<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Bracket<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }

    fn err(&self, message: &'static str) -> InputError {
        InputError::Bracket {
            column: self.text[..self.pos].chars().count() + 1,
            message,
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek().filter(|c| c.is_whitespace()) {
            self.pos += c.len_utf8();
        }
    }

    fn expect(&mut self, want: char, message: &'static str) -> Result<(), InputError> {
        self.skip_ws();
        if self.peek() == Some(want) {
            self.pos += want.len_utf8();
            Ok(())
        } else {
            Err(self.err(message))
        }
    }

    /// `[k=v,..]` → mapping; `[[..],[..]]` → list of mappings; nothing may follow.
    fn document(mut self) -> Result<Value, InputError> {
        self.expect('[', "expected `[`")?;
        self.skip_ws();
        let value = if self.peek() == Some('[') {
            let mut items = Vec::new();
            loop {
                self.expect('[', "expected `[` starting a `[k=v,..]` entry")?;
                items.push(Value::Object(self.pairs()?));
                self.skip_ws();
                match self.peek() {
                    Some(',') => self.pos += 1,
                    Some(']') => break,
                    _ => return Err(self.err("expected `,` or `]` after an entry")),
                }
            }
            self.pos += 1;
            Value::Array(items)
        } else {
            Value::Object(self.pairs()?)
        };
        self.skip_ws();
        if self.pos < self.text.len() {
            return Err(self.err("unexpected text after the closing `]`"));
        }
        Ok(value)
    }

    /// `k=v,k=v]` (the opening `[` already consumed), including the closing `]`.
    fn pairs(&mut self) -> Result<Map<String, Value>, InputError> {
        let mut map = Map::new();
        self.skip_ws();
        if self.peek() == Some(']') {
            self.pos += 1;
            return Ok(map);
        }
        loop {
            self.skip_ws();
            let start = self.pos;
            while let Some(c) = self.peek().filter(|c| !matches!(c, '=' | ',' | '[' | ']')) {
                self.pos += c.len_utf8();
            }
            let key = self.text[start..self.pos].trim();
            if self.peek() != Some('=') {
                return Err(self.err("expected `key=value`"));
            }
            if key.is_empty() {
                return Err(self.err("empty key before `=`"));
            }
            self.pos += 1;
            let value = self.value()?;
            map.insert(key.to_string(), value);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(']') => {
                    self.pos += 1;
                    return Ok(map);
                }
                _ => return Err(self.err("expected `,` or `]` after a value")),
            }
        }
    }

    /// `[a,b]` → list of strings; otherwise text up to `,` or `]` at bracket depth 0, so a
    /// glob such as `compute-0[12]` stays one value.
    fn value(&mut self) -> Result<Value, InputError> {
        self.skip_ws();
        if self.peek() == Some('[') {
            self.pos += 1;
            let mut items = Vec::new();
            loop {
                let item = self.scalar()?;
                if !item.is_empty() {
                    items.push(Value::String(item));
                }
                match self.peek() {
                    Some(',') => self.pos += 1,
                    Some(']') => {
                        self.pos += 1;
                        return Ok(Value::Array(items));
                    }
                    _ => return Err(self.err("unclosed `[` in a list value")),
                }
            }
        }
        Ok(Value::String(self.scalar()?))
    }

    fn scalar(&mut self) -> Result<String, InputError> {
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                '[' => depth += 1,
                ']' if depth == 0 => break,
                ']' => depth -= 1,
                ',' if depth == 0 => break,
                _ => {}
            }
            self.pos += c.len_utf8();
        }
        if depth > 0 {
            return Err(self.err("unclosed `[` in a value"));
        }
        Ok(self.text[start..self.pos].trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bracket_list_of_mappings() {
        let v = parse_structured("[[when_group=compute_nodes,os=windows],[when_name=compute-0[12], target_order=[hypervisor-02,hypervisor-01]]]").unwrap();
        assert_eq!(
            v,
            json!([
                {"when_group": "compute_nodes", "os": "windows"},
                {"when_name": "compute-0[12]", "target_order": ["hypervisor-02", "hypervisor-01"]}
            ])
        );
    }

    #[test]
    fn bracket_mapping_and_yaml() {
        assert_eq!(
            parse_structured("[network=10.1.0.0/24]").unwrap(),
            json!({"network": "10.1.0.0/24"})
        );
        assert_eq!(
            parse_structured("network: 10.1.0.0/24").unwrap(),
            json!({"network": "10.1.0.0/24"})
        );
        assert_eq!(
            parse_structured(r#"[{"os":"windows"}]"#).unwrap(),
            json!([{"os": "windows"}])
        );
        assert_eq!(parse_structured("[]").unwrap(), json!([]));
    }
}
