//! `win_file`: a path on a Windows host as a file, a folder, absent, or touched. The check
//! and the change are one PowerShell run.

use serde::Deserialize;

use crate::transport::quote::ps;

use super::{ModuleCtx, ModuleError, ModuleResult, pwsh, typed_module};

typed_module!(WinFile, "win_file", Params, run, windows);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    File,
    Directory,
    Absent,
    Touch,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The path on the host.
    #[serde(alias = "dest", alias = "name")]
    path: String,
    /// What it should be (default `file`: it must exist).
    state: Option<State>,
}

/// The module body (inside `pwsh::frame`).
pub fn body(p: &Params) -> String {
    let action = match p.state.unwrap_or(State::File) {
        State::Absent => {
            "if ($null -ne $i) {\n  $r.changed = $true\n  if (-not $check) { Remove-Item -LiteralPath $p -Recurse -Force }\n}"
        }
        State::Directory => {
            "if ($null -ne $i -and -not $i.PSIsContainer) { throw \"path $p exists but is not a directory\" }\n\
             if ($null -eq $i) {\n  $r.changed = $true\n  if (-not $check) { New-Item -Path $p -ItemType Directory -Force | Out-Null }\n}"
        }
        State::File => {
            "if ($null -eq $i) { throw \"path $p does not exist\" }\n\
             if ($i.PSIsContainer) { throw \"path $p is a directory\" }"
        }
        State::Touch => {
            "$r.changed = $true\n\
             if (-not $check) {\n  if ($null -ne $i) { $i.LastWriteTime = Get-Date } else { New-Item -Path $p -ItemType File -Force | Out-Null }\n}"
        }
    };
    format!(
        "$p = {path}\n$r.path = $p\n$i = Get-Item -LiteralPath $p -Force -ErrorAction SilentlyContinue\n{action}",
        path = ps(&p.path)
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
    fn every_state_parses() {
        for state in ["file", "directory", "absent", "touch"] {
            let p: Params = parse(
                "win_file",
                &serde_json::json!({"path": "C:\\k\\it's", "state": state}),
            )
            .unwrap();
            for check in [true, false] {
                pwsh::assert_parses(&pwsh::frame(check, &body(&p)));
            }
        }
        let p: Params = parse(
            "win_file",
            &serde_json::json!({"path": "C:\\k", "state": "directory"}),
        )
        .unwrap();
        assert!(body(&p).contains("if (-not $check) { New-Item -Path $p -ItemType Directory"));
    }
}
