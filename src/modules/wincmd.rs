//! The shared runner of `win_shell` and `win_command`: `creates`/`removes` (one probe, only
//! when given), check mode (skipped, as Ansible), `chdir`, stdin, and the command's output as
//! the result (`rc`, `stdout`, `stderr`).

use std::time::Instant;

use crate::transport::quote::ps;

use super::command::finish;
use super::{ModuleCtx, ModuleError, ModuleResult, pwsh};

/// Options both modules have.
#[derive(Debug, Default)]
pub struct Common {
    pub chdir: Option<String>,
    pub creates: Option<String>,
    pub removes: Option<String>,
    pub stdin: Option<String>,
}

/// The PowerShell that prints `creates`/`removes` when the guard says skip.
pub fn guard_script(c: &Common) -> String {
    let mut s = String::new();
    if let Some(p) = &c.creates {
        s.push_str(&format!(
            "if (Test-Path -LiteralPath {}) {{ Write-Output 'creates' }}\n",
            ps(p)
        ));
    }
    if let Some(p) = &c.removes {
        s.push_str(&format!(
            "if (-not (Test-Path -LiteralPath {})) {{ Write-Output 'removes' }}\n",
            ps(p)
        ));
    }
    s
}

/// `script` with `chdir` applied and the native exit code passed on.
pub fn full_script(script: &str, c: &Common) -> String {
    let mut s = String::new();
    if let Some(d) = &c.chdir {
        s.push_str(&format!("Set-Location -LiteralPath {}\n", ps(d)));
    }
    s.push_str(script);
    s.push_str("\nif ($null -ne $LASTEXITCODE) { exit $LASTEXITCODE }\n");
    s
}

pub async fn run(
    ctx: &ModuleCtx<'_>,
    script: &str,
    c: &Common,
) -> Result<ModuleResult, ModuleError> {
    if c.creates.is_some() || c.removes.is_some() {
        let out = pwsh::run(ctx, &guard_script(c), None).await?.stdout_str();
        let skip = |path: &str, why: &str| {
            let mut r = ModuleResult::ok()
                .with("rc", 0)
                .with("stdout", "")
                .with("stderr", "");
            r.msg = Some(format!("skipped, since {path} {why}"));
            r
        };
        if out.lines().any(|l| l.trim() == "creates") {
            return Ok(skip(c.creates.as_deref().unwrap_or_default(), "exists"));
        }
        if out.lines().any(|l| l.trim() == "removes") {
            return Ok(skip(
                c.removes.as_deref().unwrap_or_default(),
                "does not exist",
            ));
        }
    }
    if ctx.check_mode {
        let mut r = ModuleResult::ok();
        r.msg = Some("Command would have run if not in check mode".into());
        r.changed = c.creates.is_some() || c.removes.is_some();
        r.skipped = !r.changed;
        return Ok(r);
    }
    let started = Instant::now();
    let stdin = c.stdin.as_ref().map(|s| format!("{s}\n").into_bytes());
    let out = pwsh::run(ctx, &full_script(script, c), stdin).await?;
    Ok(finish(out, started, script.into(), true))
}

/// Split a Windows command line into words: whitespace separates, double quotes group,
/// `\"` is a literal quote (the common subset of the MSVC rules).
pub fn split(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
                any = true;
            }
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_windows_command_lines() {
        assert_eq!(
            split(r#"C:\k\kubeadm.exe join "a b" --token=x \"q\" """#),
            vec![
                "C:\\k\\kubeadm.exe",
                "join",
                "a b",
                "--token=x",
                "\"q\"",
                ""
            ]
        );
    }

    #[test]
    fn guard_and_full_script_parse() {
        let c = Common {
            chdir: Some("C:\\k".into()),
            creates: Some("C:\\it's".into()),
            removes: Some("C:\\y".into()),
            stdin: None,
        };
        pwsh::assert_parses(&guard_script(&c));
        pwsh::assert_parses(&full_script("Get-ChildItem | Select-Object -First 1", &c));
    }
}
