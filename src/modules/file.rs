//! `file`: the state of one path on the host: a file's or directory's attributes, a folder
//! created, a path removed, a file touched, a symbolic or hard link.
//!
//! One probe (the path with and without following links, whether it is the same file as
//! `src`, and for `recurse` whether anything below drifts), then at most one command.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::transport::quote::sh;

use super::args::{boolish, opt_boolish};
use super::command::yes;
use super::file_times::{TimeSpec, Times};
use super::host_path;
use super::mode::{Mode, opt_mode};
use super::posix::{self, Attrs, Ids, Kind, RemoteStat, StatReq};
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(File, "file", Params, run);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    File,
    Directory,
    Absent,
    Touch,
    Link,
    Hard,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The path on the host.
    #[serde(alias = "dest", alias = "name", deserialize_with = "host_path::one")]
    path: String,
    /// What the path should be (default: `file` if it exists as one, else as it is).
    state: Option<State>,
    /// Target of a `link`/`hard` link.
    #[serde(default, deserialize_with = "host_path::opt")]
    src: Option<String>,
    /// Permissions (`"0755"`, `u=rwx,g=rx,o=rx`).
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Owner (name or uid).
    owner: Option<String>,
    /// Group (name or gid).
    group: Option<String>,
    /// With `state: directory`, apply owner/group/mode to everything below too.
    #[serde(default, deserialize_with = "boolish")]
    recurse: bool,
    /// Replace an existing non-link path when creating a link.
    #[serde(default, deserialize_with = "boolish")]
    force: bool,
    /// Act on a link's target rather than the link itself (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    follow: bool,
    /// `now`, `preserve` or a time in `access_time_format` (default: `now` for
    /// `state: touch`, else `preserve`).
    access_time: Option<String>,
    /// The format of `access_time`, in Python's `strptime` directives (default
    /// `%Y%m%d%H%M.%S`).
    access_time_format: Option<String>,
    /// As `access_time`, for the modification time.
    modification_time: Option<String>,
    /// The format of `modification_time` (default `%Y%m%d%H%M.%S`).
    modification_time_format: Option<String>,
    /// Linux file attributes (`chattr`'s letters): `+A` adds, `-A` removes, `A` sets
    /// exactly these.
    #[serde(alias = "attr")]
    attributes: Option<String>,
    /// SELinux context parts (`_default`: the policy's for the path); ignored on a host
    /// without SELinux, as ansible-core ignores them.
    seuser: Option<String>,
    serole: Option<String>,
    setype: Option<String>,
    selevel: Option<String>,
    /// Internal (ansible-core's action plugins send it): only report whether the file looks
    /// binary (`appears_binary`), changing nothing.
    #[serde(rename = "_diff_peek", default, deserialize_with = "opt_boolish")]
    diff_peek: Option<bool>,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    // A check run warns of an owner or group the host does not know yet (ansible-core's
    // `check_owner_exists`): an earlier task of the play may be what creates it.
    let warnings = if ctx.check_mode && p.state != Some(State::Absent) {
        unknown_ids(ctx, p.owner.as_deref(), p.group.as_deref()).await?
    } else {
        Vec::new()
    };
    let (owner, group) = (p.owner.clone(), p.group.clone());
    let mut r = ensure(ctx, p).await?;
    // An existing path whose owner or group name is unknown cannot be compared with it, so
    // the check fails as the real run would (ansible-core's `set_owner_if_different`).
    if !r.failed && r.data.contains_key("uid") {
        let unknown = |tag: &str, name: &Option<String>| {
            name.as_ref()
                .filter(|n| n.parse::<u32>().is_err())
                .filter(|n| warnings.iter().any(|w| w.contains(&format!("{tag} {n}."))))
                .cloned()
        };
        if let Some(o) = unknown("user", &owner) {
            r = ModuleResult::failed(format!("chown failed: failed to look up user {o}"))
                .with("path", r.data.get("path").or(r.data.get("dest")).cloned());
        } else if let Some(g) = unknown("group", &group) {
            r = ModuleResult::failed(format!("chgrp failed: failed to look up group {g}"))
                .with("path", r.data.get("path").or(r.data.get("dest")).cloned());
        }
    }
    if !warnings.is_empty() {
        r = r.with("warnings", warnings);
    }
    Ok(r)
}

/// Warnings for an owner or group (name or id) the host cannot look up.
async fn unknown_ids(
    ctx: &ModuleCtx<'_>,
    owner: Option<&str>,
    group: Option<&str>,
) -> Result<Vec<String>, ModuleError> {
    let asked: Vec<(&str, &str)> = [("passwd", owner), ("group", group)]
        .into_iter()
        .filter_map(|(db, v)| v.map(|v| (db, v)))
        .collect();
    if asked.is_empty() {
        return Ok(Vec::new());
    }
    let script: String = asked
        .iter()
        .map(|(db, v)| {
            format!(
                "getent {db} {} >/dev/null || echo kinit-unknown-{db}\n",
                sh(v)
            )
        })
        .collect();
    let out = ctx.run(script).await?;
    let text = out.stdout_str();
    Ok(asked
        .iter()
        .filter(|(db, _)| text.contains(&format!("kinit-unknown-{db}")))
        .map(|(db, v)| {
            let (what, verb) = if *db == "passwd" {
                ("user", "Create user")
            } else {
                ("group", "Create group")
            };
            let name = match v.parse::<u32>() {
                Ok(id) => format!(
                    "{what} with {} {id}",
                    if *db == "passwd" { "uid" } else { "gid" }
                ),
                Err(_) => format!("{what} {v}"),
            };
            format!("failed to look up {name}. {verb} up to this point in real play")
        })
        .collect())
}

async fn ensure(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    // `path` is a `path` upstream: `~` is the remote user's home.
    // Upstream's first check (`modules/file.py` `check_state`-time validation).
    if p.src.is_some() && !matches!(p.state, Some(State::Link | State::Hard)) {
        return Ok(
            ModuleResult::failed("src option requires state to be 'link' or 'hard'")
                .with("path", p.path.as_str()),
        );
    }
    // Upstream's short-circuit (`execute_diff_peek`): a NUL byte in the first 8 KiB means
    // binary; a file that cannot be read counts as text.
    if p.diff_peek.is_some() {
        let out = ctx
            .run(format!(
                "head -c 8192 {} 2>/dev/null | tr -dc '\\000' | wc -c",
                sh(&p.path)
            ))
            .await?;
        let nuls: u64 = out.stdout_str().trim().parse().unwrap_or(0);
        return Ok(ModuleResult::ok()
            .with("path", p.path.as_str())
            .with("appears_binary", nuls > 0));
    }
    let attrs = Attrs {
        mode: p.mode.clone(),
        owner: p.owner.clone(),
        group: p.group.clone(),
    };
    let mut probe = posix::stat_script(&[
        StatReq {
            path: &p.path,
            follow: false,
            checksum: None,
        },
        StatReq {
            path: &p.path,
            follow: true,
            checksum: None,
        },
    ]);
    if let Some(src) = &p.src {
        probe.push_str(&format!(
            "[ {} -ef {} ] && echo kinit-same\n",
            sh(&p.path),
            sh(src)
        ));
    }
    if p.recurse {
        probe.push_str(&attrs.drift_script(&p.path, p.follow));
    }
    // A link never replaces a folder that holds anything, even with `force`.
    if matches!(p.state, Some(State::Link | State::Hard)) {
        probe.push_str(&format!(
            "[ -d {d} ] && [ ! -L {d} ] && [ -n \"$(ls -A -- {d} 2>/dev/null)\" ] && echo kinit-dir-full\n",
            d = sh(&p.path)
        ));
    }
    // A hard link's source must exist, and a file in its place is refused by how many names
    // it has (ansible-core's `get_state` calls a file with more than one `hard`).
    if let (Some(State::Hard), Some(src)) = (p.state, &p.src) {
        probe.push_str(&format!("[ -e {} ] || echo kinit-hsrc-missing\n", sh(src)));
    }
    if matches!(p.state, None | Some(State::Hard)) {
        probe.push_str(&format!(
            "printf 'kinit-nlink:%s\\n' \"$(stat -c %h -- {} 2>/dev/null)\"\n",
            sh(&p.path)
        ));
    }
    // A symlink's source must exist unless `force` (upstream's `ensure_symlink`): relative to
    // the link's folder, or to the path itself when that is a real directory.
    if let (Some(State::Link), Some(src), false) = (p.state, &p.src, p.force) {
        let in_dir = |dir: &str| {
            let joined = Path::new(dir).join(src);
            sh(&joined.to_string_lossy())
        };
        let parent = Path::new(&p.path)
            .parent()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        probe.push_str(&format!(
            "if [ -d {path} ] && [ ! -L {path} ]; then _a={own}; else _a={up}; fi\n\
             [ -e \"$_a\" ] || printf 'kinit-src-missing:%s\\n' \"$_a\"\n",
            path = sh(&p.path),
            own = in_dir(&p.path),
            up = in_dir(&parent),
        ));
    }
    // The times asked (none for `absent`), and for a diff the ids an owner or group name
    // stands for, as ansible-core's diff gives numeric ids.
    let default_now = p.state == Some(State::Touch);
    let times = Times {
        atime: TimeSpec::parse(
            "access_time",
            p.access_time.as_deref(),
            p.access_time_format.as_deref(),
            default_now,
        )?,
        mtime: TimeSpec::parse(
            "modification_time",
            p.modification_time.as_deref(),
            p.modification_time_format.as_deref(),
            default_now,
        )?,
    };
    if p.state != Some(State::Absent) {
        probe.push_str(&times.probe(&p.path));
        probe.push_str(&posix::path_info_script(&p.path));
    }
    // What a folder to remove holds, for the diff (ansible-core's `initial_diff` walks it).
    if p.state == Some(State::Absent) && ctx.diff {
        probe.push_str(&format!(
            "if [ -d {d} ] && [ ! -L {d} ]; then \
             find {d} -mindepth 1 -type d | sed 's/^/kinit-pd:/'; \
             find {d} -mindepth 1 ! -type d | sed 's/^/kinit-pf:/'; fi\n",
            d = sh(&p.path)
        ));
    }
    if let Some(a) = p
        .attributes
        .as_deref()
        .filter(|_| p.state != Some(State::Absent))
    {
        probe.push_str(&attributes_probe(&p.path, a));
    }
    let secontext = [&p.seuser, &p.serole, &p.setype, &p.selevel].map(Option::as_deref);
    if secontext.iter().any(Option::is_some) && p.state != Some(State::Absent) {
        probe.push_str(&selinux_probe(&p.path));
    }
    if ctx.diff {
        if let Some(o) = p.owner.as_ref().filter(|o| o.parse::<u32>().is_err()) {
            probe.push_str(&format!(
                "printf 'kinit-uid:%s\\n' \"$(id -u -- {} 2>/dev/null)\"\n",
                sh(o)
            ));
        }
        if let Some(g) = p.group.as_ref().filter(|g| g.parse::<u32>().is_err()) {
            probe.push_str(&format!(
                "printf 'kinit-gid:%s\\n' \"$(getent group {} 2>/dev/null | cut -d: -f3)\"\n",
                sh(g)
            ));
        }
    }
    probe.push_str("exit 0\n");
    let out = ctx.run(probe).await?;
    let (ids, stats, rest) =
        posix::parse_probe(&out.stdout, 2).ok_or_else(|| ModuleError::Failed {
            msg: format!("cannot inspect `{}`: {}", p.path, out.stderr_str().trim()),
        })?;
    let rest = String::from_utf8_lossy(&rest);
    let (lstat, fstat) = (&stats[0], &stats[1]);
    let same_as_src = rest.contains("kinit-same");
    if let Some(absrc) = rest
        .lines()
        .find_map(|l| l.strip_prefix("kinit-src-missing:"))
    {
        return Ok(ModuleResult::failed(format!(
            "src file does not exist, use 'force=yes' if you really want to create the link: \
             {absrc}"
        ))
        .with("path", p.path.as_str())
        .with("src", p.src.as_deref()));
    }
    // A hard link asked at a folder goes inside it, named as its source (ansible-core's
    // `additional_parameter_handling`); the path is looked at again there.
    if p.state == Some(State::Hard)
        && fstat.kind == Kind::Directory
        && let Some(name) = p.src.as_deref().and_then(|s| Path::new(s).file_name())
    {
        let inner = posix::join(&p.path, &name.to_string_lossy());
        return Box::pin(ensure(ctx, Params { path: inner, ..p })).await;
    }
    let drift = p.recurse && attrs.drifted(&rest);
    let stat = if p.follow { fstat } else { lstat };

    // How many names the path has (for `hard`, and the state a path without one has).
    let names: u64 = rest
        .lines()
        .find_map(|l| l.strip_prefix("kinit-nlink:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(1);
    let state = p.state.unwrap_or(match lstat.kind {
        Kind::Absent => State::File,
        Kind::Directory => State::Directory,
        Kind::Link if p.follow && fstat.kind == Kind::Directory => State::Directory,
        Kind::Link => State::Link,
        // ansible-core's `get_state` calls a file with more than one name `hard`.
        Kind::File if names > 1 => State::Hard,
        _ => State::File,
    });
    let path = p.path.as_str();
    let mut script = Vec::<String>::new();
    let fail = |m: String| Ok(ModuleResult::failed(m).with("path", path));
    // The stat the attributes are compared with, for the diff.
    let mut attr_stat: Option<RemoteStat> = None;
    match state {
        State::Absent => {
            if lstat.exists() {
                script.push(format!("rm -rf -- {}", sh(path)));
            }
        }
        // ansible-core's words (`ensure_file_attributes`), with the state it found.
        State::File => match stat.kind {
            Kind::Absent | Kind::Directory => {
                let was = kind_name(stat.kind);
                return Ok(ModuleResult::failed(format!(
                    "file ({path}) is {was}, cannot continue"
                ))
                .with("path", path)
                .with("state", was));
            }
            _ => attr_stat = Some(stat.clone()),
        },
        State::Directory => match stat.kind {
            Kind::Absent => {
                script.push(format!("mkdir -p -- {}", sh(path)));
                attr_stat = Some(fresh(Kind::Directory, 0o755));
            }
            Kind::Directory if p.recurse && drift => {
                script.push(attrs.recursive_script(path, p.follow));
                // The folder itself is compared for the diff; the fix above covers it.
                let own = attrs.fix_script(path, stat, false);
                if !own.is_empty() {
                    attr_stat = Some(stat.clone());
                }
            }
            Kind::Directory => attr_stat = Some(stat.clone()),
            _ => {
                let was = kind_name(stat.kind);
                return fail(format!("{path} already exists as a {was}"));
            }
        },
        State::Touch => {
            if !stat.exists() {
                script.push(format!(": > {}", sh(path)));
            }
            attr_stat = Some(if stat.exists() {
                stat.clone()
            } else {
                fresh(Kind::File, 0o644)
            });
        }
        State::Link | State::Hard => {
            // Without `src`, an existing link keeps its target and only its attributes are
            // managed (upstream's `ensure_symlink`); a new one needs a source.
            let kept = (state == State::Link && lstat.kind == Kind::Link)
                .then(|| lstat.link_target.clone())
                .flatten();
            // A file that already has more names is a hard link to manage as it is.
            if state == State::Hard && p.src.is_none() && lstat.kind == Kind::File && names > 1 {
                attr_stat = Some(lstat.clone());
            } else {
                let Some(src) = p.src.as_ref().or(kept.as_ref()) else {
                    let what = if state == State::Link {
                        "symlinks"
                    } else {
                        "hardlinks"
                    };
                    return fail(format!("src is required for creating new {what}"));
                };
                let correct = match state {
                    State::Link => {
                        lstat.kind == Kind::Link && lstat.link_target.as_ref() == Some(src)
                    }
                    _ => same_as_src,
                };
                if state == State::Hard {
                    // ansible-core's `ensure_hardlink` refusals, in its words.
                    let refuse = |m: &str| {
                        Ok(ModuleResult::failed(m)
                            .with("dest", path)
                            .with("src", src.as_str()))
                    };
                    if rest.contains("kinit-hsrc-missing") {
                        return refuse("src does not exist");
                    }
                    match lstat.kind {
                        _ if correct || p.force => {}
                        Kind::File | Kind::Other if names > 1 => {
                            return refuse(
                                "Cannot link, different hard link exists at destination",
                            );
                        }
                        Kind::File | Kind::Other => {
                            return refuse("Cannot link, file exists at destination");
                        }
                        Kind::Directory => {
                            return refuse(
                                "Cannot link: different hard link exists at destination",
                            );
                        }
                        Kind::Absent | Kind::Link => {}
                    }
                }
                if !correct {
                    let replace = lstat.exists() && (lstat.kind == Kind::Link || p.force);
                    if lstat.kind == Kind::Directory && rest.contains("kinit-dir-full") {
                        return fail(format!(
                            "the directory {path} is not empty, refusing to convert it"
                        ));
                    }
                    if lstat.exists() && !replace {
                        // Upstream's words, with its name for the path's state.
                        let was = kind_name(lstat.kind);
                        let what = if state == State::Link {
                            "symlink"
                        } else {
                            "hard link"
                        };
                        return fail(format!(
                            "refusing to convert from {was} to {what} for {path}"
                        ));
                    }
                    if replace {
                        script.push(format!("rm -rf -- {}", sh(path)));
                    }
                    let flag = if state == State::Link { "-s " } else { "" };
                    script.push(format!("ln {flag}-- {} {}", sh(src), sh(path)));
                    // With `follow` (the default) a new link's mode is set on its target.
                    let kind = if p.follow && state == State::Link {
                        Kind::File
                    } else {
                        Kind::Link
                    };
                    attr_stat = Some(fresh(kind, 0o777));
                } else {
                    // `follow` manages the target's attributes (chmod/chown follow the link).
                    attr_stat = Some(if p.follow && fstat.exists() {
                        fstat.clone()
                    } else {
                        lstat.clone()
                    });
                }
            }
        }
    }
    let mut attr_changes = Vec::new();
    if let Some(against) = &attr_stat {
        if !(p.recurse && drift && state == State::Directory) {
            script.push(attrs.fix_script(path, against, false));
        }
        attr_changes = attr_diff(&attrs, against, ids, &rest);
        if let Some((cmd, before, after)) =
            p.attributes.as_deref().and_then(|a| chattr(path, a, &rest))
        {
            script.push(cmd);
            attr_changes.push(("attributes", before, after.into()));
        }
        if let Some((cmd, before, after)) = chcon(path, secontext, &rest) {
            script.push(cmd);
            attr_changes.push(("secontext", before, after));
        }
    }
    // The times, after the path exists and has its attributes (ansible-core's order).
    let time_plan = if state == State::Absent {
        Default::default()
    } else {
        times.plan(path, &times.read(&rest))?
    };
    script.extend(time_plan.command.clone());
    script.retain(|s| !s.is_empty());
    let changed = !script.is_empty();
    // Ansible reports what the path is afterwards: a touched file is a `file`.
    let state_name = match state {
        State::Touch if stat.kind == Kind::Directory => "directory".to_string(),
        State::Touch => "file".to_string(),
        other => format!("{other:?}").to_lowercase(),
    };
    // ansible-core's result: `touch` and links name the path `dest` (links add `src`); the
    // state is what the path is afterwards (`add_path_info`), absent when it was not created.
    let path_key = match state {
        State::Touch | State::Link | State::Hard => "dest",
        _ => "path",
    };
    let mut r = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with(path_key, path);
    if matches!(state, State::Link | State::Hard) {
        r = r.with("src", p.src.as_deref());
    }
    if state == State::Absent {
        r = r.with("state", "absent");
    }
    // A check run that would create the path stops before attributes and times, as
    // ansible-core's does (a touched file then has no diff at all).
    let creates = !stat.exists() && matches!(state, State::Touch | State::Directory);
    if ctx.diff && !(ctx.check_mode && creates && state == State::Touch) {
        let wanted = match state {
            State::Touch => "touch".to_string(),
            _ => state_name.clone(),
        };
        let mut d = state_diff(path, kind_name(lstat.kind), &wanted, lstat, &p);
        if state == State::Absent && lstat.kind == Kind::Directory {
            let listed = |tag: &str| -> Vec<Value> {
                rest.lines()
                    .filter_map(|l| l.strip_prefix(tag))
                    .map(Value::from)
                    .collect()
            };
            if let Value::Object(b) = &mut d.before {
                b.insert(
                    "path_content".into(),
                    serde_json::json!({
                        "directories": listed("kinit-pd:"),
                        "files": listed("kinit-pf:"),
                    }),
                );
            }
        }
        if !(ctx.check_mode && creates) {
            for (key, before, after) in attr_changes {
                diff_entry(&mut d, key, before, after);
            }
            for (key, before, after) in time_plan.diff {
                diff_entry(&mut d, key, before.into(), after.into());
            }
        }
        r.diff = Some(d);
    }
    let mut info = String::from(rest.as_ref());
    if changed && !ctx.check_mode {
        // A file `touch` created is removed again when the rest fails (ansible-core's
        // `execute_touch`), so a failed task leaves nothing behind.
        let undo = if state == State::Touch && !stat.exists() {
            format!("rm -f -- {}; ", sh(path))
        } else {
            String::new()
        };
        let out = ctx
            .run(format!(
                "{} || {{ _rc=$?; {undo}exit $_rc; }}\n{}",
                script.join(" && "),
                posix::path_info_script(path)
            ))
            .await?;
        if !out.success() {
            return fail(out.stderr_str().trim().to_string());
        }
        info = out.stdout_str();
    }
    // What the path is now, as ansible-core's `add_path_info` adds it (not for `absent`).
    if state != State::Absent
        && let Some(keys) = posix::parse_path_info(&info)
    {
        r.data.extend(keys);
    }
    Ok(r)
}

/// Probe lines for `attributes`: the path's current flags (`lsattr -d`, dashes dropped;
/// nothing when it cannot tell) and whether `chattr` exists.
fn attributes_probe(path: &str, wanted: &str) -> String {
    if wanted.trim_start_matches(['+', '-']).is_empty() {
        return String::new();
    }
    format!(
        "_la=$(lsattr -d -- {} 2>/dev/null); _lr=$?\n\
         printf 'kinit-lsattr:%s|%s|%s\\n' \"$_lr\" \"$(printf %s \"$_la\" | cut -d' ' -f1 | tr -d -)\" \
         \"$(command -v chattr)\"\n",
        sh(path)
    )
}

/// The `chattr` for `attributes`, with the diff's before and after, as ansible-core's
/// `set_attributes_if_different` decides: `-X` always runs, `+X`/`X` when the flags read are
/// not exactly `X`; nothing without `chattr` on the host.
fn chattr(path: &str, wanted: &str, probe_rest: &str) -> Option<(String, Value, String)> {
    let (op, flags) = match wanted.chars().next() {
        Some(c @ ('+' | '-')) => (c, &wanted[1..]),
        _ => ('=', wanted),
    };
    let mut f = probe_rest
        .lines()
        .find_map(|l| l.strip_prefix("kinit-lsattr:"))?
        .splitn(3, '|');
    let (read, existing, tool) = (f.next()? == "0", f.next()?, f.next()?);
    if flags.is_empty() || tool.trim().is_empty() || (existing == flags && op != '-') {
        return None;
    }
    let after = format!("{op}{flags}");
    // ansible-core gives `None` before when `lsattr` could not read the path.
    let before = if read {
        Value::from(existing)
    } else {
        Value::Null
    };
    Some((
        format!("chattr {} -- {}", sh(&after), sh(path)),
        before,
        after,
    ))
}

/// Probe lines for the SELinux context parts: the path's context and the policy's default
/// for it, only where SELinux is enabled (its file system mounted, as libselinux's
/// `is_selinux_enabled` tells).
fn selinux_probe(path: &str) -> String {
    format!(
        "[ -e /sys/fs/selinux/enforce ] && printf 'kinit-se:%s|%s\\n' \
         \"$(stat -c %C -- {p} 2>/dev/null)\" \"$(matchpathcon -n -- {p} 2>/dev/null)\"\n",
        p = sh(path)
    )
}

/// The `chcon` for the SELinux context parts (user, role, type, level), with the diff's
/// before and after, as ansible-core's `set_context_if_different`: each part given and
/// different from the path's is set (`_default` is the policy's part), `chcon -h` as its
/// `lsetfilecon` does not follow a link; nothing where SELinux is off.
fn chcon(
    path: &str,
    wanted: [Option<&str>; 4],
    probe_rest: &str,
) -> Option<(String, Value, Value)> {
    let (current, default) = probe_rest
        .lines()
        .find_map(|l| l.strip_prefix("kinit-se:"))?
        .split_once('|')?;
    let parts = |c: &str| -> Vec<String> { c.trim().splitn(4, ':').map(String::from).collect() };
    let current = parts(current);
    let default = parts(default);
    if current.len() < 3 {
        return None;
    }
    let mut after = current.clone();
    let mut flags = String::new();
    for (i, (want, flag)) in wanted.iter().zip(["-u", "-r", "-t", "-l"]).enumerate() {
        let Some(want) = want else { continue };
        let want = match *want {
            "_default" => match default.get(i) {
                Some(d) => d.as_str(),
                None => continue,
            },
            w => w,
        };
        if current.get(i).map(String::as_str) != Some(want) {
            flags.push_str(&format!("{flag} {} ", sh(want)));
            if i < after.len() {
                after[i] = want.to_string();
            } else {
                after.push(want.to_string());
            }
        }
    }
    if flags.is_empty() {
        return None;
    }
    Some((
        format!("chcon -h {flags}-- {}", sh(path)),
        Value::from(current),
        Value::from(after),
    ))
}

/// Add `key` to both sides of a `file` diff.
fn diff_entry(d: &mut Diff, key: &str, before: Value, after: Value) {
    if let (Value::Object(b), Value::Object(a)) = (&mut d.before, &mut d.after) {
        b.insert(key.to_string(), before);
        a.insert(key.to_string(), after);
    }
}

/// The owner, group and mode that change, as ansible-core's `set_*_if_different` put them in
/// the diff: ids as numbers (a name's id as the probe found it), modes as `"0644"`.
fn attr_diff(
    attrs: &Attrs,
    stat: &RemoteStat,
    ids: Ids,
    probe_rest: &str,
) -> Vec<(&'static str, Value, Value)> {
    // A path the task creates belongs to the user it runs as.
    let (uid, gid) = if stat.uid == u32::MAX {
        (ids.uid, ids.gid)
    } else {
        (stat.uid, stat.gid)
    };
    let probed_id = |tag: &str| {
        probe_rest
            .lines()
            .find_map(|l| l.strip_prefix(tag))
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    let mut out = Vec::new();
    for (key, want, have, tag) in [
        ("owner", &attrs.owner, uid, "kinit-uid:"),
        ("group", &attrs.group, gid, "kinit-gid:"),
    ] {
        if let Some(w) = want {
            let id = w.parse::<u32>().ok().or_else(|| probed_id(tag));
            if id != Some(have) {
                let after = id
                    .map(Value::from)
                    .unwrap_or_else(|| Value::from(w.as_str()));
                out.push((key, Value::from(have), after));
            }
        }
    }
    if stat.kind != Kind::Link
        && let Some(want) = attrs
            .mode
            .as_ref()
            .and_then(|m| m.resolve(stat.mode, stat.kind == Kind::Directory))
        && want != stat.mode & 0o7777
    {
        let octal = |m: u32| Value::from(format!("0{:03o}", m & 0o7777));
        out.push(("mode", octal(stat.mode), octal(want)));
    }
    out
}

/// The stat of a path kinit has just created: its owner and exact mode (umask) are unknown,
/// so every requested attribute is applied (the extra bit makes any wanted mode differ).
fn fresh(kind: Kind, mode: u32) -> RemoteStat {
    RemoteStat {
        kind,
        mode: mode | 0o10000,
        uid: u32::MAX,
        gid: u32::MAX,
        size: 0,
        mtime: 0,
        owner: String::new(),
        group: String::new(),
        readable: true,
        writeable: true,
        executable: false,
        checksum: None,
        link_target: None,
    }
}

/// ansible-core's `file` diff (`initial_diff` in `modules/file.py`): mappings holding the path,
/// its state before and after when they differ, and a link's old and new target.
fn state_diff(path: &str, before: &str, after: &str, lstat: &RemoteStat, p: &Params) -> Diff {
    let mut b = serde_json::Map::from_iter([("path".to_string(), Value::from(path))]);
    let mut a = b.clone();
    if before != after {
        b.insert("state".into(), before.into());
        a.insert("state".into(), after.into());
    }
    if let (Kind::Link, Some(old), Some(src)) = (lstat.kind, &lstat.link_target, &p.src)
        && old != src
    {
        b.insert("src".into(), old.as_str().into());
        a.insert("src".into(), src.as_str().into());
    }
    Diff {
        path: None,
        before: Value::Object(b),
        after: Value::Object(a),
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Absent => "absent",
        Kind::File => "file",
        Kind::Directory => "directory",
        Kind::Link => "link",
        Kind::Other => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selinux_parts_change_as_set_context_if_different_decides() {
        let probe = "kinit-se:system_u:object_r:etc_t:s0|system_u:object_r:httpd_config_t:s0\n";
        // Only the parts given and different are set; the diff lists the whole context.
        let (cmd, before, after) = chcon(
            "/etc/x",
            [None, None, Some("httpd_sys_content_t"), None],
            probe,
        )
        .unwrap();
        assert_eq!(cmd, "chcon -h -t httpd_sys_content_t -- /etc/x");
        assert_eq!(before, json!(["system_u", "object_r", "etc_t", "s0"]));
        assert_eq!(
            after,
            json!(["system_u", "object_r", "httpd_sys_content_t", "s0"])
        );
        // `_default` is the policy's part for the path; a level keeps its own colons.
        let probe = "kinit-se:unconfined_u:object_r:tmp_t:s0:c0.c1023|system_u:object_r:etc_t:s0\n";
        let (cmd, _, after) = chcon(
            "/etc/y",
            [Some("_default"), None, Some("_default"), Some("s0")],
            probe,
        )
        .unwrap();
        assert_eq!(cmd, "chcon -h -u system_u -t etc_t -l s0 -- /etc/y");
        assert_eq!(after, json!(["system_u", "object_r", "etc_t", "s0"]));
        // Already so: nothing to do; SELinux off (no probe line): nothing either.
        let same = "kinit-se:system_u:object_r:etc_t:s0|system_u:object_r:etc_t:s0\n";
        assert!(chcon("/etc/z", [None, None, Some("etc_t"), None], same).is_none());
        assert!(chcon("/etc/z", [None, None, Some("etc_t"), None], "").is_none());
    }
}
