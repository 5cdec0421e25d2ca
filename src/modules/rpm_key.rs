//! `rpm_key` (ansible-core 2.19's): import a GPG public key into the host's rpm database, or
//! remove one, as upstream does on the host (lib/ansible/modules/rpm_key.py): the key's id
//! from `gpg --with-colons` on the key file, the imported keys from `rpm -q gpg-pubkey`
//! piped through the same `gpg`, then `rpm --import` or `rpm --erase --allmatches
//! gpg-pubkey-<last 8 hex digits>`. `fingerprint` must be among the key file's fingerprints
//! (`gpg --import --import-options show-only --dry-run`) before an import.
//!
//! `key` is a URL (fetched by the host, as upstream's `fetch_url` runs there), a key id
//! (`0x` optional; only with `state: absent`, or for a key already imported), or a file on
//! the host. As a kinit extension it may also be the armored key itself, which upstream
//! refuses as "Not a valid key".
//!
//! Check then apply: one command reads the key and the installed keys; a second imports or
//! erases, only when needed and not in check mode.

use regex::Regex;
use serde::Deserialize;

use crate::transport::Source;
use crate::transport::quote::sh;

use super::args::{boolish, list};
use super::command::yes;
use super::script::unique_temp_path;
use super::{ModuleCtx, ModuleError, ModuleResult, http, typed_module};

typed_module!(RpmKey, "rpm_key", Params, run);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum State {
    #[default]
    Present,
    Absent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// A key URL, a file on the host, a key id (`0x...`), or (kinit) the armored key itself.
    key: String,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// Fingerprints the key file must have before it is imported (spaces ignored).
    #[serde(default, deserialize_with = "list")]
    fingerprint: Vec<String>,
    /// Verify the TLS certificate of a key URL (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    validate_certs: bool,
}

const ARMOR_BEGIN: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----";
const ARMOR_END: &str = "-----END PGP PUBLIC KEY BLOCK-----";

/// Upstream's `is_pubkey`: the text holds an armored public key block.
fn is_pubkey(text: &str) -> bool {
    text.find(ARMOR_BEGIN)
        .is_some_and(|i| text[i..].contains(ARMOR_END))
}

/// Upstream's `is_keyid`: starts with 8 hex digits (after an optional `0x`).
fn is_keyid(key: &str) -> bool {
    Regex::new("^(?i)(0x)?[0-9a-f]{8}")
        .map(|re| re.is_match(key))
        .unwrap_or(false)
}

/// Upstream's `normalize_keyid`: trimmed, upper case, no `0x`.
fn normalize_keyid(id: &str) -> String {
    let up = id.trim().to_uppercase();
    up.strip_prefix("0X").map(str::to_string).unwrap_or(up)
}

/// The fifth field of the first `pub:` line of `gpg --with-colons` output.
fn pub_keyid(colons: &str) -> Option<String> {
    colons
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("pub:"))
        .and_then(|l| l.split(':').nth(4))
        .map(str::to_string)
}

/// Whether `keyid` is in the fifth field of any line of the installed keys' listing (as
/// upstream tests, a substring).
fn imported(listing: &str, keyid: &str) -> bool {
    listing
        .lines()
        .any(|l| l.split(':').nth(4).is_some_and(|f| f.contains(keyid)))
}

/// The `fpr:` fingerprints (field 10) of a `--with-colons` listing.
fn fingerprints(colons: &str) -> Vec<String> {
    colons
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("fpr:"))
        .filter_map(|l| l.split(':').nth(9).map(str::to_string))
        .collect()
}

/// The part of `out` between `kinit-<name>` and the next `kinit-` marker line.
fn section<'a>(out: &'a str, name: &str) -> &'a str {
    let marker = format!("kinit-{name}\n");
    let Some(start) = out.find(&marker) else {
        return "";
    };
    let rest = &out[start + marker.len()..];
    let end = rest.find("\nkinit-").map(|i| i + 1).unwrap_or(rest.len());
    &rest[..end]
}

/// Where the key comes from.
enum KeySource {
    /// A file on the host, and whether kinit uploaded it (to remove afterwards).
    File(String, bool),
    Id(String),
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let source = if p.key.contains("://") {
        let body = match fetch(ctx, &p.key, p.validate_certs).await? {
            Ok(b) => b,
            Err(failed) => return Ok(failed),
        };
        if !is_pubkey(&body) {
            return Ok(ModuleResult::failed(format!("Not a public key: {}", p.key)));
        }
        KeySource::File(upload(ctx, body).await?, true)
    } else if is_keyid(&p.key) {
        KeySource::Id(p.key.clone())
    } else if is_pubkey(&p.key) {
        KeySource::File(upload(ctx, p.key.clone()).await?, true)
    } else {
        let key = if p.key.starts_with('~') {
            super::host_path::expand(ctx, &p.key).await?
        } else {
            p.key.clone()
        };
        KeySource::File(key, false)
    };
    let result = decide_and_apply(ctx, &p, &source).await;
    if let KeySource::File(f, true) = &source {
        let _ = ctx.run(format!("rm -f -- {}", sh(f))).await;
    }
    result
}

async fn decide_and_apply(
    ctx: &ModuleCtx<'_>,
    p: &Params,
    source: &KeySource,
) -> Result<ModuleResult, ModuleError> {
    const OPTS: &str = "--no-tty --batch --with-colons --fixed-list-mode";
    let mut script = String::from(
        "command -v rpm >/dev/null || { echo kinit-norpm; exit 0; }\n\
         command -v gpg >/dev/null && g=gpg || g=gpg2\n\
         command -v $g >/dev/null || { echo kinit-nogpg; exit 0; }\n",
    );
    let keyfile = match source {
        KeySource::File(f, _) => Some(f.as_str()),
        KeySource::Id(_) => None,
    };
    if let Some(f) = keyfile {
        let k = sh(f);
        script.push_str(&format!(
            "[ -f {k} ] || {{ echo kinit-notfile; exit 0; }}\n\
             echo kinit-keyfile; $g {OPTS} {k} 2>/dev/null\n"
        ));
        if !p.fingerprint.is_empty() {
            script.push_str(&format!(
                "echo kinit-fprs; $g {OPTS} --import --import-options show-only --dry-run {k} 2>/dev/null\n"
            ));
        }
    }
    script.push_str(&format!(
        "echo kinit-installed\n\
         if rpm -q gpg-pubkey >/dev/null 2>&1; then rpm -q gpg-pubkey --qf '%{{description}}' | $g {OPTS} - 2>/dev/null; fi\n\
         echo kinit-end\n"
    ));
    let out = ctx.run(script).await?;
    let text = out.stdout_str();
    if text.contains("kinit-norpm") {
        return Ok(ModuleResult::failed(
            "Failed to find required executable \"rpm\" in paths",
        ));
    }
    if text.contains("kinit-nogpg") {
        return Ok(ModuleResult::failed(
            "Failed to find required executable \"gpg2\" in paths",
        ));
    }
    if text.contains("kinit-notfile") {
        return Ok(ModuleResult::failed(format!("Not a valid key {}", p.key)));
    }
    if !text.contains("kinit-end") {
        return Ok(ModuleResult::failed(format!(
            "cannot read the keys on the host: {}",
            out.stderr_str().trim()
        )));
    }
    let keyid = match source {
        KeySource::Id(id) => id.clone(),
        KeySource::File(..) => match pub_keyid(section(&text, "keyfile")) {
            Some(id) => id,
            None => return Ok(ModuleResult::failed("Unexpected gpg output")),
        },
    };
    let keyid = normalize_keyid(&keyid);
    let present = imported(section(&text, "installed"), &keyid);
    let cmd = match (p.state, present) {
        (State::Present, true) | (State::Absent, false) => return Ok(ModuleResult::ok()),
        (State::Present, false) => {
            let Some(f) = keyfile else {
                return Ok(ModuleResult::failed(
                    "When importing a key, a valid file must be given",
                ));
            };
            if !p.fingerprint.is_empty() {
                let want: Vec<String> = p
                    .fingerprint
                    .iter()
                    .map(|f| f.replace(' ', "").to_uppercase())
                    .collect();
                let have = fingerprints(section(&text, "fprs"));
                if have.is_empty() {
                    return Ok(ModuleResult::failed("Unexpected gpg output"));
                }
                if !want.iter().all(|w| have.contains(w)) {
                    return Ok(ModuleResult::failed(format!(
                        "The specified fingerprint, '{}', does not match any key fingerprints in '{}'",
                        py_set(&want),
                        py_set(&have)
                    )));
                }
            }
            format!("rpm --import {}", sh(f))
        }
        (State::Absent, true) => {
            let short = &keyid[keyid.len().saturating_sub(8)..];
            format!(
                "rpm --erase --allmatches {}",
                sh(&format!("gpg-pubkey-{}", short.to_lowercase()))
            )
        }
    };
    if !ctx.check_mode {
        let out = ctx.run(cmd).await?;
        if !out.success() {
            return Ok(ModuleResult::failed(out.stderr_str().trim().to_string()));
        }
    }
    Ok(ModuleResult::changed())
}

/// A set as Python prints it (`{'A', 'B'}`), for upstream's fingerprint message.
fn py_set(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|i| format!("'{i}'")).collect();
    format!("{{{}}}", inner.join(", "))
}

/// Put `text` in a private temporary file on the host.
async fn upload(ctx: &ModuleCtx<'_>, text: String) -> Result<String, ModuleError> {
    let path = unique_temp_path("rpmkey");
    ctx.conn
        .put(&Source::Bytes(text.into_bytes()), &path, Some(0o600))
        .await?;
    Ok(path)
}

/// GET the key from the host; upstream's failure result unless the answer is a 200.
async fn fetch(
    ctx: &ModuleCtx<'_>,
    url: &str,
    validate_certs: bool,
) -> Result<Result<String, ModuleResult>, ModuleError> {
    Ok(match http::get(ctx, url, validate_certs).await? {
        Ok(body) => Ok(String::from_utf8_lossy(&body).into_owned()),
        Err(why) => Err(ModuleResult::failed(format!(
            "failed to fetch key at {url} , error was: {why}"
        ))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_kinds_as_upstream_tells_them() {
        assert!(is_keyid("0xDEADBEEF"));
        assert!(is_keyid("deadbeef00"));
        assert!(!is_keyid("/etc/pki/key"));
        assert!(is_pubkey(&format!(
            "junk\n{ARMOR_BEGIN}\nabc\n{ARMOR_END}\n"
        )));
        assert!(!is_pubkey(ARMOR_BEGIN));
        assert_eq!(normalize_keyid(" 0xdeadbeef "), "DEADBEEF");
    }

    #[test]
    fn reads_gpg_colon_listings() {
        let listing = "pub:u:2048:1:48DA5DC1A892D309:1795680370:::u:\n\
                       fpr:::::::::AA55FBD17FA9891E8EEEE88A48DA5DC1A892D309:\n\
                       uid:::::::::Kinit Test <t@example.invalid>:\n";
        assert_eq!(pub_keyid(listing).as_deref(), Some("48DA5DC1A892D309"));
        assert!(imported(listing, "A892D309"));
        assert!(!imported(listing, "00000000"));
        assert_eq!(
            fingerprints(listing),
            vec!["AA55FBD17FA9891E8EEEE88A48DA5DC1A892D309"]
        );
        let out = "kinit-keyfile\na\nb\nkinit-installed\nc\nkinit-end\n";
        assert_eq!(section(out, "keyfile"), "a\nb\n");
        assert_eq!(section(out, "installed"), "c\n");
        assert_eq!(section(out, "fprs"), "");
    }
}
