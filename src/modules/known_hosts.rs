//! `known_hosts`: add, replace or remove a host's key in an SSH `known_hosts` file, as
//! ansible-core 2.19's `known_hosts` module does (lib/ansible/modules/known_hosts.py): the
//! host's `ssh-keygen` checks that the key names the host (`-F` on a temporary copy of it),
//! finds the host's current entry (`-F`, whose `# Host ... found: line N` says where), and
//! removes a host with no key given (`-R`); the new file is built on the controller and
//! written only when it changes. `hash_host` hashes the name as `ssh-keygen -H` would
//! (`|1|salt|HMAC-SHA1(salt, host)`), with a fresh salt each time, so a hashed entry already
//! there is kept rather than rehashed.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;
use sha1::{Digest, Sha1};

use crate::transport::quote::sh;

use super::args::boolish;
use super::filewrite::{self, Content, Write};
use super::lineinfile::State;
use super::posix::{Attrs, Kind};
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(KnownHosts, "known_hosts", Params, run);

fn default_path() -> String {
    "~/.ssh/known_hosts".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The host (name or address; `[host]:port` for another port).
    #[serde(alias = "host")]
    name: String,
    /// The host's key line as `ssh-keyscan` prints it; required for `present`.
    key: Option<String>,
    /// The `known_hosts` file on the host (default `~/.ssh/known_hosts`).
    #[serde(default = "default_path")]
    path: String,
    /// Hash the host name in the entry written.
    #[serde(default, deserialize_with = "boolish")]
    hash_host: bool,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
}

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
fn hash_host_key(host: &str, key: &str, salt: &[u8; 20]) -> String {
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
fn search(stdout: &str, key: Option<&str>) -> Result<(bool, bool, Option<usize>), String> {
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
fn new_text(
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

/// sh text for a path with a leading `~` or `~/` expanded to the user's home.
fn shell_path(path: &str) -> String {
    if path == "~" || path.starts_with("~/") {
        format!("\"$HOME\"{}", sh(&path[1..]))
    } else {
        sh(path)
    }
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let host = p.name.to_lowercase();
    let present = p.state == State::Present;
    let key_given = p.key.as_deref().filter(|k| !k.is_empty());
    if key_given.is_none() && present {
        return Ok(ModuleResult::failed("No key specified when adding a host"));
    }
    let check = ctx
        .run(format!(
            "command -v ssh-keygen >/dev/null || {{ echo 'Failed to find required executable \
             \"ssh-keygen\"' >&2; exit 127; }}; printf %s {}",
            shell_path(&p.path)
        ))
        .await?;
    if !check.success() {
        return Ok(ModuleResult::failed(check.stderr_str().trim().to_string()));
    }
    let path = check.stdout_str();
    let key = key_given.map(|k| {
        let mut k = if p.hash_host {
            let mut salt = [0u8; 20];
            getrandom::fill(&mut salt).expect("the OS random source works");
            hash_host_key(&host, k, &salt)
        } else {
            k.to_string()
        };
        if !k.ends_with('\n') {
            k.push('\n');
        }
        k
    });

    // The key must name the host (hashed keys included): ssh-keygen finds it in a copy.
    if let Some(k) = &key {
        let comma = regex::Regex::new(r"\S+(\s+)?,(\s+)?").expect("valid");
        if comma.is_match(&host) {
            return Ok(ModuleResult::failed(
                "Comma separated list of names is not supported. Please pass a single name to \
                 lookup in the known_hosts file.",
            ));
        }
        let out = ctx
            .run_with_stdin(
                format!(
                    "t=$(mktemp) && cat > \"$t\" && ssh-keygen -F {} -f \"$t\"; rm -f \"$t\"",
                    sh(&host)
                ),
                Some(k.clone().into_bytes()),
            )
            .await?;
        if out.stdout.is_empty() {
            return Ok(ModuleResult::failed(
                "Host parameter does not match hashed host field in supplied key",
            ));
        }
    }

    let before = filewrite::probe(ctx, &path, true).await?;
    let exists = before.stat.kind != Kind::Absent;
    let (found, replace, found_line) = if !exists {
        (false, false, None)
    } else {
        let out = ctx
            .run(format!("ssh-keygen -F {} -f {}", sh(&host), sh(&path)))
            .await?;
        let (stdout, stderr) = (out.stdout_str(), out.stderr_str());
        if stdout.is_empty() && stderr.is_empty() && (out.rc == 0 || out.rc == 1) {
            (false, false, None)
        } else if out.rc != 0 {
            return Ok(ModuleResult::failed(format!(
                "ssh-keygen failed (rc={}, stdout='{stdout}',stderr='{stderr}')",
                out.rc
            )));
        } else {
            match search(&stdout, key.as_deref()) {
                Ok(s) => s,
                Err(msg) => return Ok(ModuleResult::failed(msg)),
            }
        }
    };
    let old = before
        .content
        .as_deref()
        .map(String::from_utf8_lossy)
        .unwrap_or_default()
        .into_owned();
    let new = new_text(&old, found_line, replace, present, key.as_deref());

    let mut r = ModuleResult::ok()
        .with("name", p.name.as_str())
        .with(
            "key",
            p.key
                .clone()
                .map(serde_json::Value::from)
                .unwrap_or_default(),
        )
        .with("path", path.as_str())
        .with("hash_host", p.hash_host)
        .with("state", if present { "present" } else { "absent" });
    if ctx.diff {
        r.diff = Some(Diff {
            path: Some(if exists {
                path.clone()
            } else {
                "/dev/null".into()
            }),
            before: old.clone(),
            after: new.clone(),
        });
    }
    // Removing a key that is not there: nothing to do.
    if !present && found_line.is_none() && key.is_some() {
        return super::path_info::add(ctx, r, &path).await;
    }
    let rewrite = replace || found != present;
    r.changed = rewrite;
    if ctx.check_mode {
        // Upstream exits from inside its work function here: only `changed` (and the diff),
        // none of the parameters the normal exit repeats.
        return Ok(ModuleResult {
            changed: rewrite,
            diff: r.diff,
            ..ModuleResult::ok()
        });
    }
    if !rewrite {
        return super::path_info::add(ctx, r, &path).await;
    }
    if found && key.is_none() && !present {
        let out = ctx
            .run(format!("ssh-keygen -R {} -f {}", sh(&host), sh(&path)))
            .await?;
        if !out.success() {
            return Ok(ModuleResult::failed(out.stderr_str().trim().to_string()).with_output(&out));
        }
        return super::path_info::add(ctx, r, &path).await;
    }
    let attrs = Attrs::default();
    let w = Write {
        dest: &path,
        attrs: &attrs,
        backup: false,
        force: true,
        validate: None,
    };
    let wrote = filewrite::apply(ctx, &w, Content::bytes(new.into_bytes()), &before).await?;
    if wrote.failed {
        return Ok(wrote);
    }
    super::path_info::add(ctx, r, &path).await
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
