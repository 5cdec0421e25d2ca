//! `ping`: prove the host runs commands (one round trip), answer `pong`.

use serde::Deserialize;

use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Ping, "ping", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// What to answer instead of `pong`; `crash` makes the module fail (as in Ansible).
    #[serde(default = "pong")]
    data: String,
}

fn pong() -> String {
    "pong".into()
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if p.data == "crash" {
        // ansible-core's ping raises `Exception('boom')`, which 2.19 reports in these words.
        return Ok(ModuleResult::failed("Task failed: Module failed: boom"));
    }
    let out = ctx.run("echo pong").await?;
    if out.stdout_str().trim() != "pong" {
        return Ok(ModuleResult::failed(format!(
            "unexpected answer from the host: {:?}",
            out.stdout_str()
        )));
    }
    Ok(ModuleResult::ok().with("ping", p.data))
}
