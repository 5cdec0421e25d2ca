//! File copy over the shell: uploads stream stdin into ONE PowerShell process (base64 lines,
//! one Send per chunk) that writes a temp file, renames it into place and prints the SHA-256
//! of what landed; downloads stream base64 lines out of one process followed by its SHA-256.
//! Both sides hash, so a mismatch is caught; neither side holds the whole file in memory.
//!
//! The scripts start with a `# kinit:put` / `# kinit:get` / `# kinit:discard` marker line, which the repository's
//! WinRM test server recognises (it runs sh, not PowerShell; see tests/winrm_server).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use tokio::io::AsyncReadExt as _;

use super::shell::{Shell, ShellError};
use crate::transport::Source;
use crate::transport::quote;

/// Raw bytes per Send: a multiple of 3 so every line is standalone base64; 64 KiB of base64
/// text, base64-encoded again in the envelope, stays well under MaxEnvelopeSize (150 KiB).
const CHUNK: usize = 48 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error(transparent)]
    Shell(#[from] ShellError),
    #[error("local file `{}`", path.display())]
    Local {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the remote side failed (exit code {rc}): {stderr}")]
    Remote { rc: i32, stderr: String },
    #[error("SHA-256 mismatch")]
    Checksum,
}

fn put_script(dest: &str) -> String {
    format!(
        r#"# kinit:put
$ErrorActionPreference = 'Stop'
$path = {path}
$tmp = $path + '.kinit-tmp'
$fs = [System.IO.File]::Create($tmp)
try {{
    $stdin = New-Object System.IO.StreamReader([Console]::OpenStandardInput())
    while ($null -ne ($line = $stdin.ReadLine())) {{
        if ($line.Length -gt 0) {{
            $bytes = [Convert]::FromBase64String($line)
            $fs.Write($bytes, 0, $bytes.Length)
        }}
    }}
}} finally {{ $fs.Dispose() }}
if (Test-Path -LiteralPath $path) {{ [System.IO.File]::Delete($path) }}
[System.IO.File]::Move($tmp, $path)
(Get-FileHash -Algorithm SHA256 -LiteralPath $path).Hash.ToLowerInvariant()
"#,
        path = quote::ps(dest)
    )
}

/// Removes what a cancelled upload to `dest` left behind (its `.kinit-tmp` file).
fn discard_script(dest: &str) -> String {
    format!(
        "# kinit:discard\n$path = {path}\n\
         Remove-Item -LiteralPath ($path + '.kinit-tmp') -Force -ErrorAction SilentlyContinue\n",
        path = quote::ps(dest)
    )
}

/// After a cancelled `put` (its command already terminated): remove the temp file it was
/// writing, so an interrupted run leaves nothing beside the destination.
pub async fn discard(shell: &mut Shell, dest: &str) -> Result<(), TransferError> {
    let cid = shell
        .start(&quote::ps_command_line(&discard_script(dest)))
        .await?;
    let mut err = Vec::new();
    shell
        .drive(&cid, &mut |_| Ok(()), &mut err, None)
        .await
        .map(drop)
        .map_err(TransferError::from)
}

fn get_script(src: &str) -> String {
    format!(
        r#"# kinit:get
$ErrorActionPreference = 'Stop'
$path = {path}
$fs = [System.IO.File]::OpenRead($path)
$sha = [System.Security.Cryptography.SHA256]::Create()
try {{
    $buf = New-Object byte[] {chunk}
    while (($n = $fs.Read($buf, 0, $buf.Length)) -gt 0) {{
        [void]$sha.TransformBlock($buf, 0, $n, $null, 0)
        [Console]::Out.WriteLine([Convert]::ToBase64String($buf, 0, $n))
    }}
    [void]$sha.TransformFinalBlock($buf, 0, 0)
}} finally {{ $fs.Dispose() }}
[Console]::Out.WriteLine('sha256:' + [BitConverter]::ToString($sha.Hash).Replace('-', '').ToLowerInvariant())
"#,
        path = quote::ps(src),
        chunk = CHUNK
    )
}

fn remote_failure(rc: i32, stderr: &[u8]) -> TransferError {
    let text = super::clixml::decode(stderr);
    TransferError::Remote {
        rc,
        stderr: String::from_utf8_lossy(&text).trim().to_string(),
    }
}

pub async fn put(shell: &mut Shell, src: &Source, dest: &str) -> Result<(), TransferError> {
    let cid = shell
        .start(&quote::ps_command_line(&put_script(dest)))
        .await?;
    let mut sha = Sha256::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    let line = |chunk: &[u8], sha: &mut Sha256| {
        sha.update(chunk);
        let mut l = b64.encode(chunk).into_bytes();
        l.extend_from_slice(b"\r\n");
        l
    };
    match src {
        Source::Bytes(bytes) => {
            let mut chunks = bytes.chunks(CHUNK).peekable();
            while let Some(c) = chunks.next() {
                let data = line(c, &mut sha);
                shell.send(&cid, &data, chunks.peek().is_none()).await?;
            }
            if bytes.is_empty() {
                shell.send(&cid, b"", true).await?;
            }
        }
        Source::File(path) => {
            let local = |source| TransferError::Local {
                path: path.clone(),
                source,
            };
            let mut file = tokio::fs::File::open(path).await.map_err(local)?;
            let mut buf = vec![0u8; CHUNK];
            loop {
                // Fill the whole buffer so every line but the last is a multiple of 3 bytes.
                let mut filled = 0;
                while filled < CHUNK {
                    let n = file.read(&mut buf[filled..]).await.map_err(local)?;
                    if n == 0 {
                        break;
                    }
                    filled += n;
                }
                let end = filled < CHUNK;
                let data = if filled > 0 {
                    line(&buf[..filled], &mut sha)
                } else {
                    Vec::new()
                };
                shell.send(&cid, &data, end).await?;
                if end {
                    break;
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut err = Vec::new();
    let rc = shell
        .drive(
            &cid,
            &mut |b| {
                out.extend_from_slice(b);
                Ok(())
            },
            &mut err,
            None,
        )
        .await?;
    if rc != 0 {
        return Err(remote_failure(rc, &err));
    }
    let remote = String::from_utf8_lossy(&out).trim().to_ascii_lowercase();
    if remote != hex::encode(sha.finalize()) {
        return Err(TransferError::Checksum);
    }
    Ok(())
}

/// Decodes the download stream line by line into the temp file.
struct LineSink {
    file: std::io::BufWriter<std::fs::File>,
    sha: Sha256,
    partial: Vec<u8>,
    remote_sha: Option<String>,
}

impl LineSink {
    fn feed(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.partial.extend_from_slice(data);
        while let Some(nl) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=nl).collect();
            let line = String::from_utf8_lossy(&line).trim().to_string();
            if let Some(h) = line.strip_prefix("sha256:") {
                self.remote_sha = Some(h.to_ascii_lowercase());
            } else if !line.is_empty() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&line)
                    .map_err(std::io::Error::other)?;
                self.sha.update(&bytes);
                // A bounded write to a local file; small enough not to stall the runtime.
                self.file.write_all(&bytes)?;
            }
        }
        Ok(())
    }
}

pub async fn get(shell: &mut Shell, src: &str, dest: &Path) -> Result<(), TransferError> {
    let mut tmp = dest.as_os_str().to_owned();
    tmp.push(".kinit-tmp");
    let tmp = PathBuf::from(tmp);
    let local = |source| TransferError::Local {
        path: dest.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(&tmp).map_err(local)?;
    // Removed unless renamed into place, also when the download is cancelled (future dropped).
    let _guard = crate::transport::local::TempFile(tmp.clone());
    let mut sink = LineSink {
        file: std::io::BufWriter::new(file),
        sha: Sha256::new(),
        partial: Vec::new(),
        remote_sha: None,
    };
    let result = async {
        let cid = shell
            .start(&quote::ps_command_line(&get_script(src)))
            .await?;
        let mut err = Vec::new();
        let rc = shell
            .drive(&cid, &mut |b| sink.feed(b), &mut err, None)
            .await?;
        if rc != 0 {
            return Err(remote_failure(rc, &err));
        }
        sink.feed(b"\n").map_err(local)?;
        sink.file.flush().map_err(local)?;
        let ours = hex::encode(sink.sha.clone().finalize());
        if sink.remote_sha.as_deref() != Some(ours.as_str()) {
            return Err(TransferError::Checksum);
        }
        Ok(())
    }
    .await;
    result?;
    std::fs::rename(&tmp, dest).map_err(local)
}
