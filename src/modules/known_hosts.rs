//! `known_hosts`: add, replace or remove a host's key in an SSH `known_hosts` file, as
//! ansible-core 2.19's `known_hosts` module does (lib/ansible/modules/known_hosts.py): the
//! host's `ssh-keygen` checks that the key names the host (`-F` on a temporary copy of it),
//! finds the host's current entry (`-F`, whose `# Host ... found: line N` says where), and
//! removes a host with no key given (`-R`); the new file is built on the controller and
//! written only when it changes. `hash_host` hashes the name as `ssh-keygen -H` would
//! (`|1|salt|HMAC-SHA1(salt, host)`), with a fresh salt each time, so a hashed entry already
//! there is kept rather than rehashed.

use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::boolish;
use super::filewrite;
use super::host_path;
use super::known_hosts_file::{hash_host_key, new_text, search};
use super::lineinfile::State;
use super::posix::Kind;
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(KnownHosts, "known_hosts", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The host (name or address; `[host]:port` for another port).
    #[serde(alias = "host")]
    name: String,
    /// The host's key line as `ssh-keyscan` prints it; required for `present`.
    key: Option<String>,
    /// The `known_hosts` file on the host (default `~/.ssh/known_hosts`).
    #[serde(default, deserialize_with = "host_path::opt")]
    path: Option<String>,
    /// Hash the host name in the entry written.
    #[serde(default, deserialize_with = "boolish")]
    hash_host: bool,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let host = p.name.to_lowercase();
    let present = p.state == State::Present;
    let key_given = p.key.as_deref().filter(|k| !k.is_empty());
    if key_given.is_none() && present {
        return Ok(ModuleResult::failed("No key specified when adding a host"));
    }
    let check = ctx
        .run(
            "command -v ssh-keygen >/dev/null || { echo 'Failed to find required executable \
             \"ssh-keygen\"' >&2; exit 127; }",
        )
        .await?;
    if !check.success() {
        return Ok(ModuleResult::failed(check.stderr_str().trim().to_string()));
    }
    // Upstream's default is a `type='path'` value too, so its `~` is expanded on the host.
    let path = match &p.path {
        Some(path) => path.clone(),
        None => host_path::expand(ctx, "~/.ssh/known_hosts").await?,
    };
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
    let old = before.text().into_owned();
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
    // Upstream's module returns its diff whether or not diff mode is on.
    r.diff = Some(Diff {
        path: Some(path.clone()),
        before: old.clone().into(),
        after: new.clone().into(),
    });
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
    let wrote = filewrite::write_text(ctx, &path, new, &before).await?;
    if wrote.failed {
        return Ok(wrote);
    }
    super::path_info::add(ctx, r, &path).await
}
