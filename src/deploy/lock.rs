//! The per-cluster lock: `<state>/lock` holding the owner's PID and start time, created with
//! O_EXCL so exactly one `kinit run` wins. A lock whose PID no longer runs is stale and is
//! taken over (saying so); a live one is refused with its holder named, or waited for. The
//! file also records the kernel's start time of the holder process and the boot it ran in,
//! so a PID that another process reused (or that a reboot handed out again) is stale too. A
//! file that is not a lock (random bytes) is taken over after a short grace period.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "cluster `{cluster}` is locked by another kinit (PID {pid}, started {started}); \
         wait for it to finish, or pass `--wait-lock` to wait (lock file `{}`)",
        path.display()
    )]
    Held {
        cluster: String,
        pid: u32,
        started: String,
        path: PathBuf,
    },
    #[error("interrupted while waiting for the lock of cluster `{cluster}`")]
    Interrupted { cluster: String },
    #[error("cannot create the lock file `{}`", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The holder recorded in a lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// RFC 3339 UTC.
    pub started: String,
    /// The process's start time in clock ticks after boot (`/proc/<pid>/stat` field 22), and
    /// the boot's id; absent in lock files of older kinit versions.
    pub process_start: Option<u64>,
    pub boot_id: Option<String>,
}

impl Holder {
    fn parse(text: &str) -> Option<Self> {
        let mut pid = None;
        let mut started = None;
        let (mut process_start, mut boot_id) = (None, None);
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("pid=") {
                pid = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("started=") {
                started = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("process_start=") {
                process_start = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("boot_id=") {
                boot_id = Some(v.trim().to_string());
            }
        }
        Some(Self {
            pid: pid?,
            started: started?,
            process_start,
            boot_id,
        })
    }

    /// Whether the holder still runs: its process exists, is not a zombie (a holder killed
    /// by a signal its parent has not reaped yet still has a `/proc` entry), and is the same
    /// process that wrote the lock (same boot, same start time), not one that reused its PID.
    fn alive(&self) -> bool {
        let stat = Path::new("/proc").join(self.pid.to_string()).join("stat");
        let Ok(text) = fs::read_to_string(stat) else {
            return false;
        };
        if matches!(process_state(&text), Some('Z' | 'X')) {
            return false;
        }
        if let (Some(recorded), Some(now)) = (&self.boot_id, boot_id())
            && *recorded != now
        {
            return false;
        }
        match (self.process_start, process_start_ticks(&text)) {
            (Some(recorded), Some(now)) => recorded == now,
            _ => true,
        }
    }
}

/// The state letter of a `/proc/<pid>/stat` line (after the command name, which may itself
/// hold spaces and parentheses).
fn process_state(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Field 22 of a `/proc/<pid>/stat` line, the start time in clock ticks after boot (field 3,
/// the state, is the first after the command name).
fn process_start_ticks(stat: &str) -> Option<u64> {
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(22 - 3)?
        .parse()
        .ok()
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`).
fn boot_id() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

/// The lock file's text for this process.
fn my_lock_text() -> String {
    let mut text = format!(
        "pid={}\nstarted={}\n",
        std::process::id(),
        rfc3339(SystemTime::now())
    );
    if let Some(ticks) = fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| process_start_ticks(&s))
    {
        text += &format!("process_start={ticks}\n");
    }
    if let Some(id) = boot_id() {
        text += &format!("boot_id={id}\n");
    }
    text
}

/// A held lock; removed when dropped.
#[derive(Debug)]
pub struct ClusterLock {
    path: PathBuf,
}

impl Drop for ClusterLock {
    fn drop(&mut self) {
        // Only remove the file when it is still ours (a takeover by someone else after we
        // were presumed dead must not be undone).
        if let Ok(t) = fs::read_to_string(&self.path)
            && Holder::parse(&t).is_some_and(|h| h.pid == std::process::id())
        {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Take the lock of `cluster` at `path`. `wait`: poll until the holder is gone instead of
/// refusing. `note` receives the messages for the user (stale takeover, waiting).
pub fn acquire(
    path: &Path,
    cluster: &str,
    wait: bool,
    mut note: impl FnMut(String),
) -> Result<ClusterLock, LockError> {
    let io = |source| LockError::Io {
        path: path.to_path_buf(),
        source,
    };
    let me = my_lock_text();
    let mut said_waiting = false;
    let mut unreadable = 0;
    loop {
        match OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(mut f) => {
                f.write_all(me.as_bytes()).map_err(io)?;
                f.sync_all().map_err(io)?;
                return Ok(ClusterLock {
                    path: path.to_path_buf(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        // Bytes, not UTF-8 text: a lock file of garbage must not block every later run.
        let text = match fs::read(path) {
            Ok(t) => String::from_utf8_lossy(&t).into_owned(),
            // Removed between our create and our read: try again.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(e)),
        };
        let Some(holder) = Holder::parse(&text) else {
            // The holder is between creating and writing the file; give it a moment.
            unreadable += 1;
            if unreadable < 20 {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            note(format!(
                "taking over the unreadable lock `{}` of cluster `{cluster}`",
                path.display()
            ));
            take_over(path, &text).map_err(io)?;
            continue;
        };
        if !holder.alive() {
            note(format!(
                "taking over the stale lock of cluster `{cluster}`: PID {} (started {}) is no longer running",
                holder.pid, holder.started
            ));
            take_over(path, &text).map_err(io)?;
            continue;
        }
        if !wait {
            return Err(LockError::Held {
                cluster: cluster.to_string(),
                pid: holder.pid,
                started: holder.started,
                path: path.to_path_buf(),
            });
        }
        if !said_waiting {
            note(format!(
                "waiting for the lock of cluster `{cluster}`, held by PID {} (started {})",
                holder.pid, holder.started
            ));
            said_waiting = true;
        }
        if crate::interrupt::requested() {
            return Err(LockError::Interrupted {
                cluster: cluster.to_string(),
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Remove a stale lock, but only if it still is the one we judged stale (another process may
/// have taken it over in between).
fn take_over(path: &Path, seen: &str) -> std::io::Result<()> {
    match fs::read(path) {
        Ok(now) if String::from_utf8_lossy(&now) == seen => match fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// `SystemTime` as `YYYY-MM-DDTHH:MM:SSZ` (UTC), without a date crate.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day), Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(rfc3339(t), "2026-11-18T11:06:40Z");
    }

    #[test]
    fn zombie_holders_are_dead() {
        assert_eq!(process_state("42 (kinit) S 1 42 42"), Some('S'));
        assert_eq!(process_state("42 (a) b) (c) Z 1 42 42"), Some('Z'));
        assert_eq!(process_state("garbage"), None);
        // A child that exited but is not reaped yet: still in /proc, but not alive.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let zombie = Holder {
            pid: child.id(),
            started: String::new(),
            process_start: None,
            boot_id: None,
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while zombie.alive() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(Path::new("/proc").join(child.id().to_string()).exists());
        assert!(!zombie.alive());
        child.wait().unwrap();
        assert!(
            Holder {
                pid: std::process::id(),
                started: String::new(),
                process_start: None,
                boot_id: None,
            }
            .alive()
        );
    }

    #[test]
    fn second_holder_refused_stale_taken_over() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lock");
        let held = acquire(&p, "c", false, |_| {}).unwrap();
        let err = acquire(&p, "c", false, |_| {}).unwrap_err().to_string();
        assert!(
            err.contains(&format!("PID {}", std::process::id())),
            "{err}"
        );
        drop(held);
        assert!(!p.exists());
        // PIDs are below 2^22 on Linux, so this one cannot be running.
        fs::write(&p, "pid=4294967\nstarted=2020-01-01T00:00:00Z\n").unwrap();
        let mut notes = Vec::new();
        let _l = acquire(&p, "c", false, |n| notes.push(n)).unwrap();
        assert!(notes[0].contains("stale lock"), "{notes:?}");
        assert!(notes[0].contains("4294967"));
    }

    /// Regression: a lock file of random bytes failed every later run (not UTF-8); it is
    /// taken over as unreadable.
    #[test]
    fn a_lock_file_of_random_bytes_is_taken_over() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lock");
        fs::write(&p, [0xff, 0xfe, 0x00, 0x9c, 0x80, 0x41]).unwrap();
        let mut notes = Vec::new();
        let _l = acquire(&p, "c", false, |n| notes.push(n)).unwrap();
        assert!(notes[0].contains("unreadable lock"), "{notes:?}");
        let text = fs::read_to_string(&p).unwrap();
        assert!(
            text.contains(&format!("pid={}", std::process::id())),
            "{text}"
        );
    }

    /// Regression: a lock whose PID now belongs to another process (reused after the holder
    /// died, or after a reboot) blocked runs although its start time was recorded.
    #[test]
    fn a_reused_pid_is_a_stale_lock() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lock");
        let mine = my_lock_text();
        assert!(mine.contains("process_start="), "{mine}");
        // This process's PID, but a start time it does not have: another process's lock.
        let holder = Holder::parse(&mine).unwrap();
        let other = mine.replace(
            &format!("process_start={}", holder.process_start.unwrap()),
            &format!("process_start={}", holder.process_start.unwrap() + 1),
        );
        fs::write(&p, &other).unwrap();
        let mut notes = Vec::new();
        let _l = acquire(&p, "c", false, |n| notes.push(n)).unwrap();
        assert!(notes[0].contains("stale lock"), "{notes:?}");
        // The same for another boot.
        let rebooted = Holder {
            boot_id: Some("00000000-0000-0000-0000-000000000000".into()),
            ..holder.clone()
        };
        assert!(!rebooted.alive());
        assert!(holder.alive(), "the real holder is alive");
    }
}
