//! `apt_key`: add or remove a key in apt's keyring with the host's `apt-key`, as
//! ansible-core 2.19's `apt_key` (lib/ansible/modules/apt_key.py) does: the key's id comes
//! from `id`, else from the key itself (`gpg --with-colons` on the data or file); the keys
//! already there come from `apt-key adv --list-public-keys --keyid-format=long` (into
//! `before`), and only a key not there is added (`apt-key add`, or `adv --recv` from a
//! keyserver, which needs the host to reach it); `after` is listed again to check the change.
//! `url` is fetched on the host, as upstream's `fetch_url` runs there. Where the host has no
//! `apt-key` (Debian 13, newer Ubuntu) a named `keyring` file is kept with `gpg` instead
//! (`apt_keyring`); upstream fails there.

use serde::Deserialize;
use serde_json::Value;

use crate::transport::quote::sh;

use super::apt_keyring::Keyring;
use super::args::boolish;
use super::command::yes;
use super::host_path;
use super::lineinfile::State;
use super::{ModuleCtx, ModuleError, ModuleResult, http, typed_module};

typed_module!(AptKey, "apt_key", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The key's id (8, 16 or more hex digits, `0x` allowed); required for `absent`, and
    /// lets check mode tell whether a key would be added.
    id: Option<String>,
    /// The key itself (armored or binary text) to add.
    data: Option<String>,
    /// A key file on the host to add.
    #[serde(default, deserialize_with = "host_path::opt")]
    file: Option<String>,
    /// A URL the host fetches the key from.
    url: Option<String>,
    /// A keyring file (`/etc/apt/trusted.gpg.d/NAME.gpg`) instead of apt's default one; on a
    /// host without `apt-key` it is kept with `gpg` (armored when it ends in `.asc`).
    #[serde(default, deserialize_with = "host_path::opt")]
    keyring: Option<String>,
    /// Check the TLS certificate of `url` (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    validate_certs: bool,
    /// A keyserver to receive the key `id` from (the host must reach it).
    keyserver: Option<String>,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
}

/// The key ids in `apt-key`/`gpg` listing output (upstream's `parse_output_for_keys`): the
/// id of every `pub`/`sub` line that has not expired, from `rsa4096/ID` or the fifth field of
/// a `--with-colons` line; `short` keeps their last 8 digits.
pub fn keys_in(out: &str, short: bool) -> Vec<String> {
    let mut found = Vec::new();
    for line in out.split('\n') {
        if !(line.starts_with("pub") || line.starts_with("sub")) || line.contains("expired") {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let code = match words.get(1).and_then(|w| w.split_once('/')) {
            Some((_, code)) if !code.contains('/') => Some(code.to_string()),
            _ => line.split(':').nth(4).map(str::to_string),
        };
        if let Some(c) = code {
            found.push(c);
        }
    }
    if short {
        for k in &mut found {
            let start = k.len().saturating_sub(8);
            *k = k[start..].to_string();
        }
    }
    found
}

/// The short id (last 8), the id `--list-public-keys` prints (last 16) and the whole id of a
/// key id given as 8, 16 or more hex digits (upstream's `parse_key_id`).
pub fn parse_key_id(id: &str) -> Option<(String, String, String)> {
    let hex = id
        .strip_prefix("0x")
        .or(id.strip_prefix("0X"))
        .unwrap_or(id);
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let key = hex.to_ascii_uppercase();
    let n = key.len();
    if n != 8 && n != 16 && n <= 16 {
        return None;
    }
    let short = key[n - 8..].to_string();
    let fp = if n > 16 {
        key[n - 16..].to_string()
    } else {
        key.clone()
    };
    Some((short, fp, key))
}

async fn list(
    ctx: &ModuleCtx<'_>,
    keyring: &Keyring,
    short: bool,
) -> Result<Result<Vec<String>, ModuleResult>, ModuleError> {
    let out = ctx.run(keyring.list()).await?;
    if !out.success() {
        return Ok(Err(
            ModuleResult::failed("Unable to list public keys").with_output(&out)
        ));
    }
    Ok(Ok(keys_in(&out.stdout_str(), short)))
}

/// The first key id in a key file on the host, or in `data` with `file` `-`.
async fn id_of(
    ctx: &ModuleCtx<'_>,
    file: &str,
    data: Option<Vec<u8>>,
) -> Result<Result<Option<String>, ModuleResult>, ModuleError> {
    let what = if data.is_some() {
        "inline data".to_string()
    } else {
        file.to_string()
    };
    let out = ctx
        .run_with_stdin(
            format!("LC_ALL=C LANG=C gpg --with-colons {}", sh(file)),
            data,
        )
        .await?;
    if !out.success() {
        return Ok(Err(ModuleResult::failed(format!(
            "Unable to extract key from '{what}'"
        ))
        .with("stdout", out.stdout_str())
        .with("stderr", out.stderr_str())));
    }
    Ok(Ok(keys_in(&out.stdout_str(), false).into_iter().next()))
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let given = [&p.data, &p.file, &p.keyserver, &p.url]
        .iter()
        .filter(|v| v.is_some())
        .count();
    if given > 1 {
        // Upstream's argument check names the whole group.
        return Ok(ModuleResult::failed(
            "parameters are mutually exclusive: data|file|keyserver|url",
        ));
    }
    let tools = ctx
        .run("command -v gpg >/dev/null 2>&1 || echo no-gpg; command -v apt-key >/dev/null 2>&1 || echo no-apt-key")
        .await?
        .stdout_str();
    if tools.contains("no-gpg") {
        return Ok(ModuleResult::failed(
            "Failed to find required executable \"gpg\" in paths",
        ));
    }
    let keyring = match (tools.contains("no-apt-key"), &p.keyring) {
        (false, k) => Keyring::AptKey(k.clone()),
        (true, Some(k)) => Keyring::Gpg(k.clone()),
        (true, None) => {
            return Ok(ModuleResult::failed(
                "the host has no `apt-key` (removed from recent Debian and Ubuntu releases): give \
                 a `keyring` file (under /etc/apt/keyrings, named in the repository's \
                 `signed-by`), or use `deb822_repository` with `signed_by`",
            ));
        }
    };
    let keyring = &keyring;
    let mut data = p.data.clone().map(String::into_bytes);
    let mut id = p.id.clone();
    if id.is_none() {
        if p.keyserver.is_some() {
            return Ok(ModuleResult::failed(
                "Missing key_id, required with keyserver.",
            ));
        }
        if let Some(url) = &p.url {
            match http::get(ctx, url, p.validate_certs).await? {
                Ok(b) => data = Some(b),
                Err(_) => {
                    return Ok(ModuleResult::failed(format!(
                        "Error getting key id from url: {url}"
                    )));
                }
            }
        }
        let found = if let Some(f) = &p.file {
            id_of(ctx, f, None).await?
        } else if let Some(d) = data.clone().filter(|d| !d.is_empty()) {
            id_of(ctx, "-", Some(d)).await?
        } else {
            Ok(None)
        };
        match found {
            Ok(k) => id = k,
            Err(failed) => return Ok(failed),
        }
    }
    let mut r = ModuleResult::ok().with("id", id.clone().map_or(Value::Null, Value::from));
    let Some((short_id, fp, key_id)) = id.as_deref().and_then(parse_key_id) else {
        return Ok(ModuleResult {
            msg: Some("Invalid key_id".into()),
            failed: true,
            ..r
        });
    };
    r = r
        .with("short_id", short_id.as_str())
        .with("fp", fp.as_str())
        .with("key_id", key_id.as_str());
    let short = key_id.len() == 8;
    let has = |keys: &[String]| {
        if short {
            keys.contains(&short_id)
        } else {
            keys.contains(&fp)
        }
    };
    let before = match list(ctx, keyring, short).await? {
        Ok(k) => k,
        Err(failed) => return Ok(failed),
    };
    r = r.with("before", before.clone());
    let no_error = "apt-key did not return an error, but";
    match p.state {
        State::Present => {
            if has(&before) {
                return Ok(r);
            }
            r.changed = true;
            if ctx.check_mode {
                return Ok(r);
            }
            let added = if let Some(f) = &p.file {
                add(ctx, keyring, Some(f), None).await?
            } else if let Some(server) = &p.keyserver {
                recv(ctx, keyring, server, &key_id).await?
            } else if let Some(d) = data.clone() {
                add(ctx, keyring, None, Some(d)).await?
            } else if let Some(url) = &p.url {
                match http::get(ctx, url, p.validate_certs).await? {
                    Ok(b) => add(ctx, keyring, None, Some(b)).await?,
                    Err(e) => Err(ModuleResult::failed(format!(
                        "Failed to download key at {url}: {e}"
                    ))),
                }
            } else {
                Err(ModuleResult::failed(
                    "no key to add: give `data`, `file`, `url` or `keyserver`",
                ))
            };
            if let Err(failed) = added {
                return Ok(failed);
            }
            let after = match list(ctx, keyring, short).await? {
                Ok(k) => k,
                Err(failed) => return Ok(failed),
            };
            let ok = has(&after);
            r = r.with("after", after);
            if !ok {
                r.failed = true;
                r.msg = Some(format!(
                    "{no_error} failed to add the key (check that the id is correct and *not* \
                     a subkey)"
                ));
            }
        }
        State::Absent => {
            if !before.contains(&fp) {
                return Ok(r);
            }
            r.changed = true;
            if ctx.check_mode {
                return Ok(r);
            }
            // By the short id: apt-key del mishandled longer ids (Launchpad bug 1481871).
            let out = ctx.run(keyring.delete(&short_id)).await?;
            if !out.success() {
                return Ok(ModuleResult::failed(format!(
                    "Unable to remove a key with id {short_id}"
                ))
                .with_output(&out));
            }
            let after = match list(ctx, keyring, short).await? {
                Ok(k) => k,
                Err(failed) => return Ok(failed),
            };
            let gone = !after.contains(&fp);
            r = r.with("after", after);
            if !gone {
                r.failed = true;
                r.msg = Some(format!(
                    "{no_error} the key was not removed (check that the id is correct and *not* \
                     a subkey)"
                ));
            }
        }
    }
    Ok(r)
}

/// Add the keys of a file on the host, or of `data` on stdin.
async fn add(
    ctx: &ModuleCtx<'_>,
    keyring: &Keyring,
    file: Option<&str>,
    data: Option<Vec<u8>>,
) -> Result<Result<(), ModuleResult>, ModuleError> {
    let msg = match file {
        Some(f) => format!("Unable to add a key from file {f}"),
        None => "Unable to add a key from binary data".to_string(),
    };
    let out = ctx.run_with_stdin(keyring.add(file), data).await?;
    Ok(if out.success() {
        Ok(())
    } else {
        Err(ModuleResult::failed(msg).with_output(&out))
    })
}

/// Receive a key from a keyserver, tried five times as upstream tries.
async fn recv(
    ctx: &ModuleCtx<'_>,
    keyring: &Keyring,
    server: &str,
    key_id: &str,
) -> Result<Result<(), ModuleResult>, ModuleError> {
    let cmd = keyring.recv(server, key_id);
    let mut last = None;
    for _ in 0..5 {
        let out = ctx.run(cmd.clone()).await?;
        if out.success() {
            return Ok(Ok(()));
        }
        last = Some(out);
    }
    let out = last.expect("five tries ran");
    let msg = if out.rc == 2 && out.stdout_str().contains("not found on keyserver") {
        format!("Key {key_id} not found on keyserver {server}")
    } else {
        format!("Error fetching key {key_id} from keyserver: {server}")
    };
    Ok(Err(ModuleResult::failed(msg).with_output(&out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_split_as_upstream() {
        assert_eq!(
            parse_key_id("0x9fed2bcbdcd29cdf762678cbaed4b06f473041fa"),
            Some((
                "473041FA".into(),
                "AED4B06F473041FA".into(),
                "9FED2BCBDCD29CDF762678CBAED4B06F473041FA".into()
            ))
        );
        assert_eq!(parse_key_id("473041fa").unwrap().1, "473041FA");
        assert_eq!(parse_key_id("12345"), None);
        assert_eq!(parse_key_id("nothex12"), None);
    }

    #[test]
    fn listings_in_both_formats_give_ids() {
        let apt = "/etc/apt/trusted.gpg\n--------------------\n\
                   pub   rsa4096/AED4B06F473041FA 2010-08-27 [SC] [expires: 2030-01-01]\n\
                   uid   [ unknown] Debian Archive\n\
                   pub   rsa2048/0123456789ABCDEF 2001-01-01 [SC] [expired: 2002-01-01]\n\
                   sub   rsa4096/1111222233334444 2010-08-27 [E]\n";
        assert_eq!(
            keys_in(apt, false),
            vec!["AED4B06F473041FA", "1111222233334444"]
        );
        assert_eq!(keys_in(apt, true), vec!["473041FA", "33334444"]);
        let colons = "pub:-:4096:1:AED4B06F473041FA:1282940623:::-:\nfpr:::::::::X:\n";
        assert_eq!(keys_in(colons, false), vec!["AED4B06F473041FA"]);
    }
}
