//! `script`: copy a local script to the host and run it there (the upload goes to a private
//! temporary path and is removed in the same command that runs it).

use std::time::Instant;

use serde::Deserialize;

use crate::transport::Source;
use crate::transport::quote::{sh, sh_join};

use super::command::{Common, finish};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Script, "script", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The local script path followed by its arguments (free-form).
    #[serde(rename = "_raw_params")]
    raw_params: Option<String>,
    /// The local script path followed by its arguments, as in the free-form.
    cmd: Option<String>,
    /// Run the script with this interpreter instead of its `#!` line.
    executable: Option<String>,
    /// Change into this directory before running.
    chdir: Option<String>,
    /// Do not run when this path exists on the host.
    creates: Option<String>,
    /// Do not run when this path does not exist on the host.
    removes: Option<String>,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    // Upstream's action checks `required_one_of`/`mutually_exclusive` in these words.
    if p.cmd.is_some() && p.raw_params.is_some() {
        return Err(ModuleError::BadArgs {
            module: "script",
            detail: "parameters are mutually exclusive: _raw_params|cmd".into(),
        });
    }
    let line = p.cmd.or(p.raw_params).ok_or_else(|| ModuleError::BadArgs {
        module: "script",
        detail: "one of the following is required: _raw_params, cmd".into(),
    })?;
    let words = shlex::split(&line)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| ModuleError::BadArgs {
            module: "script",
            detail: format!("cannot split `{line}` into words"),
        })?;
    let local = ctx.find_local(&words[0])?;
    let common = Common {
        chdir: p.chdir,
        creates: p.creates,
        removes: p.removes,
        ..Common::default()
    };
    // The guard and check mode are the command runner's; run it with a no-op to reuse them.
    if common.creates.is_some() || common.removes.is_some() || ctx.check_mode {
        let probe = super::command::run_script(&ctx.with_check_mode(true), ":", &common).await?;
        if !probe.changed {
            // Upstream's action skips the task (AnsibleActionSkip), in its words.
            let msg = match (&common.creates, &common.removes) {
                (Some(c), _)
                    if !probe
                        .msg
                        .as_deref()
                        .unwrap_or_default()
                        .contains("not exist") =>
                {
                    format!("{c} exists, matching creates option")
                }
                (_, Some(r)) => format!("{r} does not exist, matching removes option"),
                (Some(c), None) => format!("{c} exists, matching creates option"),
                // Check mode without `creates`/`removes`: a script's changes cannot be told.
                (None, None) => "Check mode is not supported for this task.".to_string(),
            };
            let mut r = ModuleResult::ok();
            r.skipped = true;
            r.msg = Some(msg);
            return Ok(r);
        }
        if ctx.check_mode {
            // It would run: upstream's action reports the change and nothing else.
            return Ok(ModuleResult::changed());
        }
    }
    let remote = unique_temp_path("script");
    ctx.conn
        .put(&Source::File(local.clone()), &remote, Some(0o700))
        .await?;
    let mut argv = vec![remote.clone()];
    argv.extend(words[1..].iter().cloned());
    // The script is started through its interpreter, as the kernel would start it from its
    // `#!` line (`sh` without one, as the shell does), never executed itself: a file just
    // written may still be open in another process's child between its fork and exec (many
    // hosts at once on the local connection), and executing it then fails with `Text file
    // busy`.
    let interpreter = match &p.executable {
        Some(exe) => vec![exe.clone()],
        None => shebang(&local).unwrap_or_else(|| vec!["sh".to_string()]),
    };
    let mut body = format!("{} {}", sh_join(&interpreter), sh_join(&argv));
    if let Some(dir) = &common.chdir {
        body = format!("cd {} && {body}", sh(dir));
    }
    let script = format!("{body}\nrc=$?\nrm -f -- {}\nexit $rc", sh(&remote));
    let started = Instant::now();
    let out = ctx.run(script).await?;
    Ok(finish(out, started, serde_json::Value::from(line), true))
}

/// The interpreter of a script's `#!` line and its one optional argument (the rest of the
/// line, as Linux passes it), or `None` without one.
fn shebang(script: &std::path::Path) -> Option<Vec<String>> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    let line = text.strip_prefix("#!")?.lines().next()?.trim();
    let (interp, arg) = match line.split_once([' ', '\t']) {
        Some((i, a)) => (i, Some(a.trim())),
        None => (line, None),
    };
    if interp.is_empty() {
        return None;
    }
    Some(
        std::iter::once(interp.to_string())
            .chain(arg.filter(|a| !a.is_empty()).map(str::to_string))
            .collect(),
    )
}

/// A fresh path under `/tmp` for a short-lived upload (not guessable across runs).
pub fn unique_temp_path(what: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "/tmp/.kinit-{what}-{}-{nanos:x}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scripts_interpreter_is_read_from_its_first_line_as_linux_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let env = write("a", "#!/usr/bin/env python3\nprint(1)\n");
        assert_eq!(shebang(&env).unwrap(), ["/usr/bin/env", "python3"]);
        let spaced = write("b", "#! /bin/bash -e -u \necho\n");
        assert_eq!(shebang(&spaced).unwrap(), ["/bin/bash", "-e -u"]);
        let plain = write("c", "echo hi\n");
        assert_eq!(shebang(&plain), None);
    }
}
