//! Package management shared by `apt`, `dnf` and `package`: one probe for every named package
//! (installed version, and for `latest` whether an upgrade is available), a pure decision
//! ([`plan`]), and the one command per action that carries it out.
//!
//! Installing never removes: apt runs with `--no-remove` (Ansible's apt module lets apt remove
//! whatever conflicts, e.g. a backports `qemu-utils` when the release's QEMU is installed), and
//! dnf without `--allowerasing`, which refuses conflicts by default. A refused or failed install
//! names apt's reason, and leaves no package half-configured (`dpkg --configure -a`). In check
//! mode apt simulates the install (`apt-get -s`, as Ansible's apt module does) and reports what
//! it would install, or why it would fail.
//!
//! One file because the probe, the decision and the commands must agree on one package model
//! (names, versions, `latest`), and the safety rules above apply to all three.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::transport::quote::sh_join;

use super::{ModuleCtx, ModuleError, ModuleResult, apt_answer};

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
                        "--no-remove",
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
    if !r.changed {
        return Ok(r);
    }
    if ctx.check_mode {
        return match mgr {
            Manager::Apt => apt_simulate(ctx, &plan, extra, r).await,
            Manager::Dnf => Ok(r),
        };
    }
    for c in &cmds {
        let out = ctx.run(c.as_str()).await?;
        if !out.success() {
            return Ok(match mgr {
                Manager::Apt => apt_failed(ctx, &plan, &out).await?,
                Manager::Dnf => ModuleResult::failed(format!(
                    "`{c}` failed with rc {}: {}",
                    out.rc,
                    out.stderr_str().trim()
                )),
            }
            .with_output(&out));
        }
        r = r.with("stdout", out.stdout_str());
    }
    Ok(r)
}

/// Check mode for apt: what `apt-get install -s --no-remove` says the install would bring, or
/// why it would fail. A package apt does not know yet (its repository is added by a task that
/// check mode did not run) is not a predicted failure.
async fn apt_simulate(
    ctx: &ModuleCtx<'_>,
    plan: &Plan,
    extra: &[String],
    mut r: ModuleResult,
) -> Result<ModuleResult, ModuleError> {
    let mut argv: Vec<String> = ["apt-get", "install", "-s", "-q", "--no-remove"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    argv.extend(extra.iter().cloned());
    argv.extend(plan.install.iter().chain(&plan.upgrade).cloned());
    let out = ctx.run(sh_join(&argv)).await?;
    let (stdout, stderr) = (out.stdout_str(), out.stderr_str());
    if out.success() {
        let would = apt_answer::simulated_installs(&stdout);
        r.msg = Some(format!("would install: {}", would.join(" ")));
        return Ok(r.with("would_install", would));
    }
    if apt_answer::only_unknown_packages(&stderr) {
        r.msg = Some(format!(
            "apt does not know every package yet: {}",
            apt_answer::reason(&stdout, &stderr)
        ));
        return Ok(r);
    }
    Ok(ModuleResult::failed(format!(
        "installing {} would fail: {}",
        names_list(plan),
        apt_answer::reason(&stdout, &stderr)
    )))
}

/// A failed apt install: apt's reason, after finishing whatever dpkg left unconfigured.
async fn apt_failed(
    ctx: &ModuleCtx<'_>,
    plan: &Plan,
    out: &crate::transport::ExecOutput,
) -> Result<ModuleResult, ModuleError> {
    let mut msg = format!(
        "installing {} failed (apt-get rc {}): {}",
        names_list(plan),
        out.rc,
        apt_answer::reason(&out.stdout_str(), &out.stderr_str())
    );
    let recover = ctx.run(apt_answer::DPKG_RECOVER).await?;
    match recover.stdout_str().trim() {
        "configured" => msg.push_str("; the packages dpkg had unpacked are configured"),
        "unconfigured" => msg.push_str(
            "; dpkg has packages left unconfigured and `dpkg --configure -a` failed too: \
             run it by hand to see why",
        ),
        _ => {}
    }
    Ok(ModuleResult::failed(msg))
}

fn names_list(plan: &Plan) -> String {
    plan.install
        .iter()
        .chain(&plan.upgrade)
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
#[path = "pkg_tests.rs"]
mod tests;
