//! Atomic file writes (the state folder, issued certificates): a temp file beside the target, fsync, rename,
//! fsync of the folder. A crash leaves either the old file or the new one, never half of one.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Write `bytes` to `path` with permission `mode`, atomically.
pub fn write(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let tmp = temp_name(path);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        // The umask may have narrowed the mode; secrets need exactly 0600, others what we say.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        sync_dir(path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Make a completed file (written by another program) durable, then move it into place.
pub fn commit(tmp: &Path, path: &Path, mode: u32) -> std::io::Result<()> {
    fs::set_permissions(tmp, fs::Permissions::from_mode(mode))?;
    File::open(tmp)?.sync_all()?;
    fs::rename(tmp, path)?;
    sync_dir(path)
}

/// A temp name in the same folder (rename only is atomic within one file system).
pub fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp.{}", std::process::id()))
}

fn sync_dir(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_file_with_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        write(&p, b"one", 0o600).unwrap();
        write(&p, b"two", 0o644).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o644
        );
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
