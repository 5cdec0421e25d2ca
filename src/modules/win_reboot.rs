//! `win_reboot`: reboot a Windows host.
//!
//! The module records the current boot time and schedules the restart (`shutdown.exe /r`);
//! it cannot wait for the host itself, because the connection it was given dies with the
//! reboot. It returns `reboot_requested: true` with the waiting parameters
//! (`reboot_timeout`, `post_reboot_delay`, `connect_timeout`, `test_command`,
//! `previous_boot_time`): the **executor** (`exec::reboot`) then drops the host's
//! connection, reconnects until the boot time changes (the task fails after
//! `reboot_timeout`), waits `post_reboot_delay`, runs `test_command` until it succeeds, and
//! sets `elapsed` and `rebooted: true`. In check mode nothing is scheduled and
//! `reboot_requested` is false. The `# kinit:reboot` line marks the script for the WinRM
//! test server, which plays the reboot.

use serde::Deserialize;

use crate::transport::quote::ps;

use super::args::opt_u64ish;
use super::{ModuleCtx, ModuleError, ModuleResult, pwsh, typed_module};

typed_module!(WinReboot, "win_reboot", Params, run, windows);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Seconds to wait for the host to come back (default 600).
    #[serde(default, deserialize_with = "opt_u64ish")]
    reboot_timeout: Option<u64>,
    /// Seconds before the restart starts (default 2).
    #[serde(default, deserialize_with = "opt_u64ish")]
    pre_reboot_delay: Option<u64>,
    /// Seconds to wait after the host is back, before `test_command` (default 0).
    #[serde(default, deserialize_with = "opt_u64ish")]
    post_reboot_delay: Option<u64>,
    /// Seconds one reconnection attempt may take (default: the transport's).
    #[serde(default, deserialize_with = "opt_u64ish")]
    connect_timeout: Option<u64>,
    /// Command that must succeed for the host to count as back (default `whoami`).
    #[serde(default = "whoami")]
    test_command: String,
    /// Message shown to logged-in users.
    #[serde(default = "reboot_msg")]
    msg: String,
}

fn whoami() -> String {
    "whoami".into()
}
fn reboot_msg() -> String {
    "Reboot initiated by kinit".into()
}

/// The module body (inside `pwsh::frame`).
pub fn body(p: &Params) -> String {
    format!(
        r#"# kinit:reboot
$os = Get-CimInstance -ClassName Win32_OperatingSystem
$r.previous_boot_time = $os.LastBootUpTime.ToUniversalTime().ToString('o')
$r.changed = $true
$r.reboot_requested = -not $check
if (-not $check) {{
  & shutdown.exe /r /t {delay} /c {msg} | Out-Null
  if ($LASTEXITCODE -ne 0) {{ throw "shutdown.exe failed with exit code $LASTEXITCODE" }}
}}"#,
        delay = p.pre_reboot_delay.unwrap_or(2),
        msg = ps(&p.msg),
    )
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let r = pwsh::run_framed(ctx, &body(&p), None).await?;
    Ok(r.with("reboot_timeout", p.reboot_timeout.unwrap_or(600))
        .with("post_reboot_delay", p.post_reboot_delay.unwrap_or(0))
        .with("connect_timeout", p.connect_timeout)
        .with("test_command", p.test_command.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::args::parse;

    #[test]
    fn script_parses() {
        let p: Params = parse(
            "win_reboot",
            &serde_json::json!({"msg": "it's time", "pre_reboot_delay": 0}),
        )
        .unwrap();
        let s = pwsh::frame(false, &body(&p));
        pwsh::assert_parses(&s);
        assert!(s.contains("& shutdown.exe /r /t 0 /c 'it''s time'"));
    }
}
