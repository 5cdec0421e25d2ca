//! The text `mount` reads and writes, as pure functions: an fstab entry set or removed
//! the way ansible.posix.mount edits the file (its `_set_mount_save_old` and `unset_mount`),
//! and the Linux mount table parsed from `/proc/self/mountinfo` the way its
//! `get_linux_mounts` reads it (bind mounts report the directory they show, not the device).

use std::collections::HashMap;

/// The fields of one fstab entry, as given (escaped on the way into the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Set only when the task gave `src` (it tells swap entries apart).
    pub src: Option<String>,
    pub name: String,
    pub fstype: Option<String>,
    pub opts: String,
    pub dump: String,
    pub passno: String,
}

/// An fstab field with space, `&` and backslash written as octal escapes (fstab(5)).
pub fn escape(v: &str) -> String {
    v.replace('\\', "\\134")
        .replace(' ', "\\040")
        .replace('&', "\\046")
}

/// The file's lines, each with its newline (the last may lack one).
fn raw_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Whether the parsed line `src name fstype` is the entry `e` names. Swap entries all have
/// the mount point `none`: there the source tells them apart (upstream compares the
/// unescaped `src` there).
fn names(e: &Entry, src: &str, name: &str, fstype: &str) -> bool {
    if name != escape(&e.name) {
        return false;
    }
    !(name == "none" && fstype == "swap" && e.src.as_deref().is_some_and(|s| s != src))
}

/// The fstab text with `e` in it: every entry for the mount point brought to the given
/// fields (a line with 4 or 5 fields is rewritten with all 6, as upstream compares the
/// missing `dump`/`passno` as different), or a new line appended. A line's trailing comment
/// goes when it is rewritten. `None` when nothing changes.
pub fn set(text: &str, e: &Entry) -> Option<String> {
    let want = [
        e.src.as_deref().map(escape).unwrap_or_default(),
        escape(&e.name),
        e.fstype.as_deref().map(escape).unwrap_or_default(),
        escape(&e.opts),
        escape(&e.dump),
        escape(&e.passno),
    ];
    let mut out = String::new();
    let (mut exists, mut changed) = (false, false);
    for line in raw_lines(text) {
        let line = if line.ends_with('\n') {
            line.to_string()
        } else {
            format!("{line}\n")
        };
        let trimmed = line.trim();
        let fields: Vec<&str> = line
            .split('#')
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        if trimmed.is_empty()
            || trimmed.starts_with('#')
            || !(4..=6).contains(&fields.len())
            || !names(e, fields[0], fields[1], fields[2])
        {
            out.push_str(&line);
            continue;
        }
        exists = true;
        let mut have: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
        // Fields 0 (src), 2 (fstype), 3 (opts), 4 (dump), 5 (passno) are compared.
        for i in [0, 2, 3, 4, 5] {
            if have.get(i) != Some(&want[i]) {
                have.resize(6, String::new());
                have[i] = want[i].clone();
                changed = true;
            }
        }
        if changed {
            out.push_str(&format!("{}\n", have.join(" ")));
        } else {
            out.push_str(&line);
        }
    }
    if !exists {
        out.push_str(&format!("{}\n", want.join(" ")));
        changed = true;
    }
    changed.then_some(out)
}

/// The fstab text without the entries for `e`'s mount point (only lines of exactly six
/// fields count as entries, as upstream's `unset_mount` splits them), or `None` when there
/// is none.
pub fn unset(text: &str, e: &Entry) -> Option<String> {
    let mut out = String::new();
    let mut changed = false;
    for line in raw_lines(text) {
        let trimmed = line.trim();
        let fields: Vec<&str> = line.split_whitespace().collect();
        if !trimmed.is_empty()
            && !trimmed.starts_with('#')
            && fields.len() == 6
            && names(e, fields[0], fields[1], fields[2])
        {
            changed = true;
        } else {
            out.push_str(line);
        }
    }
    changed.then_some(out)
}

/// One mounted file system, by its mount point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mounted {
    /// The source as upstream computes it: the device for a mount of a file system's root,
    /// the directory shown for a bind mount.
    pub src: String,
    /// The source the kernel reports (what `mount -v` prints first).
    pub device: String,
    pub fstype: String,
}

/// `/proc/self/mountinfo` as mount point -> what is mounted there (the last mount wins).
pub fn linux_mounts(mountinfo: &str) -> HashMap<String, Mounted> {
    struct Rec<'a> {
        id: u64,
        parent: u64,
        root: &'a str,
        dst: &'a str,
        fs: &'a str,
        src: &'a str,
    }
    let recs: Vec<Rec<'_>> = mountinfo
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 10).then(|| Rec {
                id: f[0].parse().unwrap_or(0),
                parent: f[1].parse().unwrap_or(0),
                root: f[3],
                dst: f[4],
                fs: f[f.len() - 3],
                src: f[f.len() - 2],
            })
        })
        .collect();
    let by_id: HashMap<u64, &Rec<'_>> = recs.iter().map(|r| (r.id, r)).collect();
    let mut out = HashMap::new();
    for r in &recs {
        let src = match by_id.get(&r.parent).filter(|_| r.parent != 1) {
            Some(p) => {
                // A child's root inside its parent's root is shown relative to that root,
                // then under the parent's mount point.
                let mut root = r.root.to_string();
                if p.root.len() > 1 && root.starts_with(&format!("{}/", p.root)) {
                    root = root[p.root.len()..].to_string();
                }
                if p.dst != "/" {
                    root = format!("{}{root}", p.dst);
                }
                root
            }
            None => r.src.to_string(),
        };
        out.insert(
            r.dst.to_string(),
            Mounted {
                src,
                device: r.src.to_string(),
                fstype: r.fs.to_string(),
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> Entry {
        Entry {
            src: Some("none".into()),
            name: name.into(),
            fstype: Some("tmpfs".into()),
            opts: "size=1m".into(),
            dump: "0".into(),
            passno: "0".into(),
        }
    }

    #[test]
    fn set_appends_keeps_and_rewrites_like_upstream() {
        let e = entry("/mnt/a b");
        let added = set("# c\nUUID=x / ext4 defaults 0 1", &e).unwrap();
        assert_eq!(
            added,
            "# c\nUUID=x / ext4 defaults 0 1\nnone /mnt/a\\040b tmpfs size=1m 0 0\n"
        );
        assert_eq!(set(&added, &e), None);
        // Four fields: rewritten with six; a trailing comment goes.
        assert_eq!(
            set("none /mnt/a\\040b tmpfs size=1m # x\n", &e).unwrap(),
            "none /mnt/a\\040b tmpfs size=1m 0 0\n"
        );
        let mut e2 = e.clone();
        e2.opts = "size=2m".into();
        assert_eq!(
            set(&added, &e2).unwrap(),
            "# c\nUUID=x / ext4 defaults 0 1\nnone /mnt/a\\040b tmpfs size=2m 0 0\n"
        );
    }

    #[test]
    fn swap_entries_are_told_apart_by_source() {
        let mut e = entry("none");
        e.src = Some("/dev/b".into());
        e.fstype = Some("swap".into());
        let text = "/dev/a none swap sw 0 0\n";
        assert!(
            set(text, &e)
                .unwrap()
                .ends_with("/dev/b none swap size=1m 0 0\n")
        );
        assert_eq!(unset(text, &e), None);
    }

    #[test]
    fn unset_removes_only_six_field_entries() {
        let e = entry("/m");
        assert_eq!(
            unset("a /m t o 0 0\nb /m t o 0 0 # c\n#a /m t o 0 0\n", &e).unwrap(),
            "b /m t o 0 0 # c\n#a /m t o 0 0\n"
        );
        assert_eq!(unset("x /n t o 0 0", &e), None);
    }

    #[test]
    fn mountinfo_reports_devices_and_bind_sources() {
        let info = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
                    42 22 0:35 / /tmp rw - tmpfs tmpfs rw\n\
                    78 42 0:35 /aaa /tmp/bbb rw - tmpfs tmpfs rw\n\
                    80 22 8:1 /srv /mnt/srv rw shared:1 - ext4 /dev/sda1 rw\n";
        let m = linux_mounts(info);
        assert_eq!(m["/"].src, "/dev/sda1");
        assert_eq!(m["/tmp/bbb"].src, "/tmp/aaa");
        assert_eq!(m["/mnt/srv"].src, "/srv");
        assert_eq!(m["/mnt/srv"].device, "/dev/sda1");
        assert_eq!(m["/tmp"].fstype, "tmpfs");
    }
}
