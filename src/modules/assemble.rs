//! `assemble`: build a file from the fragments in a folder, in name order, as ansible-core
//! 2.19's `assemble` module and action plugin do (lib/ansible/modules/assemble.py,
//! plugins/action/assemble.py): only regular files (links followed), `regexp` searched in each
//! name, hidden names skipped with `ignore_hidden`, a newline added after a fragment that
//! lacks one, `delimiter` (backslash escapes decoded, a newline added) between fragments.
//!
//! The fragments are in a folder on the host (`remote_src`, the default: one command lists
//! them, one reads them) or on the controller (`remote_src: false`, looked up like `copy`'s
//! `src`, vault files decrypted); the text is built on the controller by [`assemble`] (pure,
//! unit tested) and written through `filewrite` only when its checksum differs.

use std::path::Path;

use crate::pyre::PyRegex as Regex;
use md5::{Digest, Md5};
use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::boolish;
use super::command::yes;
use super::filewrite::{self, Content, Write};
use super::fragments::{assemble, select};
use super::host_path;
use super::mode::{Mode, opt_mode};
use super::posix::Attrs;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Assemble, "assemble", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The folder of fragments (on the host, or on the controller with `remote_src: false`).
    src: String,
    /// The file to build on the host.
    #[serde(deserialize_with = "host_path::action_one")]
    dest: String,
    /// Text put between fragments (`\n`, `\t`... escapes are decoded).
    delimiter: Option<String>,
    /// Only fragments whose name this regular expression finds something in.
    regexp: Option<String>,
    /// Skip fragments whose name starts with `.`.
    #[serde(default, deserialize_with = "boolish")]
    ignore_hidden: bool,
    /// Keep a timestamped copy of `dest` before replacing it.
    #[serde(default, deserialize_with = "boolish")]
    backup: bool,
    /// A command (with `%s` for the new file) that must accept the file before it replaces
    /// `dest`.
    validate: Option<String>,
    /// `src` is on the host (default yes); `no`: a folder on the controller.
    #[serde(default = "yes", deserialize_with = "boolish")]
    remote_src: bool,
    /// With `remote_src: false`, vault-encrypted fragments are decrypted (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    decrypt: bool,
    /// Accepted for compatibility: `dest` is written through a link.
    #[serde(default, deserialize_with = "boolish")]
    follow: bool,
    /// Permissions of `dest`.
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Owner (name or uid).
    owner: Option<String>,
    /// Group (name or gid).
    group: Option<String>,
}

/// The regular files in `src` on the host, or upstream's failure message.
async fn remote_names(
    ctx: &ModuleCtx<'_>,
    src: &str,
) -> Result<Result<Vec<String>, String>, ModuleError> {
    let s = sh(src);
    let out = ctx
        .run(format!(
            "[ -e {s} ] || {{ echo absent; exit 0; }}; [ -d {s} ] || {{ echo notdir; exit 0; }}; \
             echo ok; find -L {s} -mindepth 1 -maxdepth 1 -type f -printf '%f\\0'"
        ))
        .await?;
    let text = out.stdout_str();
    let (status, list) = text.split_once('\n').unwrap_or((text.as_str(), ""));
    Ok(match status {
        "absent" => Err(format!("Source ({src}) does not exist")),
        "notdir" => Err(format!("Source ({src}) is not a directory")),
        "ok" => Ok(list
            .split('\0')
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()),
        _ => Err(format!(
            "cannot list `{src}` on the host: {}",
            out.stderr_str().trim()
        )),
    })
}

/// Read `names` from `src` on the host in one command (each as its size, a newline, bytes).
async fn remote_read(
    ctx: &ModuleCtx<'_>,
    src: &str,
    names: &[String],
) -> Result<Vec<Vec<u8>>, ModuleError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut script = String::from("set -e\n");
    for n in names {
        let f = sh(&super::posix::join(src, n));
        script.push_str(&format!("wc -c < {f}; cat -- {f}\n"));
    }
    let out = ctx.run(script).await?;
    let fail = || ModuleError::Failed {
        msg: format!(
            "cannot read the fragments in `{src}`: {}",
            out.stderr_str().trim()
        ),
    };
    if !out.success() {
        return Err(fail());
    }
    let mut rest = &out.stdout[..];
    let mut frags = Vec::new();
    for _ in names {
        let nl = rest.iter().position(|b| *b == b'\n').ok_or_else(fail)?;
        let len: usize = std::str::from_utf8(&rest[..nl])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(fail)?;
        let body = rest.get(nl + 1..nl + 1 + len).ok_or_else(fail)?;
        frags.push(body.to_vec());
        rest = &rest[nl + 1 + len..];
    }
    Ok(frags)
}

/// The regular files of a local folder and their bytes (vault files decrypted).
fn local_fragments(
    dir: &Path,
    regexp: Option<&Regex>,
    p: &Params,
) -> Result<Vec<Vec<u8>>, ModuleError> {
    let fail = |e: std::io::Error| ModuleError::Failed {
        msg: format!("cannot read `{}`: {e}", dir.display()),
    };
    let names = std::fs::read_dir(dir)
        .map_err(fail)?
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    select(names, regexp, p.ignore_hidden)
        .into_iter()
        .map(|n| {
            let path = dir.join(&n);
            let bytes = std::fs::read(&path).map_err(fail)?;
            if !p.decrypt {
                return Ok(bytes);
            }
            crate::vault::file_bytes(&path, bytes)
                .map_err(|e| ModuleError::Failed { msg: e.to_string() })
        })
        .collect()
}

/// Run `check` on the assembled text in a temporary file on the host, as upstream validates
/// its temporary file before moving it into place (in check mode too). `Ok` holds the
/// `validation` result (rc, stdout, stderr); `Err` the failure to report.
async fn validate(
    ctx: &ModuleCtx<'_>,
    check: &str,
    content: &Content,
) -> Result<Result<serde_json::Value, ModuleResult>, ModuleError> {
    let tmp = ctx.run("mktemp").await?;
    if !tmp.success() {
        return Ok(Err(ModuleResult::failed(format!(
            "cannot make a temporary file on the host: {}",
            tmp.stderr_str().trim()
        ))));
    }
    let tmp = tmp.stdout_str().trim().to_string();
    ctx.conn.put(&content.source, &tmp, Some(0o600)).await?;
    let out = ctx.run(check.replace("%s", &sh(&tmp))).await;
    let _ = ctx.run(format!("rm -f -- {}", sh(&tmp))).await;
    let out = out?;
    let (stdout, stderr) = (out.stdout_str(), out.stderr_str());
    if !out.success() {
        return Ok(Err(ModuleResult::failed(format!(
            "failed to validate: rc:{} error:{stderr}",
            out.rc
        ))));
    }
    Ok(Ok(
        serde_json::json!({"rc": out.rc, "stdout": stdout, "stderr": stderr}),
    ))
}

async fn run(ctx: &ModuleCtx<'_>, mut p: Params) -> Result<ModuleResult, ModuleError> {
    // `src` is a host path only with `remote_src` (else the controller's, found locally).
    if p.remote_src {
        p.src = host_path::expand(ctx, &p.src).await?;
    }
    let _ = p.follow;
    let regexp = match p.regexp.as_deref().map(Regex::new).transpose() {
        Ok(r) => r,
        Err(e) => {
            return Ok(ModuleResult::failed(format!(
                "Invalid Regexp ({e}) in \"{}\"",
                p.regexp.as_deref().unwrap_or_default()
            )));
        }
    };
    if let Some(v) = &p.validate
        && !v.contains("%s")
    {
        return Ok(ModuleResult::failed(format!(
            "validate must contain %s: {v}"
        )));
    }
    let fragments = if p.remote_src {
        let names = match remote_names(ctx, &p.src).await? {
            Ok(n) => n,
            Err(msg) => return Ok(ModuleResult::failed(msg)),
        };
        let names = select(names, regexp.as_ref(), p.ignore_hidden);
        remote_read(ctx, &p.src, &names).await?
    } else {
        let dir = ctx.find_local(&p.src)?;
        if !dir.is_dir() {
            return Ok(ModuleResult::failed(format!(
                "Source ({}) is not a directory",
                dir.display()
            )));
        }
        local_fragments(&dir, regexp.as_ref(), &p)?
    };
    let text = assemble(&fragments, p.delimiter.as_deref());
    let md5 = hex::encode(Md5::digest(&text));

    let before = filewrite::probe(ctx, &p.dest, ctx.diff).await?;
    let content = Content::bytes(text);
    let mut validation = None;
    if let Some(check) = &p.validate
        && before.stat.checksum.as_deref() != Some(content.sha256.as_str())
    {
        match validate(ctx, check, &content).await? {
            Ok(v) => validation = Some(v),
            Err(failed) => return Ok(failed),
        }
    }
    let attrs = Attrs {
        mode: p.mode.clone(),
        owner: p.owner.clone(),
        group: p.group.clone(),
    };
    let w = Write {
        dest: &p.dest,
        attrs: &attrs,
        backup: p.backup,
        force: true,
        validate: None,
    };
    let mut r = filewrite::apply(ctx, &w, content, &before).await?;
    if r.failed {
        return Ok(r);
    }
    if let Some(v) = validation {
        r = r.with("validation", v);
    }
    r = r.with("md5sum", md5).with("src", p.src.as_str());
    r.data.remove("size");
    r.data.remove("mode");
    let path = p.dest.clone();
    if p.remote_src {
        // The module on the host reports no diff (only the controller-side action does).
        r.diff = None;
        r.msg = Some("OK".into());
    } else if !r.changed {
        // Unchanged, upstream's action hands over to `file`, which names the path `path`.
        r.data.remove("dest");
        r = r.with("path", p.dest.as_str());
    }
    // Upstream's exit adds the state and mode of `dest` as they are now.
    r = super::path_info::add(ctx, r, &path).await?;
    Ok(r)
}
