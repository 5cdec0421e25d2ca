//! `win_feature`: install or remove Windows Server roles and features
//! (`Install-WindowsFeature`); reports `reboot_required` from the result, and also when a
//! requested feature is already in place but still waits for a reboot. Check and change are
//! one PowerShell run.
//!
//! A feature installed without the reboot it needs has `InstallState` `InstallPending` while
//! its `Installed` property is already `$true` (inspec/inspec#2774: the `Installed` check "sees
//! InstallPending state as being installed"). Deciding by `Installed` alone would report
//! nothing to do and no reboot, and the feature would stay unusable (the Containers feature
//! installed at first logon by the Windows answer file is the case kinit meets).

use serde::Deserialize;

use crate::transport::quote::ps;

use super::args::{boolish, list};
use super::lineinfile::State;
use super::{ModuleCtx, ModuleError, ModuleResult, pwsh, typed_module};

typed_module!(WinFeature, "win_feature", Params, run, windows);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Feature names (list or comma-separated), e.g. `Containers`.
    #[serde(deserialize_with = "list")]
    name: Vec<String>,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// Also install the features' sub-features.
    #[serde(default, deserialize_with = "boolish")]
    include_sub_features: bool,
    /// Also install the management tools.
    #[serde(default, deserialize_with = "boolish")]
    include_management_tools: bool,
    /// Path to the feature files (`-Source`).
    source: Option<String>,
}

/// The module body (inside `pwsh::frame`).
pub fn body(p: &Params) -> String {
    let present = p.state == State::Present;
    let mut apply = if present {
        "Install-WindowsFeature".to_string()
    } else {
        "Uninstall-WindowsFeature".to_string()
    };
    apply.push_str(" -Name ($todo | ForEach-Object { $_.Name })");
    if present && p.include_sub_features {
        apply.push_str(" -IncludeAllSubFeature");
    }
    if p.include_management_tools {
        apply.push_str(" -IncludeManagementTools");
    }
    if let (true, Some(src)) = (present, &p.source) {
        apply.push_str(&format!(" -Source {}", ps(src)));
    }
    format!(
        r#"$names = {names}
$feats = @(Get-WindowsFeature -Name $names)
$unknown = @($names | Where-Object {{ $n = $_; -not ($feats | Where-Object {{ $_.Name -eq $n }}) }})
if ($unknown.Count -gt 0) {{ throw ('unknown feature(s): ' + ($unknown -join ', ')) }}
$pending = @($feats | Where-Object {{ $_.InstallState -eq '{pending}' }})
$todo = @($feats | Where-Object {{ $_.Installed -ne {installed} -and $_.InstallState -ne '{pending}' }})
$r.reboot_required = $pending.Count -gt 0
$r.reboot_pending_features = @($pending | ForEach-Object {{ $_.Name }})
if ($todo.Count -gt 0) {{
  $r.changed = $true
  if (-not $check) {{
    $res = {apply}
    $r.success = [bool]$res.Success
    $r.exitcode = $res.ExitCode.ToString()
    $r.reboot_required = $r.reboot_required -or ($res.RestartNeeded.ToString() -eq 'Yes')
    $r.feature_result = @($res.FeatureResult | ForEach-Object {{ @{{ id = $_.Id; display_name = $_.DisplayName; restart_needed = [bool]$_.RestartNeeded; success = [bool]$_.Success }} }})
    if (-not $res.Success) {{ throw ('feature change failed with exit code ' + $res.ExitCode) }}
  }}
}}"#,
        names = pwsh::list_lit(&p.name),
        installed = pwsh::bool_lit(present),
        pending = if present {
            "InstallPending"
        } else {
            "UninstallPending"
        },
    )
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    pwsh::run_framed(ctx, &body(&p), None).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::args::parse;

    #[test]
    fn scripts_parse() {
        for args in [
            serde_json::json!({"name": "Containers", "include_management_tools": true, "source": "D:\\sources\\sxs"}),
            serde_json::json!({"name": ["Hyper-V", "Hyper-V-PowerShell"], "state": "absent"}),
        ] {
            let p: Params = parse("win_feature", &args).unwrap();
            pwsh::assert_parses(&pwsh::frame(true, &body(&p)));
        }
    }
}
