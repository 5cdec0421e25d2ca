//! The text `assemble` builds from a folder's fragments, as ansible-core 2.19's `assemble`
//! joins them (lib/ansible/modules/assemble.py `assemble_from_fragments`, the same in the
//! action plugin): names in Python's sort order, `regexp` searched in each name, hidden names
//! skipped with `ignore_hidden`, a newline after a fragment that lacks one, the delimiter
//! (Python backslash escapes decoded, a newline added) between fragments. Pure, unit tested.

use crate::pyre::PyRegex as Regex;

/// Python's `codecs.escape_decode` for the escapes a delimiter uses: `\n`, `\t`, `\\`,
/// octal and `\x` bytes; an unknown escape stays as it is.
pub fn escape_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        let simple = match c {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'v' => Some(11),
            b'\\' => Some(b'\\'),
            b'\'' => Some(b'\''),
            b'"' => Some(b'"'),
            _ => None,
        };
        if let Some(x) = simple {
            out.push(x);
        } else if c == b'\n' {
            // A backslash-newline is a line continuation.
        } else if (b'0'..=b'7').contains(&c) {
            let mut v = u32::from(c - b'0');
            let mut n = 1;
            while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                v = v * 8 + u32::from(b[i] - b'0');
                i += 1;
                n += 1;
            }
            out.push((v & 0xff) as u8);
        } else if c == b'x'
            && i + 2 <= b.len()
            && let Ok(v) = u8::from_str_radix(&s[i..i + 2], 16)
        {
            out.push(v);
            i += 2;
        } else {
            out.extend_from_slice(&[b'\\', c]);
        }
    }
    out
}

/// Which fragment names are used, in order (`names` are the folder's regular files).
pub fn select(mut names: Vec<String>, regexp: Option<&Regex>, ignore_hidden: bool) -> Vec<String> {
    names.sort();
    names
        .into_iter()
        .filter(|n| regexp.is_none_or(|re| re.is_match(n)))
        .filter(|n| !(ignore_hidden && n.starts_with('.')))
        .collect()
}

/// The fragments joined as upstream joins them.
pub fn assemble(fragments: &[Vec<u8>], delimiter: Option<&str>) -> Vec<u8> {
    let delimiter = delimiter.filter(|d| !d.is_empty()).map(escape_decode);
    let mut out = Vec::new();
    for (i, f) in fragments.iter().enumerate() {
        if i > 0 {
            if !fragments[i - 1].ends_with(b"\n") {
                out.push(b'\n');
            }
            if let Some(d) = &delimiter {
                out.extend_from_slice(d);
                if d.last() != Some(&b'\n') {
                    out.push(b'\n');
                }
            }
        }
        out.extend_from_slice(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_get_newlines_and_delimiters_between_them() {
        let f = |s: &str| s.as_bytes().to_vec();
        assert_eq!(assemble(&[f("a"), f("b\n"), f("c")], None), b"a\nb\nc");
        assert_eq!(
            assemble(&[f("a\n"), f("b")], Some("# --- \\x41\\t")),
            b"a\n# --- A\t\nb"
        );
        assert_eq!(
            assemble(&[f("a\n"), f("b\n")], Some("--\\n")),
            b"a\n--\nb\n"
        );
    }

    #[test]
    fn escapes_decode_as_python_does() {
        assert_eq!(escape_decode(r"a\nb\\c\101\q"), b"a\nb\\cA\\q");
    }

    #[test]
    fn names_are_sorted_filtered_and_hidden_ones_skipped() {
        let names = vec!["b".to_string(), ".h".into(), "a10".into(), "a2".into()];
        let re = Regex::new("^[a-z.]").unwrap();
        assert_eq!(select(names.clone(), Some(&re), true), ["a10", "a2", "b"]);
        assert_eq!(select(names, None, false), [".h", "a10", "a2", "b"]);
    }
}
