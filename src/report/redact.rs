//! The redaction layer: every sink (terminal, JSON log, JUnit) passes its text through
//! `Redactor::apply`, which replaces each known secret (inventory passwords, values used by
//! `no_log` tasks) with `********`. Secrets are registered before the events that may carry
//! them are sent, so no sink can see one first.
//!
//! A secret reaches output in many spellings, so each is registered with every encoding it can
//! take on its way out, all masked: raw; JSON-escaped up to three times, with non-ASCII kept
//! or written `\uXXXX` (Python's `json.dumps`, Ansible's `to_json`); YAML and POSIX shell
//! single quotes; base64 of its UTF-8 and of its UTF-16LE bytes (PowerShell's
//! `-EncodedCommand`), at each of the three alignments it can have inside longer data.

use std::sync::{Arc, RwLock};

use base64::Engine;

/// Shorter values are not treated as secrets: masking every `1` or `ok` would garble output.
const MIN_LEN: usize = 4;

pub const MASK: &str = "********";

/// Whether a variable's name says it holds a secret (`db_password`, `api_token`,
/// `ansible_become_pass`...): such values are masked wherever they are known.
pub fn is_secret_name(k: &str) -> bool {
    let k = k.to_lowercase();
    k.contains("password") || k.ends_with("_pass") || k.contains("secret") || k.contains("token")
}

/// Keys of module arguments and results whose values are a module's vocabulary, never a
/// user's secret (see `Redactor::add_task_data`).
const VOCABULARY: &[&str] = &[
    "ansible_index_var",
    "ansible_loop_var",
    "backup",
    "changed",
    "checksum",
    "failed",
    "follow",
    "force",
    "group",
    "md5sum",
    "mode",
    "owner",
    "recurse",
    "skipped",
    "state",
];

#[derive(Clone, Default)]
pub struct Redactor {
    /// Every spelling of every secret, longest first.
    forms: Arc<RwLock<Vec<String>>>,
    secrets: Arc<RwLock<Vec<String>>>,
}

impl Redactor {
    pub fn add(&self, secret: &str) {
        if secret.chars().count() < MIN_LEN {
            return;
        }
        {
            let mut known = self.secrets.write().unwrap();
            if known.iter().any(|x| x == secret) {
                return;
            }
            known.push(secret.to_string());
        }
        let mut forms = self.forms.write().unwrap();
        for f in encodings(secret) {
            if f.chars().count() >= MIN_LEN && !forms.contains(&f) {
                forms.push(f);
            }
        }
        // Longest first, so a secret that contains another is masked whole.
        forms.sort_by_key(|x| std::cmp::Reverse(x.len()));
    }

    /// Register the data of a `no_log` task (its arguments or its result): every string in it
    /// but those under `VOCABULARY` keys, which hold a module's choices and bookkeeping
    /// (`state: directory`, `mode: u+rwx`, `ansible_loop_var: item`), not data. Registered,
    /// such words were masked in every later line (`TASK [delete temporary ********]`).
    pub fn add_task_data(&self, v: &serde_json::Value) {
        match v {
            serde_json::Value::Array(a) => a.iter().for_each(|x| self.add_task_data(x)),
            serde_json::Value::Object(m) => m
                .iter()
                .filter(|(k, _)| !VOCABULARY.contains(&k.as_str()))
                .for_each(|(k, x)| {
                    if !self.add_command_line(k, x) {
                        self.add_task_data(x)
                    }
                }),
            other => self.add_value(other),
        }
    }

    /// `command`'s result names its argument list (`cmd`): it is masked as the command line
    /// its words make, as the text `shell` reports is (one word of a command, `kubeadm`, is no
    /// secret of its own). Whether `key`/`v` was one.
    fn add_command_line(&self, key: &str, v: &serde_json::Value) -> bool {
        let ("cmd", serde_json::Value::Array(words)) = (key, v) else {
            return false;
        };
        let words: Vec<&str> = words.iter().filter_map(serde_json::Value::as_str).collect();
        self.add(&words.join(" "));
        true
    }

    /// Register every string inside a JSON value.
    pub fn add_value(&self, v: &serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                self.add(s);
                for line in s.lines() {
                    self.add(line.trim());
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| self.add_value(x)),
            // A registered result kept under a secret name: its loop variable's name is no
            // secret, and its command is masked as a line.
            serde_json::Value::Object(m) => m
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "ansible_loop_var" | "ansible_index_var"))
                .for_each(|(k, x)| {
                    if !self.add_command_line(k, x) {
                        self.add_value(x)
                    }
                }),
            _ => {}
        }
    }

    /// Mask the secrets inside every string of `v`, before a sink encodes it: a value that
    /// carries a secret escaped as far as [`encodings`] reaches stays masked however many
    /// layers of JSON the sink adds (a `debug` message printed as JSON, the JSON log).
    pub fn apply_value(&self, v: &mut serde_json::Value) {
        if self.forms.read().unwrap().is_empty() {
            return;
        }
        match v {
            serde_json::Value::String(s) => {
                let masked = self.apply(s);
                if masked != *s {
                    *s = masked;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| self.apply_value(x)),
            serde_json::Value::Object(m) => m.values_mut().for_each(|x| self.apply_value(x)),
            _ => {}
        }
    }

    pub fn apply(&self, text: &str) -> String {
        let forms = self.forms.read().unwrap();
        let mut out = text.to_string();
        for f in forms.iter() {
            if out.contains(f.as_str()) {
                out = out.replace(f.as_str(), MASK);
            }
        }
        out
    }
}

/// Every spelling of `secret` that output may carry (see the module doc).
pub(crate) fn encodings(secret: &str) -> Vec<String> {
    let mut out = vec![secret.to_string()];
    // JSON string escapes, nested: a value through `to_json` inside a command whose output is
    // shown as JSON is escaped twice, a JSON log of that three times.
    let mut layer = vec![secret.to_string()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for v in &layer {
            next.push(json_inner(v, false));
            next.push(json_inner(v, true));
        }
        next.sort();
        next.dedup();
        out.extend(next.iter().cloned());
        layer = next;
    }
    out.push(secret.replace('\'', "''"));
    out.push(secret.replace('\'', "'\\''"));
    out.extend(base64_cores(secret.as_bytes()));
    let utf16: Vec<u8> = secret.encode_utf16().flat_map(u16::to_le_bytes).collect();
    out.extend(base64_cores(&utf16));
    out.sort();
    out.dedup();
    out
}

/// The inside of a JSON string literal for `s`; `ascii`: non-ASCII as `\uXXXX` escapes.
fn json_inner(s: &str, ascii: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The base64 characters that depend on `bytes` alone, for each of the three alignments the
/// bytes can have inside a longer encoded buffer.
fn base64_cores(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for offset in 0..3 {
        let mut buf = vec![0u8; offset];
        buf.extend_from_slice(bytes);
        buf.extend_from_slice(&[0, 0]);
        let enc = base64::engine::general_purpose::STANDARD.encode(&buf);
        let (first, last) = (offset * 8, (offset + bytes.len()) * 8);
        // Character i holds bits [6i, 6i + 6): kept when they all come from `bytes`.
        let core: String = enc
            .chars()
            .enumerate()
            .filter(|(i, _)| i * 6 >= first && i * 6 + 6 <= last)
            .map(|(_, c)| c)
            .collect();
        if core.len() >= MIN_LEN {
            out.push(core);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_registered_values_everywhere() {
        let r = Redactor::default();
        r.add_value(&serde_json::json!({"pw": "s3cr\"et!"}));
        let json = serde_json::to_string(&serde_json::json!({"out": "x s3cr\"et! y"})).unwrap();
        assert!(!r.apply(&json).contains("s3cr"));
        assert_eq!(r.apply("a s3cr\"et! b"), "a ******** b");
    }

    /// A `no_log` command's result masks its command line, not each word of its argument
    /// list (which masked `kubeadm` in every later task name).
    #[test]
    fn a_no_log_commands_words_are_masked_as_its_line() {
        let r = Redactor::default();
        r.add_task_data(
            &serde_json::json!({"cmd": ["kubeadm", "join", "--token", "abcdef.0123"],
            "stdout": "joined"}),
        );
        assert_eq!(
            r.apply("ran kubeadm join --token abcdef.0123; then kubeadm again"),
            "ran ********; then kubeadm again"
        );
        assert_eq!(r.apply("it said joined"), "it said ********");
        // The same result registered under a secret-named variable (`sa_tokens`).
        let r = Redactor::default();
        r.add_value(
            &serde_json::json!({"results": [{"cmd": ["kubectl", "create", "token", "x"],
            "ansible_loop_var": "item", "item": {"name": "kube-proxy"}, "stdout": "eyJhbGc"}]}),
        );
        assert_eq!(
            r.apply("(item=x) create token; kubectl create token x: eyJhbGc"),
            "(item=x) create token; ********: ********"
        );
    }

    /// How each output channel may spell a secret, built independently of the redactor:
    /// serde_json (escaping once, twice, three times), Python-style ASCII JSON, YAML and
    /// shell quoting, base64 of UTF-8 and UTF-16LE embedded at every offset.
    fn channel_texts(secret: &str) -> Vec<String> {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let once = serde_json::to_string(secret).unwrap();
        let twice = serde_json::to_string(&once).unwrap();
        let thrice = serde_json::to_string(&twice).unwrap();
        let ascii = format!("\"{}\"", json_inner(secret, true));
        let ascii_twice = serde_json::to_string(&ascii).unwrap();
        let mut texts = vec![
            format!("out: {secret} end"),
            format!("{{\"stdout\": {once}}}"),
            format!("{{\"msg\": {twice}}}"),
            format!("log {thrice}"),
            format!("{{\"msg\": {ascii}}}"),
            format!("log {ascii_twice}"),
            format!("pw: '{}'", secret.replace('\'', "''")),
            format!("echo '{}'", secret.replace('\'', "'\\''")),
        ];
        let utf16: Vec<u8> = secret.encode_utf16().flat_map(u16::to_le_bytes).collect();
        for prefix in ["", "a", "ab", "abc"] {
            let mut bytes = prefix.as_bytes().to_vec();
            bytes.extend_from_slice(secret.as_bytes());
            bytes.extend_from_slice(b"tail");
            texts.push(format!("b64 {}", b64(&bytes)));
            let mut wide: Vec<u8> = prefix.encode_utf16().flat_map(u16::to_le_bytes).collect();
            wide.extend_from_slice(&utf16);
            texts.push(format!("-EncodedCommand {}", b64(&wide)));
        }
        texts
    }

    /// Whether `text` still holds `secret` in any of the channels' spellings, decoding the
    /// base64 words it holds (the masked text must not decode to the secret either).
    fn leaks(text: &str, secret: &str) -> bool {
        if text.contains(secret) {
            return true;
        }
        let once = serde_json::to_string(secret).unwrap();
        let inner = &once[1..once.len() - 1];
        if text.contains(inner) || text.contains(&json_inner(secret, true)) {
            return true;
        }
        let utf16: Vec<u8> = secret.encode_utf16().flat_map(u16::to_le_bytes).collect();
        text.split_whitespace().any(|w| {
            base64::engine::general_purpose::STANDARD
                .decode(w)
                .is_ok_and(|d| {
                    d.windows(secret.len()).any(|x| x == secret.as_bytes())
                        || d.windows(utf16.len()).any(|x| x == utf16.as_slice())
                })
        })
    }

    /// Regression: a password with a backslash printed through `to_json` twice, or with `"`,
    /// `é` or a tab through `to_json`, reached stdout and the JSON log.
    #[test]
    fn the_reported_leaks_are_masked() {
        for pw in ["Pw8\\back$slash", "Pw\"quote", "Pwé-accent", "Pw\ttab"] {
            let r = Redactor::default();
            r.add(pw);
            for t in channel_texts(pw) {
                let masked = r.apply(&t);
                assert!(!leaks(&masked, pw), "{pw:?} leaks from {t:?} as {masked:?}");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// Random passwords over ASCII punctuation and all of Unicode: no channel's spelling
        /// survives the redactor.
        #[test]
        fn no_encoding_of_a_secret_survives(
            pw in "[!-~]{4,16}|[\\PC]{4,12}|[ -~\t\u{e9}\u{20ac}\u{1f510}\"\\\\']{4,14}"
        ) {
            let r = Redactor::default();
            r.add(&pw);
            for t in channel_texts(&pw) {
                let masked = r.apply(&t);
                proptest::prop_assert!(!leaks(&masked, &pw), "{:?} leaks from {:?} as {:?}", pw, t, masked);
            }
        }
    }
}
