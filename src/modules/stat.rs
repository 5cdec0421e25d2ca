//! `stat`: facts about one path on the host, in the shape Ansible's `stat` returns: every field
//! of upstream's `format_output` (type flags, ids, inode, times as float seconds, permission
//! bits, Linux's `blocks`/`block_size`/`device_type`), the access checks, link source and
//! target, checksum, MIME type (`file --mime-type --mime-encoding`, else `unknown`) and
//! attributes (`lsattr -vd`). One command; never changes anything.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::transport::quote::sh;

use super::args::boolish;
use super::host_path;
use super::posix::Algo;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Stat, "stat", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The path on the host.
    #[serde(alias = "dest", alias = "name", deserialize_with = "host_path::one")]
    path: String,
    /// Describe a link's target instead of the link.
    #[serde(default, deserialize_with = "boolish")]
    follow: bool,
    /// Compute a checksum of a readable regular file (default yes).
    #[serde(default = "super::command::yes", deserialize_with = "boolish")]
    get_checksum: bool,
    /// Checksum algorithm (default `sha1`, as Ansible).
    #[serde(default = "sha1", alias = "checksum", alias = "checksum_algo")]
    checksum_algorithm: Algo,
    /// Report `mimetype` and `charset` (default yes; `unknown` where `file` is missing).
    #[serde(
        default = "super::command::yes",
        deserialize_with = "boolish",
        alias = "mime",
        alias = "mime_type",
        alias = "mime-type"
    )]
    get_mime: bool,
    /// Report `attributes`, `attr_flags` and `version` from `lsattr` (default yes).
    #[serde(
        default = "super::command::yes",
        deserialize_with = "boolish",
        alias = "attr",
        alias = "attributes"
    )]
    get_attributes: bool,
}

fn sha1() -> Algo {
    Algo::Sha1
}

/// `stat -c` fields, `|`-separated: raw mode (hex), uid, gid, size, inode, dev, nlink,
/// atime, mtime, ctime (with nanoseconds), blocks, I/O block size, rdev major and minor (hex),
/// owner name, group name.
const FORMAT: &str = "%f|%u|%g|%s|%i|%d|%h|%.9X|%.9Y|%.9Z|%b|%o|%t|%T|%U|%G";

/// The probe: `S|<stat fields>`, then `A|rwx`, `L|target|source`, `C|checksum`,
/// `M|file's answer`, `T|lsattr's answer` lines as they apply; `N` alone when nothing is there.
fn script(p: &Params) -> String {
    let path = sh(&p.path);
    let deref = if p.follow { "-L " } else { "" };
    let mut s = format!(
        "_p={path}\n\
         if [ ! -e \"$_p\" ] && [ ! -L \"$_p\" ]; then echo N; exit 0; fi\n\
         _s=$(stat {deref}-c '{FORMAT}' -- \"$_p\") || exit 1\n\
         printf 'S|%s\\n' \"$_s\"\n\
         _x=; [ -r \"$_p\" ] && _x=r; [ -w \"$_p\" ] && _x=${{_x}}w; [ -x \"$_p\" ] && _x=${{_x}}x\n\
         printf 'A|%s\\n' \"$_x\"\n"
    );
    if !p.follow {
        s.push_str(
            "if [ -L \"$_p\" ]; then printf 'L|%s|%s\\n' \"$(readlink -- \"$_p\")\" \
             \"$(readlink -m -- \"$_p\")\"; fi\n",
        );
    }
    if p.get_checksum {
        s.push_str(&format!(
            "if [ -f \"$_p\" ] && [ -r \"$_p\" ] && {{ [ ! -L \"$_p\" ] || [ -n \"{deref}\" ]; }}; \
             then _c=$({}sum < \"$_p\") && printf 'C|%s\\n' \"${{_c%% *}}\"; fi\n",
            p.checksum_algorithm.tool()
        ));
    }
    if p.get_mime {
        s.push_str(
            "if command -v file >/dev/null 2>&1; then \
             _m=$(file --mime-type --mime-encoding -- \"$_p\" 2>/dev/null) && printf 'M|%s\\n' \"$_m\"; fi\n",
        );
    }
    if p.get_attributes {
        s.push_str(
            "if command -v lsattr >/dev/null 2>&1; then \
             _t=$(lsattr -vd -- \"$_p\" 2>/dev/null) && printf 'T|%s\\n' \"$_t\"; fi\n",
        );
    }
    s.push_str("exit 0\n");
    s
}

/// Float seconds from `sec.nanoseconds`, computed as CPython computes `st_mtime`
/// (`sec + nsec * 1e-9` in doubles), so the value prints as Python prints it.
fn seconds(text: &str) -> Option<f64> {
    let (sec, frac) = text.split_once('.').unwrap_or((text, "0"));
    let nsec: u64 = format!("{frac:0<9}").get(..9)?.parse().ok()?;
    Some(sec.parse::<i64>().ok()? as f64 + nsec as f64 * 1e-9)
}

/// glibc's `makedev`, to rebuild `st_rdev` from `stat`'s major and minor.
fn makedev(major: u64, minor: u64) -> u64 {
    ((major & 0xffff_f000) << 32)
        | ((major & 0xfff) << 8)
        | ((minor & 0xffff_ff00) << 12)
        | (minor & 0xff)
}

/// The attribute names upstream's `format_attributes` gives each `lsattr` flag letter.
const ATTRIBUTES: &[(char, &str)] = &[
    ('A', "noatime"),
    ('a', "append"),
    ('c', "compressed"),
    ('C', "nocow"),
    ('d', "nodump"),
    ('D', "dirsync"),
    ('e', "extents"),
    ('E', "encrypted"),
    ('h', "blocksize"),
    ('i', "immutable"),
    ('I', "indexed"),
    ('j', "journalled"),
    ('N', "inline"),
    ('s', "zero"),
    ('S', "synchronous"),
    ('t', "notail"),
    ('T', "blockroot"),
    ('u', "undelete"),
    ('X', "compressedraw"),
    ('Z', "compresseddirty"),
];

/// Parse the probe's output into upstream's `stat` dict (None: not the probe's shape).
fn parse(path: &str, out: &str, p: &Params) -> Option<Value> {
    let mut lines = out.lines();
    let first = lines.next()?;
    if first == "N" {
        return Some(json!({"exists": false}));
    }
    let f: Vec<&str> = first.strip_prefix("S|")?.splitn(16, '|').collect();
    let [
        raw,
        uid,
        gid,
        size,
        inode,
        dev,
        nlink,
        at,
        mt,
        ct,
        blocks,
        bsize,
        maj,
        min,
        user,
        group,
    ] = f[..]
    else {
        return None;
    };
    let mode = u32::from_str_radix(raw, 16).ok()?;
    let kind = mode & 0o170000;
    let bit = |b: u32| mode & b != 0;
    let num = |s: &str| s.parse::<u64>().ok();
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    let mut o: Map<String, Value> = match json!({
        "exists": true,
        "path": path,
        "mode": format!("{:04o}", mode & 0o7777),
        "isdir": kind == 0o040000,
        "ischr": kind == 0o020000,
        "isblk": kind == 0o060000,
        "isreg": kind == 0o100000,
        "isfifo": kind == 0o010000,
        "islnk": kind == 0o120000,
        "issock": kind == 0o140000,
        "uid": num(uid)?,
        "gid": num(gid)?,
        "size": num(size)?,
        "inode": num(inode)?,
        "dev": num(dev)?,
        "nlink": num(nlink)?,
        "atime": seconds(at)?,
        "mtime": seconds(mt)?,
        "ctime": seconds(ct)?,
        "wusr": bit(0o200), "rusr": bit(0o400), "xusr": bit(0o100),
        "wgrp": bit(0o020), "rgrp": bit(0o040), "xgrp": bit(0o010),
        "woth": bit(0o002), "roth": bit(0o004), "xoth": bit(0o001),
        "isuid": bit(0o4000), "isgid": bit(0o2000),
        "blocks": num(blocks)?,
        "block_size": num(bsize)?,
        "device_type": makedev(hex(maj)?, hex(min)?),
    }) {
        Value::Object(o) => o,
        _ => return None,
    };
    if user != "UNKNOWN" {
        o.insert("pw_name".into(), user.into());
    }
    if group != "UNKNOWN" {
        o.insert("gr_name".into(), group.into());
    }
    if p.get_mime {
        o.insert("mimetype".into(), "unknown".into());
        o.insert("charset".into(), "unknown".into());
    }
    if p.get_attributes {
        o.insert("version".into(), Value::Null);
        o.insert("attributes".into(), json!([]));
        o.insert("attr_flags".into(), "".into());
    }
    for line in lines {
        let (tag, rest) = line.split_once('|')?;
        match tag {
            "A" => {
                o.insert("readable".into(), rest.contains('r').into());
                o.insert("writeable".into(), rest.contains('w').into());
                o.insert("executable".into(), rest.contains('x').into());
            }
            "L" => {
                let (target, source) = rest.split_once('|')?;
                o.insert("lnk_source".into(), source.into());
                o.insert("lnk_target".into(), target.into());
            }
            "C" => {
                o.insert("checksum".into(), rest.into());
            }
            // `path: type/x; charset=y`, split as upstream splits it.
            "M" => {
                let answer = rest.rsplit_once(':').map_or(rest, |(_, a)| a);
                if let Some((ty, cs)) = answer.split_once(';') {
                    let cs = cs.split_once('=').map_or(cs, |(_, v)| v);
                    o.insert("mimetype".into(), ty.trim().into());
                    o.insert("charset".into(), cs.trim().into());
                }
            }
            "T" => {
                let mut words = rest.split_whitespace();
                if let (Some(version), Some(flags)) = (words.next(), words.next()) {
                    let flags = flags.replace('-', "");
                    let names: Vec<&str> = flags
                        .chars()
                        .filter_map(|c| ATTRIBUTES.iter().find(|(f, _)| *f == c).map(|a| a.1))
                        .collect();
                    o.insert("version".into(), version.into());
                    o.insert("attributes".into(), json!(names));
                    o.insert("attr_flags".into(), flags.into());
                }
            }
            _ => return None,
        }
    }
    Some(Value::Object(o))
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let out = ctx.run(script(&p)).await?;
    let text = out.stdout_str();
    match parse(&p.path, &text, &p) {
        Some(stat) if out.success() => Ok(ModuleResult::ok().with("stat", stat)),
        _ => Ok(ModuleResult::failed(format!(
            "cannot stat `{}`: {}",
            p.path,
            out.stderr_str().trim()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Params {
        super::super::args::parse("stat", &v).unwrap()
    }

    #[test]
    fn a_probe_becomes_upstreams_dict() {
        let p = params(json!({"path": "/l"}));
        let out = "S|a1ff|0|0|7|12|2049|1|1700000000.5|1700000001.250000000|1700000002.000000001|0|4096|0|0|root|UNKNOWN\n\
                   A|rw\nL|t|/etc/t\nM|/l: inode/symlink; charset=binary\nT|1509681845 ----i---------e-------\n";
        let s = parse("/l", out, &p).unwrap();
        assert_eq!(s["mode"], "0777");
        assert_eq!(s["islnk"], true);
        assert_eq!(s["isreg"], false);
        assert_eq!(s["mtime"], 1700000001.25);
        assert_eq!(s["atime"], 1700000000.5);
        assert_eq!(s["pw_name"], "root");
        assert!(s.get("gr_name").is_none());
        assert_eq!(
            (s["readable"].clone(), s["executable"].clone()),
            (json!(true), json!(false))
        );
        assert_eq!(
            (s["lnk_target"].as_str(), s["lnk_source"].as_str()),
            (Some("t"), Some("/etc/t"))
        );
        assert_eq!(
            (s["mimetype"].as_str(), s["charset"].as_str()),
            (Some("inode/symlink"), Some("binary"))
        );
        assert_eq!(s["attributes"], json!(["immutable", "extents"]));
        assert_eq!(
            (s["attr_flags"].as_str(), s["version"].as_str()),
            (Some("ie"), Some("1509681845"))
        );
        assert_eq!(parse("/x", "N\n", &p).unwrap(), json!({"exists": false}));
        assert!(parse("/x", "S|zz\n", &p).is_none());
    }

    #[test]
    fn device_numbers_and_times_are_rebuilt_as_python_has_them() {
        // /dev/null: major 1, minor 3.
        assert_eq!(makedev(1, 3), 259);
        assert_eq!(makedev(0x103, 0x1_0005), 0x1001_0305);
        assert_eq!(seconds("1795668629.381749685"), Some(1795668629.3817496));
        assert_eq!(seconds("12"), Some(12.0));
        assert_eq!(seconds("1.5"), Some(1.5));
    }
}
