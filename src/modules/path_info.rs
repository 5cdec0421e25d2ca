//! What Ansible's `exit_json` adds to a result that names a `path` or `dest`
//! (module_utils/basic.py `add_path_info`): the path's `state` (`file`, `directory`, `link`,
//! or `absent`) and `mode` as they are after the task, seen without following a link. One
//! stat on the host; the owner/ids/size upstream adds as well are left out (they are the
//! host's, not the module's).

use super::posix::{self, Kind, StatReq};
use super::{ModuleCtx, ModuleError, ModuleResult};

/// `r` with `state` and `mode` of `path` on the host.
pub async fn add(
    ctx: &ModuleCtx<'_>,
    r: ModuleResult,
    path: &str,
) -> Result<ModuleResult, ModuleError> {
    let script = posix::stat_script(&[StatReq {
        path,
        follow: false,
        checksum: None,
    }]);
    let out = ctx.run(script).await?;
    let Some((_, stats, _)) = posix::parse_probe(&out.stdout, 1) else {
        return Ok(r);
    };
    let s = &stats[0];
    let state = match s.kind {
        Kind::Absent => return Ok(r),
        Kind::Link => "link",
        Kind::Directory => "directory",
        Kind::File | Kind::Other => "file",
    };
    Ok(r.with("state", state).with("mode", posix::mode_str(s.mode)))
}
