//! Package management shared by `apt`, `dnf` and `package`: one probe for every named package
//! (installed version, and for `latest` whether an upgrade is available), a pure decision
//! ([`plan`]), and the one command per action that carries it out.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::transport::quote::sh_join;

use super::{ModuleCtx, ModuleError, ModuleResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PkgState {
    #[default]
    #[serde(alias = "installed")]
    Present,
    #[serde(alias = "removed")]
    Absent,
    Latest,
}

/// apt waits up to a minute for another apt/dpkg run to finish (Ansible's `lock_timeout`)
/// instead of failing at once on the dpkg lock.
pub const APT_LOCK_WAIT: [&str; 2] = ["-o", "DPkg::Lock::Timeout=60"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Apt,
    Dnf,
}

/// What the probe learned about one package.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Installed {
    pub version: Option<String>,
    pub upgradable: bool,
}

/// What to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub install: Vec<String>,
    pub upgrade: Vec<String>,
    pub remove: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.install.is_empty() && self.upgrade.is_empty() && self.remove.is_empty()
    }
}

/// `name=1.2` (apt) / `name-1.2` is left to the manager; kinit compares on the bare name.
fn bare(spec: &str) -> &str {
    spec.split('=').next().unwrap_or(spec)
}

impl Manager {
    /// sh text printing one `kinit-pkg|name|version|upgradable` line per package.
    pub fn probe_script(self, names: &[String], latest: bool) -> String {
        let list = sh_join(&names.iter().map(|n| bare(n)).collect::<Vec<_>>());
        match self {
            Manager::Apt => {
                let mut s = format!(
                    "for p in {list}; do v=$(dpkg-query -W -f='${{db:Status-Abbrev}} ${{Version}}' \"$p\" 2>/dev/null); \
                     case \"$v\" in ii*) v=${{v#ii? }};; *) v=;; esac; u=;"
                );
                if latest {
                    s.push_str(
                        " c=$(apt-cache policy \"$p\" 2>/dev/null | awk '/Candidate:/ {print $2}');\
                         [ -n \"$v\" ] && [ -n \"$c\" ] && [ \"$c\" != '(none)' ] && [ \"$c\" != \"$v\" ] && u=1;",
                    );
                }
                s.push_str(" echo \"kinit-pkg|$p|$v|$u\"; done\n");
                s
            }
            Manager::Dnf => {
                let mut s = String::new();
                if latest {
                    s.push_str(&format!(
                        "ups=$(dnf -q check-update {list} 2>/dev/null | awk 'NF==3 {{sub(/\\.[^.]*$/, \"\", $1); print $1}}')\n"
                    ));
                }
                s.push_str(&format!(
                    "for p in {list}; do v=$(rpm -q --qf '%{{VERSION}}-%{{RELEASE}}' \"$p\" 2>/dev/null) || v=; u=;"
                ));
                if latest {
                    s.push_str(" echo \"$ups\" | grep -qx \"$p\" && u=1;");
                }
                s.push_str(" echo \"kinit-pkg|$p|$v|$u\"; done\n");
                s
            }
        }
    }

    /// The commands for `plan`, in order (install/upgrade, then removal).
    pub fn commands(self, plan: &Plan, purge: bool, extra: &[String]) -> Vec<String> {
        let mut cmds = Vec::new();
        let mut add = |verb: &[&str], pkgs: &[String]| {
            if pkgs.is_empty() {
                return;
            }
            let mut argv: Vec<String> = verb.iter().map(|s| s.to_string()).collect();
            argv.extend(extra.iter().cloned());
            argv.extend(pkgs.iter().cloned());
            let prefix = match self {
                Manager::Apt => "DEBIAN_FRONTEND=noninteractive ",
                Manager::Dnf => "",
            };
            cmds.push(format!("{prefix}{}", sh_join(&argv)));
        };
        match self {
            Manager::Apt => {
                let both: Vec<String> = plan.install.iter().chain(&plan.upgrade).cloned().collect();
                add(
                    &[
                        "apt-get",
                        APT_LOCK_WAIT[0],
                        APT_LOCK_WAIT[1],
                        "install",
                        "-y",
                        "-q",
                    ],
                    &both,
                );
                let rm: &[&str] = if purge {
                    &[
                        "apt-get",
                        APT_LOCK_WAIT[0],
                        APT_LOCK_WAIT[1],
                        "remove",
                        "-y",
                        "-q",
                        "--purge",
                    ]
                } else {
                    &[
                        "apt-get",
                        APT_LOCK_WAIT[0],
                        APT_LOCK_WAIT[1],
                        "remove",
                        "-y",
                        "-q",
                    ]
                };
                add(rm, &plan.remove);
            }
            Manager::Dnf => {
                add(&["dnf", "install", "-y"], &plan.install);
                add(&["dnf", "upgrade", "-y"], &plan.upgrade);
                add(&["dnf", "remove", "-y"], &plan.remove);
            }
        }
        cmds
    }

    pub fn update_cache_command(self) -> &'static str {
        match self {
            Manager::Apt => {
                "DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 update -q"
            }
            Manager::Dnf => "dnf makecache -q",
        }
    }
}

/// Parse the probe's lines.
pub fn parse(out: &str) -> BTreeMap<String, Installed> {
    out.lines()
        .filter_map(|l| l.strip_prefix("kinit-pkg|"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            Some((
                f.first()?.to_string(),
                Installed {
                    version: f.get(1).filter(|v| !v.is_empty()).map(|v| v.to_string()),
                    upgradable: f.get(2) == Some(&"1"),
                },
            ))
        })
        .collect()
}

/// Decide what `state` needs for `names`, given what is installed (pure).
pub fn plan(names: &[String], state: PkgState, have: &BTreeMap<String, Installed>) -> Plan {
    let mut p = Plan::default();
    for spec in names {
        let h = have.get(bare(spec)).cloned().unwrap_or_default();
        let pinned = spec.split_once('=').map(|(_, v)| v);
        match state {
            PkgState::Present => match (&h.version, pinned) {
                (None, _) => p.install.push(spec.clone()),
                (Some(v), Some(want)) if !version_matches(v, want) => p.install.push(spec.clone()),
                _ => {}
            },
            PkgState::Latest if h.version.is_none() => p.install.push(spec.clone()),
            PkgState::Latest if h.upgradable => p.upgrade.push(spec.clone()),
            PkgState::Latest => {}
            PkgState::Absent if h.version.is_some() => p.remove.push(bare(spec).to_string()),
            PkgState::Absent => {}
        }
    }
    p
}

/// Whether an installed version satisfies a pin: a glob when it has `*`/`?` (as apt and
/// Ansible take `kubelet=1.34.1-*`), otherwise a prefix (`1.2` pins `1.2-3`).
fn version_matches(have: &str, want: &str) -> bool {
    fn glob(h: &[u8], w: &[u8]) -> bool {
        match w.split_first() {
            None => h.is_empty(),
            Some((b'*', rest)) => (0..=h.len()).any(|i| glob(&h[i..], rest)),
            Some((b'?', rest)) => !h.is_empty() && glob(&h[1..], rest),
            Some((c, rest)) => h.first() == Some(c) && glob(&h[1..], rest),
        }
    }
    if want.contains(['*', '?']) {
        glob(have.as_bytes(), want.as_bytes())
    } else {
        have.starts_with(want)
    }
}

/// Probe, decide, and (unless check mode) act: the body of `apt`, `dnf` and `package`.
pub async fn ensure(
    ctx: &ModuleCtx<'_>,
    mgr: Manager,
    names: &[String],
    state: PkgState,
    update_cache: bool,
    purge: bool,
    extra: &[String],
) -> Result<ModuleResult, ModuleError> {
    let mut r = ModuleResult::ok();
    if update_cache && !ctx.check_mode {
        let out = ctx.run(mgr.update_cache_command()).await?;
        if !out.success() {
            return Ok(ModuleResult::failed(format!(
                "updating the package cache failed: {}",
                out.stderr_str().trim()
            )));
        }
        r = r.with("cache_updated", true);
    }
    if names.is_empty() {
        return Ok(r);
    }
    let out = ctx
        .run(mgr.probe_script(names, state == PkgState::Latest))
        .await?;
    let have = parse(&out.stdout_str());
    let plan = plan(names, state, &have);
    r.changed = !plan.is_empty();
    let cmds = mgr.commands(&plan, purge, extra);
    r = r.with("commands", cmds.clone());
    if ctx.check_mode || !r.changed {
        return Ok(r);
    }
    for c in &cmds {
        let out = ctx.run(c.as_str()).await?;
        if !out.success() {
            let mut f = ModuleResult::failed(format!(
                "`{c}` failed with rc {}: {}",
                out.rc,
                out.stderr_str().trim()
            ));
            f = f.with_output(&out);
            return Ok(f);
        }
        r = r.with("stdout", out.stdout_str());
    }
    Ok(r)
}

#[cfg(test)]
#[path = "pkg_tests.rs"]
mod tests;
