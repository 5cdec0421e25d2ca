//! Ansible INI inventories: `[group]` host lines with inline `key=value` variables,
//! `[group:vars]` and `[group:children]` sections, host ranges and `host:port`.

use std::path::Path;

use serde_json::Value;

use super::pyliteral::parse_value;
use super::{Inventory, InventoryError, ranges};
use crate::vars::VarMap;

/// What is wrong with one line of an INI inventory (the caller adds file and line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum LineError {
    #[error("malformed section header `{line}`")]
    MalformedHeader { line: String },
    #[error("invalid group name in `{line}`")]
    BadGroupName { line: String },
    #[error("unknown section kind `{kind}` in `{line}`, expected `vars` or `children`")]
    UnknownSectionKind { kind: String, line: String },
    #[error("unclosed quote in `{line}`")]
    UnclosedQuote { line: String },
}

enum Section {
    Hosts(String),
    Vars(String),
    Children(String),
}

/// Parse INI inventory text from `path` into `inv`.
pub fn parse(inv: &mut Inventory, path: &Path, text: &str) -> Result<(), InventoryError> {
    let mut section = Section::Hosts("ungrouped".to_string());
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let syntax = |message: String| InventoryError::Syntax {
            path: path.to_path_buf(),
            line: line_no,
            message,
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') {
            section = parse_header(line).map_err(|e| syntax(e.to_string()))?;
            let (Section::Hosts(g) | Section::Vars(g) | Section::Children(g)) = &section;
            inv.group_mut(g);
            continue;
        }
        match &section {
            Section::Hosts(group) => {
                let tokens = shell_words(line).map_err(|e| syntax(e.to_string()))?;
                let Some((pattern, rest)) = tokens.split_first() else {
                    continue;
                };
                let mut vars = VarMap::new();
                let (pattern, port) = split_port(pattern);
                if let Some(port) = port {
                    vars.insert("ansible_port".into(), Value::from(port));
                }
                for tok in rest {
                    let Some((k, v)) = tok.split_once('=') else {
                        return Err(syntax(format!(
                            "expected `key=value` after host `{pattern}`, found `{tok}`"
                        )));
                    };
                    vars.insert(k.to_string(), parse_value(v));
                }
                for name in ranges::expand(pattern)? {
                    inv.add_host(&name, Some(group), vars.clone());
                }
            }
            Section::Vars(group) => {
                let Some((k, v)) = line.split_once('=') else {
                    return Err(syntax(format!(
                        "expected `key=value` in `[{group}:vars]`, found `{line}`"
                    )));
                };
                let value = parse_value(v.trim());
                inv.group_mut(group)
                    .vars
                    .insert(k.trim().to_string(), value);
            }
            Section::Children(group) => {
                let child = line.split_whitespace().next().unwrap_or(line);
                if child == "all" || child == group {
                    return Err(syntax(format!(
                        "group `{child}` cannot be a child of `{group}`"
                    )));
                }
                inv.add_child(group, child)
                    .map_err(|l| syntax(l.to_string()))?;
            }
        }
    }
    Ok(())
}

fn parse_header(line: &str) -> Result<Section, LineError> {
    let body = line
        .split_once(']')
        .filter(|(_, rest)| {
            let rest = rest.trim();
            rest.is_empty() || rest.starts_with('#') || rest.starts_with(';')
        })
        .map(|(head, _)| &head[1..])
        .ok_or_else(|| LineError::MalformedHeader { line: line.into() })?;
    let (name, kind) = match body.split_once(':') {
        Some((n, k)) => (n, Some(k)),
        None => (body, None),
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(LineError::BadGroupName { line: line.into() });
    }
    let name = name.to_string();
    match kind {
        None => Ok(Section::Hosts(name)),
        Some("vars") => Ok(Section::Vars(name)),
        Some("children") => Ok(Section::Children(name)),
        Some(other) => Err(LineError::UnknownSectionKind {
            kind: other.into(),
            line: line.into(),
        }),
    }
}

/// `host:2222` → (`host`, 2222). Colons inside `[..]` ranges and IPv6 addresses are left
/// alone; `[::1]:22` keeps its brackets off.
pub fn split_port(pattern: &str) -> (&str, Option<u16>) {
    if let Some(rest) = pattern.strip_prefix('[')
        && let Some((addr, tail)) = rest.split_once(']')
        && addr.contains(':')
    {
        let port = tail.strip_prefix(':').and_then(|p| p.parse().ok());
        return (addr, port);
    }
    let Some(colon) = pattern.rfind(':') else {
        return (pattern, None);
    };
    let (head, port) = (&pattern[..colon], &pattern[colon + 1..]);
    let balanced = head.matches('[').count() == head.matches(']').count();
    let outside_colons = {
        let mut depth = 0i32;
        head.chars()
            .filter(|c| {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                *c == ':' && depth == 0
            })
            .count()
    };
    match port.parse::<u16>() {
        Ok(p) if balanced && outside_colons == 0 => (head, Some(p)),
        _ => (pattern, None),
    }
}

/// Split a host line like POSIX `shlex.split(line, comments=True)`: whitespace separates,
/// quotes group and are removed, `#` at the start of a word begins a comment.
pub(super) fn shell_words(line: &str) -> Result<Vec<String>, LineError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => cur.push(ch),
                        None => return Err(LineError::UnclosedQuote { line: line.into() }),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\' | '$' | '`')) => cur.push(ch),
                            Some(ch) => {
                                cur.push('\\');
                                cur.push(ch);
                            }
                            None => return Err(LineError::UnclosedQuote { line: line.into() }),
                        },
                        Some(ch) => cur.push(ch),
                        None => return Err(LineError::UnclosedQuote { line: line.into() }),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(ch) = chars.next() {
                    cur.push(ch);
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_split_off_outside_ranges() {
        assert_eq!(split_port("h:22"), ("h", Some(22)));
        assert_eq!(split_port("web[01:03]:2222"), ("web[01:03]", Some(2222)));
        assert_eq!(split_port("web[01:03]"), ("web[01:03]", None));
        assert_eq!(split_port("[::1]:22"), ("::1", Some(22)));
        assert_eq!(split_port("fe80::1"), ("fe80::1", None));
    }

    #[test]
    fn host_lines_split_like_shlex() {
        assert_eq!(
            shell_words(r#"a x="a b" y='c d' # comment"#).unwrap(),
            ["a", "x=a b", "y=c d"]
        );
        assert_eq!(shell_words("a x=1#2").unwrap(), ["a", "x=1#2"]);
        assert_eq!(
            shell_words("a x='open"),
            Err(LineError::UnclosedQuote {
                line: "a x='open".into()
            })
        );
    }
}
