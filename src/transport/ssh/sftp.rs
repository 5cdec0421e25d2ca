//! File transfer: small uploads through one command, the rest over SFTP (one SFTP session per
//! connection, opened on first use).
//!
//! An upload of at most `INLINE_MAX` bytes is one command (one round trip): the bytes go in
//! as the command's stdin, and the same command writes the temporary file next to the
//! destination, checks its `sha256sum`, applies the mode and renames it into place. Larger
//! uploads stream into the temporary file over SFTP while hashing (open, writes, close: three
//! or more round trips), then the same finishing command runs. Downloads stream into a local
//! temporary file while hashing and compare with the remote `sha256sum` (run concurrently).
//! Only inline uploads hold the file in memory, and those are small.
//!
//! Transfers are timed by progress, not per request: on a slow link (256 kbit/s, 200 ms
//! delay) one SFTP write can wait far longer than any fixed request timeout behind the others
//! in flight, which failed uploads over 64 KiB while the connection was fine. A transfer
//! fails only when no byte has moved for `STALL` (the cause then says so); the library's own
//! per-request limit is set well above that.
//!
//! The finishing command can also read who owns the destination once it is in place (for
//! `put_owned`: a file module's result names the owner, and a command of its own for that
//! would be one more round trip per written file). It also lists the destination's other
//! temporary files owned by the SSH user; those `upload_temp` finds stale (left by an upload
//! whose connection was cut) are removed by one more command, run only when there are any.

use std::path::Path;

use russh_sftp::client::SftpSession;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{OnceCell, OwnedSemaphorePermit};

use super::SshConnection;
use super::upload_temp::{self, UploadTemp};
use crate::transport::local::temp_sibling;
use crate::transport::{ExecOutput, ExecRequest, FileOwner, Source, TransportError, quote};

const CHUNK: usize = 256 * 1024;
/// Uploads up to this size go inline through one command instead of SFTP. The bytes travel
/// base64-encoded inside the command text, so this also bounds that text.
const INLINE_MAX: u64 = 64 * 1024;
/// A transfer with no byte moved for this long has stalled.
const STALL: std::time::Duration = std::time::Duration::from_secs(60);
/// russh-sftp's limit for one request (10 s by default): only a backstop behind `STALL`.
const REQUEST_LIMIT_SECS: u64 = 600;
/// Exit status of the finishing command when the checksum does not match.
const MISMATCH: i32 = 97;

#[derive(Default)]
pub(super) struct SftpCell {
    session: OnceCell<(SftpSession, OwnedSemaphorePermit)>,
    /// Temporary upload files not yet renamed into place or removed. An upload whose future
    /// is dropped (Ctrl-C cancels the task) leaves its entry here, and `close` removes the
    /// file, so an interrupted run leaves no `.name.kinit-tmp-*` beside the destination.
    pending: std::sync::Mutex<Vec<String>>,
}

impl SftpCell {
    async fn get(&self, c: &SshConnection) -> Result<&SftpSession, TransportError> {
        let (s, _) =
            self.session
                .get_or_try_init(|| async {
                    let permit = c
                        .channels
                        .clone()
                        .acquire_owned()
                        .await
                        .map_err(|_| super::exec::closed(&c.name))?;
                    let ch =
                        c.conn.handle.channel_open_session().await.map_err(|e| {
                            super::exec::lost(&c.name, "opening an SFTP channel", e)
                        })?;
                    ch.request_subsystem(true, "sftp")
                        .await
                        .map_err(|e| super::exec::lost(&c.name, "starting SFTP", e))?;
                    let s = SftpSession::new(ch.into_stream())
                        .await
                        .map_err(|e| sftp_err(&c.name, "starting SFTP", e))?;
                    s.set_timeout(REQUEST_LIMIT_SECS);
                    Ok::<_, TransportError>((s, permit))
                })
                .await?;
        Ok(s)
    }

    pub async fn close(&self) {
        if let Some((s, _)) = self.session.get() {
            let abandoned = std::mem::take(&mut *self.pending.lock().unwrap());
            for tmp in abandoned {
                let _ = s.remove_file(tmp).await;
            }
            let _ = s.close().await;
        }
    }
}

fn sftp_err(host: &str, what: &str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Io {
        host: host.to_string(),
        what: what.to_string(),
        source: std::io::Error::other(e.to_string()),
    }
}

pub(super) async fn put(
    c: &SshConnection,
    src: &Source,
    dest: &str,
    mode: Option<u32>,
    owner: bool,
) -> Result<Option<FileOwner>, TransportError> {
    let temp = UploadTemp::new(dest);
    let tmp = temp.path().to_string();
    let inline = match src {
        Source::Bytes(b) if b.len() as u64 <= INLINE_MAX => Some(b.clone()),
        Source::File(p) => match tokio::fs::metadata(p).await {
            Ok(m) if m.len() <= INLINE_MAX => Some(
                tokio::fs::read(p)
                    .await
                    .map_err(|e| io(&c.name, &format!("reading local `{}`", p.display()), e))?,
            ),
            _ => None,
        },
        Source::Bytes(_) => None,
    };
    if let Some(bytes) = inline {
        // The remote shell runs the whole command even when this future is dropped, and the
        // command itself removes the temporary file on every failure it sees.
        let found = put_inline(c, bytes, dest, mode, owner, &tmp).await?;
        drop(temp);
        return tidy(c, dest, found, owner).await;
    }
    let sftp = c.sftp.get(c).await?;
    c.sftp.pending.lock().unwrap().push(tmp.clone());
    let done = put_via(c, sftp, src, dest, mode, owner, &tmp).await;
    if done.is_ok() {
        c.sftp.pending.lock().unwrap().retain(|p| p != &tmp);
    }
    drop(temp);
    tidy(c, dest, done?, owner).await
}

/// Remove the stale ones among `found`, the temp files of `dest` that its finishing command
/// listed (after the owner's line when `owner` asked for one). Best effort: the upload itself
/// succeeded, and a leftover is tried again next time. Returns the owner read.
async fn tidy(
    c: &SshConnection,
    dest: &str,
    mut found: Vec<String>,
    owner: bool,
) -> Result<Option<FileOwner>, TransportError> {
    let owner = if owner && !found.is_empty() {
        FileOwner::parse(&found.remove(0))
    } else {
        None
    };
    let dir = match dest.rfind('/') {
        Some(i) => &dest[..=i],
        None => "",
    };
    let stale: Vec<String> = found
        .into_iter()
        .filter(|n| upload_temp::is_stale(n))
        .map(|n| format!("{dir}{n}"))
        .collect();
    if !stale.is_empty() {
        let rm = format!("rm -f -- {}", quote::sh_join(&stale));
        let _ = c.exec(&ExecRequest::new(rm)).await;
    }
    Ok(owner)
}

/// Write `bytes` to `dest` in one command: stdin into `tmp`, then [`install_script`].
/// Returns the other temp files of `dest` found.
async fn put_inline(
    c: &SshConnection,
    bytes: Vec<u8>,
    dest: &str,
    mode: Option<u32>,
    owner: bool,
    tmp: &str,
) -> Result<Vec<String>, TransportError> {
    let expected = hex::encode(Sha256::digest(&bytes));
    let t = quote::sh(tmp);
    let script = format!(
        "cat > {t} || {{ rc=$?; rm -f {t}; exit $rc; }}; {}",
        install_script(tmp, dest, mode, owner, &expected)
    );
    let req = ExecRequest {
        stdin: Some(bytes),
        ..ExecRequest::new(script)
    };
    finish(c, dest, c.exec(&req).await?)
}

/// Upload into `tmp`, check, chmod and rename into `dest`; removes `tmp` on the failures it
/// sees itself (a dropped future is `SftpCell::close`'s to clean up). Returns the other temp
/// files of `dest` found.
async fn put_via(
    c: &SshConnection,
    sftp: &SftpSession,
    src: &Source,
    dest: &str,
    mode: Option<u32>,
    owner: bool,
    tmp: &str,
) -> Result<Vec<String>, TransportError> {
    let tmp = tmp.to_string();
    let what = format!("uploading `{dest}`");
    let moved = std::sync::atomic::AtomicU64::new(0);
    let sent = async {
        let mut file = sftp
            .create(tmp.clone())
            .await
            .map_err(|e| sftp_err(&c.name, &what, e))?;
        let mut hasher = Sha256::new();
        match src {
            Source::Bytes(b) => {
                let mut bytes: &[u8] = b;
                copy_hashed(&mut bytes, &mut file, &mut hasher, &moved)
                    .await
                    .map_err(|e| io(&c.name, &what, e))?;
            }
            Source::File(p) => {
                let mut local = tokio::fs::File::open(p)
                    .await
                    .map_err(|e| io(&c.name, &format!("reading local `{}`", p.display()), e))?;
                copy_hashed(&mut local, &mut file, &mut hasher, &moved)
                    .await
                    .map_err(|e| io(&c.name, &what, e))?;
            }
        }
        file.shutdown().await.map_err(|e| io(&c.name, &what, e))?;
        Ok::<_, TransportError>(hex::encode(hasher.finalize()))
    };
    let sent = until_stalled(&c.name, &what, &moved, sent).await;
    let expected = match sent {
        Ok(h) => h,
        Err(e) => {
            let _ = sftp.remove_file(tmp.clone()).await;
            return Err(e);
        }
    };
    let script = install_script(&tmp, dest, mode, owner, &expected);
    finish(c, dest, c.exec(&ExecRequest::new(script)).await?)
}

/// The finishing command of every upload: check the temporary file's SHA-256, apply the
/// mode, rename it into place; remove it on any failure. Once in place, print (with `owner`)
/// one line of the destination's owner, empty when `stat` cannot tell, then the names of the
/// destination's other temp files that the SSH user owns, one a line.
fn install_script(tmp: &str, dest: &str, mode: Option<u32>, owner: bool, expected: &str) -> String {
    let (t, d) = (quote::sh(tmp), quote::sh(dest));
    let chmod = match mode {
        Some(m) => format!("chmod {m:o} {t}"),
        // Replacing a file keeps its permissions, as writing into it would.
        None => format!("if [ -e {d} ]; then chmod --reference={d} {t} 2>/dev/null; fi"),
    };
    let owner = if owner {
        format!("o=$(stat -c '%u %g %U %G' -- {d} 2>/dev/null); printf '%s\\n' \"$o\"; ")
    } else {
        String::new()
    };
    format!(
        "h=$(sha256sum < {t}); h=${{h%% *}}; if [ \"$h\" != {expected} ]; then rm -f {t}; \
         exit {MISMATCH}; fi; {chmod} && mv -f {t} {d} || {{ rc=$?; rm -f {t}; exit $rc; }}; \
         {owner}for f in {glob}; do [ -f \"$f\" ] && [ -O \"$f\" ] && \
         printf '%s\\n' \"${{f##*/}}\"; done; :",
        glob = upload_temp::sibling_glob(dest),
    )
}

/// The upload's outcome from its finishing command's exit status, and the other temp files
/// of `dest` it listed.
fn finish(c: &SshConnection, dest: &str, out: ExecOutput) -> Result<Vec<String>, TransportError> {
    match out.rc {
        0 => Ok(out.stdout_str().lines().map(str::to_string).collect()),
        MISMATCH => Err(TransportError::Checksum {
            host: c.name.clone(),
            path: dest.to_string(),
        }),
        rc => Err(TransportError::Protocol {
            host: c.name.clone(),
            what: format!("installing `{dest}`"),
            detail: format!("exit status {rc}: {}", out.stderr_str().trim()),
        }),
    }
}

pub(super) async fn get(c: &SshConnection, src: &str, dest: &Path) -> Result<(), TransportError> {
    let sftp = c.sftp.get(c).await?;
    let what = format!("downloading `{src}`");
    let tmp = temp_sibling(dest);
    let moved = std::sync::atomic::AtomicU64::new(0);
    let download = async {
        let mut remote = sftp
            .open(src.to_string())
            .await
            .map_err(|e| sftp_err(&c.name, &what, e))?;
        let mut local = tokio::fs::File::create(&tmp)
            .await
            .map_err(|e| io(&c.name, &format!("writing `{}`", tmp.display()), e))?;
        let mut hasher = Sha256::new();
        copy_hashed(&mut remote, &mut local, &mut hasher, &moved)
            .await
            .map_err(|e| io(&c.name, &what, e))?;
        local.flush().await.map_err(|e| io(&c.name, &what, e))?;
        Ok::<_, TransportError>(hex::encode(hasher.finalize()))
    };
    let download = until_stalled(&c.name, &what, &moved, download);
    let sum_req = ExecRequest::new(format!("sha256sum {} | cut -c1-64", quote::sh(src)));
    let remote_sum = c.exec(&sum_req);
    let (got, remote_sum) = tokio::join!(download, remote_sum);
    let verdict = match (got, remote_sum) {
        (Ok(got), Ok(sum)) if sum.stdout_str().trim() == got => Ok(()),
        (Ok(_), Ok(_)) => Err(TransportError::Checksum {
            host: c.name.clone(),
            path: src.to_string(),
        }),
        (Err(e), _) | (Ok(_), Err(e)) => Err(e),
    };
    if let Err(e) = verdict {
        let _ = tokio::fs::remove_file(&tmp).await;
        return Err(e);
    }
    tokio::fs::rename(&tmp, dest)
        .await
        .map_err(|e| io(&c.name, &format!("writing `{}`", dest.display()), e))
}

/// Copy `from` into `to` in `CHUNK`s, feeding every byte to `hasher` on the way: both
/// directions check the bytes that crossed the wire against the remote `sha256sum`.
/// Copy while hashing, counting the bytes written in `moved` (read by `until_stalled`). Writes
/// go in pieces of `PIECE` so progress shows on a slow link too.
async fn copy_hashed<R, W>(
    from: &mut R,
    to: &mut W,
    hasher: &mut Sha256,
    moved: &std::sync::atomic::AtomicU64,
) -> std::io::Result<()>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    const PIECE: usize = 32 * 1024;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buf[..n]);
        for piece in buf[..n].chunks(PIECE) {
            to.write_all(piece).await?;
            moved.fetch_add(piece.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Runs `work` until it ends, or fails it once `moved` has not grown for `STALL`.
async fn until_stalled<T>(
    host: &str,
    what: &str,
    moved: &std::sync::atomic::AtomicU64,
    work: impl std::future::Future<Output = Result<T, TransportError>>,
) -> Result<T, TransportError> {
    tokio::pin!(work);
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    let (mut seen, mut since) = (0u64, tokio::time::Instant::now());
    loop {
        tokio::select! {
            r = &mut work => return r,
            _ = tick.tick() => {
                let now = moved.load(std::sync::atomic::Ordering::Relaxed);
                if now != seen {
                    (seen, since) = (now, tokio::time::Instant::now());
                } else if since.elapsed() >= STALL {
                    return Err(TransportError::Timeout {
                        host: host.to_string(),
                        what: format!("{what} (no byte moved; {seen} bytes sent before the link stalled)"),
                        after: STALL,
                    });
                }
            }
        }
    }
}

fn io(host: &str, what: &str, source: std::io::Error) -> TransportError {
    TransportError::Io {
        host: host.to_string(),
        what: what.to_string(),
        source,
    }
}
