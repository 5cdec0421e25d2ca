//! `command`: run a program with arguments on the host, without a shell in between (the text
//! is split like a shell would split it, then every word is quoted). Also the shared runner
//! behind `shell`, `raw` and `script`: `creates`/`removes`, `chdir`, `stdin`, check mode.

use std::time::Instant;

use serde::Deserialize;

use crate::transport::quote::{sh, sh_join};

use super::args::boolish;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Command, "command", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The command line (free-form); split into words like a shell would, but no shell runs it.
    #[serde(rename = "_raw_params")]
    raw_params: Option<String>,
    /// The command line, as in the free-form.
    cmd: Option<String>,
    /// The program and its arguments as a list, passed as they are.
    argv: Option<Vec<String>>,
    /// Change into this directory before running.
    chdir: Option<String>,
    /// Do not run when this path exists on the host.
    creates: Option<String>,
    /// Do not run when this path does not exist on the host.
    removes: Option<String>,
    /// Text written to the command's standard input.
    stdin: Option<String>,
    /// Add a newline after `stdin` (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    stdin_add_newline: bool,
    /// Remove trailing empty lines from stdout/stderr (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    strip_empty_ends: bool,
    /// Ignored with a warning, as Ansible has since 2.4 (`shell` takes `executable`).
    executable: Option<String>,
}

/// Options every command-like module has (each module's params repeat these fields, because
/// serde cannot combine `flatten` with `deny_unknown_fields`).
#[derive(Debug, Default)]
pub struct Common {
    pub chdir: Option<String>,
    pub creates: Option<String>,
    pub removes: Option<String>,
    pub stdin: Option<String>,
    pub stdin_add_newline: bool,
    pub strip_empty_ends: bool,
}

pub fn yes() -> bool {
    true
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let argv = match (p.argv, p.cmd.or(p.raw_params)) {
        (Some(argv), None) if !argv.is_empty() => argv,
        (None, Some(line)) => shlex::split(&line).ok_or_else(|| ModuleError::BadArgs {
            module: "command",
            detail: format!("cannot split `{line}` into words (unbalanced quotes?)"),
        })?,
        (Some(_), Some(_)) => {
            return Err(ModuleError::BadArgs {
                module: "command",
                detail: "`argv` and `cmd`/free-form text are mutually exclusive".into(),
            });
        }
        // As ansible-core 2.19's argument check words it (its `required_one_of`).
        _ => {
            return Ok(ModuleResult::failed(
                "one of the following is required: _raw_params, cmd, argv",
            ));
        }
    };
    let script = sh_join(&argv);
    let common = Common {
        chdir: p.chdir,
        creates: p.creates,
        removes: p.removes,
        stdin: p.stdin,
        stdin_add_newline: p.stdin_add_newline,
        strip_empty_ends: p.strip_empty_ends,
    };
    let r = run_script(ctx, &script, &common).await?;
    Ok(match p.executable {
        Some(exe) => r.with(
            "warnings",
            serde_json::json!([format!(
                "As of Ansible 2.4, the parameter 'executable' is no longer supported with the \
                 'command' module. Not using '{exe}'."
            )]),
        ),
        None => r,
    })
}

/// Run `script` (sh text) honouring `creates`/`removes`, `chdir`, `stdin` and check mode.
pub async fn run_script(
    ctx: &ModuleCtx<'_>,
    script: &str,
    c: &Common,
) -> Result<ModuleResult, ModuleError> {
    if let Some(skip) = guard(ctx, c).await? {
        return Ok(skip);
    }
    if ctx.check_mode {
        let mut r = ModuleResult::ok();
        r.msg = Some("command would have run if not in check mode".into());
        if c.creates.is_some() || c.removes.is_some() {
            r.changed = true;
        } else {
            r.skipped = true;
        }
        return Ok(r);
    }
    let full = match &c.chdir {
        Some(dir) => format!("cd {} || exit 1\n{script}", sh(dir)),
        None => script.to_string(),
    };
    let stdin = c.stdin.as_ref().map(|s| {
        let mut b = s.clone().into_bytes();
        if c.stdin_add_newline {
            b.push(b'\n');
        }
        b
    });
    let started = Instant::now();
    let out = ctx.run_with_stdin(full, stdin).await?;
    Ok(finish(out, started, script, c.strip_empty_ends))
}

/// The registered result of a finished command: changed, failed on a non-zero rc.
pub fn finish(
    mut out: crate::transport::ExecOutput,
    started: Instant,
    cmd: &str,
    strip: bool,
) -> ModuleResult {
    if strip {
        for buf in [&mut out.stdout, &mut out.stderr] {
            while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                buf.pop();
            }
        }
    }
    let d = started.elapsed();
    let mut r = ModuleResult::changed()
        .with_output(&out)
        .with("cmd", cmd)
        .with(
            "delta",
            format!(
                "{}:{:02}:{:02}.{:06}",
                d.as_secs() / 3600,
                d.as_secs() / 60 % 60,
                d.as_secs() % 60,
                d.subsec_micros()
            ),
        );
    if !out.success() {
        r.failed = true;
        r.msg = Some("non-zero return code".into());
    }
    r
}

/// `creates`/`removes`: the result to return instead of running, if the guard says skip.
async fn guard(ctx: &ModuleCtx<'_>, c: &Common) -> Result<Option<ModuleResult>, ModuleError> {
    if c.creates.is_none() && c.removes.is_none() {
        return Ok(None);
    }
    let mut probe = String::new();
    let chdir = c
        .chdir
        .as_deref()
        .map(|d| format!("cd {} 2>/dev/null; ", sh(d)));
    probe.push_str(chdir.as_deref().unwrap_or(""));
    if let Some(p) = &c.creates {
        probe.push_str(&format!("[ -e {} ] && echo creates; ", sh(p)));
    }
    if let Some(p) = &c.removes {
        probe.push_str(&format!("[ -e {} ] || echo removes; ", sh(p)));
    }
    probe.push_str("exit 0");
    let out = ctx.run(probe).await?.stdout_str();
    let skip = |path: &str, why: &str| {
        let msg = format!("skipped, since {path} {why}");
        let mut r = ModuleResult::ok()
            .with("rc", 0)
            .with("stdout", msg.clone())
            .with("stdout_lines", vec![msg.clone()])
            .with("stderr", "")
            .with("stderr_lines", Vec::<String>::new());
        // Ansible's wording, which playbooks match on.
        r.msg = Some(format!("Did not run command since '{path}' {why}"));
        Some(r)
    };
    Ok(if out.contains("creates") {
        skip(c.creates.as_deref().unwrap_or_default(), "exists")
    } else if out.contains("removes") {
        skip(c.removes.as_deref().unwrap_or_default(), "does not exist")
    } else {
        None
    })
}
