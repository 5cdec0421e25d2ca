//! `win_command`: run a program with arguments on a Windows host without a shell language in
//! between (every argument is passed as a quoted PowerShell literal to the call operator).

use serde::Deserialize;

use crate::transport::quote::ps;

use super::wincmd::{self, Common};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(WinCommand, "win_command", Params, run, windows);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The command line (free-form), split by Windows rules.
    #[serde(rename = "_raw_params")]
    raw_params: Option<String>,
    /// The command line, as in the free-form.
    cmd: Option<String>,
    /// The program and its arguments as a list, passed as they are.
    argv: Option<Vec<String>>,
    /// Change into this folder first.
    chdir: Option<String>,
    /// Do not run when this path exists.
    creates: Option<String>,
    /// Do not run when this path does not exist.
    removes: Option<String>,
    /// Text written to the command's standard input.
    stdin: Option<String>,
}

/// `& 'prog' 'arg' ...`.
pub fn script(argv: &[String]) -> String {
    let words: Vec<String> = argv.iter().map(|a| ps(a)).collect();
    format!("& {}", words.join(" "))
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let argv = match (p.argv, p.cmd.or(p.raw_params)) {
        (Some(a), None) if !a.is_empty() => a,
        (None, Some(line)) => wincmd::split(&line),
        _ => {
            return Err(ModuleError::BadArgs {
                module: "win_command",
                detail: "give exactly one of free-form text, `cmd` or `argv`".into(),
            });
        }
    };
    if argv.is_empty() {
        return Err(ModuleError::BadArgs {
            module: "win_command",
            detail: "the command is empty".into(),
        });
    }
    let c = Common {
        chdir: p.chdir,
        creates: p.creates,
        removes: p.removes,
        stdin: p.stdin,
    };
    wincmd::run(ctx, &script(&argv), &c).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::pwsh::assert_parses;

    #[test]
    fn arguments_are_literals() {
        let argv = wincmd::split(r#"C:\k\kubeadm.exe join 10.0.0.1:6443 --token "a b" $(evil)"#);
        let s = script(&argv);
        assert_eq!(
            s,
            "& 'C:\\k\\kubeadm.exe' 'join' '10.0.0.1:6443' '--token' 'a b' '$(evil)'"
        );
        assert_parses(&wincmd::full_script(&s, &Common::default()));
    }
}
