//! `service`: start, stop, restart, reload, enable or disable a service, with systemd when
//! the host runs it and SysV init scripts (`service`, `update-rc.d`/`chkconfig`) otherwise.

use serde::Deserialize;

use super::args::{boolish, opt_boolish, opt_stringish};
use super::svc::{self, SvcState, Want};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Service, "service", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The service (unit or init script name); may be left out with only `daemon_reload`.
    name: Option<String>,
    /// `started`, `stopped`, `restarted` or `reloaded`.
    state: Option<SvcState>,
    /// Start at boot.
    #[serde(default, deserialize_with = "opt_boolish")]
    enabled: Option<bool>,
    /// Accepted for compatibility: kinit detects the init system itself.
    #[serde(default, rename = "use")]
    use_: Option<String>,
    /// Accepted for compatibility; ignored.
    #[serde(default, deserialize_with = "opt_stringish")]
    sleep: Option<String>,
    /// Run `systemctl daemon-reload` first on a systemd host (Ansible's `service` hands its
    /// arguments to `systemd` there, so playbooks use it with `service` too).
    #[serde(default, alias = "daemon-reload", deserialize_with = "boolish")]
    daemon_reload: bool,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = (&p.use_, &p.sleep);
    if p.state.is_none() && p.enabled.is_none() && !p.daemon_reload {
        return Err(ModuleError::BadArgs {
            module: "service",
            detail: "one of `state`, `enabled` or `daemon_reload` is required".into(),
        });
    }
    let Some(name) = p.name else {
        if p.state.is_some() || p.enabled.is_some() {
            return Err(ModuleError::BadArgs {
                module: "service",
                detail: "`name` is required with `state` or `enabled`".into(),
            });
        }
        // Only a daemon-reload: what the systemd module does with no name.
        return super::systemd::manager_only(ctx, true, false).await;
    };
    let want = Want {
        name,
        state: p.state,
        enabled: p.enabled,
        daemon_reload: p.daemon_reload,
        daemon_reexec: false,
        ..Want::default()
    };
    svc::ensure(ctx, &want).await
}
