//! Services, shared by `service` and `systemd`: one probe that finds the init system (systemd
//! when `/run/systemd/system` exists, else SysV init scripts run through `service`) and the
//! unit's running/enabled state; a pure decision ([`decide`]); one command for the changes.

use serde::Deserialize;

use crate::transport::quote::sh;

use super::{ModuleCtx, ModuleError, ModuleResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SvcState {
    Started,
    Stopped,
    Restarted,
    Reloaded,
}

/// The requested state of one service.
#[derive(Debug, Clone, Default)]
pub struct Want {
    pub name: String,
    pub state: Option<SvcState>,
    pub enabled: Option<bool>,
    /// systemd only: `systemctl daemon-reload` first.
    pub daemon_reload: bool,
    /// systemd only: `systemctl daemon-reexec` first (after a reload).
    pub daemon_reexec: bool,
    /// systemd only: mask / unmask.
    pub masked: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    Systemd,
    SysV,
}

/// What the probe saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub init: Init,
    pub exists: bool,
    pub active: bool,
    pub enabled: bool,
    pub masked: bool,
    /// Without systemd running, what `systemctl is-enabled` says of the unit when systemctl
    /// is installed (it reads unit files offline, and `mask`/`unmask` write them).
    pub unit_file: Option<String>,
}

fn probe_script(name: &str) -> String {
    let n = sh(name);
    format!(
        "if [ -d /run/systemd/system ]; then echo kinit-init=systemd\n\
           systemctl show {n} -p LoadState -p ActiveState -p UnitFileState --no-pager 2>/dev/null\n\
         else echo kinit-init=sysv\n\
           [ -x /etc/init.d/{n} ] && echo kinit-exists\n\
           [ -x /etc/init.d/{n} ] && service {n} status >/dev/null 2>&1 && echo kinit-active\n\
           ls /etc/rc2.d/S??{n} /etc/rc3.d/S??{n} 2>/dev/null | grep -q . && echo kinit-enabled\n\
           command -v systemctl >/dev/null 2>&1 && echo \"kinit-unitfile=$(systemctl is-enabled {n} 2>/dev/null)\"\n\
         fi\nexit 0\n"
    )
}

/// Parse the probe output.
pub fn parse(out: &str) -> Seen {
    let has = |k: &str| out.lines().any(|l| l.trim() == k);
    let prop = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    if has("kinit-init=systemd") {
        let load = prop("LoadState");
        let file = prop("UnitFileState");
        Seen {
            init: Init::Systemd,
            exists: !load.is_empty() && load != "not-found",
            active: matches!(
                prop("ActiveState").as_str(),
                "active" | "reloading" | "activating"
            ),
            enabled: matches!(
                file.as_str(),
                "enabled" | "enabled-runtime" | "static" | "alias" | "indirect" | "generated"
            ),
            masked: load == "masked" || file.starts_with("masked"),
            unit_file: None,
        }
    } else {
        let unit_file = out
            .lines()
            .find_map(|l| l.strip_prefix("kinit-unitfile="))
            .map(|f| f.trim().to_string());
        Seen {
            init: Init::SysV,
            exists: has("kinit-exists"),
            active: has("kinit-active"),
            enabled: has("kinit-enabled"),
            masked: unit_file
                .as_deref()
                .is_some_and(|f| f.starts_with("masked")),
            unit_file,
        }
    }
}

/// The commands that bring `seen` to `want` (empty: nothing to do), and notes for the user.
pub fn decide(want: &Want, seen: &Seen) -> (Vec<String>, Vec<String>) {
    let n = sh(&want.name);
    let mut cmds = Vec::new();
    let mut notes = Vec::new();
    let systemd = seen.init == Init::Systemd;
    // systemctl masks and unmasks unit files whether systemd runs or not, as ansible-core's
    // systemd module has it do (kubespray masks `swap.target`).
    let systemctl = systemd || seen.unit_file.is_some();
    if systemctl && want.masked == Some(!seen.masked) {
        let verb = if seen.masked { "unmask" } else { "mask" };
        cmds.push(format!("systemctl {verb} {n}"));
    } else if !systemctl && want.masked.is_some() {
        notes.push("`masked` ignored: the host has no systemctl".into());
    }
    if let Some(e) = want.enabled.filter(|e| *e != seen.enabled) {
        cmds.push(match (systemd, e) {
            (true, true) => format!("systemctl enable {n}"),
            (true, false) => format!("systemctl disable {n}"),
            (false, true) => format!(
                "if command -v update-rc.d >/dev/null 2>&1; then update-rc.d {n} defaults >/dev/null && update-rc.d {n} enable >/dev/null; else chkconfig {n} on; fi"
            ),
            (false, false) => format!(
                "if command -v update-rc.d >/dev/null 2>&1; then update-rc.d {n} disable >/dev/null; else chkconfig {n} off; fi"
            ),
        });
    }
    let run = |verb: &str| {
        if systemd {
            format!("systemctl {verb} {n}")
        } else {
            format!("service {n} {verb}")
        }
    };
    match want.state {
        Some(SvcState::Started) if !seen.active => cmds.push(run("start")),
        Some(SvcState::Stopped) if seen.active => cmds.push(run("stop")),
        Some(SvcState::Restarted) => cmds.push(run("restart")),
        Some(SvcState::Reloaded) if seen.active => cmds.push(run("reload")),
        Some(SvcState::Reloaded) => cmds.push(run("start")),
        _ => {}
    }
    (cmds, notes)
}

/// Probe, decide, act: the body of `service` and `systemd`.
pub async fn ensure(ctx: &ModuleCtx<'_>, want: &Want) -> Result<ModuleResult, ModuleError> {
    let out = ctx.run(probe_script(&want.name)).await?;
    let seen = parse(&out.stdout_str());
    let mut pre = Vec::new();
    let (cmds, mut notes) = decide(want, &seen);
    for (verb, asked) in [
        ("daemon-reload", want.daemon_reload),
        ("daemon-reexec", want.daemon_reexec),
    ] {
        match (asked, seen.init) {
            (true, Init::Systemd) => pre.push(format!("systemctl {verb}")),
            (true, Init::SysV) => notes.push(format!(
                "`{}` ignored: the host does not run systemd",
                verb.replace('-', "_")
            )),
            _ => {}
        }
    }
    let touches_unit = want.state.is_some() || want.enabled.is_some() || want.masked.is_some();
    // Masking alone needs no unit (systemctl masks any name), only systemctl.
    let masks_only = want.state.is_none() && want.enabled.is_none() && want.masked.is_some();
    let maskable = masks_only && seen.unit_file.is_some();
    let stopping = want.state == Some(SvcState::Stopped) && want.enabled != Some(true);
    if touches_unit && !seen.exists && !maskable && !stopping {
        let msg = match seen.init {
            Init::Systemd => format!("could not find the requested service `{}`", want.name),
            Init::SysV => format!(
                "could not find the requested service `{}` (the host does not run systemd and has no /etc/init.d/{} script)",
                want.name, want.name
            ),
        };
        return Ok(ModuleResult::failed(msg));
    }
    let mut r = ModuleResult {
        changed: !cmds.is_empty(),
        ..ModuleResult::ok()
    }
    .with("name", want.name.as_str())
    .with(
        "init",
        match seen.init {
            Init::Systemd => "systemd",
            Init::SysV => "sysv",
        },
    )
    .with("commands", cmds.clone());
    if let Some(s) = want.state {
        r = r.with("state", format!("{s:?}").to_lowercase());
    }
    if let Some(e) = want.enabled {
        r = r.with("enabled", e);
    }
    if !notes.is_empty() {
        r.msg = Some(notes.join("; "));
    }
    let all: Vec<String> = pre.into_iter().chain(cmds).collect();
    if ctx.check_mode || all.is_empty() {
        return Ok(r);
    }
    let out = ctx.run(all.join(" && ")).await?;
    if !out.success() {
        return Ok(ModuleResult::failed(format!(
            "changing service `{}` failed: {}",
            want.name,
            (out.stderr_str() + &out.stdout_str()).trim()
        )));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(state: Option<SvcState>, enabled: Option<bool>) -> Want {
        Want {
            name: "nginx".into(),
            state,
            enabled,
            ..Want::default()
        }
    }

    #[test]
    fn systemd_decisions() {
        let seen = parse(
            "kinit-init=systemd\nLoadState=loaded\nActiveState=inactive\nUnitFileState=disabled\n",
        );
        assert!(seen.exists && !seen.active && !seen.enabled);
        let (cmds, _) = decide(&want(Some(SvcState::Started), Some(true)), &seen);
        assert_eq!(
            cmds,
            vec!["systemctl enable nginx", "systemctl start nginx"]
        );
        let (cmds, _) = decide(&want(Some(SvcState::Stopped), Some(false)), &seen);
        assert!(cmds.is_empty());
        let (cmds, _) = decide(&want(Some(SvcState::Restarted), None), &seen);
        assert_eq!(cmds, vec!["systemctl restart nginx"]);
        let masked = Want {
            masked: Some(true),
            ..want(None, None)
        };
        assert_eq!(decide(&masked, &seen).0, vec!["systemctl mask nginx"]);
    }

    #[test]
    fn sysv_fallback_decisions() {
        let seen = parse("kinit-init=sysv\nkinit-exists\nkinit-active\n");
        assert_eq!(seen.init, Init::SysV);
        let (cmds, _) = decide(&want(Some(SvcState::Reloaded), None), &seen);
        assert_eq!(cmds, vec!["service nginx reload"]);
        let (cmds, notes) = decide(
            &Want {
                masked: Some(true),
                ..want(Some(SvcState::Started), None)
            },
            &seen,
        );
        assert!(cmds.is_empty());
        assert_eq!(notes.len(), 1);
    }

    /// Without systemd running, systemctl still reads and writes unit files: masking is
    /// decided by `systemctl is-enabled`, as ansible-core's systemd module decides it.
    #[test]
    fn masking_without_systemd_running_goes_through_systemctl() {
        let seen = parse("kinit-init=sysv\nkinit-unitfile=static\n");
        assert_eq!(seen.unit_file.as_deref(), Some("static"));
        let mask = Want {
            masked: Some(true),
            ..want(None, None)
        };
        assert_eq!(decide(&mask, &seen).0, vec!["systemctl mask nginx"]);
        let seen = parse("kinit-init=sysv\nkinit-unitfile=masked\n");
        assert!(seen.masked);
        assert!(decide(&mask, &seen).0.is_empty());
    }
}
