//! `copy`: put a local file, a local directory tree or inline `content` on the host.
//!
//! Round trips for one file: one probe (stat + checksum of the destination, of
//! `dest/<basename>` in case `dest` is a directory, and of the parent), the upload (temp file +
//! rename), and one command for owner/group only when they need fixing. A directory tree is one
//! probe for every file, one `mkdir -p` for missing folders, then one upload per changed file.

use std::path::Path;

use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::{boolish, opt_boolish};
use super::command::yes;
use super::filewrite::{self, Before, Content, Write};
use super::host_path;
use super::local_tree::{LocalTree, remote_path};
use super::mode::{Mode, opt_mode};
use super::posix::{self, Algo, Attrs, Kind, StatReq, join, parent_of};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Copy, "copy", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Local file or directory to copy (relative paths are looked up in the role's `files/`,
    /// then beside the playbook). A directory ending in `/` copies its contents only.
    src: Option<String>,
    /// Text to write instead of `src`. A list or mapping is written as JSON, as ansible-core's
    /// copy action does (`json.dumps`).
    #[serde(default, deserialize_with = "content_text")]
    content: Option<String>,
    /// Path on the host; a directory (or a path ending in `/`) receives `basename(src)`.
    /// Required; a task without it fails when it runs (as in Ansible), not at load.
    #[serde(default)]
    dest: String,
    /// Permissions of the file(s) (`"0644"`, `u=rw,g=r`, `preserve`).
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Permissions of folders created for a directory copy.
    #[serde(default, deserialize_with = "opt_mode")]
    directory_mode: Option<Mode>,
    /// Owner (name or uid).
    owner: Option<String>,
    /// Group (name or gid).
    group: Option<String>,
    /// Keep a timestamped copy of a file before replacing it.
    #[serde(default, deserialize_with = "boolish")]
    backup: bool,
    /// Replace a file whose content differs (default yes); `no` only creates missing files.
    #[serde(default = "yes", deserialize_with = "boolish")]
    force: bool,
    /// `src` is a file on the host, not on the controller.
    #[serde(default, deserialize_with = "boolish")]
    remote_src: bool,
    /// A command (with `%s` for the new file) that must accept the file before it replaces
    /// the old one (`visudo -cf %s`).
    validate: Option<String>,
    /// Copy a vault-encrypted `src` as its plaintext (default yes); `no` copies it as is.
    #[serde(default = "yes", deserialize_with = "boolish")]
    decrypt: bool,
    /// When `dest` is a symbolic link, write the file it points to (default no: the link is
    /// replaced by the file).
    #[serde(default, deserialize_with = "boolish")]
    follow: bool,
    /// Follow symbolic links in the local `src` (default yes); `no` (links copied as links)
    /// is refused when `src` holds a link.
    #[serde(default, deserialize_with = "opt_boolish")]
    local_follow: Option<bool>,
    /// The SHA-1 the copied file must have; a different one fails the task, as upstream's
    /// "Copied file does not match the expected checksum".
    checksum: Option<String>,
}

fn content_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(v @ (serde_json::Value::Array(_) | serde_json::Value::Object(_))) => {
            Some(crate::template::json_dumps(&v, None, false))
        }
        Some(other) => {
            return Err(serde::de::Error::invalid_type(
                match &other {
                    serde_json::Value::Bool(b) => serde::de::Unexpected::Bool(*b),
                    _ => serde::de::Unexpected::Other("a number"),
                },
                &"a string",
            ));
        }
    })
}

/// The file the task would write, for `kinit plan --render`: `content`, or the local file
/// `src`; `None` for a copy on the host (`remote_src`) or of a folder.
pub fn render(
    ctx: &super::render::RenderCtx<'_>,
    args: &serde_json::Value,
) -> Result<Option<super::render::Rendered>, ModuleError> {
    let p: Params = super::params("copy", args)?;
    super::render::copied(
        ctx,
        p.remote_src,
        p.content,
        p.src.as_deref(),
        &p.dest,
        "copy",
    )
}

async fn run(ctx: &ModuleCtx<'_>, mut p: Params) -> Result<ModuleResult, ModuleError> {
    if p.dest.is_empty() {
        return Ok(ModuleResult::failed("dest is required"));
    }
    // `dest` is upstream's `type='path'`; without `remote_src` the copy action has already
    // expanded its leading `~` as the user's own home (`_remote_expand_user`).
    p.dest = if p.remote_src {
        host_path::expand(ctx, &p.dest).await?
    } else {
        host_path::expand_action(ctx, &p.dest).await?
    };
    let attrs = Attrs {
        mode: p.mode.clone(),
        owner: p.owner.clone(),
        group: p.group.clone(),
    };
    let bad = |detail: &str| ModuleError::BadArgs {
        module: "copy",
        detail: detail.to_string(),
    };
    if p.remote_src {
        let src = p
            .src
            .as_deref()
            .ok_or_else(|| bad("`remote_src` needs `src`"))?;
        // `src` is upstream's `type='path'`: a host path with `remote_src`; without it the
        // action plugin reads it on the controller.
        let src = super::host_path::expand(ctx, src).await?;
        return super::copy_remote::copy_on_host(ctx, &src, &p.dest, &attrs, p.force).await;
    }
    let (content, base, local) = match (&p.content, &p.src) {
        (Some(c), None) => (Content::bytes(c.clone().into_bytes()), None, None),
        (None, Some(src)) => {
            let local = ctx.find_local(src)?;
            if p.local_follow == Some(false)
                && let Some(link) = LocalTree::first_link(&local)
            {
                return Err(bad(&format!(
                    "`local_follow: false` (copying `{}` as a link) is not supported; \
                     kinit copies what links point to",
                    link.display()
                )));
            }
            if local.is_dir() {
                return copy_tree(ctx, &p, &local, src.ends_with('/'), &attrs).await;
            }
            let base = local
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .ok_or_else(|| bad("`src` has no file name"))?;
            (
                Content::local(&local, p.decrypt).await?,
                Some(base),
                Some(local),
            )
        }
        (Some(_), Some(_)) => return Err(bad("`src` and `content` are mutually exclusive")),
        (None, None) => return Ok(ModuleResult::failed("src (or content) is required")),
    };
    // Upstream's `copy` module checks the SHA-1 of what arrived against `checksum`.
    if let Some(want) = p.checksum.as_deref().filter(|c| *c != content.sha1) {
        return Ok(ModuleResult::failed(
            "Copied file does not match the expected checksum. Transfer failed.",
        )
        .with("checksum", content.sha1.as_str())
        .with("expected_checksum", want));
    }
    let attrs = match (&attrs.mode, &local) {
        (Some(Mode::Preserve), Some(l)) => Attrs {
            mode: Some(Mode::Octal(local_mode(l))),
            ..attrs
        },
        _ => attrs,
    };

    // `follow`: a `dest` that is a link stands for the file it points to (upstream's copy
    // module writes `os.path.realpath(dest)`); one command, only when asked.
    if p.follow {
        p.dest = filewrite::resolve_link(ctx, &p.dest).await?;
    }
    let inner = base.as_ref().map(|b| join(&p.dest, b));
    let parent = parent_of(&p.dest);
    let mut reqs = vec![StatReq {
        path: &p.dest,
        follow: true,
        checksum: Some(Algo::Sha256),
    }];
    if let Some(i) = &inner {
        reqs.push(StatReq {
            path: i,
            follow: true,
            checksum: Some(Algo::Sha256),
        });
    }
    reqs.push(StatReq {
        path: &parent,
        follow: true,
        checksum: None,
    });
    let out = ctx.run(posix::stat_script(&reqs)).await?;
    let (ids, mut stats, _) =
        posix::parse_probe(&out.stdout, reqs.len()).ok_or_else(|| ModuleError::Failed {
            msg: format!("cannot inspect `{}`: {}", p.dest, out.stderr_str().trim()),
        })?;
    let parent_stat = stats.pop().expect("parent record");
    let into_dir = stats[0].kind == Kind::Directory || p.dest.ends_with('/');
    let (dest, stat) = match (into_dir, inner) {
        (true, Some(i)) => (i, stats.pop().expect("inner record")),
        // As ansible-core's copy action words it.
        (true, None) => {
            return Ok(ModuleResult::failed(
                "can not use content with a dir as dest",
            ));
        }
        (false, _) => (p.dest.clone(), stats.swap_remove(0)),
    };
    if !into_dir && parent_stat.kind != Kind::Directory {
        return Ok(ModuleResult::failed(format!(
            "Destination directory {parent} does not exist"
        )));
    }
    if into_dir && stats[0].kind == Kind::Absent && !ctx.check_mode {
        // `dest/` that does not exist yet is created, as Ansible does.
        let out = ctx.run(format!("mkdir -p -- {}", sh(&p.dest))).await?;
        if !out.success() {
            return Ok(ModuleResult::failed(out.stderr_str().trim().to_string()));
        }
    }
    let content_text = if ctx.diff && stat.kind == Kind::File && stat.size < 256 * 1024 {
        Some(ctx.run(format!("cat -- {}", sh(&dest))).await?.stdout)
    } else {
        None
    };
    let before = Before {
        ids,
        stat,
        content: content_text,
    };
    let w = Write {
        dest: &dest,
        attrs: &attrs,
        backup: p.backup,
        force: p.force,
        validate: p.validate.as_deref(),
    };
    let r = filewrite::apply(ctx, &w, content, &before).await?;
    let mut r = filewrite::with_file_state(r, ctx, &before);
    if let Some(src) = &p.src {
        r = r.with("src", src.as_str());
    }
    Ok(r)
}

/// Copy a local directory tree: one probe, one `mkdir -p`, one upload per changed file.
async fn copy_tree(
    ctx: &ModuleCtx<'_>,
    p: &Params,
    local: &Path,
    contents_only: bool,
    attrs: &Attrs,
) -> Result<ModuleResult, ModuleError> {
    let root = if contents_only {
        p.dest.clone()
    } else {
        join(
            &p.dest,
            &local.file_name().unwrap_or_default().to_string_lossy(),
        )
    };
    let LocalTree { mut dirs, files } = LocalTree::read(local, "", '/')?;
    dirs.insert(0, String::new());
    let paths: Vec<String> = dirs
        .iter()
        .chain(files.iter().map(|(rel, _)| rel))
        .map(|r| remote_path(&root, r, join))
        .collect();
    let reqs: Vec<StatReq<'_>> = paths
        .iter()
        .map(|path| StatReq {
            path,
            follow: true,
            checksum: Some(Algo::Sha256),
        })
        .collect();
    let out = ctx.run(posix::stat_script(&reqs)).await?;
    let (ids, stats, _) =
        posix::parse_probe(&out.stdout, reqs.len()).ok_or_else(|| ModuleError::Failed {
            msg: format!("cannot inspect `{root}`: {}", out.stderr_str().trim()),
        })?;
    let (dir_stats, file_stats) = stats.split_at(dirs.len());
    let missing: Vec<&String> = paths[..dirs.len()]
        .iter()
        .zip(dir_stats)
        .filter(|(_, s)| s.kind != Kind::Directory)
        .map(|(p, _)| p)
        .collect();
    let mut changed = !missing.is_empty();
    if !missing.is_empty() && !ctx.check_mode {
        let mut script = String::from("mkdir -p");
        if let Some(m) = p
            .directory_mode
            .as_ref()
            .and_then(|m| m.resolve(0o755, true))
        {
            script.push_str(&format!(" -m {m:04o}"));
        }
        script.push_str(" --");
        for d in &missing {
            script.push(' ');
            script.push_str(&sh(d));
        }
        let out = ctx.run(script).await?;
        if !out.success() {
            return Ok(ModuleResult::failed(out.stderr_str().trim().to_string()));
        }
    }
    for (((_, source), path), stat) in files.iter().zip(&paths[dirs.len()..]).zip(file_stats) {
        let content = Content::local(source, p.decrypt).await?;
        let before = Before {
            ids,
            stat: stat.clone(),
            content: None,
        };
        let w = Write {
            dest: path,
            attrs,
            backup: p.backup,
            force: p.force,
            validate: p.validate.as_deref(),
        };
        let r = filewrite::apply(ctx, &w, content, &before).await?;
        if r.failed {
            return Ok(r);
        }
        changed |= r.changed;
    }
    Ok(ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("dest", root)
    .with("src", local.display().to_string()))
}

/// The permission bits of a local file (`mode: preserve` of `copy` and `template`).
pub(super) fn local_mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644)
}
