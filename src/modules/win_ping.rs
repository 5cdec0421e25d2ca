//! `win_ping`: prove a Windows host runs PowerShell (one round trip), answer `pong`.

use serde::Deserialize;

use crate::transport::quote::ps;

use super::{ModuleCtx, ModuleError, ModuleResult, pwsh, typed_module};

typed_module!(WinPing, "win_ping", Params, run, windows);

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

/// The module body (inside `pwsh::frame`).
pub fn body(p: &Params) -> String {
    format!(
        "$data = {d}\nif ($data -eq 'crash') {{ throw 'boom (data=crash)' }}\n$r.ping = $data",
        d = ps(&p.data)
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
    fn script_parses() {
        for args in [serde_json::json!(null), serde_json::json!({"data": "it's"})] {
            let p: Params = parse("win_ping", &args).unwrap();
            pwsh::assert_parses(&pwsh::frame(false, &body(&p)));
        }
    }
}
