//! `raw`: send text to the host's shell as it is: no `creates`, no `chdir`, no check-mode
//! prediction (like Ansible, it is skipped in check mode). On a WinRM host the text is
//! PowerShell, run as it is by the transport (Ansible's `raw` works the same on Windows).

use std::time::Instant;

use serde::Deserialize;

use crate::transport::ShellKind;
use crate::transport::quote::sh;

use super::command::finish;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Raw, "raw", Params, run, windows);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The text to run (free-form).
    #[serde(rename = "_raw_params")]
    raw_params: String,
    /// Run the text with this shell instead of the connection's default.
    executable: Option<String>,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if ctx.check_mode {
        let mut r = ModuleResult::ok();
        r.skipped = true;
        r.msg = Some("raw does not support check mode".into());
        return Ok(r);
    }
    let script = match &p.executable {
        Some(exe) if ctx.conn.shell() == ShellKind::PowerShell => {
            return Ok(ModuleResult::failed(format!(
                "raw: `executable: {exe}` is not supported on the Windows (PowerShell) host \
                 `{}`; the text always runs as PowerShell there",
                ctx.host
            )));
        }
        Some(exe) => format!("{} -c {}", sh(exe), sh(&p.raw_params)),
        None => p.raw_params.clone(),
    };
    let started = Instant::now();
    let out = ctx.run(script).await?;
    Ok(finish(out, started, p.raw_params.into(), false))
}
