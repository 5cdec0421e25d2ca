//! `authorized_key` (ansible.posix's; ansible-core routes the short name there): add or
//! remove SSH public keys in a user's `authorized_keys`, as plugins/modules/authorized_key.py
//! of ansible.posix 2.1 does. One probe looks the user up (`getent passwd`), resolves the file
//! (`readlink -m` with `follow`, as `os.path.realpath`) and reads it; [`key_lines`](super::key_lines) edits the text on
//! the controller; one command writes it back only when it changed (creating `~/.ssh` 0700
//! with `manage_dir`, the file 0600, both owned by the user). `key` may be the keys
//! themselves, `file:///path` on the host, or an `http(s)://` URL fetched by the host (curl,
//! else python3), as upstream fetches it there.
//!
//! Over 300 lines because the three ways a key arrives (text, a file on the host, a URL the
//! host fetches) and the probe and write scripts belong to this one module.

use serde::Deserialize;
use serde_json::Value;

use crate::transport::quote::sh;

use super::args::boolish;
use super::command::yes;
use super::host_path;
use super::http;
use super::key_lines::{self, Entries, Want};
use super::lineinfile::State;
use super::posix::parent_of;
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(AuthorizedKey, "authorized_key", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The user whose keys are managed.
    user: String,
    /// The public key(s), one a line, `file:///path` to a file of keys on the host, or a URL
    /// the host fetches them from.
    key: String,
    /// The keys file (default `~user/.ssh/authorized_keys`).
    #[serde(default, deserialize_with = "host_path::opt")]
    path: Option<String>,
    /// Create the keys file's folder (0700, owned by the user) when missing (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    manage_dir: bool,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// `ssh` options for the key(s) (`no-pty,from="10.0.0.0/8"`), replacing the key's own.
    key_options: Option<String>,
    /// Remove every other key (and line) from the file.
    #[serde(default, deserialize_with = "boolish")]
    exclusive: bool,
    /// Replace the keys' comments.
    comment: Option<String>,
    /// Check the TLS certificate of a `key` URL (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    validate_certs: bool,
    /// Write through a link to the file it points at instead of replacing the link.
    #[serde(default, deserialize_with = "boolish")]
    follow: bool,
}

/// What the probe found.
struct Probe {
    /// `uid`, `gid`, home; `None` when the user is not looked up or does not exist.
    user: Option<(String, String, String)>,
    /// The file to write (`follow` resolved).
    target: String,
    content: String,
}

/// The probe: the user, the resolved path, and the file's text after a `kinit-ak` line.
fn probe_script(user: Option<&str>, path: Option<&str>, follow: bool) -> String {
    let mut s = String::new();
    if let Some(u) = user {
        s.push_str(&format!(
            "e=$(getent passwd {}) && printf 'user|%s\\n' \"$e\"\n",
            sh(u)
        ));
    }
    s.push_str("h=\n[ -n \"$e\" ] && h=$(printf %s \"$e\" | cut -d: -f6)\n");
    match path {
        Some(p) => s.push_str(&format!("k={}\n", sh(p))),
        None => s.push_str("k=\"$h/.ssh/authorized_keys\"\n"),
    }
    s.push_str("t=$k\n");
    if follow {
        s.push_str("t=$(readlink -m -- \"$k\")\n");
    }
    s.push_str("printf 'kinit-ak|%s\\n' \"$t\"\n[ -f \"$k\" ] && cat -- \"$k\"\nexit 0\n");
    s
}

fn parse_probe(out: &str) -> Option<Probe> {
    let (head, content) = out.split_once("kinit-ak|")?;
    let (target, content) = content.split_once('\n')?;
    let user = head
        .lines()
        .find_map(|l| l.strip_prefix("user|"))
        .and_then(|e| {
            let f: Vec<&str> = e.split(':').collect();
            (f.len() >= 6).then(|| (f[2].to_string(), f[3].to_string(), f[5].to_string()))
        });
    Some(Probe {
        user,
        target: target.to_string(),
        content: content.to_string(),
    })
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let keys = if p.key.starts_with("http") {
        match fetch_keys(ctx, &p.key, p.validate_certs).await? {
            Some(text) => text,
            None => {
                return Ok(ModuleResult::failed(format!(
                    "Error getting key from: {}",
                    p.key
                )));
            }
        }
    } else if let Some(rest) = p.key.strip_prefix("file") {
        match read_key_file(ctx, rest).await? {
            Ok(text) => text,
            Err(failed) => return Ok(failed),
        }
    } else {
        p.key.clone()
    };

    // In check mode with a path, upstream does not look the user up at all.
    let lookup = !(ctx.check_mode && p.path.is_some());
    let out = ctx
        .run(probe_script(
            lookup.then_some(p.user.as_str()),
            p.path.as_deref(),
            p.follow,
        ))
        .await?;
    let probe = parse_probe(&out.stdout_str()).ok_or_else(|| ModuleError::Failed {
        msg: format!(
            "cannot read the keys file on the host: {}",
            out.stderr_str().trim()
        ),
    })?;
    if lookup && probe.user.is_none() {
        return Ok(ModuleResult::failed(if ctx.check_mode {
            "Either user must exist or you must provide full path to key file in check mode"
                .to_string()
        } else {
            format!(
                "Failed to lookup user {u}: \"getpwnam(): name not found: '{u}'\"",
                u = p.user
            )
        }));
    }
    // `keyfile` in the result is the path as given (or the default), not the resolved one.
    let keyfile = match (&p.path, &probe.user) {
        (Some(path), _) => path.clone(),
        (None, Some((_, _, home))) => format!("{home}/.ssh/authorized_keys"),
        (None, None) => probe.target.clone(),
    };

    let mut entries = Entries::parse(&probe.content);
    let want = Want {
        keys: &keys,
        present: p.state == State::Present,
        key_options: p.key_options.as_deref(),
        comment: p.comment.as_deref(),
        exclusive: p.exclusive,
    };
    let write = match key_lines::apply(&mut entries, &want) {
        Ok(w) => w,
        Err(msg) => return Ok(ModuleResult::failed(msg)),
    };
    let mut r = ModuleResult::ok()
        .with("user", p.user.as_str())
        .with("key", p.key.as_str())
        .with("path", opt(&p.path))
        .with("manage_dir", p.manage_dir)
        .with("state", if want.present { "present" } else { "absent" })
        .with("key_options", opt(&p.key_options))
        .with("exclusive", p.exclusive)
        .with("comment", opt(&p.comment))
        .with("validate_certs", p.validate_certs)
        .with("follow", p.follow)
        .with("keyfile", keyfile.as_str());
    if !write {
        return with_path_info(ctx, r, &p).await;
    }
    r.changed = true;
    let after = entries.render();
    if ctx.diff {
        r.diff = Some(Diff {
            path: Some(probe.target.clone()),
            before: probe.content.clone().into(),
            after: after.clone().into(),
        });
    }
    if ctx.check_mode {
        return with_path_info(ctx, r, &p).await;
    }
    let (uid, gid, home) = probe.user.clone().unwrap_or_default();
    let sshdir = match &p.path {
        Some(path) => parent_of(path),
        None => format!("{home}/.ssh"),
    };
    let out = ctx
        .run_with_stdin(
            write_script(&sshdir, &probe.target, &uid, &gid, p.manage_dir),
            Some(after.into_bytes()),
        )
        .await?;
    if !out.success() {
        return Ok(ModuleResult::failed(out.stderr_str().trim().to_string()));
    }
    with_path_info(ctx, r, &p).await
}

/// Upstream's result names `path` (when given), so Ansible adds its state and mode.
async fn with_path_info(
    ctx: &ModuleCtx<'_>,
    r: ModuleResult,
    p: &Params,
) -> Result<ModuleResult, ModuleError> {
    match &p.path {
        Some(path) => super::path_info::add(ctx, r, path).await,
        None => Ok(r),
    }
}

fn opt(v: &Option<String>) -> Value {
    v.as_deref().map(Value::from).unwrap_or(Value::Null)
}

/// GET `url` from the host (as upstream's `fetch_url` runs there): the body of a 200 answer,
/// `None` for anything else.
async fn fetch_keys(
    ctx: &ModuleCtx<'_>,
    url: &str,
    validate_certs: bool,
) -> Result<Option<String>, ModuleError> {
    Ok(http::get(ctx, url, validate_certs)
        .await?
        .ok()
        .map(|body| String::from_utf8_lossy(&body).into_owned()))
}

/// Read `file://...` on the host: the URL's path (`urlparse(key).path`).
async fn read_key_file(
    ctx: &ModuleCtx<'_>,
    rest: &str,
) -> Result<Result<String, ModuleResult>, ModuleError> {
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    let path = match rest.strip_prefix("//") {
        Some(net) => net.find('/').map(|i| &net[i..]).unwrap_or(""),
        None => rest,
    };
    let out = ctx
        .run(format!(
            "[ -e {p} ] || {{ echo missing; exit 0; }}; [ -f {p} ] || {{ echo dir; exit 0; }}; \
             echo ok; cat -- {p}",
            p = sh(path)
        ))
        .await?;
    let text = out.stdout_str();
    let (status, body) = text.split_once('\n').unwrap_or((text.as_str(), ""));
    Ok(match status {
        "ok" if out.success() => Ok(body.to_string()),
        "missing" => Err(ModuleResult::failed(format!(
            "Path to a key file not found: {path}"
        ))),
        "dir" => Err(ModuleResult::failed(format!(
            "Path to a key is a directory and must be a file: {path}"
        ))),
        _ => Err(ModuleResult::failed(format!(
            "Failed to read key file {path} : {}",
            out.stderr_str().trim()
        ))),
    })
}

/// sh text (new content on stdin) that prepares the folder and file as upstream's `keyfile()`
/// does with `write=True`, then replaces the file through a temporary beside it, keeping the
/// file's owner and mode.
fn write_script(sshdir: &str, target: &str, uid: &str, gid: &str, manage_dir: bool) -> String {
    let (d, k) = (sh(sshdir), sh(target));
    let ids = sh(&format!("{uid}:{gid}"));
    let mut s = String::from("set -e\n");
    if manage_dir {
        s.push_str(&format!(
            "if [ ! -e {d} ]; then mkdir -m 0700 -- {d} || {{ echo \"Failed to create directory \
             \"{d} >&2; exit 1; }}; fi\nchown {ids} -- {d}\nchmod 0700 -- {d}\n"
        ));
    }
    s.push_str(&format!(
        "if [ ! -e {k} ]; then mkdir -p -- \"$(dirname -- {k})\"; : > {k}; fi\n\
         chown {ids} -- {k} 2>/dev/null || true\nchmod 0600 -- {k} 2>/dev/null || true\n\
         t=$(mktemp \"$(dirname -- {k})/.kinit-ak.XXXXXX\")\ncat > \"$t\"\n\
         chown --reference={k} -- \"$t\" 2>/dev/null || true\nchmod --reference={k} -- \"$t\"\n\
         mv -f -- \"$t\" {k}\n"
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_output_gives_the_user_the_target_and_the_text() {
        let out = "user|bob:x:1001:1002::/home/bob:/bin/sh\nkinit-ak|/k\nssh-rsa A\n";
        let p = parse_probe(out).unwrap();
        assert_eq!(
            p.user,
            Some(("1001".into(), "1002".into(), "/home/bob".into()))
        );
        assert_eq!(
            (p.target.as_str(), p.content.as_str()),
            ("/k", "ssh-rsa A\n")
        );
        assert!(parse_probe("kinit-ak|/k\n").unwrap().user.is_none());
    }
}
