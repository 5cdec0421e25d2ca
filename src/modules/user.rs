//! `user`: a local account. One probe (`getent passwd`, group names, password hash), then one
//! `useradd`, `usermod` with only the differing options, or `userdel`.

use serde::Deserialize;

use crate::transport::quote::{sh, sh_join};

use super::args::{boolish, list, opt_boolish, opt_stringish};
use super::command::yes;
use super::host_path;
use super::lineinfile::State;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(User, "user", Params, run);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdatePassword {
    /// Set the password whenever the hash differs (default).
    #[default]
    Always,
    /// Only set it when the account is created.
    OnCreate,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Account name.
    name: String,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// User id.
    #[serde(default, deserialize_with = "opt_stringish")]
    uid: Option<String>,
    /// Primary group (name or gid).
    #[serde(default, deserialize_with = "opt_stringish")]
    group: Option<String>,
    /// Supplementary groups (list or comma-separated).
    #[serde(default, deserialize_with = "list")]
    groups: Vec<String>,
    /// Add `groups` to the existing ones instead of replacing them.
    #[serde(default, deserialize_with = "boolish")]
    append: bool,
    /// Login shell.
    #[serde(default, deserialize_with = "host_path::opt")]
    shell: Option<String>,
    /// Home directory.
    #[serde(default, deserialize_with = "host_path::opt")]
    home: Option<String>,
    /// Create the home directory for a new account (default yes).
    #[serde(default = "yes", alias = "createhome", deserialize_with = "boolish")]
    create_home: bool,
    /// Move the contents when `home` changes.
    #[serde(default, deserialize_with = "boolish")]
    move_home: bool,
    /// A system account (only at creation).
    #[serde(default, deserialize_with = "boolish")]
    system: bool,
    /// GECOS comment.
    comment: Option<String>,
    /// Password *hash* (as in /etc/shadow).
    password: Option<String>,
    /// When to set `password`: `always` (default) or `on_create`.
    #[serde(default)]
    update_password: UpdatePassword,
    /// With `state: absent`, also remove the home directory and mail spool.
    #[serde(default, deserialize_with = "boolish")]
    remove: bool,
    /// With `state: absent`, remove even when the user is logged in.
    #[serde(default, deserialize_with = "opt_boolish")]
    force: Option<bool>,
}

/// What the probe found about an existing account.
#[derive(Debug, Default)]
struct Account {
    uid: String,
    gid: String,
    group: String,
    groups: Vec<String>,
    comment: String,
    home: String,
    shell: String,
    hash: Option<String>,
}

fn parse(out: &str) -> Option<Account> {
    let mut a = Account::default();
    let mut found = false;
    for line in out.lines() {
        if let Some(pw) = line.strip_prefix("pw=") {
            let f: Vec<&str> = pw.split(':').collect();
            if f.len() >= 7 {
                found = true;
                a.uid = f[2].into();
                a.gid = f[3].into();
                a.comment = f[4].into();
                a.home = f[5].into();
                a.shell = f[6].into();
            }
        } else if let Some(g) = line.strip_prefix("group=") {
            a.group = g.into();
        } else if let Some(g) = line.strip_prefix("groups=") {
            a.groups = g.split_whitespace().map(str::to_string).collect();
        } else if let Some(h) = line.strip_prefix("hash=") {
            a.hash = Some(h.split(':').nth(1).unwrap_or_default().to_string());
        }
    }
    found.then_some(a)
}

fn opt(argv: &mut Vec<String>, flag: &str, v: &str) {
    argv.push(flag.into());
    argv.push(v.into());
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let n = sh(&p.name);
    let probe = format!(
        "e=$(getent passwd {n}) || exit 0\necho \"pw=$e\"\necho \"group=$(id -gn {n})\"\n\
         echo \"groups=$(id -Gn {n})\"\nh=$(getent shadow {n} 2>/dev/null) && echo \"hash=$h\"\nexit 0\n"
    );
    let out = ctx.run(probe.clone()).await?;
    let acct = parse(&out.stdout_str());
    let mut argv: Vec<String> = Vec::new();
    let cmd = match (p.state, &acct) {
        (State::Absent, None) => None,
        (State::Absent, Some(_)) => {
            let mut c = vec!["userdel".to_string()];
            if p.remove {
                c.push("-r".into());
            }
            if p.force == Some(true) {
                c.push("-f".into());
            }
            c.push(p.name.clone());
            Some(c)
        }
        (State::Present, None) => {
            if let Some(v) = &p.uid {
                opt(&mut argv, "-u", v);
            }
            if let Some(v) = &p.group {
                opt(&mut argv, "-g", v);
            }
            if !p.groups.is_empty() {
                opt(&mut argv, "-G", &p.groups.join(","));
            }
            if let Some(v) = &p.shell {
                opt(&mut argv, "-s", v);
            }
            if let Some(v) = &p.home {
                opt(&mut argv, "-d", v);
            }
            if let Some(v) = &p.comment {
                opt(&mut argv, "-c", v);
            }
            if let Some(v) = &p.password {
                opt(&mut argv, "-p", v);
            }
            argv.push(if p.create_home { "-m" } else { "-M" }.into());
            if p.system {
                argv.push("-r".into());
            }
            Some(
                std::iter::once("useradd".to_string())
                    .chain(argv.drain(..))
                    .chain(std::iter::once(p.name.clone()))
                    .collect(),
            )
        }
        (State::Present, Some(a)) => {
            if let Some(v) = p.uid.as_ref().filter(|v| **v != a.uid) {
                opt(&mut argv, "-u", v);
            }
            if let Some(v) = p.group.as_ref().filter(|v| **v != a.group && **v != a.gid) {
                opt(&mut argv, "-g", v);
            }
            if !p.groups.is_empty() {
                let have: Vec<&String> = a.groups.iter().filter(|g| **g != a.group).collect();
                let missing = p.groups.iter().any(|g| !a.groups.contains(g));
                let extra = !p.append && have.iter().any(|g| !p.groups.contains(g));
                if missing || extra {
                    if p.append {
                        argv.push("-a".into());
                    }
                    opt(&mut argv, "-G", &p.groups.join(","));
                }
            }
            if let Some(v) = p.shell.as_ref().filter(|v| **v != a.shell) {
                opt(&mut argv, "-s", v);
            }
            if let Some(v) = p.home.as_ref().filter(|v| **v != a.home) {
                opt(&mut argv, "-d", v);
                if p.move_home {
                    argv.push("-m".into());
                }
            }
            if let Some(v) = p.comment.as_ref().filter(|v| **v != a.comment) {
                opt(&mut argv, "-c", v);
            }
            if let Some(v) = p.password.as_ref().filter(|v| {
                p.update_password == UpdatePassword::Always && a.hash.as_deref() != Some(v.as_str())
            }) {
                opt(&mut argv, "-p", v);
            }
            (!argv.is_empty()).then(|| {
                std::iter::once("usermod".to_string())
                    .chain(argv.drain(..))
                    .chain(std::iter::once(p.name.clone()))
                    .collect()
            })
        }
    };
    let created = acct.is_none() && cmd.is_some();
    let mut after = acct;
    if let Some(c) = cmd.as_ref().filter(|_| !ctx.check_mode) {
        // The account is read again in the same run, for the result's fields.
        let out = ctx
            .run(format!("{} || exit $?\n{probe}", sh_join(c)))
            .await?;
        if !out.success() {
            return Ok(ModuleResult::failed(format!(
                "`{}` failed: {}",
                c[0],
                out.stderr_str().trim()
            ))
            .with("name", p.name.as_str()));
        }
        after = parse(&out.stdout_str());
    }
    let mut r = ModuleResult {
        changed: cmd.is_some(),
        ..ModuleResult::ok()
    }
    .with("name", p.name.as_str())
    .with("state", format!("{:?}", p.state).to_lowercase());
    if created {
        r = r
            .with("system", p.system)
            .with("create_home", p.create_home);
    }
    // As ansible-core's `user` module: the account's fields when it exists after the run
    // (`group` is the primary group's id).
    if let Some(a) = after.as_ref().filter(|_| p.state == State::Present) {
        r = r
            .with("uid", a.uid.parse::<u64>().ok())
            .with("group", a.gid.parse::<u64>().ok())
            .with("comment", a.comment.as_str())
            .with("home", a.home.as_str())
            .with("shell", a.shell.as_str());
        if !p.groups.is_empty() {
            r = r.with("groups", p.groups.join(","));
        }
    }
    Ok(r)
}
