//! The `authorized_keys` edit of ansible.posix's `authorized_key` (plugins/modules/
//! authorized_key.py, ansible.posix 2.1 as the `ansible` 12 bundle ships it), pure and unit
//! tested: lines are parsed into keys (options, type, blob, comment) keyed by the blob, other
//! lines kept by their text; new keys are matched by blob, a key whose options or comment
//! differ is replaced and moves after the existing keys, `exclusive` drops the rest, and the
//! file is written back sorted by each entry's original line number.
//!
//! Over 300 lines because upstream's parse, match and write are one model (entries keyed by
//! blob, ranks, dict order) read together; a third is tests.

use std::collections::BTreeMap;

use regex::Regex;

/// Key types upstream recognises (`VALID_SSH2_KEY_TYPES`).
const TYPES: &[&str] = &[
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "webauthn-sk-ecdsa-sha2-nistp256@openssh.com",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ssh-ed25519@openssh.com",
    "sk-ssh-ed25519-cert-v01@openssh.com",
    "ssh-ed25519",
    "ssh-ed25519-cert-v01@openssh.com",
    "ssh-dss",
    "ssh-rsa",
    "ssh-xmss@openssh.com",
    "ssh-xmss-cert-v01@openssh.com",
    "rsa-sha2-256",
    "rsa-sha2-512",
    "ssh-rsa-cert-v01@openssh.com",
    "rsa-sha2-256-cert-v01@openssh.com",
    "rsa-sha2-512-cert-v01@openssh.com",
    "ssh-dss-cert-v01@openssh.com",
];

/// `key_options` in their order; a name may repeat (`permitopen` twice).
pub type Options = Vec<(String, Option<String>)>;

/// One entry of the file: a key, or a line kept as it is (`kind: None`).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key blob, or the whole line for a kept line.
    pub id: String,
    /// The key type; `None` for a comment, blank or unparsable line.
    pub kind: Option<String>,
    pub options: Options,
    pub comment: String,
    pub rank: usize,
}

impl Entry {
    /// Upstream compares type, blob, options (as a dict of lists) and comment.
    fn same(&self, other: &Entry) -> bool {
        fn dict(o: &Options) -> BTreeMap<&str, Vec<&Option<String>>> {
            let mut m: BTreeMap<&str, Vec<&Option<String>>> = BTreeMap::new();
            for (k, v) in o {
                m.entry(k.as_str()).or_default().push(v);
            }
            m
        }
        self.id == other.id
            && self.kind == other.kind
            && (self.kind.is_none() || dict(&self.options) == dict(&other.options))
            && self.comment == other.comment
    }

    fn line(&self) -> String {
        let Some(kind) = &self.kind else {
            return self.id.clone();
        };
        let mut opts = self
            .options
            .iter()
            .map(|(k, v)| match v {
                None => k.clone(),
                Some(v) => format!("{k}={v}"),
            })
            .collect::<Vec<_>>()
            .join(",");
        if !opts.is_empty() {
            opts.push(' ');
        }
        format!("{opts}{kind} {} {}\n", self.id, self.comment)
    }
}

/// Split `key_options` on the commas outside quotes (upstream's regex split).
pub fn parse_options(text: &str) -> Options {
    let re = Regex::new(r#"(?:[^,"']|"[^"]*"|'[^']*')+"#).expect("valid");
    // Python's `re.split` with a group, minus its first and last piece: the matches with the
    // text between them.
    let mut parts = Vec::new();
    let mut last = None;
    for m in re.find_iter(text) {
        if let Some(end) = last {
            parts.push(&text[end..m.start()]);
        }
        parts.push(m.as_str());
        last = Some(m.end());
    }
    let mut out = Vec::new();
    for part in parts {
        if let Some((k, v)) = part.split_once('=') {
            out.push((k.to_string(), Some(v.to_string())));
        } else if part != "," {
            out.push((part.to_string(), None));
        }
    }
    out
}

/// What a line holds.
pub enum Parsed {
    Key(Entry),
    /// A line whose first word is `#`: kept as it is.
    Comment(Entry),
    /// No key type in it.
    Invalid,
}

/// Parse one line (upstream's `parsekey`).
pub fn parse_key(raw: &str, rank: usize) -> Parsed {
    let raw = raw.replace(r"\#", "#");
    let parts: Vec<&str> = raw
        .split([' ', '\t', '\r', '\n'])
        .filter(|s| !s.is_empty())
        .collect();
    let kept = |raw: String| Entry {
        id: raw,
        kind: None,
        options: Vec::new(),
        comment: String::new(),
        rank,
    };
    if parts.first() == Some(&"#") {
        return Parsed::Comment(kept(raw));
    }
    let Some(at) = parts.iter().position(|p| TYPES.contains(p)) else {
        return Parsed::Invalid;
    };
    let Some(blob) = parts.get(at + 1) else {
        return Parsed::Invalid;
    };
    Parsed::Key(Entry {
        id: blob.to_string(),
        kind: Some(parts[at].to_string()),
        options: parse_options(&parts[..at].join(" ")),
        comment: parts.get(at + 2..).unwrap_or_default().join(" "),
        rank,
    })
}

/// The file's entries in Python dict order: keyed by `id`, a later duplicate replacing the
/// earlier one in place.
#[derive(Debug, Default)]
pub struct Entries(Vec<Entry>);

impl Entries {
    pub fn parse(text: &str) -> Self {
        let mut e = Entries::default();
        for (rank, line) in text.split_inclusive('\n').enumerate() {
            let entry = match parse_key(line, rank) {
                Parsed::Key(k) | Parsed::Comment(k) => k,
                Parsed::Invalid => Entry {
                    id: line.to_string(),
                    kind: None,
                    options: Vec::new(),
                    comment: String::new(),
                    rank,
                },
            };
            e.insert(entry);
        }
        e
    }

    fn get(&self, id: &str) -> Option<&Entry> {
        self.0.iter().find(|e| e.id == id)
    }

    fn insert(&mut self, entry: Entry) {
        match self.0.iter_mut().find(|e| e.id == entry.id) {
            Some(slot) => *slot = entry,
            None => self.0.push(entry),
        }
    }

    fn remove(&mut self, id: &str) -> bool {
        let n = self.0.len();
        self.0.retain(|e| e.id != id);
        self.0.len() != n
    }

    /// The file text: entries by rank (stable, so equal ranks keep dict order).
    pub fn render(&self) -> String {
        let mut v: Vec<&Entry> = self.0.iter().collect();
        v.sort_by_key(|e| e.rank);
        v.iter().map(|e| e.line()).collect()
    }
}

/// What the task asks for.
pub struct Want<'a> {
    /// The `key` text: one key a line; blank lines and `#` lines are skipped.
    pub keys: &'a str,
    pub present: bool,
    pub key_options: Option<&'a str>,
    pub comment: Option<&'a str>,
    pub exclusive: bool,
}

/// Apply `want` to `entries`; whether anything changed, or upstream's message for a key that
/// does not parse.
pub fn apply(entries: &mut Entries, want: &Want<'_>) -> Result<bool, String> {
    let new: Vec<&str> = want
        .keys
        .split_inclusive('\n')
        .map(|l| l.trim_end_matches(['\n', '\r']))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut write = false;
    let mut keep = Vec::new();
    let max_rank = entries.0.len();
    for (rank, line) in new.iter().enumerate() {
        let mut key = match parse_key(line, rank) {
            Parsed::Key(k) | Parsed::Comment(k) => k,
            Parsed::Invalid => return Err(format!("invalid key specified: {line}")),
        };
        if let Some(o) = want.key_options {
            key.options = parse_options(o);
        }
        if let Some(c) = want.comment {
            key.comment = c.to_string();
        }
        let mut matched = false;
        let mut differs = false;
        if let Some(old) = entries.get(&key.id) {
            if want.present && !key.same(old) {
                differs = true;
            } else {
                matched = true;
            }
        }
        if want.present {
            keep.push(key.id.clone());
            if differs && entries.remove(&key.id) {
                write = true;
            }
            if !matched {
                key.rank += max_rank;
                entries.insert(key);
                write = true;
            }
        } else if matched {
            entries.remove(&key.id);
            write = true;
        }
    }
    if want.present && want.exclusive {
        let before = entries.0.len();
        entries.0.retain(|e| keep.contains(&e.id));
        write |= entries.0.len() != before;
    }
    Ok(write)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA a@x";
    const B: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ b@y";

    fn want(keys: &str) -> Want<'_> {
        Want {
            keys,
            present: true,
            key_options: None,
            comment: None,
            exclusive: false,
        }
    }

    #[test]
    fn options_split_on_commas_outside_quotes() {
        assert_eq!(
            parse_options(r#"no-pty,from="a,b",command="x y""#),
            vec![
                ("no-pty".to_string(), None),
                ("from".to_string(), Some("\"a,b\"".to_string())),
                ("command".to_string(), Some("\"x y\"".to_string())),
            ]
        );
    }

    #[test]
    fn adds_after_existing_keeps_other_lines_and_is_idempotent() {
        let text = format!("# keys\n{A}\n");
        let mut e = Entries::parse(&text);
        assert!(apply(&mut e, &want(B)).unwrap());
        assert_eq!(e.render(), format!("# keys\n{A}\n{B}\n"));
        let mut e = Entries::parse(&e.render());
        assert!(!apply(&mut e, &want(B)).unwrap());
    }

    #[test]
    fn changed_options_replace_the_key_at_the_end_and_exclusive_drops_others() {
        let mut e = Entries::parse(&format!("{A}\n{B}\n"));
        let w = Want {
            key_options: Some("no-pty"),
            ..want(A)
        };
        assert!(apply(&mut e, &w).unwrap());
        assert_eq!(e.render(), format!("{B}\nno-pty {A}\n"));
        let w = Want {
            exclusive: true,
            key_options: Some("no-pty"),
            ..want(A)
        };
        let mut e = Entries::parse(&e.render());
        assert!(apply(&mut e, &w).unwrap());
        assert_eq!(e.render(), format!("no-pty {A}\n"));
    }

    #[test]
    fn a_key_without_comment_keeps_upstreams_trailing_space_and_absent_removes() {
        let mut e = Entries::parse("");
        apply(&mut e, &want("ssh-rsa AAAA")).unwrap();
        assert_eq!(e.render(), "ssh-rsa AAAA \n");
        let w = Want {
            present: false,
            ..want("ssh-rsa AAAA other comment")
        };
        assert!(apply(&mut e, &w).unwrap());
        assert_eq!(e.render(), "");
        assert_eq!(
            apply(&mut e, &want("nonsense")).unwrap_err(),
            "invalid key specified: nonsense"
        );
    }
}
