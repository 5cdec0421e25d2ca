//! PowerShell for the Windows modules: the frame every module script runs in (strict errors,
//! a `$r` result table, `$check` for check mode, one `kinit-json:` line with the result), PS
//! literals for values, and the parser for what the frame prints.
//!
//! A Windows module is one PowerShell script that does its own check-then-apply on the host
//! (one round trip): it reads the state, sets `$r.changed`, and changes things only when
//! `-not $check`. User values enter scripts only through `crate::transport::quote::ps`.

use serde_json::Value;

use crate::transport::quote::{ps, ps_command_line};
use crate::transport::{ExecOutput, ShellKind};

use super::{ModuleCtx, ModuleError, ModuleResult};

/// Run a PowerShell script on the host: as it is over WinRM, and as `powershell.exe
/// -EncodedCommand` over a connection whose shell is not PowerShell (OpenSSH on Windows,
/// whose default shell is `cmd.exe`).
pub async fn run(
    ctx: &ModuleCtx<'_>,
    script: &str,
    stdin: Option<Vec<u8>>,
) -> Result<ExecOutput, ModuleError> {
    let text = match ctx.conn.shell() {
        ShellKind::PowerShell => script.to_string(),
        ShellKind::Posix => ps_command_line(script),
    };
    ctx.run_with_stdin(text, stdin).await
}

/// Run a [`frame`]d module body and parse its result.
pub async fn run_framed(
    ctx: &ModuleCtx<'_>,
    body: &str,
    stdin: Option<Vec<u8>>,
) -> Result<ModuleResult, ModuleError> {
    let out = run(ctx, &frame(ctx.check_mode, body), stdin).await?;
    Ok(parse(&out))
}

/// `$true` / `$false`.
pub fn bool_lit(b: bool) -> &'static str {
    if b { "$true" } else { "$false" }
}

/// A PowerShell literal for a JSON value (`@{...}`, `@(...)`, quoted strings, numbers).
pub fn lit(v: &Value) -> String {
    match v {
        Value::Null => "$null".into(),
        Value::Bool(b) => bool_lit(*b).into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => ps(s),
        Value::Array(a) => format!("@({})", a.iter().map(lit).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => format!(
            "@{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{} = {}", ps(k), lit(v)))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// `@('a', 'b')`.
pub fn list_lit(items: &[String]) -> String {
    format!(
        "@({})",
        items.iter().map(|s| ps(s)).collect::<Vec<_>>().join(", ")
    )
}

/// Wrap a module body in the frame: `$check`, `$r`, errors caught into `$r.failed`/`$r.msg`,
/// and the result printed as one JSON line.
pub fn frame(check: bool, body: &str) -> String {
    format!(
        "$ErrorActionPreference = 'Stop'\n\
         $ProgressPreference = 'SilentlyContinue'\n\
         $check = {check}\n\
         $r = @{{ changed = $false }}\n\
         try {{\n{body}\n}} catch {{\n  $r.failed = $true\n  $r.msg = $_.Exception.Message\n}}\n\
         Write-Output ('kinit-json:' + (ConvertTo-Json -InputObject $r -Compress -Depth 6))\n",
        check = bool_lit(check),
    )
}

/// Read the frame's output back into a module result: `changed`, `failed`, `msg`, `skipped`
/// become the result's flags, every other key its data.
pub fn parse(out: &ExecOutput) -> ModuleResult {
    let stdout = out.stdout_str();
    let Some(json) = stdout
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("kinit-json:"))
    else {
        return ModuleResult::failed(format!(
            "the PowerShell module printed no result (rc {}): {}",
            out.rc,
            out.stderr_str().trim()
        ));
    };
    match serde_json::from_str(json) {
        Ok(Value::Object(m)) => ModuleResult::from_map(m),
        _ => ModuleResult::failed(format!("unreadable module result: {json}")),
    }
}

/// Test helper: parse PowerShell with tree-sitter-powershell and fail on any syntax error,
/// naming the first bad spot. (No PowerShell runs on the build machine; this is how the
/// generated scripts are checked.)
#[cfg(test)]
pub fn assert_parses(script: &str) {
    let mut p = tree_sitter::Parser::new();
    p.set_language(&tree_sitter_powershell::LANGUAGE.into())
        .expect("powershell grammar");
    let tree = p.parse(script, None).expect("parse");
    let root = tree.root_node();
    if root.has_error() {
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            if n.is_error() || n.is_missing() {
                let start = n.start_byte().saturating_sub(60);
                let end = (n.end_byte() + 60).min(script.len());
                panic!(
                    "PowerShell syntax error at line {}: ...{}...\n--- script\n{script}",
                    n.start_position().row + 1,
                    script.get(start..end).unwrap_or("")
                );
            }
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
        }
        panic!("PowerShell syntax error\n--- script\n{script}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parser_catches_errors() {
        assert_parses("$a = 1; if ($a) { Write-Output 'x' }");
        let bad = std::panic::catch_unwind(|| assert_parses("if ($a { Write-Output 'x' "));
        assert!(bad.is_err());
    }

    /// The check is strict enough to matter: dropping any one closing brace, parenthesis or
    /// quote from a generated script is reported.
    #[test]
    fn the_parser_catches_a_dropped_delimiter() {
        let body = "$i = Get-Item -LiteralPath $p -ErrorAction SilentlyContinue\n\
                    if ($null -eq $i) { $r.changed = $true; if (-not $check) { New-Item -Path $p | Out-Null } }";
        let script = frame(false, body);
        assert_parses(&script);
        for (i, c) in script
            .char_indices()
            .filter(|(_, c)| matches!(c, '}' | ')' | '\''))
        {
            let mut broken = script.clone();
            broken.remove(i);
            let caught = std::panic::catch_unwind(|| assert_parses(&broken)).is_err();
            assert!(caught, "dropping `{c}` at byte {i} went unnoticed");
        }
    }

    #[test]
    fn frame_parses_and_round_trips() {
        let s = frame(true, "$r.changed = $true\n$r.path = 'C:\\x'");
        assert_parses(&s);
        let out = ExecOutput {
            rc: 0,
            stdout: b"noise\nkinit-json:{\"changed\":true,\"path\":\"C:\\\\x\",\"msg\":\"m\"}\n"
                .to_vec(),
            stderr: vec![],
        };
        let r = parse(&out);
        assert!(r.changed && !r.failed);
        assert_eq!(r.msg.as_deref(), Some("m"));
        assert_eq!(r.data["path"], "C:\\x");
        assert!(parse(&ExecOutput::default()).failed);
    }

    #[test]
    fn literals_quote_user_text() {
        let v = serde_json::json!({"a'b": ["x", 1, true, null]});
        let l = lit(&v);
        assert_eq!(l, "@{'a''b' = @('x', 1, $true, $null)}");
        assert_parses(&format!("$v = {l}"));
    }
}
