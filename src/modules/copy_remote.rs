//! `copy` with `remote_src`: copy a file that is already on the host. One probe (both files'
//! stat and SHA-256, `dest/<basename>` in case `dest` is a folder), then one command that
//! copies to a temporary sibling and renames it into place, with owner/group/mode applied.

use crate::transport::quote::sh;

use super::posix::{self, Algo, Attrs, Kind, RemoteStat, StatReq, join, parent_of};
use super::{ModuleCtx, ModuleError, ModuleResult};

fn req(path: &str, checksum: Option<Algo>) -> StatReq<'_> {
    StatReq {
        path,
        follow: true,
        checksum,
    }
}

/// Copy `src` (on the host) to `dest` with `attrs`.
pub async fn copy_on_host(
    ctx: &ModuleCtx<'_>,
    src: &str,
    dest: &str,
    attrs: &Attrs,
    force: bool,
) -> Result<ModuleResult, ModuleError> {
    let base = src.trim_end_matches('/').rsplit('/').next().unwrap_or(src);
    let inner = join(dest, base);
    let parent = parent_of(dest);
    let reqs = [
        req(src, Some(Algo::Sha256)),
        req(dest, Some(Algo::Sha256)),
        req(&inner, Some(Algo::Sha256)),
        req(&parent, None),
    ];
    let out = ctx.run(posix::stat_script(&reqs)).await?;
    let (_, stats, _) = posix::parse_probe(&out.stdout, 4).ok_or_else(|| ModuleError::Failed {
        msg: format!("cannot inspect `{src}`: {}", out.stderr_str().trim()),
    })?;
    let [s, d, i, par] = [&stats[0], &stats[1], &stats[2], &stats[3]];
    // As upstream's `copy` module words a missing source (modules/copy.py).
    if s.kind == Kind::Absent {
        return Ok(ModuleResult::failed(format!("Source {src} not found")));
    }
    if s.kind != Kind::File {
        return Ok(ModuleResult::failed(format!(
            "`src` `{src}` is not a regular file on the host (remote_src copies files only)"
        )));
    }
    let into_dir = d.kind == Kind::Directory;
    let (target, t) = if into_dir {
        (inner, i)
    } else {
        (dest.to_string(), d)
    };
    if !into_dir && par.kind != Kind::Directory {
        return Ok(ModuleResult::failed(format!(
            "Destination directory {parent} does not exist"
        )));
    }
    let write = t.kind == Kind::Absent || (force && t.checksum != s.checksum);
    // After a copy the file is new: its owner and exact mode are whatever cp made them.
    let after = if write {
        RemoteStat {
            mode: 0o10000,
            uid: u32::MAX,
            gid: u32::MAX,
            ..t.clone()
        }
    } else {
        t.clone()
    };
    let want = Attrs {
        mode: attrs.mode.clone().or_else(|| {
            Some(super::mode::Mode::Octal(if t.kind == Kind::File {
                t.mode
            } else {
                s.mode
            }))
        }),
        ..attrs.clone()
    };
    let fix = want.fix_script(&target, &after, false);
    let mut r = ModuleResult {
        changed: write || !fix.is_empty(),
        ..ModuleResult::ok()
    }
    .with("dest", target.as_str())
    .with("src", src)
    .with("checksum", s.checksum.clone().unwrap_or_default());
    if !r.changed || ctx.check_mode {
        return Ok(r);
    }
    let mut script = String::new();
    if write {
        let tmp = format!("{target}.kinit-tmp");
        script.push_str(&format!(
            "cp -- {s} {t} && mv -f -- {t} {d}",
            s = sh(src),
            t = sh(&tmp),
            d = sh(&target)
        ));
    }
    if !fix.is_empty() {
        if !script.is_empty() {
            script.push_str(" && ");
        }
        script.push_str(&fix);
    }
    let out = ctx.run(script).await?;
    if !out.success() {
        r = ModuleResult::failed(format!(
            "copying `{src}` to `{target}` failed: {}",
            out.stderr_str().trim()
        ));
    }
    Ok(r)
}
