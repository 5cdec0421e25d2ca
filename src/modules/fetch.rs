//! `fetch`: copy a file from the host to the controller, into `dest/<host>/<src path>` (or
//! exactly `dest` with `flat`). One probe for the remote checksum; the transfer only when the
//! local copy differs.

use serde::Deserialize;

use super::args::boolish;
use super::command::yes;
use super::posix::{self, Algo, Kind, StatReq};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Fetch, "fetch", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The file on the host.
    src: String,
    /// Local folder (or, with `flat`, local file path) to store it in.
    dest: String,
    /// Store at `dest` itself instead of `dest/<host>/<src>`.
    #[serde(default, deserialize_with = "boolish")]
    flat: bool,
    /// Fail when `src` does not exist (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    fail_on_missing: bool,
    /// Verify the copy's checksum (default yes; the transports always do).
    #[serde(default = "yes", deserialize_with = "boolish")]
    validate_checksum: bool,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = p.validate_checksum;
    let local = if p.flat {
        if p.dest.ends_with('/') {
            let base = p.src.rsplit('/').next().unwrap_or(&p.src);
            format!("{}{base}", p.dest)
        } else {
            p.dest.clone()
        }
    } else {
        format!(
            "{}/{}/{}",
            p.dest.trim_end_matches('/'),
            ctx.host,
            p.src.trim_start_matches('/')
        )
    };
    let out = ctx
        .run(posix::stat_script(&[StatReq {
            path: &p.src,
            follow: true,
            checksum: Some(Algo::Sha256),
        }]))
        .await?;
    let (_, stats, _) = posix::parse_probe(&out.stdout, 1).ok_or_else(|| ModuleError::Failed {
        msg: format!("cannot inspect `{}`: {}", p.src, out.stderr_str().trim()),
    })?;
    let remote = &stats[0];
    if remote.kind != Kind::File {
        let msg = match remote.kind {
            Kind::Absent => format!("the remote file `{}` does not exist", p.src),
            _ => format!("remote `{}` is not a regular file", p.src),
        };
        if p.fail_on_missing || remote.kind != Kind::Absent {
            return Ok(ModuleResult::failed(msg));
        }
        let mut r = ModuleResult::ok().with("file", p.src.as_str());
        r.msg = Some(msg);
        return Ok(r);
    }
    let local_path = std::path::PathBuf::from(&local);
    let local_sum = crate::transport::local::sha256_file(&local_path).await.ok();
    let changed = local_sum.as_deref() != remote.checksum.as_deref();
    let result = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("src", p.src.as_str())
    .with("dest", local.as_str())
    .with("checksum", remote.checksum.clone().unwrap_or_default());
    if changed && !ctx.check_mode {
        if let Some(parent) = local_path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| ModuleError::Failed {
                    msg: format!("cannot create `{}`: {e}", parent.display()),
                })?;
        }
        ctx.conn.get(&p.src, &local_path).await?;
    }
    Ok(result)
}
