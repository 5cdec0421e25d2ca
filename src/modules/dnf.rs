//! `dnf`: Fedora/RHEL/Rocky packages (install, remove, upgrade to latest, refresh the cache).
//! The decision is `pkg::plan`'s; the probe uses `rpm -q` and `dnf check-update`.

use serde::Deserialize;

use super::args::{boolish, list, opt_boolish};
use super::pkg::{self, Manager, PkgState};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Dnf, "dnf", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Package names (list or comma-separated).
    #[serde(default, alias = "pkg", deserialize_with = "list")]
    name: Vec<String>,
    /// `present` (default), `absent` or `latest`.
    #[serde(default)]
    state: PkgState,
    /// Run `dnf makecache` first.
    #[serde(default, alias = "update-cache", deserialize_with = "boolish")]
    update_cache: bool,
    /// Repositories to enable for this run.
    #[serde(default, deserialize_with = "list")]
    enablerepo: Vec<String>,
    /// Repositories to disable for this run.
    #[serde(default, deserialize_with = "list")]
    disablerepo: Vec<String>,
    /// Skip the GPG signature check.
    #[serde(default, deserialize_with = "boolish")]
    disable_gpg_check: bool,
    /// Install weakly depending packages (dnf's recommends) too; dnf's default when unset.
    #[serde(default, deserialize_with = "opt_boolish")]
    install_weak_deps: Option<bool>,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let mut extra: Vec<String> = Vec::new();
    extra.extend(p.enablerepo.iter().map(|r| format!("--enablerepo={r}")));
    extra.extend(p.disablerepo.iter().map(|r| format!("--disablerepo={r}")));
    if p.disable_gpg_check {
        extra.push("--nogpgcheck".into());
    }
    if let Some(weak) = p.install_weak_deps {
        extra.push(format!("--setopt=install_weak_deps={weak}"));
    }
    pkg::ensure(
        ctx,
        Manager::Dnf,
        &p.name,
        p.state,
        p.update_cache,
        false,
        &extra,
    )
    .await
}
