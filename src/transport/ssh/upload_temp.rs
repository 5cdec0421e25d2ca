//! Names of upload temporary files on SSH hosts, and which leftover ones may be removed.
//!
//! An upload writes `dir/.name.kinit-tmp-<controller>-<pid>-<start>-<seq>` and renames it
//! over `dir/name`. `<controller>` is 12 hex digits of a hash of the controller's host name,
//! machine id and boot id; `<pid>` and `<start>` are the uploading kinit process and its start
//! time (clock ticks since boot, as in `/proc/<pid>/stat`), so a reused pid is told apart;
//! `<seq>` counts this process's uploads.
//!
//! An upload whose connection is cut (sshd killed, network gone) cannot remove its temporary
//! file. Every later upload to the same destination therefore lists the `.name.kinit-tmp-*`
//! files beside it that its SSH user owns, and removes those that are stale:
//! - written by this kinit process, by an upload that is no longer in flight, or
//! - written by another kinit process on this same controller (same boot) that has ended.
//!
//! Nothing else is touched: a file whose name does not parse as above (a user's file, an
//! older kinit's `.name.kinit-tmp-<pid>`), a file another user owns, and any file written
//! from another controller (whose processes cannot be seen from here, so its run may still
//! be in flight) stay where they are.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use sha2::{Digest, Sha256};

/// What every temp name carries between `.name` and the per-process part.
const MARK: &str = ".kinit-tmp-";

/// File names of this process's uploads still in flight (unique: `<seq>` never repeats).
static IN_FLIGHT: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);
static SEQ: AtomicU64 = AtomicU64::new(0);

/// This controller's identity and this process's (pid, start time).
static ME: LazyLock<(String, u32, u64)> = LazyLock::new(|| {
    let pid = std::process::id();
    (controller(), pid, start_time(pid).unwrap_or(0))
});

fn controller() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut h = Sha256::new();
    for part in [
        read("/proc/sys/kernel/hostname"),
        read("/etc/machine-id"),
        read("/proc/sys/kernel/random/boot_id"),
    ] {
        h.update(part.trim().as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())[..12].to_string()
}

/// A process's start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`), or
/// `None` when no such process runs.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after it do not.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// One upload's temporary file, counted in flight until dropped.
pub(super) struct UploadTemp {
    path: String,
    name: String,
}

impl UploadTemp {
    /// A fresh temporary file name next to `dest`.
    pub fn new(dest: &str) -> Self {
        let (dir, base) = split(dest);
        let (ctl, pid, start) = &*ME;
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!(".{base}{MARK}{ctl}-{pid}-{start}-{seq}");
        IN_FLIGHT.lock().unwrap().insert(name.clone());
        Self {
            path: format!("{dir}{name}"),
            name,
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }
}

impl Drop for UploadTemp {
    fn drop(&mut self) {
        IN_FLIGHT
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.name);
    }
}

/// `dest` as (`dir/` or empty, file name).
fn split(dest: &str) -> (&str, &str) {
    match dest.rfind('/') {
        Some(i) => (&dest[..=i], &dest[i + 1..]),
        None => ("", dest),
    }
}

/// The shell glob (already quoted) matching every temp file of `dest`: a quoted prefix
/// followed by an unquoted `*`.
pub(super) fn sibling_glob(dest: &str) -> String {
    let (dir, base) = split(dest);
    format!(
        "{}*",
        crate::transport::quote::sh(&format!("{dir}.{base}{MARK}"))
    )
}

/// Whether the temp file `name` (a file name, no folder) may be removed: see the module doc.
pub(super) fn is_stale(name: &str) -> bool {
    let Some((ctl, pid, start, _)) = parse(name) else {
        return false;
    };
    let (my_ctl, my_pid, my_start) = &*ME;
    if ctl != my_ctl {
        return false;
    }
    if pid == *my_pid && start == *my_start {
        return !IN_FLIGHT
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(name);
    }
    start_time(pid) != Some(start)
}

/// `(controller, pid, start, seq)` of a temp file name, if it is one of this format.
fn parse(name: &str) -> Option<(&str, u32, u64, u64)> {
    let tail = &name[name.rfind(MARK)? + MARK.len()..];
    let mut parts = tail.split('-');
    let ctl = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    let seq = parts.next()?.parse().ok()?;
    let hex = ctl.len() == 12 && ctl.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && parts.next().is_none() && name.starts_with('.')).then_some((ctl, pid, start, seq))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_for(pid: u32, start: u64) -> String {
        format!(".f{MARK}{}-{pid}-{start}-7", ME.0)
    }

    #[test]
    fn own_temp_is_stale_only_once_its_upload_is_over() {
        let t = UploadTemp::new("/srv/a b/f.txt");
        let name = t.path().rsplit('/').next().unwrap().to_string();
        assert!(
            t.path().starts_with("/srv/a b/.f.txt.kinit-tmp-"),
            "{}",
            t.path()
        );
        assert!(!is_stale(&name), "in flight");
        drop(t);
        assert!(is_stale(&name), "its upload ended");
    }

    #[test]
    fn another_live_process_keeps_its_temp_and_an_ended_one_does_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let start = start_time(child.id()).unwrap();
        assert!(!is_stale(&name_for(child.id(), start)), "a live run");
        // Same pid, other start time: the pid was reused, the run that wrote it ended.
        assert!(is_stale(&name_for(child.id(), start + 1)));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(is_stale(&name_for(child.id(), start)), "the run ended");
    }

    #[test]
    fn names_not_of_this_controller_or_format_are_never_stale() {
        // pid 0 never runs: stale if it were this controller's.
        assert!(is_stale(&name_for(0, 1)));
        let other = if ME.0 == "000000000000" {
            "111111111111"
        } else {
            "000000000000"
        };
        assert!(
            !is_stale(&format!(".f{MARK}{other}-0-1-7")),
            "another controller's"
        );
        for name in [
            ".f.kinit-tmp-12345",
            ".f.kinit-tmp-mine",
            "f.kinit-tmp-",
            &format!("f{MARK}{}-0-1-7", ME.0),
            &format!(".f{MARK}{}-0-1-7-x", ME.0),
            &format!(".f{MARK}{}-0-1", ME.0),
        ] {
            assert!(!is_stale(name), "{name}");
        }
    }

    #[test]
    fn the_glob_quotes_the_path_and_leaves_the_star() {
        assert_eq!(
            sibling_glob("/d/it's"),
            format!("{}*", crate::transport::quote::sh("/d/.it's.kinit-tmp-"))
        );
        assert_eq!(sibling_glob("f"), ".f.kinit-tmp-*");
    }
}
