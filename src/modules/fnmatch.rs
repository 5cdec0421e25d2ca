//! Shell-style name patterns as Python's `fnmatch` reads them, for the modules that take
//! them (`find`'s `patterns`, `archive`'s `exclusion_patterns`).

use regex::Regex;

/// Python's `fnmatch.translate` on POSIX, as an anchored regex: `*` and `?` match any
/// character (`/` too), `[seq]` and `[!seq]` a class; an unclosed `[` is literal.
pub fn translate(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut re = String::from("(?s)^");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let mut j = i;
                if j < chars.len() && chars[j] == '!' {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    re.push_str("\\[");
                    continue;
                }
                let body: String = chars[i..j].iter().collect();
                i = j + 1;
                let (neg, body) = match body.strip_prefix('!') {
                    Some(rest) => (true, rest.to_string()),
                    None => (false, body),
                };
                let escaped: String = body
                    .chars()
                    .map(|ch| match ch {
                        '\\' | '^' | '[' | ']' | '&' | '~' => format!("\\{ch}"),
                        _ => ch.to_string(),
                    })
                    .collect();
                re.push('[');
                if neg {
                    re.push('^');
                }
                re.push_str(&escaped);
                re.push(']');
            }
            other => re.push_str(&regex::escape(&other.to_string())),
        }
    }
    re.push('$');
    re
}

/// `translate` compiled.
pub fn regex(pattern: &str) -> Regex {
    // Every piece is escaped or a well-formed class, so the pattern always compiles.
    Regex::new(&translate(pattern)).unwrap_or_else(|_| Regex::new("$^").unwrap())
}
