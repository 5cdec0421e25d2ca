//! `stat`: facts about one path on the host, in the shape Ansible's `stat` returns
//! (`stat.exists`, `isdir`, `mode`, `checksum`, ...). One command; never changes anything.

use serde::Deserialize;
use serde_json::json;

use super::args::boolish;
use super::posix::{self, Algo, Kind, StatReq};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Stat, "stat", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The path on the host.
    #[serde(alias = "dest", alias = "name")]
    path: String,
    /// Describe a link's target instead of the link.
    #[serde(default, deserialize_with = "boolish")]
    follow: bool,
    /// Compute a checksum of a regular file (default yes).
    #[serde(default = "super::command::yes", deserialize_with = "boolish")]
    get_checksum: bool,
    /// Checksum algorithm (default `sha1`, as Ansible).
    #[serde(default = "sha1")]
    checksum_algorithm: Algo,
    /// Accepted for compatibility; kinit does not compute MIME types.
    #[serde(default, deserialize_with = "boolish")]
    get_mime: bool,
    /// Accepted for compatibility; kinit does not read file attributes.
    #[serde(default, deserialize_with = "boolish")]
    get_attributes: bool,
}

fn sha1() -> Algo {
    Algo::Sha1
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = (p.get_mime, p.get_attributes);
    let req = StatReq {
        path: &p.path,
        follow: p.follow,
        checksum: p.get_checksum.then_some(p.checksum_algorithm),
    };
    let out = ctx.run(posix::stat_script(&[req])).await?;
    let (_, stats, _) = posix::parse_probe(&out.stdout, 1).ok_or_else(|| ModuleError::Failed {
        msg: format!("cannot stat `{}`: {}", p.path, out.stderr_str().trim()),
    })?;
    let s = &stats[0];
    if !s.exists() {
        return Ok(ModuleResult::ok().with("stat", json!({ "exists": false })));
    }
    let mut stat = json!({
        "exists": true,
        "path": p.path,
        "mode": posix::mode_str(s.mode),
        "isdir": s.kind == Kind::Directory,
        "isreg": s.kind == Kind::File,
        "islnk": s.kind == Kind::Link || s.link_target.is_some(),
        "uid": s.uid,
        "gid": s.gid,
        "pw_name": s.owner,
        "gr_name": s.group,
        "size": s.size,
        "mtime": s.mtime,
        "readable": s.readable,
        "writeable": s.writeable,
        "executable": s.executable,
        "xusr": s.mode & 0o100 != 0,
        "wusr": s.mode & 0o200 != 0,
        "rusr": s.mode & 0o400 != 0,
    });
    if let Some(t) = &s.link_target {
        stat["lnk_target"] = json!(t);
        stat["lnk_source"] = json!(t);
    }
    if let Some(c) = &s.checksum {
        stat["checksum"] = json!(c);
    }
    Ok(ModuleResult::ok().with("stat", stat))
}
