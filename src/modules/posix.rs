//! POSIX sh snippets the file-handling modules share: one probe that stats any number of paths
//! (kind, mode, owner, size, checksum, link target) in a single command, its parser, and the
//! `chown`/`chgrp`/`chmod` text that brings a path to the requested attributes.
//!
//! All words that come from the user are quoted with `crate::transport::quote::sh`.

use crate::transport::quote::sh;

use super::mode::Mode;

/// The sh function `_ks PATH FOLLOW ALGO` printing one `kinit-stat|...` record, and the
/// connecting user's ids (to know whether an upload changed a file's owner).
const PRELUDE: &str = r#"_ks() {
  _p=$1; _k=absent; _a=; _s=; _l=; _x=
  [ -L "$_p" ] && _l=$(readlink -- "$_p")
  if [ "$2" = 0 ] && [ -L "$_p" ]; then _k=link
  elif [ -d "$_p" ]; then _k=directory
  elif [ -f "$_p" ]; then _k=file
  elif [ -e "$_p" ]; then _k=other; fi
  if [ $_k != absent ]; then
    _f=; [ "$2" = 1 ] && _f=-L
    _a=$(stat $_f -c '%a %u %g %s %Y %U %G' -- "$_p" 2>/dev/null)
    [ -r "$_p" ] && _x=r; [ -w "$_p" ] && _x=${_x}w; [ -x "$_p" ] && _x=${_x}x
  fi
  if [ $_k = file ] && [ -n "$3" ]; then _s=$(${3}sum 2>/dev/null < "$_p"); _s=${_s%% *}; fi
  printf 'kinit-stat|%s|%s|%s|%s|%s\n' "$_k" "$_a" "$_x" "$_s" "$_l"
}
printf 'kinit-id|%s|%s\n' "$(id -u)" "$(id -g)"
"#;

/// Which checksum the probe computes on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Algo {
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Algo {
    /// The name of the coreutils program (`sha256` for `sha256sum`).
    pub fn tool(self) -> &'static str {
        match self {
            Algo::Md5 => "md5",
            Algo::Sha1 => "sha1",
            Algo::Sha224 => "sha224",
            Algo::Sha256 => "sha256",
            Algo::Sha384 => "sha384",
            Algo::Sha512 => "sha512",
        }
    }
}

/// One path to stat in a probe.
pub struct StatReq<'a> {
    pub path: &'a str,
    pub follow: bool,
    pub checksum: Option<Algo>,
}

/// A probe script: the prelude, then one `_ks` call per request (records come back in order).
pub fn stat_script(reqs: &[StatReq<'_>]) -> String {
    let mut s = String::from(PRELUDE);
    for r in reqs {
        s.push_str(&format!(
            "_ks {} {} {}\n",
            sh(r.path),
            u8::from(r.follow),
            r.checksum.map(Algo::tool).unwrap_or("''")
        ));
    }
    s
}

/// The probe for one path followed by the file's raw bytes (for modules that edit content).
pub fn read_script(path: &str) -> String {
    format!(
        "{}_ks {p} 1 sha256\n[ -f {p} ] && [ -r {p} ] && cat -- {p}\nexit 0\n",
        PRELUDE,
        p = sh(path)
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Absent,
    File,
    Directory,
    Link,
    Other,
}

/// What a probe saw at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteStat {
    pub kind: Kind,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub mtime: i64,
    pub owner: String,
    pub group: String,
    pub readable: bool,
    pub writeable: bool,
    pub executable: bool,
    pub checksum: Option<String>,
    pub link_target: Option<String>,
}

impl RemoteStat {
    pub fn exists(&self) -> bool {
        self.kind != Kind::Absent
    }
}

/// The ids of the user the probe ran as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ids {
    pub uid: u32,
    pub gid: u32,
}

/// Parse a probe's output: the user's ids, the stat records in request order, and whatever
/// bytes follow the last record (file content from [`read_script`]).
///
/// Lines a module printed before the probe (its own extra facts) are skipped; read them with
/// [`before_probe`].
pub fn parse_probe(out: &[u8], records: usize) -> Option<(Ids, Vec<RemoteStat>, Vec<u8>)> {
    let mut rest = &out[before_probe(out).len()..];
    let mut next_line = || -> Option<String> {
        let end = rest.iter().position(|b| *b == b'\n')?;
        let line = String::from_utf8_lossy(&rest[..end]).into_owned();
        rest = &rest[end + 1..];
        Some(line)
    };
    let id_line = next_line()?;
    let mut f = id_line.strip_prefix("kinit-id|")?.split('|');
    let ids = Ids {
        uid: f.next()?.parse().ok()?,
        gid: f.next()?.parse().ok()?,
    };
    let mut stats = Vec::with_capacity(records);
    for _ in 0..records {
        stats.push(parse_record(&next_line()?)?);
    }
    Some((ids, stats, rest.to_vec()))
}

/// The bytes printed before the probe's first line.
pub fn before_probe(out: &[u8]) -> &[u8] {
    let start = out.windows(9).position(|w| w == b"kinit-id|").unwrap_or(0);
    &out[..start]
}

fn parse_record(line: &str) -> Option<RemoteStat> {
    let mut f = line.strip_prefix("kinit-stat|")?.splitn(5, '|');
    let kind = match f.next()? {
        "absent" => Kind::Absent,
        "file" => Kind::File,
        "directory" => Kind::Directory,
        "link" => Kind::Link,
        _ => Kind::Other,
    };
    let attrs: Vec<&str> = f.next()?.split(' ').collect();
    let access = f.next()?;
    let sum = f.next()?;
    let link = f.next()?;
    let num = |i: usize| {
        attrs
            .get(i)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Some(RemoteStat {
        kind,
        mode: attrs
            .first()
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .unwrap_or(0),
        uid: num(1) as u32,
        gid: num(2) as u32,
        size: num(3),
        mtime: attrs.get(4).and_then(|s| s.parse().ok()).unwrap_or(0),
        owner: attrs.get(5).unwrap_or(&"").to_string(),
        group: attrs.get(6).unwrap_or(&"").to_string(),
        readable: access.contains('r'),
        writeable: access.contains('w'),
        executable: access.contains('x'),
        checksum: (!sum.is_empty()).then(|| sum.to_string()),
        link_target: (!link.is_empty()).then(|| link.to_string()),
    })
}

/// Requested ownership and permissions of a path.
#[derive(Debug, Clone, Default)]
pub struct Attrs {
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
}

impl Attrs {
    /// The commands (joined with `&&`) that bring `path`, currently `stat`, to these
    /// attributes; empty when it already has them. `recurse` applies them below a directory.
    pub fn fix_script(&self, path: &str, stat: &RemoteStat, recurse: bool) -> String {
        let r = if recurse { "-R " } else { "" };
        let mut cmds = Vec::new();
        if let Some(o) = &self.owner
            && !same_id(o, &stat.owner, stat.uid)
        {
            cmds.push(format!("chown -h {r}{} -- {}", sh(o), sh(path)));
        }
        if let Some(g) = &self.group
            && !same_id(g, &stat.group, stat.gid)
        {
            cmds.push(format!("chgrp -h {r}{} -- {}", sh(g), sh(path)));
        }
        if stat.kind != Kind::Link
            && let Some(want) = self
                .mode
                .as_ref()
                .and_then(|m| m.resolve(stat.mode, stat.kind == Kind::Directory))
            && want != stat.mode
        {
            cmds.push(format!("chmod {r}{:04o} -- {}", want, sh(path)));
        }
        cmds.join(" && ")
    }

    /// Commands applying every requested attribute to `path` and everything below it. With
    /// `follow`, links met on the way are followed: their targets change, and a linked
    /// folder's content too (ansible-core's `recursive_set_attributes`).
    pub fn recursive_script(&self, path: &str, follow: bool) -> String {
        // Followed, a dangling link is left alone (its target does not exist).
        let each = |tool: &str, arg: &str| {
            if follow {
                format!(
                    "find -L {} ! -type l -exec {tool} {} -- {{}} +",
                    sh(path),
                    sh(arg)
                )
            } else {
                let how = if tool == "chmod" { "-R" } else { "-R -h" };
                format!("{tool} {how} {} -- {}", sh(arg), sh(path))
            }
        };
        let mut cmds = Vec::new();
        if let Some(o) = &self.owner {
            cmds.push(each("chown", o));
        }
        if let Some(g) = &self.group {
            cmds.push(each("chgrp", g));
        }
        if let Some(m) = self.mode.as_ref().and_then(Mode::chmod_arg) {
            cmds.push(each("chmod", &m));
        }
        cmds.join(" && ")
    }

    /// A probe snippet that shows, for `recurse`, whether anything below `path` differs from
    /// these attributes, so a recursive fix runs only when needed: `kinit-drift` for a wrong
    /// owner, group or octal mode; for a symbolic mode (`u+rwx`), whose outcome depends on
    /// each entry's mode, one `kinit-m <mode> <type>` line per entry, decided by `drifted`.
    pub fn drift_script(&self, path: &str, follow: bool) -> String {
        let find = if follow { "find -L" } else { "find" };
        let mut tests = Vec::new();
        if let Some(o) = &self.owner {
            tests.push(format!("! -user {}", sh(o)));
        }
        if let Some(g) = &self.group {
            tests.push(format!("! -group {}", sh(g)));
        }
        if let Some(Mode::Octal(m)) = &self.mode {
            tests.push(format!("! -perm {m:04o}"));
        }
        let mut s = String::new();
        if !tests.is_empty() {
            s.push_str(&format!(
                "[ -n \"$({find} {} \\( {} \\) -print 2>/dev/null | head -n 1)\" ] && echo kinit-drift\n",
                sh(path),
                tests.join(" -o ")
            ));
        }
        if let Some(Mode::Symbolic(..)) = &self.mode {
            s.push_str(&format!(
                "{find} {} -printf 'kinit-m %m %y\\n' 2>/dev/null\n",
                sh(path)
            ));
        }
        s
    }

    /// Whether the output of `drift_script` shows anything to fix.
    pub fn drifted(&self, out: &str) -> bool {
        if out.contains("kinit-drift") {
            return true;
        }
        let Some(mode) = &self.mode else { return false };
        out.lines()
            .filter_map(|l| l.strip_prefix("kinit-m "))
            .filter_map(|l| l.split_once(' '))
            // `chmod -R` leaves links alone.
            .filter(|(_, kind)| *kind != "l")
            .filter_map(|(m, kind)| Some((u32::from_str_radix(m, 8).ok()?, kind == "d")))
            .any(|(m, dir)| mode.resolve(m, dir).is_some_and(|want| want != m))
    }
}

/// Whether a requested owner/group (`name` or numeric id) is what the file has.
fn same_id(want: &str, name: &str, id: u32) -> bool {
    want == name || want.parse::<u32>().is_ok_and(|n| n == id)
}

/// A snippet printing what ansible-core's `add_path_info` adds to a result naming a path that
/// exists (links followed to tell): `kinit-pi|<state>|<uid> <gid> <mode> <size> <owner>
/// <group>`, the ids, mode and size of the path itself (`lstat`). Read by [`parse_path_info`].
pub fn path_info_script(path: &str) -> String {
    let p = sh(path);
    format!(
        "if [ -e {p} ]; then \
         if [ -L {p} ]; then _s=link; elif [ -d {p} ]; then _s=directory; \
         elif [ \"$(stat -L -c %h -- {p})\" -gt 1 ]; then _s=hard; else _s=file; fi; \
         printf 'kinit-pi|%s|%s\\n' \"$_s\" \"$(stat -c '%u %g %a %s %U %G' -- {p})\"; fi\n"
    )
}

/// The result keys of a [`path_info_script`] line in `out` (`uid`, `gid`, `owner`, `group`,
/// `mode` as `"0644"`, `state`, `size`), or `None` when the path did not exist.
pub fn parse_path_info(out: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let line = out.lines().find_map(|l| l.strip_prefix("kinit-pi|"))?;
    let (state, rest) = line.split_once('|')?;
    let f: Vec<&str> = rest.split(' ').collect();
    let uid: u64 = f.first()?.parse().ok()?;
    let gid: u64 = f.get(1)?.parse().ok()?;
    let mode = u32::from_str_radix(f.get(2)?, 8).ok()?;
    let size: u64 = f.get(3)?.parse().ok()?;
    // An id without a name is given as its number, as ansible-core does.
    let name = |n: Option<&&str>, id: u64| match n {
        Some(n) if *n != "UNKNOWN" && !n.is_empty() => n.to_string(),
        _ => id.to_string(),
    };
    let mut m = serde_json::Map::new();
    m.insert("uid".into(), uid.into());
    m.insert("gid".into(), gid.into());
    m.insert("owner".into(), name(f.get(4), uid).into());
    m.insert("group".into(), name(f.get(5), gid).into());
    m.insert("mode".into(), format!("0{:03o}", mode & 0o7777).into());
    m.insert("state".into(), state.into());
    m.insert("size".into(), size.into());
    Some(m)
}

/// `"0644"`, the way Ansible returns modes.
pub fn mode_str(mode: u32) -> String {
    format!("{mode:04o}")
}

/// `dir` + `/` + `name` without doubling the slash.
pub fn join(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

/// The folder a remote path lives in (`.` for a bare name).
pub fn parent_of(path: &str) -> String {
    let t = path.trim_end_matches('/');
    match t.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => t[..i].into(),
        None => ".".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symbolic_recursive_mode_drifts_only_where_an_entry_would_change() {
        let attrs = Attrs {
            mode: Some(Mode::parse("u+rwx").unwrap()),
            ..Attrs::default()
        };
        assert!(
            attrs
                .drift_script("/d", false)
                .contains("-printf 'kinit-m %m %y\\n'")
        );
        assert!(!attrs.drifted("kinit-m 700 d\nkinit-m 755 d\nkinit-m 777 l\n"));
        assert!(attrs.drifted("kinit-m 700 d\nkinit-m 644 f\n"));
        let octal = Attrs {
            mode: Some(Mode::parse("0700").unwrap()),
            ..Attrs::default()
        };
        assert!(!octal.drift_script("/d", false).contains("kinit-m"));
        assert!(octal.drifted("kinit-drift\n"));
        assert!(!octal.drifted(""));
    }

    #[test]
    fn parses_ids_records_and_trailing_content() {
        let out = b"kinit-id|0|0\nkinit-stat|file|644 0 0 5 1700000000 root root|rw|abc|\nhello";
        let (ids, stats, rest) = parse_probe(out, 1).unwrap();
        assert_eq!(ids, Ids { uid: 0, gid: 0 });
        assert_eq!(stats[0].kind, Kind::File);
        assert_eq!(stats[0].mode, 0o644);
        assert_eq!(stats[0].size, 5);
        assert_eq!(stats[0].checksum.as_deref(), Some("abc"));
        assert!(stats[0].readable && !stats[0].executable);
        assert_eq!(rest, b"hello");
    }

    #[test]
    fn fix_script_only_touches_what_differs() {
        let (_, stats, _) = parse_probe(
            b"kinit-id|0|0\nkinit-stat|file|644 0 0 5 1 root root|rw||\n",
            1,
        )
        .unwrap();
        let attrs = Attrs {
            mode: Some(Mode::Octal(0o600)),
            owner: Some("0".into()),
            group: Some("root".into()),
        };
        assert_eq!(
            attrs.fix_script("/a b", &stats[0], false),
            "chmod 0600 -- '/a b'"
        );
    }
}
