//! The `known_hosts` text model of ansible-core 2.19's `known_hosts` module
//! (lib/ansible/modules/known_hosts.py), pure and unit tested: a hashed host field
//! (`|1|salt|HMAC-SHA1(salt, host)`, as `ssh-keygen -H` writes it), the reading of
//! `ssh-keygen -F` output (which entry of the host matches the key, and on which line), and
//! the file after the change.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use sha1::{Digest, Sha1};

/// HMAC-SHA1 (RFC 2104) over `msg`, as OpenSSH hashes known host names.
fn hmac_sha1(key: &[u8], msg: &[u8]) -> [u8; 20] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..20].copy_from_slice(&Sha1::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| k.map(|x| x ^ b);
    let inner = Sha1::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    Sha1::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// `key` with its host field replaced by `|1|salt|hash` of `host`.
pub fn hash_host_key(host: &str, key: &str, salt: &[u8; 20]) -> String {
    let mut parts: Vec<String> = key.split_whitespace().map(str::to_string).collect();
    let i = usize::from(parts.first().is_some_and(|p| p.starts_with('@')));
    if let Some(field) = parts.get_mut(i) {
        *field = format!(
            "|1|{}|{}",
            B64.encode(salt),
            B64.encode(hmac_sha1(salt, host.as_bytes()))
        );
    }
    parts.join(" ")
}

/// A key line's marker, host, type and key (upstream's `normalize_known_hosts_key`).
#[derive(Debug, Clone, PartialEq)]
struct Norm {
    marker: Option<String>,
    host: String,
    kind: String,
    key: String,
}

fn normalize(line: &str) -> Option<Norm> {
    let k: Vec<&str> = line.split_whitespace().collect();
    let marked = k.first()?.starts_with('@');
    let o = usize::from(marked);
    Some(Norm {
        marker: marked.then(|| k[0].to_string()),
        host: k.get(o)?.to_string(),
        kind: k.get(o + 1)?.to_string(),
        key: k.get(o + 2)?.to_string(),
    })
}

/// Whether the host is in the file, whether its entry must be replaced or added, and the
/// line of the entry of the same key type (upstream's `search_for_host_key`), from the
/// output of `ssh-keygen -F`.
pub fn search(stdout: &str, key: Option<&str>) -> Result<(bool, bool, Option<usize>), String> {
    let Some(key) = key else {
        return Ok((true, false, None));
    };
    let mut want = normalize(key).ok_or_else(|| format!("invalid key: {key}"))?;
    let mut found_line = None;
    for l in stdout.split('\n') {
        if l.is_empty() {
            continue;
        }
        if l.starts_with('#') {
            let n = l
                .split_once("found: line ")
                .and_then(|(_, n)| n.split_whitespace().next())
                .and_then(|n| n.parse().ok());
            match n {
                Some(n) => found_line = Some(n),
                None => {
                    return Err(format!(
                        "failed to parse output of ssh-keygen for line number: '{l}'"
                    ));
                }
            }
            continue;
        }
        let Some(found) = normalize(l) else { continue };
        let marked = found
            .marker
            .as_deref()
            .is_some_and(|m| m.starts_with("@cert-authority") || m.starts_with("@revoke"));
        if marked {
            if want == found {
                return Ok((true, false, found_line));
            }
            continue;
        }
        if want.host.starts_with("|1|") && found.host.starts_with("|1|") {
            want.host = found.host.clone();
        }
        if want == found {
            return Ok((true, false, found_line));
        }
        if want.kind == found.kind {
            return Ok((true, true, found_line));
        }
    }
    Ok((true, true, None))
}

/// The file after the change: the found line dropped (when replaced or removed), the key
/// appended (when present and replaced or not there); upstream's `compute_diff` builds the
/// same text.
pub fn new_text(
    before: &str,
    found_line: Option<usize>,
    replace: bool,
    present: bool,
    key: Option<&str>,
) -> String {
    let mut lines: Vec<&str> = before.split_inclusive('\n').collect();
    if let Some(n) = found_line
        && (replace || !present)
        && (1..=lines.len()).contains(&n)
    {
        lines.remove(n - 1);
    }
    let mut out: String = lines.concat();
    if present && (replace || found_line.is_none()) {
        out.push_str(key.unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha1_matches_rfc_2202() {
        // RFC 2202 test case 2.
        assert_eq!(
            hex::encode(hmac_sha1(b"Jefe", b"what do ya want for nothing?")),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
    }

    #[test]
    fn hashed_host_field_replaces_the_name() {
        let k = hash_host_key("example.org", "example.org ssh-ed25519 AAAA", &[0u8; 20]);
        let mut f = k.split(' ');
        assert!(
            f.next()
                .unwrap()
                .starts_with("|1|AAAAAAAAAAAAAAAAAAAAAAAAAAA=|")
        );
        assert_eq!(f.collect::<Vec<_>>(), ["ssh-ed25519", "AAAA"]);
    }

    #[test]
    fn search_reads_ssh_keygens_line_numbers_and_compares_keys() {
        let out = "# Host h found: line 2 \nh ssh-ed25519 AAAA\n";
        assert_eq!(
            search(out, Some("h ssh-ed25519 AAAA\n")).unwrap(),
            (true, false, Some(2))
        );
        assert_eq!(
            search(out, Some("h ssh-ed25519 BBBB\n")).unwrap(),
            (true, true, Some(2))
        );
        assert_eq!(
            search(out, Some("h ssh-rsa CCCC\n")).unwrap(),
            (true, true, None)
        );
    }

    #[test]
    fn new_text_replaces_the_found_line_or_appends() {
        let before = "a k1\nh ssh-ed25519 OLD\nb k2\n";
        assert_eq!(
            new_text(before, Some(2), true, true, Some("h ssh-ed25519 NEW\n")),
            "a k1\nb k2\nh ssh-ed25519 NEW\n"
        );
        assert_eq!(
            new_text(before, Some(2), false, false, None),
            "a k1\nb k2\n"
        );
        assert_eq!(new_text("", None, false, true, Some("x\n")), "x\n");
    }
}
