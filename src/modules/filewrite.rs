//! Putting whole-file content on a host: the check-then-apply core of `copy`, `template`,
//! `lineinfile`, `blockinfile` and `sysctl`.
//!
//! One probe reads the destination's stat and checksum (and its content when a diff or an edit
//! needs it); the decision is made on the controller; the upload goes through
//! `Connection::put` (temp file + rename, so nothing is left half-written); one more command
//! takes a backup before it, one more fixes owner/group after it, only when needed. Results
//! name the written file's owner: over SSH the upload's own finishing command reads it, else
//! it is read together with the fix (or alone, on the local transport).

use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::transport::Source;
use crate::transport::quote::sh;

use super::posix::{self, Attrs, Ids, Kind, RemoteStat};
use super::{Diff, ModuleCtx, ModuleError, ModuleResult};

/// Content to place at a destination, with its hashes computed once.
pub struct Content {
    pub source: Source,
    pub sha256: String,
    pub sha1: String,
    pub size: u64,
}

impl Content {
    pub fn bytes(b: Vec<u8>) -> Self {
        Self {
            sha256: hex::encode(Sha256::digest(&b)),
            sha1: hex::encode(Sha1::digest(&b)),
            size: b.len() as u64,
            source: Source::Bytes(b),
        }
    }

    /// A local file, hashed by streaming (it may be a large image).
    pub async fn file(path: &std::path::Path) -> Result<Self, ModuleError> {
        Self::local(path, false).await
    }

    /// The MD5 of the content, which ansible-core's `copy` reports as `md5sum` for a file it
    /// wrote; computed only then (a second read of a file source).
    pub async fn md5(&self) -> Option<String> {
        // md-5 implements the newer `digest` traits than sha1/sha2 here.
        use md5::{Digest as _, Md5};
        match &self.source {
            Source::Bytes(b) => Some(hex::encode(Md5::digest(b))),
            Source::File(path) => {
                let path = path.clone();
                let sum = move || -> std::io::Result<String> {
                    let mut h = Md5::new();
                    read_chunks(&path, |chunk| h.update(chunk))?;
                    Ok(hex::encode(h.finalize()))
                };
                tokio::task::spawn_blocking(sum).await.ok()?.ok()
            }
        }
    }

    /// A local file to copy: its plaintext when it is vault-encrypted and `decrypt` is on
    /// (`copy`'s default, Ansible's `decrypt: true`), else the file as it is, hashed by
    /// streaming. One pass on a blocking thread: the file is opened once, and the vault header
    /// is looked for in its first bytes (each `tokio::fs` call is a hand-off to the blocking
    /// pool, which a copy per task paid several times over; see ci/bench/RESULTS.md).
    pub async fn local(path: &std::path::Path, decrypt: bool) -> Result<Self, ModuleError> {
        let fail = |msg: String| ModuleError::Failed { msg };
        let cannot =
            |e: &dyn std::fmt::Display| fail(format!("cannot read `{}`: {e}", path.display()));
        let owned = path.to_path_buf();
        let read = tokio::task::spawn_blocking(move || read_local(&owned, decrypt))
            .await
            .map_err(|e| cannot(&e))?;
        match read.map_err(|e| cannot(&e))? {
            Local::Vaulted(bytes) => {
                let plain =
                    crate::vault::file_bytes(path, bytes).map_err(|e| fail(e.to_string()))?;
                Ok(Self::bytes(plain))
            }
            Local::Hashed { sha256, sha1, size } => Ok(Self {
                source: Source::File(path.to_path_buf()),
                sha256,
                sha1,
                size,
            }),
        }
    }

    /// The content as text for a diff; async because a file source is read from disk.
    async fn text(&self) -> Option<String> {
        match &self.source {
            Source::Bytes(b) => String::from_utf8(b.clone()).ok(),
            Source::File(p) if self.size < 256 * 1024 => tokio::fs::read_to_string(p).await.ok(),
            Source::File(_) => None,
        }
    }
}

/// What one blocking pass over a local file found.
enum Local {
    /// The whole file, which starts with the vault header (to decrypt).
    Vaulted(Vec<u8>),
    /// The file's hashes and size, its bytes left on disk.
    Hashed {
        sha256: String,
        sha1: String,
        size: u64,
    },
}

/// Read `path` once: the whole of it when `decrypt` is on and it starts with the vault header,
/// else only its hashes.
fn read_local(path: &std::path::Path, decrypt: bool) -> std::io::Result<Local> {
    let (mut s256, mut s1, mut size) = (Sha256::new(), Sha1::new(), 0u64);
    // The head is kept until it is long enough to tell a vault header from the rest.
    let head_len = crate::vault::HEADER.len();
    let mut head = Vec::new();
    let mut vaulted = None;
    read_chunks(path, |chunk| {
        s256.update(chunk);
        s1.update(chunk);
        size += chunk.len() as u64;
        match vaulted {
            None if decrypt => {
                head.extend_from_slice(chunk);
                if head.len() >= head_len {
                    vaulted = Some(crate::vault::is_vaulted(&head));
                }
            }
            Some(true) => head.extend_from_slice(chunk),
            _ => {}
        }
    })?;
    // A file shorter than the header is not vaulted (`vaulted` stays `None`).
    if vaulted == Some(true) {
        return Ok(Local::Vaulted(head));
    }
    Ok(Local::Hashed {
        sha256: hex::encode(s256.finalize()),
        sha1: hex::encode(s1.finalize()),
        size,
    })
}

/// Feed `path`'s bytes to `each` in chunks (blocking reads).
fn read_chunks(path: &std::path::Path, mut each: impl FnMut(&[u8])) -> std::io::Result<()> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        each(&buf[..n]);
    }
}

/// Where `dest` leads when it is a symbolic link (its final target, as Python's
/// `os.path.realpath`); `dest` itself otherwise, or when the host cannot say.
pub async fn resolve_link(ctx: &ModuleCtx<'_>, dest: &str) -> Result<String, ModuleError> {
    let q = crate::transport::quote::sh(dest);
    let out = ctx
        .run(format!("if [ -L {q} ]; then readlink -f -- {q}; fi"))
        .await?;
    let target = out.stdout_str().trim_end_matches('\n').to_string();
    Ok(if out.success() && !target.is_empty() {
        target
    } else {
        dest.to_string()
    })
}

/// What is at the destination now.
pub struct Before {
    pub ids: Ids,
    pub stat: RemoteStat,
    /// The current bytes, when asked for (edits and diffs).
    pub content: Option<Vec<u8>>,
}

impl Before {
    /// The current content as text (invalid UTF-8 replaced; empty when not read or absent).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        self.content
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default()
    }
}

/// Probe `dest` (following links, as writes do); with `read` also fetch its bytes.
pub async fn probe(ctx: &ModuleCtx<'_>, dest: &str, read: bool) -> Result<Before, ModuleError> {
    probe_with(ctx, "", dest, read).await.map(|(b, _)| b)
}

/// [`probe`], running `first` (sh text) in the same command; its output is returned too.
pub async fn probe_with(
    ctx: &ModuleCtx<'_>,
    first: &str,
    dest: &str,
    read: bool,
) -> Result<(Before, String), ModuleError> {
    let script = if read {
        posix::read_script(dest)
    } else {
        posix::stat_script(&[posix::StatReq {
            path: dest,
            follow: true,
            checksum: Some(posix::Algo::Sha256),
        }])
    };
    let out = ctx.run(format!("{first}\n{script}")).await?;
    let pre = String::from_utf8_lossy(posix::before_probe(&out.stdout)).into_owned();
    let (ids, mut stats, rest) =
        posix::parse_probe(&out.stdout, 1).ok_or_else(|| ModuleError::Failed {
            msg: format!(
                "cannot inspect `{dest}` on the host: {}",
                out.stderr_str().trim()
            ),
        })?;
    let stat = stats.remove(0);
    let content = (read && stat.kind == Kind::File).then_some(rest);
    Ok((Before { ids, stat, content }, pre))
}

/// How to write.
pub struct Write<'a> {
    pub dest: &'a str,
    pub attrs: &'a Attrs,
    pub backup: bool,
    /// Replace a file whose content differs (`false`: only create a missing file).
    pub force: bool,
    /// `validate`: a command with `%s` that must succeed on the new file (uploaded beside the
    /// destination) before it replaces the old one.
    pub validate: Option<&'a str>,
}

/// `state: file` on a `copy`/`template` result whose destination is a file once it ran, as
/// upstream's `add_path_info` reports it (not for a new file in check mode, nor a failure).
pub fn with_file_state(r: ModuleResult, ctx: &ModuleCtx<'_>, before: &Before) -> ModuleResult {
    if r.failed || (ctx.check_mode && before.stat.kind != Kind::File) {
        return r;
    }
    r.with("state", "file")
}

/// Write `text` to `dest` as it is (no backup, attributes or validation), given what `probe`
/// saw: the write of modules that keep a whole file's text themselves (`sysctl`,
/// `known_hosts`).
pub async fn write_text(
    ctx: &ModuleCtx<'_>,
    dest: &str,
    text: String,
    before: &Before,
) -> Result<ModuleResult, ModuleError> {
    let attrs = Attrs::default();
    let w = Write {
        dest,
        attrs: &attrs,
        backup: false,
        force: true,
        validate: None,
    };
    apply(ctx, &w, Content::bytes(text.into_bytes()), before).await
}

/// Bring `w.dest` to `content` and the requested attributes, given what `probe` saw.
pub async fn apply(
    ctx: &ModuleCtx<'_>,
    w: &Write<'_>,
    content: Content,
    before: &Before,
) -> Result<ModuleResult, ModuleError> {
    let stat = &before.stat;
    match stat.kind {
        Kind::Absent | Kind::File => {}
        Kind::Directory => {
            return Ok(ModuleResult::failed(format!(
                "destination `{}` is a directory",
                w.dest
            )));
        }
        _ => {
            return Ok(ModuleResult::failed(format!(
                "destination `{}` is not a regular file",
                w.dest
            )));
        }
    }
    let exists = stat.kind == Kind::File;
    let differs = stat.checksum.as_deref() != Some(content.sha256.as_str());
    let write = !exists || (w.force && differs);
    let mut result = ModuleResult::ok()
        .with("dest", w.dest)
        .with("checksum", content.sha1.clone())
        .with("size", content.size);
    if write && ctx.diff {
        result.diff = Some(Diff {
            path: Some(w.dest.to_string()),
            before: before
                .content
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
                .into(),
            after: content
                .text()
                .await
                .unwrap_or_else(|| "<binary>".into())
                .into(),
        });
    }

    if !write {
        let fix = w.attrs.fix_script(w.dest, stat, false);
        result.changed = !fix.is_empty();
        let mode = w
            .attrs
            .mode
            .as_ref()
            .and_then(|m| m.resolve(stat.mode, false));
        result = result.with("mode", posix::mode_str(mode.unwrap_or(stat.mode)));
        if !result.changed || ctx.check_mode {
            return Ok(with_owner(result, stat));
        }
        return fix_and_read_owner(ctx, &fix, w.dest, result, "cannot set attributes of").await;
    }

    result.changed = true;
    if let Some(md5) = content.md5().await {
        result = result.with("md5sum", md5);
    }
    // An existing file keeps its mode and ownership unless new ones are asked for.
    let base_mode = if exists { stat.mode } else { 0o644 };
    let mode = match &w.attrs.mode {
        Some(m) => m.resolve(base_mode, false),
        None => exists.then_some(stat.mode),
    };
    result = result.with("mode", posix::mode_str(mode.unwrap_or(base_mode)));
    if ctx.check_mode {
        return Ok(if exists {
            with_owner(result, stat)
        } else {
            result
        });
    }
    if exists && w.backup {
        let script = format!(
            "b={d}.$(date +%Y-%m-%d@%H:%M:%S)~ && cp -p -- {d} \"$b\" && printf %s \"$b\"",
            d = sh(w.dest)
        );
        let out = ctx.run(script).await?;
        if !out.success() {
            return Ok(ModuleResult::failed(format!(
                "cannot back up `{}`: {}",
                w.dest,
                out.stderr_str().trim()
            )));
        }
        result = result.with("backup_file", out.stdout_str());
    }
    // Over SSH the upload itself reads the new file's owner back (see `fix_and_read_owner`).
    let owner = match w.validate {
        None => ctx.conn.put_owned(&content.source, w.dest, mode).await?,
        Some(check) => {
            if let Some(failed) = validated_put(ctx, w.dest, check, &content, mode).await? {
                return Ok(failed);
            }
            None
        }
    };
    // After the upload the file belongs to the connecting user.
    let uploaded = RemoteStat {
        kind: Kind::File,
        mode: mode.unwrap_or(base_mode),
        uid: before.ids.uid,
        gid: before.ids.gid,
        owner: String::new(),
        group: String::new(),
        ..stat.clone()
    };
    let keep = Attrs {
        mode: None,
        owner: w
            .attrs
            .owner
            .clone()
            .or_else(|| exists.then(|| stat.uid.to_string())),
        group: w
            .attrs
            .group
            .clone()
            .or_else(|| exists.then(|| stat.gid.to_string())),
    };
    let fix = keep.fix_script(w.dest, &uploaded, false);
    if fix.is_empty()
        && let Some(o) = owner
    {
        return Ok(result
            .with("uid", o.uid)
            .with("gid", o.gid)
            .with("owner", o.user)
            .with("group", o.group));
    }
    fix_and_read_owner(ctx, &fix, w.dest, result, "cannot set owner of").await
}

/// Run `fix` (may be empty) and read the file's owner back in the same run: the result names
/// the file's owner and group, as ansible-core's copy/template results do. A write with
/// nothing to fix has its owner from the upload where the transport reads it (SSH): one
/// command less per written file, which the `file` benchmark's controller CPU showed
/// (ci/bench/RESULTS.md).
async fn fix_and_read_owner(
    ctx: &ModuleCtx<'_>,
    fix: &str,
    dest: &str,
    mut result: ModuleResult,
    what: &str,
) -> Result<ModuleResult, ModuleError> {
    let script = format!(
        "{fix}{sep}stat -c '%u %g %U %G' -- {d}",
        sep = if fix.is_empty() { "" } else { " && " },
        d = sh(dest)
    );
    let out = ctx.run(script).await?;
    if !out.success() {
        return Ok(ModuleResult::failed(format!(
            "{what} `{dest}`: {}",
            out.stderr_str().trim()
        )));
    }
    let ids = out.stdout_str();
    let mut ids = ids.split_whitespace();
    if let (Some(uid), Some(gid), Some(owner), Some(group)) =
        (ids.next(), ids.next(), ids.next(), ids.next())
    {
        result = result
            .with("uid", uid.parse::<u64>().ok())
            .with("gid", gid.parse::<u64>().ok())
            .with("owner", owner)
            .with("group", group);
    }
    Ok(result)
}

/// The owner fields of a file's result from its stat, as ansible-core's file results have.
fn with_owner(result: ModuleResult, stat: &RemoteStat) -> ModuleResult {
    result
        .with("uid", stat.uid)
        .with("gid", stat.gid)
        .with("owner", stat.owner.as_str())
        .with("group", stat.group.as_str())
}

/// Upload `content` beside `dest`, run `check` (its `%s` the uploaded file) and move the file
/// into place only if the check succeeds, as Ansible's `validate` does. Returns the failed
/// result (with the check's rc and output) when the check refused the file; the upload is
/// removed then and `dest` is untouched.
async fn validated_put(
    ctx: &ModuleCtx<'_>,
    dest: &str,
    check: &str,
    content: &Content,
    mode: Option<u32>,
) -> Result<Option<ModuleResult>, ModuleError> {
    if !check.contains("%s") {
        return Ok(Some(ModuleResult::failed(format!(
            "validate must contain %s: {check}"
        ))));
    }
    let tmp = format!("{dest}.kinit-validate");
    ctx.conn.put(&content.source, &tmp, mode).await?;
    let cmd = check.replace("%s", &sh(&tmp));
    let out = ctx.run(cmd.clone()).await?;
    if !out.success() {
        let _ = ctx.run(format!("rm -f -- {}", sh(&tmp))).await;
        // The shape of Ansible's copy/template result: `exit_status`, not `rc`.
        let mut failed = ModuleResult::failed("failed to validate").with_output(&out);
        failed.data.remove("rc");
        return Ok(Some(failed.with("exit_status", out.rc)));
    }
    let moved = ctx
        .run(format!("mv -f -- {} {}", sh(&tmp), sh(dest)))
        .await?;
    if !moved.success() {
        return Ok(Some(ModuleResult::failed(format!(
            "cannot move the validated file to `{dest}`: {}",
            moved.stderr_str().trim()
        ))));
    }
    Ok(None)
}
