//! `slurp`: read a file from the host and return it base64-encoded (`content`), as Ansible's
//! `slurp` does. One command; never changes anything.

use base64::Engine as _;
use serde::Deserialize;

use crate::transport::quote::sh;

use super::host_path;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Slurp, "slurp", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The file on the host.
    #[serde(alias = "path", deserialize_with = "host_path::one")]
    src: String,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let out = ctx.run(format!("cat -- {}", sh(&p.src))).await?;
    if !out.success() {
        return Ok(ModuleResult::failed(format!(
            "cannot read `{}`: {}",
            p.src,
            out.stderr_str().trim()
        )));
    }
    Ok(ModuleResult::ok()
        .with(
            "content",
            base64::engine::general_purpose::STANDARD.encode(&out.stdout),
        )
        .with("encoding", "base64")
        .with("source", p.src.as_str()))
}
