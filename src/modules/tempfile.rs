//! `tempfile`: make a uniquely named temporary file or directory on the host and return its
//! `path`, as Ansible's `tempfile` does (`mkstemp`/`mkdtemp`: mode 0600/0700, in `path`, else
//! the host's `$TMPDIR`, else `/tmp`). Always `changed`. Like upstream, which does not declare
//! check mode support, a check-mode run is skipped with its message.
//!
//! One command makes it (a POSIX sh loop, see `script`), then `stat` reports what upstream's
//! `add_path_info` would.

use serde::Deserialize;

use crate::transport::quote::sh;

use super::host_path;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Tempfile, "tempfile", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// `file` (default) or `directory`.
    #[serde(default)]
    state: Kind,
    /// The folder to make it in; the host's temporary folder when unset.
    #[serde(default, deserialize_with = "host_path::opt")]
    path: Option<String>,
    /// The start of the name (default `ansible.`).
    #[serde(default = "default_prefix")]
    prefix: String,
    /// The end of the name (default empty).
    #[serde(default)]
    suffix: String,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Kind {
    #[default]
    File,
    Directory,
}

fn default_prefix() -> String {
    "ansible.".into()
}

/// The command that makes the file or folder and prints its path, then
/// `mode uid gid size owner group` on the next line. The name is made as Python's `tempfile`
/// makes it (eight of `[a-z0-9_]` between prefix and suffix, a new try on a taken name), in
/// POSIX sh, so hosts without GNU `mktemp` serve too.
fn script(p: &Params) -> String {
    let dir = match &p.path {
        Some(path) => sh(path),
        None => "\"${TMPDIR:-/tmp}\"".into(),
    };
    let make = match p.state {
        Kind::File => "(umask 077; set -C; : > \"$_t\")",
        Kind::Directory => "mkdir -m 700 -- \"$_t\"",
    };
    format!(
        "_d={dir}; _i=0\n\
         while :; do\n\
         _r=$(LC_ALL=C tr -dc 'a-z0-9_' < /dev/urandom | head -c 8)\n\
         _t=\"$_d\"/{}\"$_r\"{}\n\
         {make} 2>/dev/null && break\n\
         _i=$((_i + 1))\n\
         if [ ! -d \"$_d\" ]; then printf \"[Errno 2] No such file or directory: '%s'\\n\" \"$_t\" >&2; exit 1; fi\n\
         if [ ! -e \"$_t\" ] || [ $_i -ge 100 ]; then {make} || exit 1; exit 1; fi\n\
         done\n\
         printf '%s\\n' \"$_t\"\nstat -c '%a %u %g %s %U %G' -- \"$_t\"",
        sh(&p.prefix),
        sh(&p.suffix),
    )
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if ctx.check_mode {
        let mut r = ModuleResult::ok();
        r.skipped = true;
        r.msg = Some("remote module (tempfile) does not support check mode".into());
        return Ok(r);
    }
    if p.prefix.contains('/') || p.suffix.contains('/') {
        return Ok(ModuleResult::failed(format!(
            "tempfile: `prefix` and `suffix` may not contain `/` (got prefix `{}`, suffix `{}`)",
            p.prefix, p.suffix
        )));
    }
    let out = ctx.run(script(&p)).await?;
    let text = out.stdout_str();
    let mut lines = text.lines();
    let (Some(path), Some(stat), true) = (lines.next(), lines.next(), out.success()) else {
        let err = out.stderr_str();
        return Ok(ModuleResult::failed(err.trim().to_string()));
    };
    let f: Vec<&str> = stat.split(' ').collect();
    let mut r = ModuleResult::changed().with("path", path);
    if let [mode, uid, gid, size, owner, group] = f[..] {
        let state = match p.state {
            Kind::File => "file",
            Kind::Directory => "directory",
        };
        r = r
            .with("uid", uid.parse::<u64>().ok())
            .with("gid", gid.parse::<u64>().ok())
            .with("owner", owner)
            .with("group", group)
            .with("mode", format!("0{mode:0>3}"))
            .with("state", state)
            .with("size", size.parse::<u64>().ok());
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_quotes_every_word_and_defaults_to_tmpdir() {
        let p: Params = super::super::args::parse(
            "tempfile",
            &serde_json::json!({"state": "directory", "suffix": ".test", "prefix": "a b"}),
        )
        .unwrap();
        let s = script(&p);
        assert!(s.starts_with("_d=\"${TMPDIR:-/tmp}\"; _i=0\n"), "{s}");
        assert!(s.contains("_t=\"$_d\"/'a b'\"$_r\".test\n"), "{s}");
        assert!(
            s.contains("mkdir -m 700 -- \"$_t\" 2>/dev/null && break"),
            "{s}"
        );
        let p: Params =
            super::super::args::parse("tempfile", &serde_json::json!({"path": "/x y"})).unwrap();
        let s = script(&p);
        assert!(s.starts_with("_d='/x y'; _i=0\n"), "{s}");
        assert!(s.contains("_t=\"$_d\"/ansible.\"$_r\"''\n"), "{s}");
    }
}
