//! `win_copy`: put a local file, a local folder tree or inline `content` on a Windows host
//! (or copy on the host with `remote_src`).
//!
//! One PowerShell probe returns the SHA-256 of every destination file (and resolves `dest`
//! being a folder); files whose hash differs are uploaded with `Connection::put` (which
//! verifies a SHA-256 of what arrived); missing folders are created in one more run.

use serde::Deserialize;
use serde_json::Value;

use crate::transport::quote::ps;

use super::args::boolish;
use super::command::yes;
use super::filewrite::Content;
use super::local_tree::{LocalTree, remote_path};
use super::{ModuleCtx, ModuleError, ModuleResult, pwsh, typed_module};

typed_module!(WinCopy, "win_copy", Params, run, windows);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Local file or folder (a folder ending in `/` or `\` copies its contents only); with
    /// `remote_src`, a path on the host.
    src: Option<String>,
    /// Text to write instead of `src`.
    content: Option<String>,
    /// Path on the host; an existing folder (or a path ending in `\`) receives the file.
    dest: String,
    /// Replace a file whose content differs (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    force: bool,
    /// `src` is a path on the host.
    #[serde(default, deserialize_with = "boolish")]
    remote_src: bool,
}

/// The probe: for each relative name (`""` = `dest` itself, resolved into a folder when it is
/// one and `leaf` is given), whether it exists and its SHA-256.
pub fn probe_body(dest: &str, leaf: Option<&str>, rels: &[String]) -> String {
    let leaf_rule = match leaf {
        Some(l) => format!(
            "if ((Test-Path -LiteralPath $root -PathType Container) -or $root.EndsWith('\\') -or $root.EndsWith('/')) {{ $root = Join-Path $root {} }}\n",
            ps(l)
        ),
        None => String::new(),
    };
    format!(
        r#"$root = {dest}
{leaf_rule}$r.dest = $root
$h = @{{}}
foreach ($rel in {rels}) {{
  $p = if ($rel -eq '') {{ $root }} else {{ Join-Path $root $rel }}
  if (Test-Path -LiteralPath $p -PathType Leaf) {{ $h[$rel] = (Get-FileHash -LiteralPath $p -Algorithm SHA256).Hash.ToLower() }}
  elseif (Test-Path -LiteralPath $p -PathType Container) {{ $h[$rel] = 'directory' }}
}}
$r.hashes = $h
$parent = Split-Path -Parent $root
$r.parent_exists = [bool]($parent -eq '' -or (Test-Path -LiteralPath $parent -PathType Container))"#,
        dest = ps(dest),
        rels = pwsh::list_lit(rels),
    )
}

/// Create folders (one run).
pub fn mkdir_body(dirs: &[String]) -> String {
    format!(
        "foreach ($d in {}) {{ New-Item -Path $d -ItemType Directory -Force | Out-Null }}",
        pwsh::list_lit(dirs)
    )
}

/// `remote_src`: copy on the host when the hashes differ.
pub fn remote_body(src: &str, dest: &str, force: bool) -> String {
    format!(
        r#"$src = {src}; $d = {dest}
if (-not (Test-Path -LiteralPath $src -PathType Leaf)) {{ throw "remote src $src does not exist" }}
if (Test-Path -LiteralPath $d -PathType Container) {{ $d = Join-Path $d (Split-Path -Leaf $src) }}
$r.dest = $d
$need = -not (Test-Path -LiteralPath $d -PathType Leaf)
if (-not $need -and {force}) {{ $need = (Get-FileHash -LiteralPath $src -Algorithm SHA256).Hash -ne (Get-FileHash -LiteralPath $d -Algorithm SHA256).Hash }}
if ($need) {{
  $r.changed = $true
  if (-not $check) {{ Copy-Item -LiteralPath $src -Destination $d -Force }}
}}"#,
        src = ps(src),
        dest = ps(dest),
        force = pwsh::bool_lit(force),
    )
}

fn win_join(a: &str, b: &str) -> String {
    format!(
        "{}\\{}",
        a.trim_end_matches(['\\', '/']),
        b.replace('/', "\\")
    )
}

/// The file the task would write, for `kinit plan --render`: `content`, or the local file
/// `src`; `None` for a copy on the host (`remote_src`) or of a folder.
pub fn render(
    ctx: &super::render::RenderCtx<'_>,
    args: &serde_json::Value,
) -> Result<Option<super::render::Rendered>, ModuleError> {
    let p: Params = super::params("win_copy", args)?;
    super::render::copied(
        ctx,
        p.remote_src,
        p.content,
        p.src.as_deref(),
        &p.dest,
        "win_copy",
    )
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let bad = |d: &str| ModuleError::BadArgs {
        module: "win_copy",
        detail: d.to_string(),
    };
    if p.remote_src {
        let src = p
            .src
            .as_deref()
            .ok_or_else(|| bad("`remote_src` needs `src`"))?;
        return pwsh::run_framed(ctx, &remote_body(src, &p.dest, p.force), None).await;
    }
    // (relative name, content) pairs; "" is `dest` itself.
    let (files, dirs, leaf): (Vec<(String, Content)>, Vec<String>, Option<String>) =
        match (&p.content, &p.src) {
            (Some(c), None) => (
                vec![(String::new(), Content::bytes(c.clone().into_bytes()))],
                vec![],
                None,
            ),
            (None, Some(src)) => {
                let local = ctx.find_local(src)?;
                if local.is_dir() {
                    let base = if src.ends_with('/') || src.ends_with('\\') {
                        String::new()
                    } else {
                        local
                            .file_name()
                            .unwrap_or_default()
                            .to_string_lossy()
                            .into_owned()
                    };
                    let LocalTree { mut dirs, files } = LocalTree::read(&local, &base, '\\')?;
                    let mut loaded = Vec::new();
                    for (rel, path) in files {
                        loaded.push((rel, Content::file(&path).await?));
                    }
                    if !base.is_empty() {
                        dirs.insert(0, base);
                    }
                    (loaded, dirs, None)
                } else {
                    let leaf = local.file_name().map(|n| n.to_string_lossy().into_owned());
                    (
                        vec![(String::new(), Content::file(&local).await?)],
                        vec![],
                        leaf,
                    )
                }
            }
            _ => return Err(bad("give exactly one of `src` or `content`")),
        };
    let rels: Vec<String> = files
        .iter()
        .map(|(r, _)| r.clone())
        .chain(dirs.iter().cloned())
        .collect();
    let probe = pwsh::run_framed(ctx, &probe_body(&p.dest, leaf.as_deref(), &rels), None).await?;
    if probe.failed {
        return Ok(probe);
    }
    let root = probe
        .data
        .get("dest")
        .and_then(Value::as_str)
        .unwrap_or(&p.dest)
        .to_string();
    let hashes = probe.data.get("hashes").cloned().unwrap_or(Value::Null);
    let have = |rel: &str| hashes.get(rel).and_then(Value::as_str).map(str::to_string);
    let path_of = |rel: &str| remote_path(&root, rel, win_join);
    let mut mkdirs: Vec<String> = dirs
        .iter()
        .filter(|d| have(d).is_none())
        .map(|d| path_of(d))
        .collect();
    if files.len() == 1
        && files[0].0.is_empty()
        && probe.data.get("parent_exists") == Some(&Value::Bool(false))
        && let Some((parent, _)) = root.rsplit_once(['\\', '/'])
    {
        mkdirs.push(parent.to_string());
    }
    let uploads: Vec<&(String, Content)> = files
        .iter()
        .filter(|(rel, c)| match have(rel) {
            None => true,
            Some(h) if h == "directory" => true,
            Some(h) => p.force && h != c.sha256,
        })
        .collect();
    if let Some((rel, _)) = uploads
        .iter()
        .find(|(rel, _)| have(rel).as_deref() == Some("directory"))
    {
        return Ok(ModuleResult::failed(format!(
            "`{}` is a folder",
            path_of(rel)
        )));
    }
    let mut r = ModuleResult {
        changed: !mkdirs.is_empty() || !uploads.is_empty(),
        ..ModuleResult::ok()
    }
    .with("dest", root.as_str());
    if let [(_, c)] = files.as_slice() {
        r = r.with("checksum", c.sha1.as_str()).with("size", c.size);
    }
    if ctx.check_mode || !r.changed {
        return Ok(r);
    }
    if !mkdirs.is_empty() {
        let m = pwsh::run_framed(ctx, &mkdir_body(&mkdirs), None).await?;
        if m.failed {
            return Ok(m);
        }
    }
    for (rel, c) in uploads {
        ctx.conn.put(&c.source, &path_of(rel), None).await?;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_parse() {
        let rels = vec![String::new(), "sub\\it's.txt".to_string()];
        pwsh::assert_parses(&pwsh::frame(
            true,
            &probe_body("C:\\k\\", Some("config"), &rels),
        ));
        pwsh::assert_parses(&pwsh::frame(false, &probe_body("C:\\k", None, &[])));
        pwsh::assert_parses(&pwsh::frame(false, &mkdir_body(&["C:\\k\\a".into()])));
        pwsh::assert_parses(&pwsh::frame(false, &remote_body("C:\\a", "C:\\b", true)));
        assert_eq!(win_join("C:\\k\\", "a/b"), "C:\\k\\a\\b");
    }
}
