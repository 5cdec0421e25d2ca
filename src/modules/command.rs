//! `command`: run a program with arguments on the host, without a shell in between (the text
//! is split like a shell would split it, then every word is quoted). Also the shared runner
//! behind `shell`, `raw` and `script`: `creates`/`removes`, `chdir`, `stdin`, check mode.

use std::time::Instant;

use serde::Deserialize;
use serde_json::Value;

use crate::transport::ShellKind;
use crate::transport::quote::{sh, sh_join};

use super::args::boolish;
use super::host_path;
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
    #[serde(default, deserialize_with = "host_path::opt")]
    chdir: Option<String>,
    /// Do not run when this path exists on the host.
    #[serde(default, deserialize_with = "host_path::opt")]
    creates: Option<String>,
    /// Do not run when this path does not exist on the host.
    #[serde(default, deserialize_with = "host_path::opt")]
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
    /// Expand `$VAR`/`${VAR}` (set variables only) and a leading `~` in each word on the host,
    /// as Python's `expandvars` and `expanduser` do (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    expand_argument_vars: bool,
}

/// Options every command-like module has (each module's params repeat these fields, because
/// serde cannot combine `flatten` with `deny_unknown_fields`).
#[derive(Debug, Default)]
pub struct Common {
    /// What the result reports as `cmd`: the argument list for `command`, the text for
    /// `shell`, as ansible-core's command module does (`r['cmd'] = args`).
    pub cmd: Value,
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
        // As ansible-core's `check_mutually_exclusive` words it, at run time.
        (Some(_), Some(_)) => {
            return Ok(ModuleResult::failed(
                "parameters are mutually exclusive: _raw_params|cmd|argv",
            ));
        }
        // As ansible-core 2.19's argument check words it (its `required_one_of`).
        _ => {
            return Ok(ModuleResult::failed(
                "one of the following is required: _raw_params, cmd, argv",
            ));
        }
    };
    let line = if p.expand_argument_vars {
        expanded_command(&argv)
    } else {
        sh_join(&argv)
    };
    // A program that cannot be found is ansible-core's failed exec (ENOENT), not a shell's
    // "not found": told apart by a marker on stderr.
    let script = match argv.first() {
        Some(prog) => format!(
            "command -v {} >/dev/null 2>&1 || {{ printf '{NOT_FOUND_MARK}' >&2; exit 2; }}\n{line}",
            sh(prog)
        ),
        None => line.clone(),
    };
    let common = Common {
        cmd: Value::from(argv.clone()),
        chdir: p.chdir,
        creates: p.creates,
        removes: p.removes,
        stdin: p.stdin,
        stdin_add_newline: p.stdin_add_newline,
        strip_empty_ends: p.strip_empty_ends,
    };
    let r = run_script(ctx, &script, &common).await?;
    if r.data.get("stderr").and_then(Value::as_str) == Some(NOT_FOUND_MARK) {
        let mut failed = ModuleResult::ok()
            .with("rc", 2)
            .with("cmd", argv.join(" "))
            .with("stdout", "")
            .with("stderr", "")
            .with("stdout_lines", Vec::<String>::new())
            .with("stderr_lines", Vec::<String>::new());
        failed.failed = true;
        failed.msg = Some("Error executing command.".into());
        return Ok(failed);
    }
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

/// The command line for `argv` with each word expanded on the host as the command module's
/// `expand_argument_vars` expands it: `os.path.expandvars` (a `$NAME` or `${NAME}` of a set
/// variable becomes its value, an unset one stays as written), then `os.path.expanduser` (a
/// leading `~` or `~user`). Words without `$` or a leading `~` are quoted as they are.
fn expanded_command(argv: &[String]) -> String {
    static REF: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
            .expect("the variable pattern is a valid regex")
    });
    let mut prelude = String::new();
    let mut words = Vec::new();
    for word in argv {
        let (tilde, rest) = match word.strip_prefix('~') {
            Some(after) => {
                let end = after.find('/').unwrap_or(after.len());
                let user = &after[..end];
                if user
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
                {
                    (format!("~{user}"), &after[end..])
                } else {
                    (String::new(), word.as_str())
                }
            }
            None => (String::new(), word.as_str()),
        };
        if tilde.is_empty() && !REF.is_match(rest) {
            words.push(sh(word));
            continue;
        }
        let mut out = tilde;
        let mut last = 0;
        for m in REF.captures_iter(rest) {
            let whole = m.get(0).expect("a match has a whole");
            let name = m
                .get(1)
                .or(m.get(2))
                .expect("one name group matched")
                .as_str();
            if whole.start() > last {
                out.push_str(&sh(&rest[last..whole.start()]));
            }
            // The fallback (the reference as written) sits in a variable, so nothing in it
            // is expanded again.
            let slot = format!("_kv{}", prelude.lines().count());
            prelude.push_str(&format!("{slot}={}\n", sh(whole.as_str())));
            out.push_str(&format!("\"${{{name}-${slot}}}\""));
            last = whole.end();
        }
        if last < rest.len() || out.is_empty() {
            out.push_str(&sh(&rest[last..]));
        }
        words.push(out);
    }
    format!("{prelude}{}", words.join(" "))
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
        let mut r = not_run(c)
            .with("stdout", "")
            .with("stdout_lines", Vec::<String>::new());
        // ansible-core's command module's words, with `rc` 0.
        r.msg = Some("Command would have run if not in check mode".into());
        if c.creates.is_some() || c.removes.is_some() {
            r.changed = true;
        } else {
            r.skipped = true;
        }
        return Ok(r);
    }
    let full = match &c.chdir {
        // Entered by its physical path (`$PWD` has symlinks resolved), as Python's `os.chdir`
        // leaves it. A folder that cannot be entered is reported as upstream's `os.chdir`
        // failure; the marker line (and its errno) tells it apart from the command's own
        // failure.
        Some(dir) => format!(
            "cd -P {d} 2>/dev/null || {{ if [ ! -e {d} ]; then e=2; elif [ ! -d {d} ]; then e=20; \
             else e=13; fi; printf '{CHDIR_MARK}%s' \"$e\" >&2; exit 1; }}\n{script}",
            d = sh(dir)
        ),
        None => script.to_string(),
    };
    let stdin = c.stdin.as_ref().map(|s| {
        let mut b = s.clone().into_bytes();
        if c.stdin_add_newline {
            b.push(b'\n');
        }
        b
    });
    if let Some(job) = ctx.detach.filter(|_| ctx.conn.shell() == ShellKind::Posix) {
        return super::async_job::launch(ctx, job, &full, &c.cmd, stdin, c.strip_empty_ends).await;
    }
    let started = Instant::now();
    let out = ctx.run_with_stdin(full, stdin).await?;
    if let (Some(dir), Some(errno)) = (&c.chdir, chdir_failure(&out.stderr)) {
        return Ok(chdir_failed(dir, errno));
    }
    Ok(finish(out, started, c.cmd.clone(), c.strip_empty_ends))
}

/// Python's `str.splitlines` for the line breaks a command prints or a crontab holds (`\n`,
/// `\r\n`, `\r`).
pub(super) fn splitlines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find(['\n', '\r']) {
            Some(i) => {
                lines.push(rest[..i].to_string());
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                rest = &rest[i + skip..];
            }
            None => {
                lines.push(rest.to_string());
                break;
            }
        }
    }
    lines
}

/// The stderr a program that cannot be found leaves.
const NOT_FOUND_MARK: &str = "\x1fkinit-command-not-found";

/// The stderr line a `chdir` that failed leaves, before its errno.
const CHDIR_MARK: &str = "\x1fkinit-chdir-failed:";

/// The errno of a failed `chdir`, when that is all the run printed.
fn chdir_failure(stderr: &[u8]) -> Option<u32> {
    std::str::from_utf8(stderr)
        .ok()?
        .strip_prefix(CHDIR_MARK)?
        .parse()
        .ok()
}

/// ansible-core's result when `os.chdir` fails (`modules/command.py`): nothing ran. The
/// errno's text is in `exception`, where upstream puts the exception.
fn chdir_failed(dir: &str, errno: u32) -> ModuleResult {
    let why = match errno {
        2 => "No such file or directory",
        20 => "Not a directory",
        _ => "Permission denied",
    };
    let mut r = ModuleResult::ok()
        .with("rc", Value::Null)
        .with("stdout", "")
        .with("stderr", "")
        .with("exception", format!("[Errno {errno}] {why}: '{dir}'"));
    r.failed = true;
    r.msg = Some("Unable to change directory before execution.".into());
    r
}

/// The registered result of a finished command: changed, failed on a non-zero rc.
pub fn finish(
    out: crate::transport::ExecOutput,
    started: Instant,
    cmd: Value,
    strip: bool,
) -> ModuleResult {
    // `start`/`end` as Python's `str(datetime.now())`, taken where kinit runs: the same
    // clock as the host's for a local host, the controller's over a connection.
    let end = crate::template::local_now();
    let start = end - started.elapsed();
    finish_between(out, start, end, cmd, strip)
}

/// `finish` for a command that ran from `start` to `end` (an async job's, by the host's clock).
pub fn finish_between(
    mut out: crate::transport::ExecOutput,
    start: time::OffsetDateTime,
    end: time::OffsetDateTime,
    cmd: Value,
    strip: bool,
) -> ModuleResult {
    if strip {
        for buf in [&mut out.stdout, &mut out.stderr] {
            while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                buf.pop();
            }
        }
    }
    let d: std::time::Duration = (end - start).try_into().unwrap_or_default();
    let mut r = ModuleResult::changed().with_output(&out);
    if !strip {
        // `strip_empty_ends: false`: the output exactly as printed, final newline included.
        let (so, se) = (out.stdout_str(), out.stderr_str());
        r = r
            .with("stdout_lines", splitlines(&so))
            .with("stderr_lines", splitlines(&se))
            .with("stdout", so)
            .with("stderr", se);
    }
    let mut r = r
        .with("cmd", cmd)
        .with("start", crate::template::datetime_str(&start))
        .with("end", crate::template::datetime_str(&end))
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
    // ansible-core's command module always returns `msg`, empty when the command succeeded.
    r.msg = Some(String::new());
    if !out.success() {
        r.failed = true;
        r.msg = Some("non-zero return code".into());
    }
    r
}

/// A path pattern for the shell: `*`, `?` and `[...]` stay glob characters, everything else
/// is quoted.
fn sh_glob(p: &str) -> String {
    let mut out = String::new();
    let mut lit = String::new();
    for c in p.chars() {
        if matches!(c, '*' | '?' | '[' | ']') {
            if !lit.is_empty() {
                out.push_str(&sh(&std::mem::take(&mut lit)));
            }
            out.push(c);
        } else {
            lit.push(c);
        }
    }
    if !lit.is_empty() || out.is_empty() {
        out.push_str(&sh(&lit));
    }
    out
}

/// `creates`/`removes`: the result to return instead of running, if the guard says skip.
/// The result of a command that did not run (check mode, `creates`/`removes`): `rc` 0, no
/// output and no times, as ansible-core's command module leaves them.
fn not_run(c: &Common) -> ModuleResult {
    ModuleResult::ok()
        .with("cmd", c.cmd.clone())
        .with("rc", 0)
        .with("start", Value::Null)
        .with("end", Value::Null)
        .with("delta", Value::Null)
        .with("stderr", "")
        .with("stderr_lines", Vec::<String>::new())
}

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
    // Both are glob patterns, as upstream tests them (`glob.glob`): any match counts.
    let matches = |p: &str| format!("for _m in {}; do [ -e \"$_m\" ] && break; done", sh_glob(p));
    if let Some(p) = &c.creates {
        probe.push_str(&format!("{}; [ -e \"$_m\" ] && echo creates; ", matches(p)));
    }
    if let Some(p) = &c.removes {
        probe.push_str(&format!("{}; [ -e \"$_m\" ] || echo removes; ", matches(p)));
    }
    probe.push_str("exit 0");
    let out = ctx.run(probe).await?.stdout_str();
    let skip = |path: &str, why: &str| {
        let msg = format!("skipped, since {path} {why}");
        let mut r = not_run(c)
            .with("stdout", msg.clone())
            .with("stdout_lines", vec![msg.clone()]);
        // Ansible's wording, which playbooks match on.
        let did = if ctx.check_mode { "Would" } else { "Did" };
        r.msg = Some(format!("{did} not run command since '{path}' {why}"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_lines_break_as_pythons_splitlines() {
        assert_eq!(splitlines("hello \n \r\n"), ["hello ", " "]);
        assert_eq!(splitlines("a\rb\n\nc"), ["a", "b", "", "c"]);
        assert!(splitlines("").is_empty());
    }

    #[test]
    fn creates_and_removes_are_globs_with_the_rest_quoted() {
        assert_eq!(sh_glob("/tmp/a b/x.*"), "'/tmp/a b/x.'*");
        assert_eq!(sh_glob("/plain"), "/plain");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "cd /etc && for _m in {}; do [ -e \"$_m\" ] && break; done; echo \"$_m\"",
                sh_glob("host[s]*")
            ))
            .output()
            .expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "hosts\n");
    }

    #[test]
    fn words_expand_set_variables_and_a_leading_tilde_on_the_host() {
        let argv: Vec<String> = ["echo", "$HOME", "~/x", "${A}b", "plain", "a$"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            expanded_command(&argv),
            "_kv0='$HOME'\n_kv1='${A}'\necho \"${HOME-$_kv0}\" ~/x \"${A-$_kv1}\"b plain 'a$'"
        );
        let argv = [
            "printf",
            "%s|",
            "$KX_SET",
            "${KX_UNSET}",
            "~",
            "$KX_SET-$KX_SET",
        ]
        .map(String::from);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(expanded_command(&argv))
            .env("KX_SET", "v a")
            .env_remove("KX_UNSET")
            .env("HOME", "/h")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "v a|${KX_UNSET}|/h|v a-v a|"
        );
    }
}
