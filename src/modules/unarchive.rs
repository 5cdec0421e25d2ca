//! `unarchive`: unpack a tar (any compression GNU tar detects) or zip archive into a folder on
//! the host, idempotently.
//!
//! The archive (uploaded first unless `remote_src`) is unpacked into a private temporary
//! folder on the host, given the requested owner/group/mode there, and compared member by
//! member with `dest` (content with `cmp`, then mode and ids). Only when something differs is
//! the tree copied over `dest` (`cp -a`), so a second run reports ok; check mode stops after
//! the comparison. One command after the upload.

use serde::Deserialize;

use crate::transport::Source;
use crate::transport::quote::sh;

use super::args::{list, opt_boolish};
use super::host_path;
use super::mode::{Mode, opt_mode};
use super::script::unique_temp_path;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Unarchive, "unarchive", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The archive: a local file (looked up like `copy`'s `src`), or a path on the host with
    /// `remote_src`.
    src: String,
    /// Existing folder on the host to unpack into.
    #[serde(deserialize_with = "host_path::action_one")]
    dest: String,
    /// `src` is already on the host.
    #[serde(default, deserialize_with = "opt_boolish")]
    remote_src: Option<bool>,
    /// The older spelling of `remote_src`, inverted (`copy: false` is `remote_src: true`),
    /// as ansible-core's unarchive action still takes it.
    #[serde(default, deserialize_with = "opt_boolish")]
    copy: Option<bool>,
    /// Skip when this path exists on the host.
    #[serde(default, deserialize_with = "host_path::action_opt")]
    creates: Option<String>,
    /// Owner of the unpacked files (name or uid).
    owner: Option<String>,
    /// Group of the unpacked files (name or gid).
    group: Option<String>,
    /// Permissions of the unpacked files and folders.
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Extra options for `tar` (or `unzip`), e.g. `--strip-components=1`.
    #[serde(default, deserialize_with = "list")]
    extra_opts: Vec<String>,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let remote_src = match (p.copy, p.remote_src) {
        (Some(_), Some(_)) => {
            return Ok(ModuleResult::failed(
                "parameters are mutually exclusive: ('copy', 'remote_src')",
            ));
        }
        (Some(copy), None) => !copy,
        (None, remote) => remote.unwrap_or(false),
    };
    if let Some(c) = &p.creates {
        let out = ctx
            .run(format!("[ -e {} ] && echo exists; exit 0", sh(c)))
            .await?;
        if out.stdout_str().contains("exists") {
            let mut r = ModuleResult::ok().with("dest", p.dest.as_str());
            r.msg = Some(format!("skipped, since {c} exists"));
            return Ok(r);
        }
    }
    let zip = p.src.to_ascii_lowercase().ends_with(".zip");
    let (archive, uploaded) = if remote_src {
        // A host path (upstream's `type='path'`) only when it is on the host.
        (super::host_path::expand(ctx, &p.src).await?, false)
    } else {
        let local = ctx.find_local(&p.src)?;
        let remote = unique_temp_path("archive");
        ctx.conn
            .put(&Source::File(local), &remote, Some(0o600))
            .await?;
        (remote, true)
    };
    let extra: String = p.extra_opts.iter().map(|o| format!(" {}", sh(o))).collect();
    let extract = if zip {
        format!("unzip -q -o{extra} \"$a\" -d \"$t\"")
    } else {
        format!("tar -xf \"$a\" -C \"$t\"{extra}")
    };
    let mut prepare = String::new();
    if let Some(o) = &p.owner {
        prepare.push_str(&format!("chown -R -h {} \"$t\" || fail attrs\n", sh(o)));
    }
    if let Some(g) = &p.group {
        prepare.push_str(&format!("chgrp -R -h {} \"$t\" || fail attrs\n", sh(g)));
    }
    if let Some(m) = p.mode.as_ref().and_then(Mode::chmod_arg) {
        prepare.push_str(&format!("chmod -R {} \"$t\" || fail attrs\n", sh(&m)));
    }
    let apply = if ctx.check_mode {
        String::new()
    } else {
        "[ -n \"$changed\" ] && { cp -a \"$t/.\" \"$d/\" || fail copy; }\n".to_string()
    };
    let cleanup = if uploaded { "rm -f -- \"$a\"; " } else { "" };
    let script = format!(
        r#"a={a}; d={d}
fail() {{ echo "kinit-fail=$1"; rm -rf "$t"; {cleanup}exit 0; }}
[ -d "$d" ] || {{ t=; fail nodest; }}
[ -f "$a" ] || {{ t=; fail nosrc; }}
t=$(mktemp -d) || exit 1
{extract} >/dev/null || fail extract
{prepare}changed=
(cd "$t" && find . ! -name . | sed 's|^\./||') > "$t.list"
while IFS= read -r f; do
  s="$t/$f"; o="$d/$f"
  if [ -L "$s" ]; then [ "$(readlink "$s")" = "$(readlink "$o" 2>/dev/null)" ] || {{ echo "kinit-diff=$f"; changed=1; continue; }}
  elif [ -d "$s" ]; then [ -d "$o" ] && [ ! -L "$o" ] || {{ echo "kinit-diff=$f"; changed=1; continue; }}
  else cmp -s "$s" "$o" || {{ echo "kinit-diff=$f"; changed=1; continue; }}; fi
  [ -L "$s" ] || [ "$(stat -c '%a %u %g' "$s")" = "$(stat -c '%a %u %g' "$o")" ] || {{ echo "kinit-diff=$f"; changed=1; }}
done < "$t.list"
rm -f "$t.list"
{apply}rm -rf "$t"; {cleanup}exit 0
"#,
        a = sh(&archive),
        d = sh(&p.dest),
    );
    let out = ctx.run(script).await?;
    let text = out.stdout_str();
    if let Some(why) = text.lines().find_map(|l| l.strip_prefix("kinit-fail=")) {
        let msg = match why {
            "nodest" => format!("destination `{}` is not a directory", p.dest),
            "nosrc" => format!("source `{}` does not exist on the host", p.src),
            "extract" => format!("cannot unpack `{}`: {}", p.src, out.stderr_str().trim()),
            other => format!("cannot apply {other}: {}", out.stderr_str().trim()),
        };
        return Ok(ModuleResult::failed(msg));
    }
    if !out.success() {
        return Ok(ModuleResult::failed(out.stderr_str().trim().to_string()));
    }
    let diffs: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("kinit-diff="))
        .map(serde_json::Value::from)
        .collect();
    Ok(ModuleResult {
        changed: !diffs.is_empty(),
        ..ModuleResult::ok()
    }
    .with("dest", p.dest.as_str())
    .with("src", p.src.as_str())
    .with("handler", if zip { "ZipArchive" } else { "TgzArchive" })
    .with("changed_files", diffs))
}
