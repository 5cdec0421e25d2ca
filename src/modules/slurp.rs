//! `slurp`: read a file from the host and return it base64-encoded (`content`), as Ansible's
//! `slurp` does. One command; never changes anything.

use base64::Engine as _;
use serde::Deserialize;

use crate::transport::quote::sh;

use super::host_path;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Slurp, "slurp", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The file on the host.
    #[serde(alias = "path", deserialize_with = "host_path::one")]
    src: String,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    // The cause is told apart first by opening the file (`head -c0`, in the C locale), so the
    // failure reads as ansible-core's (its `open` errors: ENOENT, EACCES, ENOTDIR, a
    // directory's EISDIR).
    let out = ctx
        .run(format!(
            "p={}\n\
             e=$(LC_ALL=C head -c0 -- \"$p\" 2>&1)\n\
             case $e in\n\
               *'Permission denied'*) exit 122 ;;\n\
               *'No such file'*) exit 123 ;;\n\
               *'Not a directory'*) exit 124 ;;\n\
             esac\n\
             [ -d \"$p\" ] && exit 121\n\
             exec cat -- \"$p\"\n",
            sh(&p.src)
        ))
        .await?;
    if !out.success() {
        let src = p.src.as_str();
        let msg = match out.rc {
            121 => format!("Source is a directory and must be a file: {src}"),
            122 => format!("File is not readable: {src}"),
            123 => format!("File not found: {src}"),
            // ansible-core's own words, its placeholder unfilled.
            124 => "Unable to slurp file: {source}".to_string(),
            _ => format!("Unable to slurp file {src}: {}", out.stderr_str().trim()),
        };
        return Ok(ModuleResult::failed(msg));
    }
    Ok(ModuleResult::ok()
        .with(
            "content",
            base64::engine::general_purpose::STANDARD.encode(&out.stdout),
        )
        .with("encoding", "base64")
        .with("source", p.src.as_str()))
}
