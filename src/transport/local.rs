//! The local transport: commands run on the controller with `tokio::process`, files are
//! copied with `tokio::fs`. Used for `localhost`/`ansible_connection=local` and a local
//! hypervisor.

use std::path::Path;
use std::process::Stdio;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{ExecOutput, ExecRequest, HostTarget, Source, TransportError, quote};

pub struct LocalConnection {
    name: String,
}

impl LocalConnection {
    pub fn new(target: &HostTarget) -> Self {
        Self {
            name: target.name.clone(),
        }
    }

    fn io(&self, what: &str, source: std::io::Error) -> TransportError {
        TransportError::Io {
            host: self.name.clone(),
            what: what.to_string(),
            source,
        }
    }

    pub async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        let mut cmd = tokio::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(quote::sh_wrap(req))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| self.io("spawn /bin/sh", e))?;
        let mut group = GroupGuard(child.id());
        let mut stdin = child.stdin.take();
        let mut input = Vec::new();
        if let Some(pw) = req.become_.as_ref().and_then(|b| b.password.as_ref()) {
            input.extend_from_slice(pw.expose().as_bytes());
            input.push(b'\n');
        }
        if let Some(data) = &req.stdin {
            input.extend_from_slice(data);
        }
        let feed = async move {
            if let Some(mut s) = stdin.take() {
                // A command that exits without reading its stdin is not an error.
                let _ = s.write_all(&input).await;
            }
        };
        let run = async {
            let (_, out) = tokio::join!(feed, child.wait_with_output());
            out
        };
        let out = match req.timeout {
            Some(t) => tokio::time::timeout(t, run)
                .await
                .map_err(|_| TransportError::Timeout {
                    host: self.name.clone(),
                    what: "command".into(),
                    after: t,
                })?,
            None => run.await,
        }
        .map_err(|e| self.io("command", e))?;
        group.0 = None;
        Ok(ExecOutput {
            // A signal death has no code; report it the way a shell would (128 + signal).
            rc: out.status.code().unwrap_or_else(|| {
                use std::os::unix::process::ExitStatusExt;
                128 + out.status.signal().unwrap_or(0)
            }),
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }

    pub async fn put(
        &self,
        src: &Source,
        dest: &str,
        mode: Option<u32>,
    ) -> Result<(), TransportError> {
        let dest = Path::new(dest);
        let tmp = temp_sibling(dest);
        let result = async {
            let expected = match src {
                Source::Bytes(b) => {
                    tokio::fs::write(&tmp, b).await?;
                    hex::encode(Sha256::digest(b))
                }
                Source::File(p) => {
                    tokio::fs::copy(p, &tmp).await?;
                    sha256_file(p).await?
                }
            };
            if let Some(m) = mode {
                use std::os::unix::fs::PermissionsExt;
                tokio::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(m)).await?;
            }
            Ok::<_, std::io::Error>(expected)
        }
        .await;
        let expected = match result {
            Ok(e) => e,
            Err(e) => {
                let _ = tokio::fs::remove_file(&tmp).await;
                return Err(self.io("upload", e));
            }
        };
        let got = sha256_file(&tmp).await.map_err(|e| self.io("upload", e))?;
        if got != expected {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(TransportError::Checksum {
                host: self.name.clone(),
                path: dest.display().to_string(),
            });
        }
        tokio::fs::rename(&tmp, dest)
            .await
            .map_err(|e| self.io("upload", e))
    }

    pub async fn get(&self, src: &str, dest: &Path) -> Result<(), TransportError> {
        self.put(&Source::File(src.into()), &dest.display().to_string(), None)
            .await
    }
}

/// `dir/.name.kinit-tmp-<pid>` next to `dest`, so the final rename stays on one filesystem.
pub fn temp_sibling(dest: &Path) -> std::path::PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.kinit-tmp-{}", std::process::id()))
}

/// Streamed SHA-256 of a local file, hex.
pub async fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = tokio::fs::File::open(path).await?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = f.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Kills a command's whole process group when its `exec` future is dropped before the
/// command ended (cancellation, timeout): `kill_on_drop` alone reaches `/bin/sh` but not
/// what the script started, which would be left running.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pgid}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}
