//! `template`: render a local Jinja file with the host's variables and put the result on the
//! host (same check-then-apply and upload path as `copy` with `content`).

use serde::Deserialize;

use super::args::boolish;
use super::command::yes;
use super::filewrite::{self, Content, Write};
use super::mode::{Mode, opt_mode};
use super::posix::{Attrs, Kind};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Template, "template", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Local template (looked up in the role's `templates/`, then beside the playbook).
    src: String,
    /// Path of the rendered file on the host.
    dest: String,
    /// Permissions of the file (`"0644"`, `u=rw,g=r`).
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Owner (name or uid).
    owner: Option<String>,
    /// Group (name or gid).
    group: Option<String>,
    /// Keep a timestamped copy of the file before replacing it.
    #[serde(default, deserialize_with = "boolish")]
    backup: bool,
    /// Replace a file whose content differs (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    force: bool,
    /// Line ending of the rendered file: `\n` (default), `\r\n` or `\r`.
    newline_sequence: Option<String>,
    /// Remove the first newline after a block tag (`{% ... %}`). Ansible's default, and the
    /// only mode kinit renders with.
    #[serde(default = "yes", deserialize_with = "boolish")]
    trim_blocks: bool,
    /// Strip spaces before a block tag on its line. kinit renders without it (Ansible's
    /// default).
    #[serde(default, deserialize_with = "boolish")]
    lstrip_blocks: bool,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if !p.trim_blocks || p.lstrip_blocks {
        return Ok(ModuleResult::failed(
            "kinit renders templates as Ansible does by default (`trim_blocks: true`, \
             `lstrip_blocks: false`); other whitespace modes are not supported",
        ));
    }
    let local = ctx.find_local(&p.src)?;
    let source = tokio::fs::read_to_string(&local)
        .await
        .map_err(|e| ModuleError::Failed {
            msg: format!("cannot read template `{}`: {e}", local.display()),
        })?;
    let mut text = ctx
        .render
        .render(&source)
        .map_err(|e| ModuleError::Failed {
            msg: format!("template `{}`: {e}", p.src),
        })?;
    if let Some(nl) = p.newline_sequence.as_deref().filter(|nl| *nl != "\n") {
        text = text.replace('\n', nl);
    }
    let before = filewrite::probe(ctx, &p.dest, ctx.diff).await?;
    if before.stat.kind == Kind::Directory {
        return Ok(ModuleResult::failed(format!(
            "`dest` `{}` is a directory",
            p.dest
        )));
    }
    let attrs = Attrs {
        mode: p.mode,
        owner: p.owner,
        group: p.group,
    };
    let w = Write {
        dest: &p.dest,
        attrs: &attrs,
        backup: p.backup,
        force: p.force,
    };
    Ok(
        filewrite::apply(ctx, &w, Content::bytes(text.into_bytes()), &before)
            .await?
            .with("src", p.src.as_str()),
    )
}
