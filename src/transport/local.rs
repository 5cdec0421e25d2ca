//! The local transport: commands run on the controller with `tokio::process`, files are
//! copied with `tokio::fs`. Used for `localhost`/`ansible_connection=local` and a local
//! hypervisor.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{ExecOutput, ExecRequest, HostTarget, Source, TransportError, quote};

/// How long output may stay silent after the command exited before its pipes are given up
/// on: a process the command left in the background (`sleep 10 &`) holds them open. As
/// ansible-core's `run_command`, which stops reading once the command has exited and a
/// one-second wait brings nothing.
pub(crate) const AFTER_EXIT_IDLE: std::time::Duration = std::time::Duration::from_secs(1);

/// The child's exit status and output: read until both pipes close, or until the child has
/// exited and its pipes stay silent for `AFTER_EXIT_IDLE`.
async fn wait_output(child: &mut tokio::process::Child) -> std::io::Result<std::process::Output> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(bool, Vec<u8>)>();
    let pipe = |r: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>>, is_err: bool| {
        let tx = tx.clone();
        tokio::spawn(async move {
            let Some(mut r) = r else { return };
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0 || tx.send((is_err, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        })
    };
    let out_task = pipe(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        false,
    );
    let err_task = pipe(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        true,
    );
    drop(tx);
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut keep = |(is_err, data): (bool, Vec<u8>)| {
        if is_err {
            stderr.extend_from_slice(&data);
        } else {
            stdout.extend_from_slice(&data);
        }
    };
    let mut status = None;
    let mut open = true;
    // Until the child exits: everything it prints.
    while status.is_none() {
        tokio::select! {
            s = child.wait() => status = Some(s?),
            msg = rx.recv(), if open => match msg {
                Some(m) => keep(m),
                None => open = false,
            },
        }
    }
    // After: what is left in the pipes, while it keeps coming.
    while open {
        match tokio::time::timeout(AFTER_EXIT_IDLE, rx.recv()).await {
            Ok(Some(m)) => keep(m),
            Ok(None) | Err(_) => open = false,
        }
    }
    out_task.abort();
    err_task.abort();
    Ok(std::process::Output {
        status: status.expect("the loop ends with a status"),
        stdout,
        stderr,
    })
}

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
            let (_, out) = tokio::join!(feed, wait_output(&mut child));
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
        let dest = Path::new(dest).to_path_buf();
        let cancelled = Arc::new(AtomicBool::new(false));
        // Dropping this future (Ctrl-C cancels the task) tells the copy to stop; the copy
        // owns its temp file and removes it, so nothing is left beside `dest`.
        let _stop = StopOnDrop(cancelled.clone());
        let job = {
            let (src, dest) = (src.clone(), dest.clone());
            tokio::task::spawn_blocking(move || put_blocking(&src, &dest, mode, &cancelled))
        };
        match job.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(PutError::Io(e))) => Err(self.io("upload", e)),
            Ok(Err(PutError::Checksum)) => Err(TransportError::Checksum {
                host: self.name.clone(),
                path: dest.display().to_string(),
            }),
            Ok(Err(PutError::Cancelled)) | Err(_) => Err(TransportError::Cancelled {
                host: self.name.clone(),
            }),
        }
    }

    pub async fn get(&self, src: &str, dest: &Path) -> Result<(), TransportError> {
        self.put(&Source::File(src.into()), &dest.display().to_string(), None)
            .await
    }
}

enum PutError {
    Io(std::io::Error),
    Checksum,
    Cancelled,
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Copy `src` into a temp sibling of `dest` in chunks (hashing as it goes), check what
/// landed, set the mode and rename into place. The temp file is removed on every way out
/// but the rename, including `cancelled` being set between chunks.
fn put_blocking(
    src: &Source,
    dest: &Path,
    mode: Option<u32>,
    cancelled: &AtomicBool,
) -> Result<(), PutError> {
    use std::io::{Read, Write};
    let tmp = temp_sibling(dest);
    let _guard = TempFile(tmp.clone());
    let mut out = std::fs::File::create(&tmp).map_err(PutError::Io)?;
    let mut hasher = Sha256::new();
    let mut write = |chunk: &[u8]| -> Result<(), PutError> {
        if cancelled.load(Ordering::SeqCst) {
            return Err(PutError::Cancelled);
        }
        hasher.update(chunk);
        out.write_all(chunk).map_err(PutError::Io)
    };
    match src {
        Source::Bytes(b) => {
            for chunk in b.chunks(CHUNK) {
                write(chunk)?;
            }
        }
        Source::File(p) => {
            let mut f = std::fs::File::open(p).map_err(PutError::Io)?;
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = f.read(&mut buf).map_err(PutError::Io)?;
                if n == 0 {
                    break;
                }
                write(&buf[..n])?;
            }
        }
    }
    out.sync_all().map_err(PutError::Io)?;
    drop(out);
    if let Some(m) = mode {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(m)).map_err(PutError::Io)?;
    }
    let expected = hex::encode(hasher.finalize());
    let mut landed = Sha256::new();
    std::io::copy(
        &mut std::fs::File::open(&tmp).map_err(PutError::Io)?,
        &mut landed,
    )
    .map_err(PutError::Io)?;
    if hex::encode(landed.finalize()) != expected {
        return Err(PutError::Checksum);
    }
    if cancelled.load(Ordering::SeqCst) {
        return Err(PutError::Cancelled);
    }
    // Once renamed, the guard finds nothing to remove.
    std::fs::rename(&tmp, dest).map_err(PutError::Io)
}

/// Bytes per write of a local copy (a cancelled copy stops within one chunk).
const CHUNK: usize = 1 << 20;

/// `dir/.name.kinit-tmp-<pid>` next to `dest`, so the final rename stays on one filesystem.
pub fn temp_sibling(dest: &Path) -> std::path::PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.kinit-tmp-{}", std::process::id()))
}

/// A temporary file removed on drop (a no-op once it was renamed away).
pub struct TempFile(pub std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        // Synchronous: drop cannot await, and one unlink does not stall the runtime.
        let _ = std::fs::remove_file(&self.0);
    }
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
