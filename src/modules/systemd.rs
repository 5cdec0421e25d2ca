//! `systemd` (also `systemd_service`): a systemd unit's state, enablement and mask, with
//! `daemon_reload`. On a host that does not run systemd it falls back to the unit's SysV init
//! script for `state`/`enabled` (as `service` does) and says that `masked`/`daemon_reload`
//! were ignored.

use serde::Deserialize;

use super::args::{boolish, opt_boolish};
use super::svc::{self, SvcState, Want};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Systemd, "systemd", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The unit (`.service` may be left out).
    #[serde(alias = "service", alias = "unit")]
    name: Option<String>,
    /// `started`, `stopped`, `restarted` or `reloaded`.
    state: Option<SvcState>,
    /// Start at boot.
    #[serde(default, deserialize_with = "opt_boolish")]
    enabled: Option<bool>,
    /// Mask (`yes`) or unmask (`no`) the unit.
    #[serde(default, deserialize_with = "opt_boolish")]
    masked: Option<bool>,
    /// Run `systemctl daemon-reload` before anything else.
    #[serde(default, alias = "daemon-reload", deserialize_with = "boolish")]
    daemon_reload: bool,
    /// Run `systemctl daemon-reexec` (after `daemon_reload`) before anything else.
    #[serde(default, alias = "daemon-reexec", deserialize_with = "boolish")]
    daemon_reexec: bool,
    /// Accepted for compatibility; kinit always waits for the job.
    #[serde(default, deserialize_with = "boolish")]
    no_block: bool,
    /// Which systemd instance: `system` (the default, the only one kinit drives).
    scope: Option<String>,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = p.no_block;
    if let Some(scope) = p.scope.as_deref().filter(|s| *s != "system") {
        return Err(ModuleError::BadArgs {
            module: "systemd",
            detail: format!("`scope` `{scope}`: kinit drives the system instance only"),
        });
    }
    let Some(name) = p.name else {
        if !p.daemon_reload && !p.daemon_reexec {
            return Err(ModuleError::BadArgs {
                module: "systemd",
                detail:
                    "`name` is required unless only `daemon_reload`/`daemon_reexec` is asked for"
                        .into(),
            });
        }
        return manager_only(ctx, p.daemon_reload, p.daemon_reexec).await;
    };
    let want = Want {
        name,
        state: p.state,
        enabled: p.enabled,
        daemon_reload: p.daemon_reload,
        daemon_reexec: p.daemon_reexec,
        masked: p.masked,
    };
    svc::ensure(ctx, &want).await
}

/// `systemctl daemon-reload` and/or `daemon-reexec` on a host that runs systemd (nothing
/// elsewhere); nothing in check mode. The whole task of `systemd`/`service` with one of them
/// and no `name`. Like Ansible's, these do not count as a change.
pub(super) async fn manager_only(
    ctx: &ModuleCtx<'_>,
    reload: bool,
    reexec: bool,
) -> Result<ModuleResult, ModuleError> {
    if ctx.check_mode {
        return Ok(ModuleResult::ok());
    }
    let verbs: Vec<&str> = [("daemon-reload", reload), ("daemon-reexec", reexec)]
        .into_iter()
        .filter_map(|(v, on)| on.then_some(v))
        .collect();
    let calls: Vec<String> = verbs.iter().map(|v| format!("systemctl {v}")).collect();
    let out = ctx
        .run(format!(
            "if [ -d /run/systemd/system ]; then {}; fi",
            calls.join(" && ")
        ))
        .await?;
    Ok(if out.success() {
        ModuleResult::ok()
    } else {
        ModuleResult::failed(format!(
            "{} failed: {}",
            verbs.join("/"),
            out.stderr_str().trim()
        ))
    })
}
