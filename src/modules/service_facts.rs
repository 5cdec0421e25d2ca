//! `service_facts`: `ansible_facts.services`, every service the host's init systems know,
//! as ansible-core's `service_facts` lists them (name -> `{name, state, status, source}`).
//!
//! Sources, each used when the host has it, as upstream decides:
//! - SysV (`source: sysv`): `service --status-all`, when `service` exists and neither
//!   `chkconfig` nor `rc-status` does; `[ + ]` is running, `[ - ]` stopped, `[ ? ]` left
//!   out; these entries have no `status`, as upstream's.
//! - systemd (`source: systemd`), when systemd manages the host (`systemctl` and
//!   `/run/systemd/system`): `systemctl list-units` for the state, `list-unit-files` for
//!   the enablement `status` (a bad state such as `masked` or `not-found` kept), and
//!   `systemctl show --property=ActiveState` for units that only have a file.
//!
//! Not read: upstart, chkconfig (old Red Hat), OpenRC, AIX and BSD rc; a host where none of
//! the above yields anything gets upstream's `skipped` result. Read-only: check mode runs
//! the same.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::transport::quote::sh;

use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(ServiceFacts, "service_facts", Params, run);

/// `service_facts` takes no options.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

const MARK: &str = "kinit-svc-";

// ansible-core's get_bin_path also looks in the sbin folders a login's PATH may lack.
const PROBE: &str = r#"export LANG=C LC_ALL=C PATH="$PATH:/sbin:/usr/sbin:/usr/local/sbin"
has() { command -v "$1" >/dev/null 2>&1; }
if has service && ! has chkconfig && ! has rc-status; then
  echo kinit-svc-sysv
  service --status-all 2>/dev/null
  echo "kinit-svc-rc=$?"
  [ -d /etc/init.d ] && echo kinit-svc-initd
fi
if has systemctl && { [ -d /run/systemd/system ] || [ -d /dev/.run/systemd ] || [ -d /dev/.systemd ]; }; then
  echo kinit-svc-units
  systemctl list-units --no-pager --type service --all --plain
  echo kinit-svc-files
  systemctl list-unit-files --no-pager --type service --all
fi
echo kinit-svc-end
exit 0
"#;

/// The lines between `{MARK}{from}` and the next marker line.
fn section<'a>(out: &'a str, from: &str) -> Vec<&'a str> {
    out.lines()
        .skip_while(|l| *l != format!("{MARK}{from}"))
        .skip(1)
        .take_while(|l| !l.starts_with(MARK))
        .collect()
}

/// `service --status-all` lines: `[ + ]  name` running, `[ - ]  name` stopped.
pub fn sysv(lines: &[&str], out: &mut BTreeMap<String, Value>) {
    for l in lines {
        let t = l.trim_start();
        let state = if let Some(rest) = t.strip_prefix("[ + ]") {
            Some(("running", rest))
        } else {
            t.strip_prefix("[ - ]").map(|rest| ("stopped", rest))
        };
        if let Some((state, rest)) = state {
            let name = rest.trim_start().trim_end_matches('\r');
            if rest.starts_with(char::is_whitespace) && !name.is_empty() {
                out.insert(
                    name.into(),
                    json!({"name": name, "state": state, "source": "sysv"}),
                );
            }
        }
    }
}

const BAD_STATES: &[&str] = &["not-found", "masked", "failed"];

/// `systemctl list-units --plain` lines: the state (`running` or `stopped`) and the load
/// status (`active`, `inactive`, or a bad state anywhere before the description's last word).
pub fn systemd_units(lines: &[&str], out: &mut BTreeMap<String, Value>) {
    for l in lines.iter().filter(|l| l.contains(".service")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let status = BAD_STATES
            .iter()
            .find(|b| f[..f.len() - 1].contains(b))
            .copied()
            .unwrap_or(f[2]);
        let state = if f[3] == "running" {
            "running"
        } else {
            "stopped"
        };
        out.insert(
            f[0].into(),
            json!({"name": f[0], "state": state, "status": status, "source": "systemd"}),
        );
    }
}

/// `systemctl list-unit-files` lines: the enablement as `status` of known units (unless it
/// is a bad state); the names of units only seen here, whose state must be asked.
pub fn systemd_files(lines: &[&str], out: &mut BTreeMap<String, Value>) -> Vec<(String, String)> {
    let mut ask = Vec::new();
    for l in lines.iter().filter(|l| l.contains(".service")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let [name, status, ..] = f[..] else { continue };
        match out.get_mut(name) {
            Some(v) => {
                let bad = v["status"]
                    .as_str()
                    .is_some_and(|s| BAD_STATES.contains(&s));
                if !bad {
                    v["status"] = status.into();
                }
            }
            None => ask.push((name.to_string(), status.to_string())),
        }
    }
    ask
}

async fn run(ctx: &ModuleCtx<'_>, _p: Params) -> Result<ModuleResult, ModuleError> {
    let out = ctx.run(PROBE).await?.stdout_str();
    let mut services = BTreeMap::new();
    let mut warnings = Vec::new();
    if out.lines().any(|l| l == format!("{MARK}sysv")) {
        let rc = out
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{MARK}rc=")))
            .unwrap_or("0");
        let initd = out.lines().any(|l| l == format!("{MARK}initd"));
        // `service` on RHEL 9 without /etc/init.d exits 4: nothing to list there.
        if rc != "4" || initd {
            if rc != "0" {
                warnings.push(format!("Unable to query 'service' tool ({rc})"));
            }
            sysv(&section(&out, "sysv"), &mut services);
        }
    }
    if out.lines().any(|l| l == format!("{MARK}units")) {
        systemd_units(&section(&out, "units"), &mut services);
        let ask = systemd_files(&section(&out, "files"), &mut services);
        if !ask.is_empty() {
            let script: String = ask
                .iter()
                .map(|(n, _)| {
                    format!(
                        "printf '%s\\n' \"$(systemctl show {} --property=ActiveState 2>/dev/null)\"\n",
                        sh(n)
                    )
                })
                .collect();
            let states = ctx.run(format!("export LANG=C LC_ALL=C\n{script}")).await?;
            let states = states.stdout_str();
            let mut lines = states.lines();
            for (name, status) in ask {
                let state = lines
                    .next()
                    .map(|l| l.replace("ActiveState=", "").trim_end().to_string())
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "unknown".into());
                services.insert(
                    name.clone(),
                    json!({"name": name, "state": state, "status": status, "source": "systemd"}),
                );
            }
        }
    }
    let mut r = if services.is_empty() {
        ModuleResult {
            skipped: true,
            msg: Some(
                "Failed to find any services. This can be due to privileges or some other \
                 configuration issue."
                    .into(),
            ),
            ..ModuleResult::ok()
        }
    } else {
        ModuleResult::ok().with("ansible_facts", json!({ "services": services }))
    };
    if !warnings.is_empty() {
        r = r.with("warnings", warnings);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysv_lists_running_and_stopped_only() {
        let mut s = BTreeMap::new();
        sysv(
            &[" [ + ]  ssh", " [ - ]  dbus", " [ ? ]  hwclock.sh"],
            &mut s,
        );
        assert_eq!(
            s["ssh"],
            json!({"name": "ssh", "state": "running", "source": "sysv"})
        );
        assert_eq!(s["dbus"]["state"], "stopped");
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn systemd_units_then_files() {
        let mut s = BTreeMap::new();
        systemd_units(
            &[
                "cron.service loaded active running Regular background program processing daemon",
                "foo.service not-found inactive dead foo.service",
                "UNIT LOAD ACTIVE SUB DESCRIPTION",
            ],
            &mut s,
        );
        assert_eq!(s["cron.service"]["state"], "running");
        assert_eq!(s["cron.service"]["status"], "active");
        assert_eq!(s["foo.service"]["status"], "not-found");
        let ask = systemd_files(
            &[
                "cron.service enabled enabled",
                "foo.service disabled enabled",
                "bar.service static -",
            ],
            &mut s,
        );
        assert_eq!(s["cron.service"]["status"], "enabled");
        assert_eq!(s["foo.service"]["status"], "not-found");
        assert_eq!(ask, vec![("bar.service".to_string(), "static".to_string())]);
    }
}
