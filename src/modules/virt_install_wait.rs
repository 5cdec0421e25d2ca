//! `virt_install_wait`: follow a Windows guest's unattended install until its WinRM port
//! answers. Each poll reads the domain's state from libvirt (a guest that powers off or
//! crashes mid-install fails at once), the install stage markers in the guest's serial log on
//! the hypervisor (see `provider::install_stage`) and whether WinRM answers from the
//! hypervisor; between polls it reports `Windows install: <stage> (after N reboots)` with the
//! elapsed time as the host's live progress line.
//!
//! It changes nothing, so check mode has nothing to predict; it does not wait there (the
//! guest it would wait for was not created either).

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use super::args::opt_u64ish;
use super::virt::{connect, default_uri, failed};
use super::wait_for::PORT_OPEN;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};
use crate::provider::install_stage::{InstallStage, MARKER};
use crate::report::event::minutes_seconds;
use crate::transport::quote::sh;

typed_module!(VirtInstallWait, "virt_install_wait", Params, run);

const NAME: &str = "virt_install_wait";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// libvirt URI of the guest's hypervisor (default `qemu:///system`).
    #[serde(default = "default_uri")]
    uri: String,
    /// The Windows domain.
    name: String,
    /// Path on the task's host (the hypervisor) of the domain's serial log (`virt_guest`'s
    /// `windows.serial_log`).
    serial_log: String,
    /// The guest's address as the hypervisor reaches it.
    host: String,
    /// WinRM port (default 5986).
    #[serde(default, deserialize_with = "opt_u64ish")]
    port: Option<u64>,
    /// Give up after this many seconds (default 3600).
    #[serde(default, deserialize_with = "opt_u64ish")]
    timeout: Option<u64>,
    /// Seconds between polls (default 10).
    #[serde(default, deserialize_with = "opt_u64ish")]
    poll: Option<u64>,
}

/// A stage and when this task first saw its marker.
struct Seen {
    stage: InstallStage,
    at: Duration,
}

/// What one poll of the hypervisor found.
struct Poll {
    stages: Vec<InstallStage>,
    winrm_open: bool,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let port = p.port.unwrap_or(5986);
    if port == 0 || port > u64::from(u16::MAX) {
        return Err(ModuleError::BadArgs {
            module: NAME,
            detail: format!("`port` is `{port}`, expected a TCP port (1 to 65535)"),
        });
    }
    if ctx.check_mode {
        return Ok(ModuleResult::ok().with("msg", "check mode: not waiting for the install"));
    }
    let timeout = Duration::from_secs(p.timeout.unwrap_or(3600));
    let every = Duration::from_secs(p.poll.unwrap_or(10).max(1));
    let hv = connect(NAME, ctx, &p.uri).await?;
    let started = Instant::now();
    let mut seen: Vec<Seen> = Vec::new();
    loop {
        let elapsed = started.elapsed();
        let poll = poll(ctx, &p, port).await?;
        // The log is appended across boots: new markers follow the ones already seen.
        for stage in poll.stages.into_iter().skip(seen.len()) {
            seen.push(Seen { stage, at: elapsed });
        }
        let Some(info) = hv.guest(&p.name).await.map_err(failed)? else {
            let msg = format!("domain `{}` does not exist", p.name);
            return Ok(failing(report(&p, &seen, elapsed), msg));
        };
        if !info.state.is_active() {
            let msg = format!(
                "domain `{}` is `{:?}` during the Windows install: {}",
                p.name,
                info.state,
                where_it_was(&seen, elapsed)
            );
            return Ok(failing(report(&p, &seen, elapsed), msg));
        }
        let detail = json!({"stage": seen.last().map(|s| s.stage.name()),
                            "reboots": reboots(&seen)});
        ctx.progress(&status(&seen), elapsed, detail);
        if poll.winrm_open {
            return Ok(report(&p, &seen, elapsed));
        }
        if elapsed >= timeout {
            let msg = format!(
                "domain `{}` did not answer on WinRM {}:{port} within {}s: {}",
                p.name,
                p.host,
                timeout.as_secs(),
                where_it_was(&seen, elapsed)
            );
            return Ok(failing(report(&p, &seen, elapsed), msg));
        }
        tokio::time::sleep(every.min(timeout - elapsed)).await;
    }
}

/// The stage markers in the serial log and whether WinRM answers, in one command on the
/// hypervisor.
async fn poll(ctx: &ModuleCtx<'_>, p: &Params, port: u64) -> Result<Poll, ModuleError> {
    let script = format!(
        "{PORT_OPEN}grep -a -o -- {marker} {log} 2>/dev/null\n\
         if _po {host} {port} 5; then echo kinit-winrm-open; fi\nexit 0\n",
        marker = sh(&format!("{MARKER}[A-Za-z]*")),
        log = sh(&p.serial_log),
        host = sh(&p.host),
    );
    let out = ctx.run(script).await?;
    let text = out.stdout_str();
    let mut stages: Vec<InstallStage> = Vec::new();
    for stage in text.lines().filter_map(InstallStage::from_line) {
        // A marker repeated (a command run twice) is the same stage, not a new one.
        if stages.last() != Some(&stage) {
            stages.push(stage);
        }
    }
    Ok(Poll {
        stages,
        winrm_open: text.lines().any(|l| l == "kinit-winrm-open"),
    })
}

fn reboots(seen: &[Seen]) -> u32 {
    seen.last().map_or(0, |s| s.stage.reboots_before())
}

/// ` (after 1 reboot)`, or nothing before the first reboot.
fn after_reboots(stage: InstallStage) -> String {
    match stage.reboots_before() {
        0 => String::new(),
        1 => " (after 1 reboot)".into(),
        n => format!(" (after {n} reboots)"),
    }
}

/// `Windows install: specialize (after 1 reboot)`.
fn status(seen: &[Seen]) -> String {
    match seen.last() {
        Some(s) => format!("Windows install: {}{}", s.stage, after_reboots(s.stage)),
        None => "Windows install: starting (no stage marked yet)".into(),
    }
}

/// ``last stage `specialize` (after 1 reboot) seen at 3m10s; waited 14m02s``.
fn where_it_was(seen: &[Seen], elapsed: Duration) -> String {
    let last = match seen.last() {
        Some(s) => format!(
            "last stage `{}`{} seen at {}",
            s.stage,
            after_reboots(s.stage),
            minutes_seconds(s.at)
        ),
        None => "no install stage marked in the serial log".into(),
    };
    format!("{last}; waited {}", minutes_seconds(elapsed))
}

/// The result: the stages in order with when each was first seen (seconds into the wait).
fn report(p: &Params, seen: &[Seen], elapsed: Duration) -> ModuleResult {
    let stages: Vec<Value> = seen
        .iter()
        .map(|s| json!({"stage": s.stage.name(), "seen_after": s.at.as_secs_f64()}))
        .collect();
    ModuleResult::ok()
        .with("name", p.name.as_str())
        .with("stages", stages)
        .with("last_stage", seen.last().map(|s| s.stage.name()))
        .with("reboots", reboots(seen))
        .with("elapsed", elapsed.as_secs_f64())
}

fn failing(mut r: ModuleResult, msg: String) -> ModuleResult {
    r.failed = true;
    r.msg = Some(msg);
    r
}
