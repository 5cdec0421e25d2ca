//! `dpkg_selections`: a package's dpkg selection (`install`, `hold`, `deinstall`, `purge`),
//! as ansible-core 2.19's `dpkg_selections` (lib/ansible/modules/dpkg_selections.py) sets it:
//! `dpkg --get-selections NAME` says what it is, `dpkg --set-selections` changes it. Nothing
//! is installed or removed.

use serde::Deserialize;

use crate::transport::quote::sh;

use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(DpkgSelections, "dpkg_selections", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The package.
    name: String,
    /// The selection to set.
    selection: Selection,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Selection {
    Install,
    Hold,
    Deinstall,
    Purge,
}

impl Selection {
    fn as_str(self) -> &'static str {
        match self {
            Selection::Install => "install",
            Selection::Hold => "hold",
            Selection::Deinstall => "deinstall",
            Selection::Purge => "purge",
        }
    }
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let want = p.selection.as_str();
    let out = ctx
        .run(format!(
            "LC_ALL=C LANG=C LANGUAGE=C dpkg --get-selections {}",
            sh(&p.name)
        ))
        .await?;
    let stderr = out.stderr_str();
    if stderr.contains("no packages found matching") {
        return Ok(ModuleResult::failed(format!(
            "Failed to find package '{}' to perform selection '{want}'.",
            p.name
        )));
    }
    if !out.success() {
        return Ok(ModuleResult::failed(stderr.trim().to_string()).with_output(&out));
    }
    let stdout = out.stdout_str();
    let current = stdout
        .split_whitespace()
        .nth(1)
        .unwrap_or("not present")
        .to_string();
    let changed = current != want;
    let r = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("before", current.as_str())
    .with("after", want);
    if ctx.check_mode || !changed {
        return Ok(r);
    }
    let set = ctx
        .run_with_stdin(
            "LC_ALL=C LANG=C LANGUAGE=C dpkg --set-selections",
            Some(format!("{} {want}", p.name).into_bytes()),
        )
        .await?;
    if !set.success() {
        return Ok(ModuleResult::failed(set.stderr_str().trim().to_string()).with_output(&set));
    }
    Ok(r)
}
