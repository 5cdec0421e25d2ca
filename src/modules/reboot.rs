//! `reboot`: restart a POSIX host and wait for it to come back, as ansible-core's `reboot`
//! action plugin does (ansible/plugins/action/reboot.py).
//!
//! The module reads the boot identity (`boot_time_command`, by default
//! `/proc/sys/kernel/random/boot_id`), finds the shutdown program in `search_paths` and
//! issues the reboot (`shutdown -r MIN "MSG"`, `reboot` on Alpine, or `reboot_command`); a
//! connection that drops while the command runs counts as success, as upstream treats it.
//! It cannot wait on the connection it was given, which dies with the host: it returns
//! `reboot_requested` with the waiting parameters, and the **executor** (`exec::reboot`)
//! waits `post_reboot_delay`, reconnects until `boot_time_command` prints something new,
//! runs `test_command` until it succeeds, and reports `rebooted` and `elapsed`.
//!
//! As upstream: refused on the `local` connection (it would reboot the controller); in
//! check mode nothing runs and the result is `changed`, `rebooted`, `elapsed: 0`.

use serde::{Deserialize, Deserializer};

use crate::transport::Connection;
use crate::transport::quote::sh;

use super::args::{list, opt_stringish};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Reboot, "reboot", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Seconds to wait for the host to come back and pass `test_command` (default 600).
    #[serde(default, alias = "reboot_timeout_sec", deserialize_with = "seconds")]
    reboot_timeout: Option<u64>,
    /// Seconds one reconnection attempt may take (default: the connection's).
    #[serde(default, alias = "connect_timeout_sec", deserialize_with = "seconds")]
    connect_timeout: Option<u64>,
    /// Command that must succeed on the host once it is back (default `whoami`).
    #[serde(default, deserialize_with = "opt_stringish")]
    test_command: Option<String>,
    /// Seconds before the reboot (whole minutes for `shutdown`; default 0).
    #[serde(default, alias = "pre_reboot_delay_sec", deserialize_with = "seconds")]
    pre_reboot_delay: Option<u64>,
    /// Seconds to wait after issuing the reboot before checking (default 0).
    #[serde(default, alias = "post_reboot_delay_sec", deserialize_with = "seconds")]
    post_reboot_delay: Option<u64>,
    /// Message shown to logged-in users.
    #[serde(default)]
    msg: Option<String>,
    /// Where to look for the shutdown program when it is not an absolute path.
    #[serde(default, deserialize_with = "list")]
    search_paths: Vec<String>,
    /// Command whose output identifies the boot (default
    /// `cat /proc/sys/kernel/random/boot_id`).
    #[serde(default)]
    boot_time_command: Option<String>,
    /// Command that reboots the host, with its arguments (default `shutdown -r ...`).
    #[serde(default)]
    reboot_command: Option<String>,
}

/// A number of seconds; negative values count as 0 (upstream's `_check_delay`).
fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let Some(s) = opt_stringish(d)? else {
        return Ok(None);
    };
    s.trim()
        .parse::<f64>()
        .map(|n| Some(n.max(0.0) as u64))
        .map_err(|_| serde::de::Error::custom(format!("expected a number, got `{s}`")))
}

const DEFAULT_SEARCH: &[&str] = &["/sbin", "/bin", "/usr/sbin", "/usr/bin", "/usr/local/sbin"];
const DEFAULT_BOOT_TIME: &str = "cat /proc/sys/kernel/random/boot_id";
const DEFAULT_MSG: &str = "Reboot initiated by Ansible";

/// `failed` with the fields upstream's refusals carry.
fn refused(msg: String) -> ModuleResult {
    ModuleResult::failed(msg)
        .with("rebooted", false)
        .with("elapsed", 0)
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if matches!(ctx.conn, Connection::Local(_)) {
        return Ok(refused(
            "Running reboot with local connection would reboot the control node.".into(),
        ));
    }
    if ctx.check_mode {
        return Ok(ModuleResult::changed()
            .with("elapsed", 0)
            .with("rebooted", true));
    }
    let boot_cmd = p
        .boot_time_command
        .clone()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| DEFAULT_BOOT_TIME.into());
    let out = ctx.run(boot_cmd.clone()).await?;
    if !out.success() {
        return Ok(ModuleResult::failed(format!(
            "reboot: failed to get host boot time info, rc: {}, stdout: {}, stderr: {}",
            out.rc,
            out.stdout_str(),
            out.stderr_str()
        ))
        .with("reboot", false));
    }
    let previous = out.stdout_str().trim().to_string();

    let delay = p.pre_reboot_delay.unwrap_or(0);
    let (bin, args) = match &p.reboot_command {
        Some(c) => match c.split_once(' ') {
            Some((b, a)) => (b.to_string(), a.to_string()),
            None => (c.clone(), String::new()),
        },
        None if alpine(ctx).await? => ("reboot".into(), String::new()),
        None => (
            "shutdown".into(),
            format!(
                "-r {} \"{}\"",
                delay / 60,
                p.msg.as_deref().unwrap_or(DEFAULT_MSG)
            ),
        ),
    };
    let full = if bin.starts_with('/') {
        bin
    } else {
        match find(ctx, &bin, &p.search_paths).await? {
            Ok(path) => path,
            Err(msg) => return Ok(ModuleResult::failed(msg)),
        }
    };
    let command = format!("{full} {args}");
    // The host may drop the connection while it goes down: that is the reboot working.
    if let Ok(out) = ctx.run(command).await
        && !out.success()
    {
        return Ok(ModuleResult::failed(format!(
            "Reboot command failed. Error was: '{}, {}'",
            out.stdout_str().trim(),
            out.stderr_str().trim()
        ))
        .with("rebooted", false)
        .with("elapsed", 0));
    }
    Ok(ModuleResult::changed()
        .with("reboot_requested", true)
        .with("previous_boot_time", previous)
        .with("boot_time_command", boot_cmd)
        .with("reboot_timeout", p.reboot_timeout.unwrap_or(600))
        .with("post_reboot_delay", p.post_reboot_delay.unwrap_or(0))
        .with("connect_timeout", p.connect_timeout)
        .with(
            "test_command",
            p.test_command.unwrap_or_else(|| "whoami".into()),
        ))
}

/// Whether the host is Alpine (whose shutdown program is `reboot`, without arguments).
async fn alpine(ctx: &ModuleCtx<'_>) -> Result<bool, ModuleError> {
    let out = ctx
        .run("( . /etc/os-release 2>/dev/null; printf %s \"$ID\" )")
        .await?;
    Ok(out.stdout_str().trim() == "alpine")
}

/// The first `dir/bin` that exists in `paths` (upstream runs `find` there), or upstream's
/// message when none does.
async fn find(
    ctx: &ModuleCtx<'_>,
    bin: &str,
    paths: &[String],
) -> Result<Result<String, String>, ModuleError> {
    let paths: Vec<String> = if paths.is_empty() {
        DEFAULT_SEARCH.iter().map(|s| s.to_string()).collect()
    } else {
        paths.to_vec()
    };
    let dirs: Vec<String> = paths.iter().map(|d| sh(d)).collect();
    let script = format!(
        "for d in {}; do if [ -e \"$d\"/{b} ] || [ -L \"$d\"/{b} ]; then printf '%s/%s' \"$d\" {b}; exit 0; fi; done; exit 1",
        dirs.join(" "),
        b = sh(bin)
    );
    let out = ctx.run(script).await?;
    Ok(if out.success() {
        Ok(out.stdout_str())
    } else {
        let listed: Vec<String> = paths.iter().map(|p| format!("'{p}'")).collect();
        Err(format!(
            "Unable to find command \"{bin}\" in search paths: [{}]",
            listed.join(", ")
        ))
    })
}
