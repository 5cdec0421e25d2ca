//! `sysctl`: a kernel parameter in a sysctl file and, optionally, in the running kernel.
//!
//! One probe reads the running value and the file; [`edit`] (pure) works out the new file
//! text; the file is written through `filewrite`; then one command applies the value
//! (`sysctl -w` with `sysctl_set`, or `sysctl -p FILE` when the file changed and `reload`).

use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::{boolish, opt_stringish};
use super::command::yes;
use super::filewrite;
use super::host_path;
use super::lineinfile::State;
use super::posix::Kind;
use super::textedit::{lines, unlines};
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Sysctl, "sysctl", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The parameter (`net.ipv4.ip_forward`).
    #[serde(alias = "key")]
    name: String,
    /// Its value (required with `state: present`).
    #[serde(default, alias = "val", deserialize_with = "opt_stringish")]
    value: Option<String>,
    /// `present` (default) or `absent` (removed from the file).
    #[serde(default)]
    state: State,
    /// The file to keep it in (default `/etc/sysctl.conf`).
    #[serde(default = "default_file", deserialize_with = "host_path::one")]
    sysctl_file: String,
    /// Load the file with `sysctl -p` after changing it (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    reload: bool,
    /// Also set the running value with `sysctl -w` when it differs.
    #[serde(default, deserialize_with = "boolish")]
    sysctl_set: bool,
    /// Do not fail on unknown keys when loading.
    #[serde(default, deserialize_with = "boolish")]
    ignoreerrors: bool,
}

fn default_file() -> String {
    "/etc/sysctl.conf".into()
}

/// Whitespace-normalized value (`sysctl -n` separates multi-values with tabs).
fn norm(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let value = match (p.state, &p.value) {
        (State::Present, None) => {
            return Err(ModuleError::BadArgs {
                module: "sysctl",
                detail: "`value` is required with `state: present`".into(),
            });
        }
        (_, v) => v.as_deref().map(norm),
    };
    let first = format!(
        "printf 'kinit-val=%s\\n' \"$(sysctl -n {} 2>/dev/null | tr '\\t' ' ')\"",
        sh(&p.name)
    );
    let (before, pre) = filewrite::probe_with(ctx, &first, &p.sysctl_file, true).await?;
    let running = pre
        .lines()
        .find_map(|l| l.strip_prefix("kinit-val="))
        .map(norm)
        .unwrap_or_default();
    let old = before.text().into_owned();
    let new = edit(&old, &p.name, value.as_deref());
    let file_changed = new != old && !(new.is_empty() && before.stat.kind == Kind::Absent);
    let runtime_differs = p.sysctl_set && value.as_deref().is_some_and(|v| v != running);
    let mut r = ModuleResult {
        changed: file_changed || runtime_differs,
        ..ModuleResult::ok()
    }
    .with("name", p.name.as_str())
    .with("value", value.clone().unwrap_or_default());
    if file_changed && ctx.diff {
        r.diff = Some(Diff {
            path: Some(p.sysctl_file.clone()),
            before: old.clone().into(),
            after: new.clone().into(),
        });
    }
    if ctx.check_mode || !r.changed {
        return Ok(r);
    }
    if file_changed {
        let wr = filewrite::write_text(ctx, &p.sysctl_file, new, &before).await?;
        if wr.failed {
            return Ok(wr);
        }
    }
    let ignore = if p.ignoreerrors { "-e " } else { "" };
    let cmd = if runtime_differs {
        Some(format!(
            "sysctl {ignore}-w {}",
            sh(&format!("{}={}", p.name, value.unwrap_or_default()))
        ))
    } else if file_changed && p.reload && p.state == State::Present {
        Some(format!("sysctl {ignore}-p {}", sh(&p.sysctl_file)))
    } else {
        None
    };
    if let Some(cmd) = cmd {
        let out = ctx.run(cmd).await?;
        if !out.success() {
            return Ok(ModuleResult::failed(format!(
                "setting `{}` failed: {}",
                p.name,
                out.stderr_str().trim()
            )));
        }
    }
    Ok(r)
}

/// The sysctl file text with `name` set to `value` (first occurrence replaced, duplicates
/// dropped, appended when missing), or removed with `None`.
pub fn edit(text: &str, name: &str, value: Option<&str>) -> String {
    let mut out = Vec::new();
    let mut done = false;
    let mut touched = false;
    for l in lines(text) {
        let key = l
            .split_once('=')
            .map(|(k, _)| k.trim())
            .filter(|_| !l.trim_start().starts_with(['#', ';']));
        if key == Some(name) {
            let want = value.map(|v| format!("{name}={v}"));
            match (&want, done) {
                (Some(w), false) => {
                    done = true;
                    let same = l
                        .split_once('=')
                        .is_some_and(|(_, v)| norm(v) == value.map(norm).unwrap_or_default());
                    if same {
                        out.push(l);
                    } else {
                        out.push(w.clone());
                        touched = true;
                    }
                }
                _ => touched = true,
            }
        } else {
            out.push(l);
        }
    }
    if let (Some(v), false) = (value, done) {
        out.push(format!("{name}={v}"));
        touched = true;
    }
    if touched {
        unlines(&out)
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_replaces_dedups_and_removes() {
        assert_eq!(edit("", "a.b", Some("1")), "a.b=1\n");
        assert_eq!(
            edit("# a.b=0\na.b = 0\nx=1\na.b=2\n", "a.b", Some("1")),
            "# a.b=0\na.b=1\nx=1\n"
        );
        let same = "a.b = 1\n";
        assert_eq!(edit(same, "a.b", Some("1")), same);
        assert_eq!(edit("a.b=1\nx=2", "a.b", None), "x=2\n");
        assert_eq!(edit("x=2", "a.b", None), "x=2");
    }
}
