//! `win_powershell`: run a PowerShell script block with parameters and return what it
//! produced, split by stream (`output`, `error`, `warning`, `verbose`, `debug`,
//! `information`, `host_out`), plus `result` and `changed` as the script sets them through
//! `$Ansible` (`$Ansible.Changed = $false`, `$Ansible.Result = ...`, `$Ansible.Failed`).
//!
//! In check mode the script runs only when it declares `SupportsShouldProcess` (it then sees
//! `$Ansible.CheckMode` and `-WhatIf`); otherwise the task is skipped, as in Ansible.

use serde::Deserialize;
use serde_json::Value;

use crate::transport::quote::ps;

use super::args::opt_u64ish;
use super::{ModuleCtx, ModuleError, ModuleResult, pwsh, typed_module};

typed_module!(WinPowershell, "win_powershell", Params, run, windows);

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorAction {
    SilentlyContinue,
    #[default]
    Continue,
    Stop,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The PowerShell script (a script block's text).
    script: String,
    /// Named parameters passed to the script.
    #[serde(default)]
    parameters: serde_json::Map<String, Value>,
    /// `$ErrorActionPreference` inside the script: `continue` (default), `stop`,
    /// `silently_continue`.
    #[serde(default)]
    error_action: ErrorAction,
    /// Change into this folder first.
    chdir: Option<String>,
    /// Do not run when this path exists.
    creates: Option<String>,
    /// Do not run when this path does not exist.
    removes: Option<String>,
    /// How deep output objects are serialized (default 2).
    #[serde(default, deserialize_with = "opt_u64ish")]
    depth: Option<u64>,
}

/// The module body (inside `pwsh::frame`).
pub fn body(p: &Params) -> String {
    let ea = match p.error_action {
        ErrorAction::SilentlyContinue => "SilentlyContinue",
        ErrorAction::Continue => "Continue",
        ErrorAction::Stop => "Stop",
    };
    let supports_check = p.script.contains("SupportsShouldProcess");
    let mut guard = String::new();
    if let Some(c) = &p.creates {
        guard.push_str(&format!(
            "if (Test-Path -LiteralPath {}) {{ $skip = 'exists: ' + {} }}\n",
            ps(c),
            ps(c)
        ));
    }
    if let Some(c) = &p.removes {
        guard.push_str(&format!(
            "if (-not (Test-Path -LiteralPath {})) {{ $skip = 'missing: ' + {} }}\n",
            ps(c),
            ps(c)
        ));
    }
    let chdir = p
        .chdir
        .as_ref()
        .map(|d| format!("Set-Location -LiteralPath {}\n", ps(d)))
        .unwrap_or_default();
    let params = pwsh::lit(&Value::Object(p.parameters.clone()));
    format!(
        r#"$skip = $null
{guard}if ($null -ne $skip) {{
  $r.msg = "skipped, since $skip"
}} elseif ($check -and -not {supports}) {{
  $r.skipped = $true
  $r.msg = 'the script does not declare SupportsShouldProcess, so it does not run in check mode'
}} else {{
{chdir}  $Ansible = [pscustomobject]@{{ Changed = $true; Failed = $false; Result = $null; CheckMode = $check; Diff = @{{}}; Tmpdir = $env:TEMP; Verbosity = 0 }}
  $sb = [scriptblock]::Create({script})
  $params = {params}
  if ($check) {{ $params['WhatIf'] = $true }}
  $output = New-Object System.Collections.Generic.List[object]
  $errors = New-Object System.Collections.Generic.List[object]
  $warning = New-Object System.Collections.Generic.List[string]
  $verbose = New-Object System.Collections.Generic.List[string]
  $debug = New-Object System.Collections.Generic.List[string]
  $information = New-Object System.Collections.Generic.List[object]
  $hostOut = ''
  & {{ $ErrorActionPreference = '{ea}'; & $sb @params }} *>&1 | ForEach-Object {{
    if ($_ -is [System.Management.Automation.ErrorRecord]) {{
      $errors.Add(@{{ message = $_.Exception.Message; type = $_.Exception.GetType().FullName; fully_qualified_error_id = $_.FullyQualifiedErrorId; category_info = $_.CategoryInfo.ToString(); script_stack_trace = $_.ScriptStackTrace }})
    }} elseif ($_ -is [System.Management.Automation.WarningRecord]) {{
      $warning.Add($_.Message)
    }} elseif ($_ -is [System.Management.Automation.VerboseRecord]) {{
      $verbose.Add($_.Message)
    }} elseif ($_ -is [System.Management.Automation.DebugRecord]) {{
      $debug.Add($_.Message)
    }} elseif ($_ -is [System.Management.Automation.InformationRecord]) {{
      $information.Add(@{{ message_data = [string]$_.MessageData; source = $_.Source; tags = @($_.Tags) }})
      $hostOut += [string]$_.MessageData + "`n"
    }} else {{
      $output.Add($_)
    }}
  }}
  $r.changed = [bool]$Ansible.Changed
  if ($Ansible.Failed) {{ $r.failed = $true; $r.msg = 'the script set $Ansible.Failed' }}
  $r.result = $Ansible.Result
  $r.output = @($output | ForEach-Object {{ ConvertTo-Json -InputObject $_ -Depth {depth} -Compress | ConvertFrom-Json }})
  $r.error = $errors.ToArray()
  $r.warning = $warning.ToArray()
  $r.verbose = $verbose.ToArray()
  $r.debug = $debug.ToArray()
  $r.information = $information.ToArray()
  $r.host_out = $hostOut
}}"#,
        supports = pwsh::bool_lit(supports_check),
        script = ps(&p.script),
        depth = p.depth.unwrap_or(2),
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
    fn script_parses_with_parameters_and_guards() {
        let p: Params = parse(
            "win_powershell",
            &serde_json::json!({
                "script": "param($Name, $Count)\n[CmdletBinding(SupportsShouldProcess)]\nparam()\n$Ansible.Changed = $false\nWrite-Output \"hi $Name\"",
                "parameters": {"Name": "it's", "Count": 2, "Flags": ["a", "b"]},
                "error_action": "stop",
                "chdir": "C:\\k",
                "creates": "C:\\k\\done",
            }),
        )
        .unwrap();
        let s = pwsh::frame(true, &body(&p));
        pwsh::assert_parses(&s);
        assert!(s.contains("$ErrorActionPreference = 'Stop'; & $sb @params"));
        assert!(s.contains("@{'Name' = 'it''s'; 'Count' = 2; 'Flags' = @('a', 'b')}"));
        assert!(s.contains("elseif ($check -and -not $true)"));
    }
}
