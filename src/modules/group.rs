//! `group`: a local group, as ansible-core 2.19's `group` module on Linux manages it. One
//! probe (`getent group`, and `/etc/group` itself with `local`), then one `groupadd`,
//! `groupmod -g` or `groupdel` (`lgroupadd`/`lgroupmod`/`lgroupdel` with `local`), then a
//! second probe for the gid the group ended with.
//!
//! Result shapes follow upstream's `main()` exactly (ansible/modules/group.py): a check-mode
//! run that would add or delete returns only `changed`; otherwise `name`, `state`, and, when
//! the group exists afterwards, `gid` and `system` (the *argument*, not what the group is).

use serde::Deserialize;

use crate::transport::quote::{sh, sh_join};

use super::args::{boolish, opt_u64ish};
use super::lineinfile::State;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Group, "group", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Group name.
    name: String,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// Group id (changed with `groupmod -g` when the group exists with another).
    #[serde(default, deserialize_with = "opt_u64ish")]
    gid: Option<u64>,
    /// Create a system group (`groupadd -r`; only at creation).
    #[serde(default, deserialize_with = "boolish")]
    system: bool,
    /// Manage the group in the local files with libuser's `lgroup*` tools, even when the
    /// name also resolves through a directory service.
    #[serde(default, deserialize_with = "boolish")]
    local: bool,
    /// Allow a `gid` that another group already has (`-o`); needs `gid`.
    #[serde(default, deserialize_with = "boolish")]
    non_unique: bool,
    /// With `state: absent`, delete even a group that is some user's primary group
    /// (`groupdel -f`).
    #[serde(default, deserialize_with = "boolish")]
    force: bool,
    /// Lowest gid `groupadd` may pick (`-K GID_MIN=`).
    #[serde(default, deserialize_with = "opt_u64ish")]
    gid_min: Option<u64>,
    /// Highest gid `groupadd` may pick (`-K GID_MAX=`).
    #[serde(default, deserialize_with = "opt_u64ish")]
    gid_max: Option<u64>,
}

/// What the probe saw.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    /// The group's gid as the name service resolves it.
    gid: Option<u64>,
    /// `local`: whether `/etc/group` has a `name:` line.
    in_file: bool,
    /// `local`: `/etc/group` is missing.
    no_file: bool,
    /// `local` with `gid`: another group that already has that gid.
    gid_taken_by: Option<String>,
}

impl Seen {
    fn exists(&self, local: bool) -> bool {
        if local {
            self.in_file
        } else {
            self.gid.is_some()
        }
    }
}

/// The probe: `nss=` the `getent group` line, `file=1` when `/etc/group` has the name,
/// `nofile=1` without `/etc/group`, `taken=` another group holding `gid`.
fn probe_script(p: &Params) -> String {
    let n = sh(&p.name);
    let mut s = format!("e=$(getent group {n}) && echo \"nss=$e\"\n");
    if p.local {
        // Upstream reads /etc/group for lines starting `name:` (group.py group_exists).
        s.push_str(&format!(
            "if [ -f /etc/group ]; then awk -F: -v n={n} '$1==n{{f=1}} END{{exit !f}}' /etc/group \
             && echo file=1; else echo nofile=1; fi\n"
        ));
        if let Some(gid) = p.gid {
            s.push_str(&format!(
                "getent group | awk -F: -v g={gid} -v n={n} '$3==g && $1!=n {{print \"taken=\" $1; exit}}'\n"
            ));
        }
    }
    s.push_str("exit 0\n");
    s
}

fn parse(out: &str) -> Seen {
    let mut s = Seen::default();
    for line in out.lines() {
        if let Some(e) = line.strip_prefix("nss=") {
            s.gid = e.split(':').nth(2).and_then(|g| g.parse().ok());
        } else if line == "file=1" {
            s.in_file = true;
        } else if line == "nofile=1" {
            s.no_file = true;
        } else if let Some(t) = line.strip_prefix("taken=") {
            s.gid_taken_by.get_or_insert_with(|| t.to_string());
        }
    }
    s
}

async fn probe(ctx: &ModuleCtx<'_>, p: &Params) -> Result<Seen, ModuleError> {
    let out = ctx.run(probe_script(p)).await?;
    Ok(parse(&out.stdout_str()))
}

/// Argument combinations upstream refuses, with its messages, in its order.
fn refuse(p: &Params) -> Option<String> {
    if p.non_unique && p.gid.is_none() {
        return Some("non_unique is True but all of the following are missing: gid".into());
    }
    if p.force && p.local {
        return Some(
            "force is not a valid option for local, force=True and local=True are mutually exclusive"
                .into(),
        );
    }
    if p.local && p.gid_min.is_some() {
        return Some("'gid_min' can not be used with 'local'".into());
    }
    if p.local && p.gid_max.is_some() {
        return Some("'gid_max' can not be used with 'local'".into());
    }
    None
}

fn tool(p: &Params, verb: &str) -> String {
    format!("{}group{verb}", if p.local { "l" } else { "" })
}

/// The command that brings the group to `p`, or `None` when it already is.
fn command(p: &Params, seen: &Seen) -> Option<Vec<String>> {
    let exists = seen.exists(p.local);
    let gid_opts = |argv: &mut Vec<String>, gid: u64| {
        argv.extend(["-g".to_string(), gid.to_string()]);
        if p.non_unique {
            argv.push("-o".into());
        }
    };
    let mut argv = Vec::new();
    match p.state {
        State::Absent if !exists => return None,
        State::Absent => {
            argv.push(tool(p, "del"));
            if p.force {
                argv.push("-f".into());
            }
        }
        State::Present if !exists => {
            argv.push(tool(p, "add"));
            if let Some(gid) = p.gid {
                gid_opts(&mut argv, gid);
            }
            if p.system {
                argv.push("-r".into());
            }
            if let Some(min) = p.gid_min {
                argv.extend(["-K".to_string(), format!("GID_MIN={min}")]);
            }
            if let Some(max) = p.gid_max {
                argv.extend(["-K".to_string(), format!("GID_MAX={max}")]);
            }
        }
        State::Present => {
            let gid = p.gid.filter(|g| seen.gid != Some(*g))?;
            argv.push(tool(p, "mod"));
            gid_opts(&mut argv, gid);
        }
    }
    argv.push(p.name.clone());
    Some(argv)
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if let Some(msg) = refuse(&p) {
        return Ok(ModuleResult::failed(msg));
    }
    let seen = probe(ctx, &p).await?;
    if p.local && seen.no_file {
        return Ok(ModuleResult::failed(
            "'local: true' specified but unable to find local group file /etc/group to parse.",
        ));
    }
    let exists = seen.exists(p.local);
    // Upstream checks a local group's gid against every other group before adding or
    // modifying (group.py `_local_check_gid_exists`), also in check mode for an existing one.
    if p.local
        && p.state == State::Present
        && (exists || !ctx.check_mode)
        && let (Some(gid), Some(other)) = (p.gid, &seen.gid_taken_by)
    {
        return Ok(ModuleResult::failed(format!(
            "GID '{gid}' already exists with group '{other}'"
        )));
    }
    let cmd = command(&p, &seen);
    if ctx.check_mode && cmd.is_some() && !(exists && p.state == State::Present) {
        // Adding or deleting in check mode: upstream exits with `changed` alone.
        return Ok(ModuleResult::changed());
    }
    let mut r = ModuleResult {
        changed: cmd.is_some(),
        ..ModuleResult::ok()
    }
    .with("name", p.name.as_str())
    .with("state", format!("{:?}", p.state).to_lowercase());
    let after = match cmd.filter(|_| !ctx.check_mode) {
        Some(c) => {
            let out = ctx.run(sh_join(&c)).await?;
            if !out.success() {
                return Ok(ModuleResult::failed(out.stderr_str()).with("name", p.name.as_str()));
            }
            for (key, text) in [("stdout", out.stdout_str()), ("stderr", out.stderr_str())] {
                if !text.is_empty() {
                    r = r.with(key, text);
                }
            }
            probe(ctx, &p).await?
        }
        None => seen,
    };
    if after.exists(p.local) {
        r = r.with("system", p.system).with("gid", after.gid);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: serde_json::Value) -> Params {
        super::super::args::parse("group", &v).unwrap()
    }

    fn seen(gid: Option<u64>) -> Seen {
        Seen {
            gid,
            ..Seen::default()
        }
    }

    #[test]
    fn commands_follow_upstreams_option_order() {
        let p = params(
            serde_json::json!({"name": "g", "gid": 5000, "non_unique": true,
            "system": true, "gid_min": 100, "gid_max": 900}),
        );
        assert_eq!(
            command(&p, &seen(None)).unwrap().join(" "),
            "groupadd -g 5000 -o -r -K GID_MIN=100 -K GID_MAX=900 g"
        );
        assert_eq!(
            command(&p, &seen(Some(7))).unwrap().join(" "),
            "groupmod -g 5000 -o g"
        );
        assert_eq!(command(&p, &seen(Some(5000))), None);
        let p = params(serde_json::json!({"name": "g", "state": "absent", "force": "yes"}));
        assert_eq!(
            command(&p, &seen(Some(1))).unwrap().join(" "),
            "groupdel -f g"
        );
        assert_eq!(command(&p, &seen(None)), None);
        // `local` looks at /etc/group, not the name service, and uses libuser's tools.
        let p = params(serde_json::json!({"name": "g", "local": true}));
        assert_eq!(
            command(&p, &seen(Some(1))).unwrap().join(" "),
            "lgroupadd g"
        );
    }

    #[test]
    fn probe_output_is_parsed() {
        let s = parse("nss=staff:x:50:alice,bob\nfile=1\ntaken=other\n");
        assert_eq!(s.gid, Some(50));
        assert!(s.in_file && !s.no_file);
        assert_eq!(s.gid_taken_by.as_deref(), Some("other"));
        assert_eq!(parse(""), Seen::default());
    }

    #[test]
    fn refused_combinations_use_upstreams_messages() {
        let p = params(serde_json::json!({"name": "g", "non_unique": true}));
        assert_eq!(
            refuse(&p).unwrap(),
            "non_unique is True but all of the following are missing: gid"
        );
        let p = params(serde_json::json!({"name": "g", "local": true, "force": true}));
        assert!(
            refuse(&p)
                .unwrap()
                .starts_with("force is not a valid option")
        );
        let p = params(serde_json::json!({"name": "g", "local": true, "gid_min": 5}));
        assert_eq!(
            refuse(&p).unwrap(),
            "'gid_min' can not be used with 'local'"
        );
    }
}
