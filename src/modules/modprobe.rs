//! `modprobe`: load or unload a kernel module. One probe (is it loaded, is `modprobe` there),
//! then `modprobe NAME PARAMS` / `modprobe -r NAME` only when the state differs; with
//! `persistent`, the name also goes into (or out of) `/etc/modules-load.d/NAME.conf`.

use serde::Deserialize;

use crate::transport::quote::sh;

use super::lineinfile::State;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Modprobe, "modprobe", Params, run);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Persistent {
    /// Leave `/etc/modules-load.d` alone (default).
    #[default]
    Disabled,
    Present,
    Absent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The kernel module.
    name: String,
    /// `present` (loaded, default) or `absent` (unloaded).
    #[serde(default)]
    state: State,
    /// Module parameters for loading (`numdummies=2`).
    #[serde(default)]
    params: String,
    /// Also load it at boot (`present`) or stop doing so (`absent`).
    #[serde(default)]
    persistent: Persistent,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let sysname = p.name.replace('-', "_");
    let conf = format!("/etc/modules-load.d/{}.conf", p.name);
    let probe = format!(
        "if [ -d /sys/module/{s} ] || grep -q '^{s} ' /proc/modules 2>/dev/null; then echo kinit-loaded; fi\n\
         command -v modprobe >/dev/null 2>&1 || echo kinit-nomodprobe\n\
         grep -qx {n} {c} 2>/dev/null && echo kinit-persistent\nexit 0\n",
        s = sysname,
        n = sh(&p.name),
        c = sh(&conf),
    );
    if sysname.is_empty()
        || !sysname
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(ModuleError::BadArgs {
            module: "modprobe",
            detail: format!("`name` `{}` is not a kernel module name", p.name),
        });
    }
    let out = ctx.run(probe).await?.stdout_str();
    let loaded = out.contains("kinit-loaded");
    let mut cmds = Vec::new();
    match (p.state, loaded) {
        (State::Present, false) => {
            let params: String = p
                .params
                .split_whitespace()
                .map(|w| format!(" {}", sh(w)))
                .collect();
            cmds.push(format!("modprobe {}{params}", sh(&p.name)));
        }
        (State::Absent, true) => cmds.push(format!("modprobe -r {}", sh(&p.name))),
        _ => {}
    }
    let persisted = out.contains("kinit-persistent");
    match (p.persistent, persisted) {
        (Persistent::Present, false) => cmds.push(format!(
            "mkdir -p /etc/modules-load.d && printf '%s\\n' {} > {}",
            sh(&p.name),
            sh(&conf)
        )),
        (Persistent::Absent, true) => cmds.push(format!("rm -f -- {}", sh(&conf))),
        _ => {}
    }
    let r = ModuleResult {
        changed: !cmds.is_empty(),
        ..ModuleResult::ok()
    }
    .with("name", p.name.as_str())
    .with("params", p.params.as_str())
    .with("state", format!("{:?}", p.state).to_lowercase());
    if !r.changed || ctx.check_mode {
        return Ok(r);
    }
    if out.contains("kinit-nomodprobe") && cmds.iter().any(|c| c.starts_with("modprobe")) {
        return Ok(ModuleResult::failed(format!(
            "cannot change module `{}`: the host has no `modprobe` (kmod)",
            p.name
        )));
    }
    let res = ctx.run(cmds.join(" && ")).await?;
    if !res.success() {
        return Ok(ModuleResult::failed(format!(
            "modprobe `{}` failed: {}",
            p.name,
            res.stderr_str().trim()
        )));
    }
    Ok(r)
}
