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
use super::host_path;
use super::mode::{Mode, opt_mode};
use super::posix::{self, Attrs, Kind, RemoteStat, StatReq};
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
    /// The format of `access_time`; only touch's own `%Y%m%d%H%M.%S` (the default).
    access_time_format: Option<String>,
    /// As `access_time`, for the modification time.
    modification_time: Option<String>,
    /// The format of `modification_time`; only `%Y%m%d%H%M.%S` (the default).
    modification_time_format: Option<String>,
    /// Internal (ansible-core's action plugins send it): only report whether the file looks
    /// binary (`appears_binary`), changing nothing.
    #[serde(rename = "_diff_peek", default, deserialize_with = "opt_boolish")]
    diff_peek: Option<bool>,
}

/// `touch` flags that set the access (`-a`) or modification (`-m`) time as asked; `None`
/// for `preserve`. A fixed time uses touch's own `-t` format, which is Ansible's default
/// `%Y%m%d%H%M.%S`; another format is refused rather than misread.
fn time_flags(
    which: char,
    value: Option<&str>,
    format: Option<&str>,
    default_now: bool,
) -> Result<Option<String>, ModuleError> {
    if let Some(f) = format.filter(|f| *f != "%Y%m%d%H%M.%S") {
        return Err(ModuleError::BadArgs {
            module: "file",
            detail: format!("time format `{f}`: kinit takes only `%Y%m%d%H%M.%S`"),
        });
    }
    Ok(match value {
        None if default_now => Some(format!("-{which}")),
        None | Some("preserve") => None,
        Some("now") => Some(format!("-{which}")),
        Some(t) => Some(format!("-{which} -t {}", sh(t))),
    })
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
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
        probe.push_str(&attrs.drift_script(&p.path));
    }
    // A link never replaces a folder that holds anything, even with `force`.
    if matches!(p.state, Some(State::Link | State::Hard)) {
        probe.push_str(&format!(
            "[ -d {d} ] && [ ! -L {d} ] && [ -n \"$(ls -A -- {d} 2>/dev/null)\" ] && echo kinit-dir-full\n",
            d = sh(&p.path)
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
    probe.push_str("exit 0\n");
    let out = ctx.run(probe).await?;
    let (_, stats, rest) =
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
    let drift = p.recurse && attrs.drifted(&rest);
    let stat = if p.follow { fstat } else { lstat };

    let state = p.state.unwrap_or(match lstat.kind {
        Kind::Absent => State::File,
        Kind::Directory => State::Directory,
        Kind::Link if p.follow && fstat.kind == Kind::Directory => State::Directory,
        Kind::Link => State::Link,
        _ => State::File,
    });
    let path = p.path.as_str();
    let mut script = Vec::<String>::new();
    let fail = |m: String| Ok(ModuleResult::failed(m).with("path", path));
    match state {
        State::Absent => {
            if lstat.exists() {
                script.push(format!("rm -rf -- {}", sh(path)));
            }
        }
        State::File => match stat.kind {
            Kind::Absent => return fail(format!("file `{path}` is absent, cannot continue")),
            Kind::Directory => {
                return fail(format!("`{path}` is a directory, cannot continue"));
            }
            _ => script.push(attrs.fix_script(path, stat, false)),
        },
        State::Directory => match stat.kind {
            Kind::Absent => {
                script.push(format!("mkdir -p -- {}", sh(path)));
                script.push(attrs.fix_script(path, &fresh(Kind::Directory, 0o755), false));
            }
            Kind::Directory if p.recurse && drift => {
                script.push(attrs.recursive_script(path));
            }
            Kind::Directory => script.push(attrs.fix_script(path, stat, false)),
            _ => return fail(format!("`{path}` exists and is not a directory")),
        },
        State::Touch => {
            let atime = time_flags(
                'a',
                p.access_time.as_deref(),
                p.access_time_format.as_deref(),
                true,
            )?;
            let mtime = time_flags(
                'm',
                p.modification_time.as_deref(),
                p.modification_time_format.as_deref(),
                true,
            )?;
            match (atime, mtime) {
                (Some(a), Some(m)) if a == "-a" && m == "-m" => {
                    script.push(format!("touch -- {}", sh(path)));
                }
                (a, m) => {
                    // Both preserved: only create a missing file.
                    if !stat.exists() {
                        script.push(format!(": > {}", sh(path)));
                    }
                    for flags in [a, m].into_iter().flatten() {
                        script.push(format!("touch {flags} -- {}", sh(path)));
                    }
                }
            }
            let now = if stat.exists() {
                stat.clone()
            } else {
                fresh(Kind::File, 0o644)
            };
            script.push(attrs.fix_script(path, &now, false));
        }
        State::Link | State::Hard => {
            // Without `src`, an existing link keeps its target and only its attributes are
            // managed (upstream's `ensure_symlink`); a new one needs a source.
            let kept = (state == State::Link && lstat.kind == Kind::Link)
                .then(|| lstat.link_target.clone())
                .flatten();
            let Some(src) = p.src.as_ref().or(kept.as_ref()) else {
                let what = if state == State::Link {
                    "symlinks"
                } else {
                    "hard links"
                };
                return fail(format!("src is required for creating new {what}"));
            };
            let correct = match state {
                State::Link => lstat.kind == Kind::Link && lstat.link_target.as_ref() == Some(src),
                _ => same_as_src,
            };
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
                script.push(attrs.fix_script(path, &fresh(kind, 0o777), false));
            } else {
                // `follow` manages the target's attributes (chmod/chown follow the link).
                let now = if p.follow && fstat.exists() {
                    fstat
                } else {
                    lstat
                };
                script.push(attrs.fix_script(path, now, false));
            }
        }
    }
    if matches!(state, State::File | State::Directory) {
        // Times other than `preserve` on an existing path: applied, and reported as a
        // change (kinit does not compare a fixed time with the current one first).
        for (which, value, format) in [
            ('a', &p.access_time, &p.access_time_format),
            ('m', &p.modification_time, &p.modification_time_format),
        ] {
            if let Some(flags) = time_flags(which, value.as_deref(), format.as_deref(), false)? {
                script.push(format!("touch -c {flags} -- {}", sh(path)));
            }
        }
    }
    script.retain(|s| !s.is_empty());
    let changed = !script.is_empty();
    // Ansible reports what the path is afterwards: a touched file is a `file`.
    let state_name = match state {
        State::Touch if stat.kind == Kind::Directory => "directory".to_string(),
        State::Touch => "file".to_string(),
        other => format!("{other:?}").to_lowercase(),
    };
    let mut r = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("path", path)
    .with("state", state_name.clone());
    if changed && ctx.diff {
        r.diff = Some(state_diff(
            path,
            kind_name(lstat.kind),
            &state_name,
            lstat,
            &p,
        ));
    }
    if changed && !ctx.check_mode {
        let out = ctx.run(script.join(" && ")).await?;
        if !out.success() {
            return fail(out.stderr_str().trim().to_string());
        }
    }
    Ok(r)
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
