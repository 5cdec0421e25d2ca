//! `win_shell`: run PowerShell text (or `cmd.exe` text with `executable: cmd`) on a Windows
//! host, with pipes and variables working as written.

use serde::Deserialize;

use crate::transport::quote::ps;

use super::wincmd::{self, Common};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(WinShell, "win_shell", Params, run, windows);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The shell text (free-form).
    #[serde(rename = "_raw_params")]
    raw_params: Option<String>,
    /// The shell text, as in the free-form.
    cmd: Option<String>,
    /// `powershell` (default) or `cmd` to run the text with `cmd.exe /c`.
    executable: Option<String>,
    /// Change into this folder first.
    chdir: Option<String>,
    /// Do not run when this path exists.
    creates: Option<String>,
    /// Do not run when this path does not exist.
    removes: Option<String>,
    /// Text written to the command's standard input.
    stdin: Option<String>,
}

/// The script that runs `text` with `executable`.
pub fn script(text: &str, executable: Option<&str>) -> String {
    match executable.map(|e| e.to_ascii_lowercase()) {
        Some(e) if e == "cmd" || e == "cmd.exe" => format!("& cmd.exe /c {}", ps(text)),
        _ => text.to_string(),
    }
}

/// The exact PowerShell the task would send, for `kinit plan --render`.
pub fn render(
    ctx: &super::render::RenderCtx<'_>,
    args: &serde_json::Value,
) -> Result<super::render::Rendered, ModuleError> {
    let p: Params = super::params("win_shell", args)?;
    let text = p.cmd.or(p.raw_params).ok_or_else(|| ModuleError::BadArgs {
        module: "win_shell",
        detail: "no command given (expected free-form text or `cmd`)".into(),
    })?;
    let c = Common {
        chdir: p.chdir,
        creates: p.creates,
        removes: p.removes,
        stdin: p.stdin,
    };
    // `creates`/`removes` are checked by a probe of their own before this runs.
    let body = wincmd::full_script(&script(&text, p.executable.as_deref()), &c);
    Ok(super::render::Rendered::target(vec![
        super::render::RenderedFile {
            name: format!("win_shell/{}.ps1", super::render::slug(ctx.task)),
            content: body.into_bytes(),
        },
    ]))
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let text = p.cmd.or(p.raw_params).ok_or_else(|| ModuleError::BadArgs {
        module: "win_shell",
        detail: "no command given (expected free-form text or `cmd`)".into(),
    })?;
    let c = Common {
        chdir: p.chdir,
        creates: p.creates,
        removes: p.removes,
        stdin: p.stdin,
    };
    wincmd::run(ctx, &script(&text, p.executable.as_deref()), &c).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::pwsh::assert_parses;

    #[test]
    fn scripts_parse() {
        let c = Common::default();
        assert_parses(&wincmd::full_script(
            &script(
                "Get-Service | Where-Object { $_.Status -eq 'Running' }",
                None,
            ),
            &c,
        ));
        let s = script("dir C:\\ & echo it's", Some("cmd"));
        assert_eq!(s, "& cmd.exe /c 'dir C:\\ & echo it''s'");
        assert_parses(&wincmd::full_script(&s, &c));
    }
}
