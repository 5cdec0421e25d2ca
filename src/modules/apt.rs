//! `apt`: Debian/Ubuntu packages (install, remove, upgrade to latest, refresh the cache, or
//! install a local `.deb` that is already on the host). The decision is `pkg::plan`'s.

use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::{boolish, list, opt_boolish, opt_u64ish};
use super::host_path;
use super::pkg::{self, Manager, PkgState};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Apt, "apt", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Package names (list or comma-separated); `name=version` pins a version.
    #[serde(default, alias = "pkg", alias = "package", deserialize_with = "list")]
    name: Vec<String>,
    /// `present` (default), `absent` or `latest`.
    #[serde(default)]
    state: PkgState,
    /// Run `apt-get update` first (unless the cache is younger than `cache_valid_time`).
    #[serde(default, alias = "update-cache", deserialize_with = "boolish")]
    update_cache: bool,
    /// Seconds the cache stays fresh: an older one is updated, with or without
    /// `update_cache`, as ansible-core's apt does.
    #[serde(default, deserialize_with = "opt_u64ish")]
    cache_valid_time: Option<u64>,
    /// A `.deb` file on the host to install when that version is not installed.
    #[serde(default, deserialize_with = "host_path::opt")]
    deb: Option<String>,
    /// With `state: absent`, also remove configuration files.
    #[serde(default, deserialize_with = "boolish")]
    purge: bool,
    /// Install recommended packages too (apt's default when unset).
    #[serde(default, deserialize_with = "opt_boolish")]
    install_recommends: Option<bool>,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let cache = match p.update_cache || p.cache_valid_time.is_some_and(|t| t > 0) {
        true => Some(refresh_cache(ctx, p.cache_valid_time.unwrap_or(0)).await?),
        false => None,
    };
    let cache = match cache {
        Some(Err(failed)) => return Ok(failed),
        Some(Ok(c)) => Some(c),
        None => None,
    };
    // Only a cache to update: changed when it was (ansible-core's apt exits there).
    if let Some(c) = cache.filter(|_| p.name.is_empty() && p.deb.is_none()) {
        return Ok(ModuleResult {
            changed: c.updated,
            ..ModuleResult::ok()
        }
        .with("cache_updated", c.updated)
        .with("cache_update_time", c.time));
    }
    if let Some(deb) = &p.deb {
        return install_deb(ctx, deb).await;
    }
    let mut extra = Vec::new();
    match p.install_recommends {
        Some(false) => extra.push("--no-install-recommends".to_string()),
        Some(true) => extra.push("--install-recommends".to_string()),
        None => {}
    }
    if p.state == PkgState::Absent {
        extra.clear();
    }
    let r = pkg::ensure(ctx, Manager::Apt, &p.name, p.state, false, p.purge, &extra).await?;
    // Installs say whether the cache was updated and when it last was (removals do not).
    Ok(match p.state {
        PkgState::Absent => r,
        _ => {
            let c = cache.unwrap_or_default();
            r.with("cache_updated", c.updated)
                .with("cache_update_time", c.time)
        }
    })
}

/// The apt cache's state after `refresh_cache`.
#[derive(Debug, Default, Clone, Copy)]
struct Cache {
    updated: bool,
    /// When it was last updated (seconds since the epoch; 0 when never).
    time: u64,
}

/// How old the cache is, as ansible-core's apt reads it: the mtime of apt's update-success
/// stamp, else of its lists folder, else 0; then the host's clock.
const CACHE_AGE: &str = "t=$(stat -c %Y /var/lib/apt/periodic/update-success-stamp 2>/dev/null \
    || stat -c %Y /var/lib/apt/lists 2>/dev/null || echo 0); echo \"kinit-cache $t $(date +%s)\"";

/// Whether a cache last updated at `stamp` is still fresh at `now` for `cache_valid_time`
/// `valid` (whole seconds). Without `cache_valid_time` it never is: ansible-core compares the
/// stamp's sub-second mtime with the clock, which a past update never reaches, while whole
/// seconds would call a cache another apt run updated this very second fresh.
fn is_fresh(stamp: u64, now: u64, valid: u64) -> bool {
    valid > 0 && stamp.saturating_add(valid) >= now
}

/// `apt-get update` when the cache is older than `valid` seconds (check mode only says it
/// would); whether it was updated is whether its time moved (always, in check mode).
async fn refresh_cache(
    ctx: &ModuleCtx<'_>,
    valid: u64,
) -> Result<Result<Cache, ModuleResult>, ModuleError> {
    let age = |text: String| {
        let line = text.lines().find_map(|l| l.strip_prefix("kinit-cache "))?;
        let (t, now) = line.split_once(' ')?;
        Some((
            t.trim().parse::<u64>().ok()?,
            now.trim().parse::<u64>().ok()?,
        ))
    };
    let out = ctx.run(CACHE_AGE).await?;
    let (time, now) = age(out.stdout_str()).unwrap_or((0, u64::MAX));
    if is_fresh(time, now, valid) {
        return Ok(Ok(Cache {
            updated: false,
            time,
        }));
    }
    if ctx.check_mode {
        return Ok(Ok(Cache {
            updated: true,
            time,
        }));
    }
    let out = ctx
        .run(format!(
            "{} && {CACHE_AGE}",
            Manager::Apt.update_cache_command()
        ))
        .await?;
    if !out.success() {
        return Ok(Err(ModuleResult::failed(format!(
            "Failed to update apt cache: {}",
            out.stderr_str().trim()
        ))
        .with_output(&out)));
    }
    let after = age(out.stdout_str()).map_or(time, |(t, _)| t);
    Ok(Ok(Cache {
        updated: after != time,
        time: after,
    }))
}

/// Install a `.deb` on the host unless that package at that version is installed.
async fn install_deb(ctx: &ModuleCtx<'_>, deb: &str) -> Result<ModuleResult, ModuleError> {
    let d = sh(deb);
    let probe = format!(
        "n=$(dpkg-deb -f {d} Package) && v=$(dpkg-deb -f {d} Version) || exit 3\n\
         i=$(dpkg-query -W -f='${{db:Status-Abbrev}} ${{Version}}' \"$n\" 2>/dev/null)\n\
         echo \"kinit-deb|$n|$v|$i\"\n"
    );
    let out = ctx.run(probe).await?;
    let text = out.stdout_str();
    let Some(line) = text.lines().find_map(|l| l.strip_prefix("kinit-deb|")) else {
        return Ok(ModuleResult::failed(format!(
            "`{deb}` is not a readable .deb on the host: {}",
            out.stderr_str().trim()
        )));
    };
    let f: Vec<&str> = line.split('|').collect();
    let (name, version, status) = (
        f[0],
        f.get(1).copied().unwrap_or(""),
        f.get(2).copied().unwrap_or(""),
    );
    let installed = status.starts_with("ii") && status.split_whitespace().last() == Some(version);
    let r = ModuleResult {
        changed: !installed,
        ..ModuleResult::ok()
    }
    .with("name", name)
    .with("version", version);
    if installed || ctx.check_mode {
        return Ok(r);
    }
    // apt-get (not dpkg) so that a busy dpkg lock is waited for; it needs `./` on a
    // relative path to read it as a file.
    let path = if deb.starts_with('/') || deb.starts_with("./") {
        deb.to_string()
    } else {
        format!("./{deb}")
    };
    let out = ctx
        .run(format!(
            "DEBIAN_FRONTEND=noninteractive apt-get {} {} install -y -q {}",
            pkg::APT_LOCK_WAIT[0],
            pkg::APT_LOCK_WAIT[1],
            sh(&path)
        ))
        .await?;
    if !out.success() {
        return Ok(ModuleResult::failed(format!(
            "installing `{deb}` failed: {}",
            out.stderr_str().trim()
        ))
        .with_output(&out));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::is_fresh;

    #[test]
    fn only_cache_valid_time_makes_a_cache_fresh() {
        let now = 1_700_000_000;
        // update_cache alone: updated even when another run stamped the cache this second.
        assert!(!is_fresh(now, now, 0));
        assert!(!is_fresh(now + 5, now, 0));
        // cache_valid_time: fresh up to and including its last second, as ansible-core's `>=`.
        assert!(is_fresh(now - 3600, now, 3600));
        assert!(!is_fresh(now - 3601, now, 3600));
        // Never updated (stamp 0) is stale for any validity.
        assert!(!is_fresh(0, now, 86_400));
    }
}
