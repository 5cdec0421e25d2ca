//! `mount` (ansible.posix.mount): a mount point in fstab and in the running system.
//!
//! One probe reads the fstab (creating it when missing, even in check mode, as upstream
//! does before anything else), whether the path exists and is a mount point, and the mount
//! table; [`mount_table`](super::mount_table) works out the new fstab text; then the apply
//! half writes the file (in place, as upstream opens it for writing, after an optional
//! backup) and runs `mount`/`umount`. A failed mount under `state: mounted` puts the old
//! fstab back and removes the folders it created (ansible/ansible#59183).
//!
//! States: `mounted` (in fstab and mounted: `mount [-T FSTAB] PATH`, remounted when the
//! entry changed), `unmounted`, `present` (fstab only), `absent` (out of fstab, unmounted,
//! mount point removed), `absent_from_fstab`, `remounted` (always changed) and `ephemeral`
//! (mounted from the task's fields without fstab; fails when another source is mounted
//! there). The result carries upstream's fields: `name`, `src`, `fstype`, `opts`, `dump`,
//! `passno`, `fstab`, `boot` (`yes`/`no`), `backup_file`. Linux only (no Solaris vfstab or
//! BSD remount handling).

use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::{boolish, opt_stringish};
use super::command::yes;
use super::host_path;
use super::mount_table::{self, Entry, Mounted};
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Mount, "mount", Params, run);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Mounted,
    Unmounted,
    Present,
    Absent,
    AbsentFromFstab,
    Remounted,
    Ephemeral,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The mount point (`/mnt/data`).
    #[serde(alias = "name", deserialize_with = "host_path::one")]
    path: String,
    /// What to mount (device, `UUID=...`, `server:/export`); required with `mounted`,
    /// `present` and `ephemeral`.
    #[serde(default, deserialize_with = "host_path::opt")]
    src: Option<String>,
    /// File system type; required with `mounted`, `present` and `ephemeral`.
    #[serde(default)]
    fstype: Option<String>,
    /// Mount options (default `defaults`).
    #[serde(default)]
    opts: Option<String>,
    /// Keep `opts` out of the output (they may hold a password).
    #[serde(default, deserialize_with = "boolish")]
    opts_no_log: bool,
    /// fstab's dump field (default `0`).
    #[serde(default, deserialize_with = "opt_stringish")]
    dump: Option<String>,
    /// fstab's pass number (default `0`).
    #[serde(default, deserialize_with = "opt_stringish")]
    passno: Option<String>,
    /// `mounted`, `unmounted`, `present`, `absent`, `absent_from_fstab`, `remounted` or
    /// `ephemeral`.
    state: State,
    /// The file to use instead of `/etc/fstab` (created when missing).
    #[serde(default)]
    fstab: Option<String>,
    /// Mount at boot; `false` adds `noauto` to the options (ignored when they have it).
    #[serde(default = "yes", deserialize_with = "boolish")]
    boot: bool,
    /// Copy the fstab aside (timestamped) before changing it.
    #[serde(default, deserialize_with = "boolish")]
    backup: bool,
}

/// The task's fields with upstream's defaults filled in (its `args`).
struct Args {
    entry: Entry,
    fstab: String,
    /// `-T FSTAB` for mount when the table is not the system's.
    fstab_flag: String,
    boot: bool,
    warnings: Vec<String>,
}

fn args(p: &Params) -> Result<Args, ModuleError> {
    let required = matches!(p.state, State::Mounted | State::Present | State::Ephemeral);
    let missing: Vec<&str> = [("src", &p.src), ("fstype", &p.fstype)]
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| *k)
        .collect();
    if required && !missing.is_empty() {
        // ansible-core's required_if text.
        return Err(ModuleError::Failed {
            msg: format!(
                "state is {} but all of the following are missing: {}",
                state_name(p.state),
                missing.join(", ")
            ),
        });
    }
    let mut warnings = Vec::new();
    let mut opts = p.opts.clone().unwrap_or_else(|| "defaults".into());
    let has_noauto = opts.split(',').any(|o| o == "noauto");
    if p.boot && has_noauto {
        warnings.push("Ignore the 'boot' due to 'opts' contains 'noauto'.".to_string());
    } else if !p.boot {
        opts.push_str(",noauto");
    }
    let fstab = p.fstab.clone().unwrap_or_else(|| "/etc/fstab".into());
    let fstab_flag = if fstab != "/etc/fstab" {
        format!(" -T {}", sh(&fstab))
    } else {
        String::new()
    };
    Ok(Args {
        entry: Entry {
            src: p.src.clone(),
            name: p.path.clone(),
            fstype: p.fstype.clone(),
            opts,
            dump: p.dump.clone().unwrap_or_else(|| "0".into()),
            passno: p.passno.clone().unwrap_or_else(|| "0".into()),
        },
        fstab,
        fstab_flag,
        boot: p.boot,
        warnings,
    })
}

fn state_name(s: State) -> &'static str {
    match s {
        State::Mounted => "mounted",
        State::Unmounted => "unmounted",
        State::Present => "present",
        State::Absent => "absent",
        State::AbsentFromFstab => "absent_from_fstab",
        State::Remounted => "remounted",
        State::Ephemeral => "ephemeral",
    }
}

/// What the probe saw on the host.
struct Seen {
    fstab: String,
    exists: bool,
    /// Python's `os.path.ismount`: not a link, and on another device than its parent (or
    /// its own parent).
    ismount: bool,
    mounts: std::collections::HashMap<String, Mounted>,
}

impl Seen {
    /// Upstream's `is_bind_mounted` on Linux: the mount table has the path (from `src`).
    fn bind_mounted(&self, path: &str, src: Option<&str>) -> bool {
        match (self.mounts.get(path), src) {
            (Some(m), Some(s)) => m.src == s,
            (m, _) => m.is_some(),
        }
    }

    fn mounted(&self, path: &str, src: Option<&str>) -> bool {
        self.ismount || self.bind_mounted(path, src)
    }

    /// Upstream's `_is_same_mount_src`: `src` is what is mounted at `path`.
    fn same_src(&self, path: &str, src: &str) -> bool {
        if !self.mounted(path, None) {
            return false;
        }
        self.bind_mounted(path, Some(src)) || self.mounts.get(path).is_some_and(|m| m.device == src)
    }
}

const MARK: &str = "kinit-mount-";

async fn probe(ctx: &ModuleCtx<'_>, p: &Params, a: &Args) -> Result<Seen, ModuleError> {
    let path = sh(&p.path);
    let mut script = format!(
        "p={path}\n\
         [ -e \"$p\" ] && echo {MARK}exists\n\
         if [ ! -L \"$p\" ] && s=$(stat -c '%d %i' -- \"$p\" 2>/dev/null) && q=$(stat -c '%d %i' -- \"$p/..\" 2>/dev/null); then\n\
           set -- $s $q; if [ \"$1\" != \"$3\" ] || [ \"$2\" = \"$4\" ]; then echo {MARK}ismount; fi\n\
         fi\n\
         echo {MARK}mountinfo; cat /proc/self/mountinfo; echo {MARK}end\n"
    );
    if p.state != State::Ephemeral {
        let f = sh(&a.fstab);
        script.push_str(&format!(
            "f={f}\n\
             if [ ! -e \"$f\" ]; then mkdir -p -- \"$(dirname -- \"$f\")\" && : >> \"$f\" || exit 3; fi\n\
             echo {MARK}fstab; cat -- \"$f\" || exit 3\n"
        ));
    }
    let out = ctx.run(script).await?;
    if !out.success() {
        return Err(ModuleError::Failed {
            msg: format!("Failed to open {}: {}", a.fstab, out.stderr_str().trim()),
        });
    }
    let text = out.stdout_str();
    let section = |name: &str| -> String {
        let start = format!("{MARK}{name}\n");
        text.split_once(&start)
            .map(|(_, rest)| {
                rest.split_once(&format!("{MARK}end\n"))
                    .map_or(rest, |(s, _)| s)
                    .to_string()
            })
            .unwrap_or_default()
    };
    let head = text
        .split(&format!("{MARK}mountinfo\n"))
        .next()
        .unwrap_or("");
    Ok(Seen {
        exists: head.contains(&format!("{MARK}exists\n")),
        ismount: head.contains(&format!("{MARK}ismount\n")),
        mounts: mount_table::linux_mounts(&section("mountinfo")),
        fstab: section("fstab"),
    })
}

/// The result fields upstream returns (its `args` dict).
fn result(changed: bool, p: &Params, a: &Args, backup_file: &str) -> ModuleResult {
    let e = &a.entry;
    let mut r = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("name", e.name.as_str())
    .with(
        "opts",
        if p.opts_no_log {
            "********"
        } else {
            e.opts.as_str()
        },
    )
    .with("dump", e.dump.as_str())
    .with("passno", e.passno.as_str())
    .with("fstab", a.fstab.as_str())
    .with("boot", if a.boot { "yes" } else { "no" })
    .with("backup_file", backup_file);
    if let Some(s) = &e.src {
        r = r.with("src", s.as_str());
    }
    if let Some(t) = &e.fstype {
        r = r.with("fstype", t.as_str());
    }
    if !a.warnings.is_empty() {
        r = r.with("warnings", a.warnings.clone());
    }
    r
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let a = args(&p)?;
    let seen = probe(ctx, &p, &a).await?;
    let ops = Ops { ctx, p: &p, a: &a };
    let name = p.path.as_str();
    let e = &a.entry;
    let fail = |msg: String| Ok(ModuleResult::failed(msg));
    match p.state {
        State::AbsentFromFstab | State::Absent => {
            let Some(new) = mount_table::unset(&seen.fstab, e) else {
                return Ok(result(false, &p, &a, ""));
            };
            if ctx.check_mode {
                return Ok(ops.diffed(result(true, &p, &a, ""), &seen.fstab, &new));
            }
            let backup = ops.write_fstab(&new, p.backup).await?;
            if p.state == State::Absent {
                if seen.mounted(name, None)
                    && let Err(msg) = ops.sh(&format!("umount {}", sh(name))).await?
                {
                    return fail(format!("Error unmounting {name}: {msg}"));
                }
                if seen.exists
                    && let Err(msg) = ops.sh(&format!("rmdir -- {}", sh(name))).await?
                {
                    return fail(format!("Error rmdir {name}: {msg}"));
                }
            }
            Ok(ops.diffed(result(true, &p, &a, &backup), &seen.fstab, &new))
        }
        State::Unmounted => {
            let changed = seen.mounted(name, None);
            if changed
                && !ctx.check_mode
                && let Err(msg) = ops.sh(&format!("umount {}", sh(name))).await?
            {
                return fail(format!("Error unmounting {name}: {msg}"));
            }
            Ok(result(changed, &p, &a, ""))
        }
        State::Present => {
            let Some(new) = mount_table::set(&seen.fstab, e) else {
                return Ok(result(false, &p, &a, ""));
            };
            let backup = if ctx.check_mode {
                String::new()
            } else {
                ops.write_fstab(&new, p.backup).await?
            };
            Ok(ops.diffed(result(true, &p, &a, &backup), &seen.fstab, &new))
        }
        State::Remounted => {
            if !ctx.check_mode
                && let Err(msg) = ops.remount().await?
            {
                return fail(format!("Error remounting {name}: {msg}"));
            }
            Ok(result(true, &p, &a, ""))
        }
        State::Mounted | State::Ephemeral => ops.mounted(&seen).await,
    }
}

/// The apply half's commands.
struct Ops<'a> {
    ctx: &'a ModuleCtx<'a>,
    p: &'a Params,
    a: &'a Args,
}

impl Ops<'_> {
    /// Run `script`: `Err(stdout + stderr)` when it failed, as upstream reports it.
    async fn sh(&self, script: &str) -> Result<Result<(), String>, ModuleError> {
        let out = self.ctx.run(script.to_string()).await?;
        Ok(if out.success() {
            Ok(())
        } else {
            Err(format!("{}{}", out.stdout_str(), out.stderr_str()))
        })
    }

    fn diffed(&self, mut r: ModuleResult, before: &str, after: &str) -> ModuleResult {
        if self.ctx.diff {
            r.diff = Some(Diff {
                path: Some(self.a.fstab.clone()),
                before: before.into(),
                after: after.into(),
            });
        }
        r
    }

    /// Write the fstab in place (after a timestamped copy with `backup`); the backup's path.
    async fn write_fstab(&self, text: &str, backup: bool) -> Result<String, ModuleError> {
        let f = sh(&self.a.fstab);
        let script = if backup {
            format!(
                "b={f}.$$.$(date +%Y-%m-%d@%H:%M:%S)~ && cp -p -- {f} \"$b\" && cat > {f} && printf %s \"$b\""
            )
        } else {
            format!("cat > {f}")
        };
        let out = self
            .ctx
            .run_with_stdin(script, Some(text.as_bytes().to_vec()))
            .await?;
        if !out.success() {
            return Err(ModuleError::Failed {
                msg: format!(
                    "cannot write `{}`: {}",
                    self.a.fstab,
                    out.stderr_str().trim()
                ),
            });
        }
        Ok(out.stdout_str())
    }

    /// `-t FSTYPE [-o OPTS] SRC`: an ephemeral mount's fields on the command line.
    fn ephemeral_args(&self) -> String {
        let e = &self.a.entry;
        let mut s = format!(" -t {}", sh(e.fstype.as_deref().unwrap_or_default()));
        if e.opts != "defaults" {
            s.push_str(&format!(" -o {}", sh(&e.opts)));
        }
        s + &format!(" {}", sh(e.src.as_deref().unwrap_or_default()))
    }

    /// The table or the task's fields that `mount` reads.
    fn source_args(&self) -> String {
        if self.p.state == State::Ephemeral {
            self.ephemeral_args()
        } else {
            self.a.fstab_flag.clone()
        }
    }

    async fn mount(&self) -> Result<Result<(), String>, ModuleError> {
        let cmd = format!("mount{} {}", self.source_args(), sh(&self.p.path));
        self.sh(&cmd).await
    }

    /// `mount -o remount`, falling back to unmount + mount, as upstream's `remount`.
    async fn remount(&self) -> Result<Result<(), String>, ModuleError> {
        let opts = &self.a.entry.opts;
        let with_opts = self.p.state == State::Remounted && opts != "defaults";
        let o = if with_opts {
            sh(&format!("remount,{opts}"))
        } else {
            "remount".into()
        };
        let cmd = format!("mount -o {o}{} {}", self.source_args(), sh(&self.p.path));
        if self.sh(&cmd).await?.is_ok() {
            return Ok(Ok(()));
        }
        if with_opts {
            return Err(ModuleError::Failed {
                msg: "Options were specified with remounted, but the remount command failed. \
                      Failing in order to prevent an unexpected mount result. Try replacing \
                      this command with a \"state: unmounted\" followed by a \"state: mounted\" \
                      using the full desired mount options instead."
                    .into(),
            });
        }
        if let Err(msg) = self.sh(&format!("umount {}", sh(&self.p.path))).await? {
            return Ok(Err(msg));
        }
        self.mount().await
    }

    /// `mounted` and `ephemeral`: create the mount point, bring fstab up to date (not for
    /// `ephemeral`), then mount, or remount what changed.
    async fn mounted(&self, seen: &Seen) -> Result<ModuleResult, ModuleError> {
        let (p, a, ctx) = (self.p, self.a, self.ctx);
        let name = p.path.as_str();
        let mut created = Vec::new();
        if !seen.exists && !ctx.check_mode {
            created = match self.make_dirs().await? {
                Ok(c) => c,
                Err(msg) => {
                    return Ok(ModuleResult::failed(format!(
                        "Error making dir {name}: {msg}"
                    )));
                }
            };
        }
        let new = match p.state {
            State::Ephemeral => None,
            _ => mount_table::set(&seen.fstab, &a.entry),
        };
        let mut changed = new.is_some();
        let mut backup = String::new();
        if let (Some(text), false) = (&new, ctx.check_mode) {
            backup = self.write_fstab(text, p.backup).await?;
        }
        let src = a.entry.src.as_deref();
        let mut res = Ok(());
        if seen.mounted(name, src) {
            if changed && !ctx.check_mode {
                res = self.remount().await?;
            }
            if p.state == State::Ephemeral {
                if !seen.same_src(name, src.unwrap_or_default()) {
                    return Ok(ModuleResult::failed(
                        "Ephemeral mount point is already mounted with a different source than \
                         the specified one. Failing in order to prevent an unwanted unmount or \
                         override operation. Try replacing this command with a \"state: \
                         unmounted\" followed by a \"state: ephemeral\", or use a different \
                         destination path.",
                    ));
                }
                changed = true;
                if !ctx.check_mode {
                    res = self.remount().await?;
                }
            }
        } else {
            changed = true;
            if !ctx.check_mode {
                res = self.mount().await?;
            }
        }
        if let Err(msg) = res {
            // A broken entry could stop the next boot: put the old table back
            // (ansible/ansible#59183), and remove the folders made for it.
            if new.is_some() {
                let _ = self.write_fstab(&seen.fstab, false).await;
            }
            for d in created.iter().rev() {
                let _ = ctx.run(format!("rmdir -- {}", sh(d))).await;
            }
            return Ok(ModuleResult::failed(format!(
                "Error mounting {name}: {msg}"
            )));
        }
        let r = result(changed, p, a, &backup);
        Ok(match &new {
            Some(text) => self.diffed(r, &seen.fstab, text),
            None => r,
        })
    }

    /// `mkdir` each missing folder down to the mount point; the ones it made, outermost first.
    async fn make_dirs(&self) -> Result<Result<Vec<String>, String>, ModuleError> {
        let path = &self.p.path;
        let absolute = path.starts_with('/');
        let mut cur = String::new();
        let mut dirs = Vec::new();
        for part in path.trim_matches('/').split('/').filter(|s| !s.is_empty()) {
            cur = if cur.is_empty() && !absolute {
                part.to_string()
            } else {
                format!("{cur}/{part}")
            };
            dirs.push(sh(&cur));
        }
        let script = format!(
            "for d in {}; do if [ ! -e \"$d\" ]; then mkdir -- \"$d\" || exit 1; printf '%s\\n' \"$d\"; fi; done",
            dirs.join(" ")
        );
        let out = self.ctx.run(script).await?;
        Ok(if out.success() {
            Ok(out.stdout_str().lines().map(str::to_string).collect())
        } else {
            Err(out.stderr_str().trim().to_string())
        })
    }
}
