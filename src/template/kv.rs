//! Ansible's free-form `k=v` text (`parsing/splitter.py`): splitting on whitespace outside
//! quotes and Jinja blocks, its backslash escapes and outer quotes. Used by task arguments
//! (`copy: src=a dest=b`) and by lookups that still take `k=v` terms (`csvfile`).

/// Split free-form `k=v` text on whitespace outside quotes and `{{ }}` / `{% %}`.
pub fn split_kv(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quote, mut depth) = (None::<char>, 0usize);
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (None, '\'' | '"') if depth == 0 => quote = Some(c),
            (None, '{') if matches!(next, Some('{') | Some('%')) => depth += 1,
            (None, '}' | '%') if next == Some('}') && depth > 0 => depth -= 1,
            (None, c) if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        cur.push(c);
        i += 1;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The backslash escapes ansible-core decodes in `k=v` text (`_decode_escapes` in
/// `parsing/splitter.py`): `\\n`, `\\t` and the other one-letter escapes, `\\\\`, quotes, and
/// `\\xHH`/`\\uHHHH`/`\\UHHHHHHHH`. Anything else stays as written.
pub fn decode_escapes(v: &str) -> String {
    if !v.contains('\\') {
        return v.to_string();
    }
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let hex = |n: usize| {
            tail.get(1..=n)
                .filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32)
                .map(|c| (c, n + 1))
        };
        let one = |c: char| Some((c, 1));
        let decoded = match tail.chars().next() {
            Some('n') => one('\n'),
            Some('t') => one('\t'),
            Some('r') => one('\r'),
            Some('a') => one('\u{7}'),
            Some('b') => one('\u{8}'),
            Some('f') => one('\u{c}'),
            Some('v') => one('\u{b}'),
            Some(c @ ('\\' | '\'' | '"')) => one(c),
            Some('x') => hex(2),
            Some('u') => hex(4),
            Some('U') => hex(8),
            _ => None,
        };
        match decoded {
            Some((c, used)) => {
                out.push(c);
                rest = &tail[used..];
            }
            None => {
                out.push('\\');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Remove one pair of matching outer quotes.
pub fn unquote(v: &str) -> String {
    let b = v.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        v[1..v.len() - 1].to_string()
    } else {
        v.to_string()
    }
}
