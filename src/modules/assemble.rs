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

use md5::{Digest, Md5};
use regex::Regex;
use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::boolish;
use super::command::yes;
use super::filewrite::{self, Content, Write};
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

/// Python's `codecs.escape_decode` for the escapes a delimiter uses: `\n`, `\t`, `\\`,
/// octal and `\x` bytes; an unknown escape stays as it is.
pub fn escape_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        let simple = match c {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'v' => Some(11),
            b'\\' => Some(b'\\'),
            b'\'' => Some(b'\''),
            b'"' => Some(b'"'),
            _ => None,
        };
        if let Some(x) = simple {
            out.push(x);
        } else if c == b'\n' {
            // A backslash-newline is a line continuation.
        } else if (b'0'..=b'7').contains(&c) {
            let mut v = u32::from(c - b'0');
            let mut n = 1;
            while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                v = v * 8 + u32::from(b[i] - b'0');
                i += 1;
                n += 1;
            }
            out.push((v & 0xff) as u8);
        } else if c == b'x'
            && i + 2 <= b.len()
            && let Ok(v) = u8::from_str_radix(&s[i..i + 2], 16)
        {
            out.push(v);
            i += 2;
        } else {
            out.extend_from_slice(&[b'\\', c]);
        }
    }
    out
}

/// Which fragment names are used, in order (`names` are the folder's regular files).
pub fn select(mut names: Vec<String>, regexp: Option<&Regex>, ignore_hidden: bool) -> Vec<String> {
    names.sort();
    names
        .into_iter()
        .filter(|n| regexp.is_none_or(|re| re.is_match(n)))
        .filter(|n| !(ignore_hidden && n.starts_with('.')))
        .collect()
}

/// The fragments joined as upstream joins them.
pub fn assemble(fragments: &[Vec<u8>], delimiter: Option<&str>) -> Vec<u8> {
    let delimiter = delimiter.filter(|d| !d.is_empty()).map(escape_decode);
    let mut out = Vec::new();
    for (i, f) in fragments.iter().enumerate() {
        if i > 0 {
            if !fragments[i - 1].ends_with(b"\n") {
                out.push(b'\n');
            }
            if let Some(d) = &delimiter {
                out.extend_from_slice(d);
                if d.last() != Some(&b'\n') {
                    out.push(b'\n');
                }
            }
        }
        out.extend_from_slice(f);
    }
    out
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

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_get_newlines_and_delimiters_between_them() {
        let f = |s: &str| s.as_bytes().to_vec();
        assert_eq!(assemble(&[f("a"), f("b\n"), f("c")], None), b"a\nb\nc");
        assert_eq!(
            assemble(&[f("a\n"), f("b")], Some("# --- \\x41\\t")),
            b"a\n# --- A\t\nb"
        );
        assert_eq!(
            assemble(&[f("a\n"), f("b\n")], Some("--\\n")),
            b"a\n--\nb\n"
        );
    }

    #[test]
    fn escapes_decode_as_python_does() {
        assert_eq!(escape_decode(r"a\nb\\c\101\q"), b"a\nb\\cA\\q");
    }

    #[test]
    fn names_are_sorted_filtered_and_hidden_ones_skipped() {
        let names = vec!["b".to_string(), ".h".into(), "a10".into(), "a2".into()];
        let re = Regex::new("^[a-z.]").unwrap();
        assert_eq!(select(names.clone(), Some(&re), true), ["a10", "a2", "b"]);
        assert_eq!(select(names, None, false), [".h", "a10", "a2", "b"]);
    }
}
