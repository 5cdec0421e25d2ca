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
    /// Run `apt-get update` first.
    #[serde(default, alias = "update-cache", deserialize_with = "boolish")]
    update_cache: bool,
    /// Accepted for compatibility: kinit refreshes the cache whenever `update_cache` is set.
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
    let _ = p.cache_valid_time;
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
    pkg::ensure(
        ctx,
        Manager::Apt,
        &p.name,
        p.state,
        p.update_cache,
        p.purge,
        &extra,
    )
    .await
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
