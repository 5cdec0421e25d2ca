//! `win_service`: a Windows service's state (started/stopped/restarted/absent), start mode,
//! display name and description; created with `New-Service` when `path` is given. Check and
//! change are one PowerShell run.

use serde::Deserialize;

use crate::transport::quote::ps;

use super::{ModuleCtx, ModuleError, ModuleResult, pwsh, typed_module};

typed_module!(WinService, "win_service", Params, run, windows);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Started,
    Stopped,
    Restarted,
    Absent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartMode {
    Auto,
    Delayed,
    Manual,
    Disabled,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Service name.
    name: String,
    /// `started`, `stopped`, `restarted` or `absent`.
    state: Option<State>,
    /// `auto`, `delayed`, `manual` or `disabled`.
    start_mode: Option<StartMode>,
    /// Display name.
    display_name: Option<String>,
    /// Description.
    description: Option<String>,
    /// Executable (with arguments) to create the service with when it does not exist.
    path: Option<String>,
}

/// The module body (inside `pwsh::frame`).
pub fn body(p: &Params) -> String {
    let mut s = format!(
        "$n = {}\n$svc = Get-Service -Name $n -ErrorAction SilentlyContinue\n$r.exists = $null -ne $svc\n",
        ps(&p.name)
    );
    if p.state == Some(State::Absent) {
        s.push_str(
            "if ($null -ne $svc) {\n  $r.changed = $true\n  if (-not $check) {\n    Stop-Service -Name $n -Force -ErrorAction SilentlyContinue\n    & sc.exe delete $n | Out-Null\n    if ($LASTEXITCODE -ne 0) { throw \"sc.exe delete $n failed with exit code $LASTEXITCODE\" }\n  }\n}\n",
        );
        return s;
    }
    match &p.path {
        Some(path) => {
            let mut create = format!("New-Service -Name $n -BinaryPathName {}", ps(path));
            if let Some(d) = &p.display_name {
                create.push_str(&format!(" -DisplayName {}", ps(d)));
            }
            s.push_str(&format!(
                "if ($null -eq $svc) {{\n  $r.changed = $true\n  if ($check) {{ $r.exists = $false }} else {{\n    {create} | Out-Null\n    $svc = Get-Service -Name $n\n  }}\n}}\n"
            ));
        }
        None => s.push_str("if ($null -eq $svc) { throw \"service $n does not exist\" }\n"),
    }
    s.push_str("if ($null -ne $svc) {\n  $cim = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $n }\n");
    if let Some(m) = p.start_mode {
        let (want, set) = match m {
            StartMode::Auto => ("Auto", "Set-Service -Name $n -StartupType Automatic"),
            StartMode::Delayed => (
                "Delayed",
                "& sc.exe config $n start= delayed-auto | Out-Null",
            ),
            StartMode::Manual => ("Manual", "Set-Service -Name $n -StartupType Manual"),
            StartMode::Disabled => ("Disabled", "Set-Service -Name $n -StartupType Disabled"),
        };
        s.push_str(&format!(
            "  $mode = $cim.StartMode\n  if ($mode -eq 'Auto' -and $cim.DelayedAutoStart) {{ $mode = 'Delayed' }}\n  if ($mode -ne '{want}') {{\n    $r.changed = $true\n    if (-not $check) {{ {set} }}\n  }}\n  $r.start_mode = '{lower}'\n",
            lower = want.to_lowercase()
        ));
    }
    if let Some(d) = &p.display_name {
        s.push_str(&format!(
            "  if ($svc.DisplayName -ne {d}) {{\n    $r.changed = $true\n    if (-not $check) {{ Set-Service -Name $n -DisplayName {d} }}\n  }}\n",
            d = ps(d)
        ));
    }
    if let Some(d) = &p.description {
        s.push_str(&format!(
            "  if ($cim.Description -ne {d}) {{\n    $r.changed = $true\n    if (-not $check) {{ Set-Service -Name $n -Description {d} }}\n  }}\n",
            d = ps(d)
        ));
    }
    match p.state {
        Some(State::Started) => s.push_str(
            "  if ($svc.Status -ne 'Running') {\n    $r.changed = $true\n    if (-not $check) { Start-Service -Name $n }\n  }\n",
        ),
        Some(State::Stopped) => s.push_str(
            "  if ($svc.Status -ne 'Stopped') {\n    $r.changed = $true\n    if (-not $check) { Stop-Service -Name $n -Force }\n  }\n",
        ),
        Some(State::Restarted) => s.push_str(
            "  $r.changed = $true\n  if (-not $check) { Restart-Service -Name $n -Force }\n",
        ),
        _ => {}
    }
    s.push_str("  $r.state = (Get-Service -Name $n).Status.ToString().ToLower()\n}\n");
    s
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    Ok(pwsh::run_framed(ctx, &body(&p), None)
        .await?
        .with("name", p.name.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::args::parse;

    #[test]
    fn scripts_parse() {
        for args in [
            serde_json::json!({"name": "kubelet", "state": "started", "start_mode": "auto"}),
            serde_json::json!({"name": "kubelet", "state": "restarted", "start_mode": "delayed", "display_name": "Kube's let", "description": "d"}),
            serde_json::json!({"name": "flanneld", "path": "C:\\k\\flanneld.exe --kubeconfig-file C:\\k\\config", "state": "stopped", "start_mode": "disabled"}),
            serde_json::json!({"name": "old", "state": "absent"}),
        ] {
            let p: Params = parse("win_service", &args).unwrap();
            for check in [true, false] {
                pwsh::assert_parses(&pwsh::frame(check, &body(&p)));
            }
        }
    }
}
