//! `cron`: manage a job or an environment line in a user's crontab (`crontab -l` / `crontab -`)
//! or in a file under `/etc/cron.d` (`cron_file`), marked with `#Ansible: name` lines, as
//! ansible-core 2.19's `cron` module does (lib/ansible/modules/cron.py). The crontab is read
//! in one command, edited on the controller by
//! [`CronTab`](super::cron_tab::CronTab), and written back only when it
//! changed; `--check` stops before the write.
//!
//! Unlike upstream, a `cron_file` task does not need the `crontab` program on the host (it is
//! only looked for where a user's crontab is read or written).

use serde::Deserialize;

use super::args::{boolish, opt_stringish};
use super::cron_store::{self, Target};
use super::host_path;
use super::lineinfile::State;
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Cron, "cron", Params, run);

/// The `@` schedules cron knows.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Special {
    Reboot,
    Yearly,
    Annually,
    Monthly,
    Weekly,
    Daily,
    Hourly,
}

impl Special {
    fn as_str(self) -> &'static str {
        match self {
            Special::Reboot => "reboot",
            Special::Yearly => "yearly",
            Special::Annually => "annually",
            Special::Monthly => "monthly",
            Special::Weekly => "weekly",
            Special::Daily => "daily",
            Special::Hourly => "hourly",
        }
    }
}

fn star() -> Option<String> {
    Some("*".into())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The job's name (its `#Ansible: name` marker), or the variable's name with `env`.
    #[serde(deserialize_with = "req_string")]
    name: String,
    /// Whose crontab (default: the connecting user's); with `cron_file`, the user the job
    /// runs as.
    user: Option<String>,
    /// The command, or the variable's value with `env`.
    #[serde(default, alias = "value", deserialize_with = "opt_stringish")]
    job: Option<String>,
    /// A file in `/etc/cron.d` (or an absolute path) instead of a user's crontab.
    #[serde(default, deserialize_with = "host_path::opt")]
    cron_file: Option<String>,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// Keep a copy of the crontab as it was in a temporary file (`backup_file`).
    #[serde(default, deserialize_with = "boolish")]
    backup: bool,
    /// Minute (`0-59`, `*`, `*/2`, ...).
    #[serde(default = "star", deserialize_with = "opt_stringish")]
    minute: Option<String>,
    /// Hour.
    #[serde(default = "star", deserialize_with = "opt_stringish")]
    hour: Option<String>,
    /// Day of the month.
    #[serde(default = "star", alias = "dom", deserialize_with = "opt_stringish")]
    day: Option<String>,
    /// Month.
    #[serde(default = "star", deserialize_with = "opt_stringish")]
    month: Option<String>,
    /// Day of the week.
    #[serde(default = "star", alias = "dow", deserialize_with = "opt_stringish")]
    weekday: Option<String>,
    /// `@reboot`, `@daily`, ... instead of the five time fields.
    special_time: Option<Special>,
    /// Write the job commented out.
    #[serde(default, deserialize_with = "boolish")]
    disabled: bool,
    /// Manage a `NAME="value"` line instead of a job.
    #[serde(default, deserialize_with = "boolish")]
    env: bool,
    /// With `env`: put a new variable after this one.
    insertafter: Option<String>,
    /// With `env`: put a new variable before this one.
    insertbefore: Option<String>,
}

fn req_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    opt_stringish(d)?.ok_or_else(|| serde::de::Error::custom("`name` must be a string"))
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if p.insertafter.is_some() && p.insertbefore.is_some() {
        return Ok(ModuleResult::failed(
            "parameters are mutually exclusive: insertafter|insertbefore",
        ));
    }
    let present = p.state == State::Present;
    let target = match &p.cron_file {
        Some(f) if f == "/etc/crontab" => {
            return Ok(ModuleResult::failed(
                "Will not manage /etc/crontab via cron_file, see documentation.",
            ));
        }
        Some(f) if f.starts_with('/') => Target::File(f.clone()),
        Some(f) => Target::File(format!("/etc/cron.d/{f}")),
        None => Target::User(p.user.clone()),
    };

    let (mut tab, before) = match cron_store::read(ctx, &target).await? {
        Ok(read) => read,
        Err(failed) => return Ok(failed),
    };
    let original = tab.render();
    let existing = tab.existing.clone();

    let times = [&p.minute, &p.hour, &p.day, &p.month, &p.weekday];
    let field = |f: &Option<String>| f.clone().unwrap_or_else(|| "*".into());
    if p.special_time.is_some() && times.iter().any(|t| field(t) != "*") {
        return Ok(ModuleResult::failed(
            "You cannot combine special_time with any of the time or day/date parameters.",
        ));
    }
    if present {
        if p.cron_file.is_some() && p.user.is_none() {
            return Ok(ModuleResult::failed(
                "To use cron_file=... parameter you must specify user=... as well",
            ));
        }
        if p.job.is_none() {
            return Ok(ModuleResult::failed(
                "You must specify 'job' to install a new cron job or variable",
            ));
        }
        if (p.insertafter.is_some() || p.insertbefore.is_some()) && !p.env {
            return Ok(ModuleResult::failed(
                "Insertafter and insertbefore parameters are valid only with env=yes",
            ));
        }
    }

    let mut changed = false;
    if p.env {
        if p.name.contains(' ') {
            return Ok(ModuleResult::failed(
                "Invalid name for environment variable",
            ));
        }
        let decl = format!("{}=\"{}\"", p.name, p.job.as_deref().unwrap_or("None"));
        let old = tab.find_env(&p.name);
        match (present, old) {
            (true, None) => {
                if let Err(msg) =
                    tab.add_env(&decl, p.insertafter.as_deref(), p.insertbefore.as_deref())
                {
                    return Ok(ModuleResult::failed(msg));
                }
                changed = true;
            }
            (true, Some((_, line))) if line != decl => {
                tab.update_env(&p.name, Some(&decl));
                changed = true;
            }
            (false, Some(_)) => {
                tab.update_env(&p.name, None);
                changed = true;
            }
            _ => {}
        }
    } else if present {
        let job = job_line(&p, matches!(target, Target::File(_)));
        match tab.find_job(&p.name, Some(&job)) {
            None => {
                tab.add_job(&p.name, &job);
                changed = true;
            }
            Some(found) if found.job != job || found.adopted => {
                tab.update_job(&p.name, Some(&job));
                changed = true;
            }
            Some(_) => {}
        }
    } else if tab.find_job(&p.name, None).is_some() {
        tab.update_job(&p.name, None);
        changed = true;
        if let Target::File(path) = &target
            && tab.is_empty()
        {
            return cron_store::remove_file(
                ctx,
                p.cron_file.as_deref().unwrap_or_default(),
                path,
                before.as_ref(),
                &existing,
            )
            .await;
        }
    }

    // An existing crontab without a final newline gets one.
    if !changed && !existing.is_empty() && !existing.ends_with(['\r', '\n']) {
        changed = true;
    }

    let mut r = ModuleResult::ok()
        .with("jobs", tab.job_names())
        .with("envs", tab.env_names());
    r.changed = changed;
    if changed {
        let after = tab.render();
        if ctx.diff {
            r.diff = Some(Diff {
                path: Some(target.header()),
                before: existing.clone().into(),
                after: after.clone().into(),
            });
        }
        if !ctx.check_mode {
            if p.backup {
                match cron_store::backup(ctx, &original).await? {
                    Ok(path) => r = r.with("backup_file", path),
                    Err(failed) => return Ok(failed),
                }
            }
            if let Some(failed) = cron_store::write(ctx, &target, before.as_ref(), after).await? {
                return Ok(failed);
            }
        }
    }
    if let Some(f) = &p.cron_file {
        r = r.with("cron_file", f.as_str());
    }
    Ok(r)
}

/// The job line: the five fields (or `@special`), the user for a cron file, the command;
/// `#` in front when disabled.
fn job_line(p: &Params, file: bool) -> String {
    let job = p.job.as_deref().unwrap_or_default();
    let job = job.trim_matches(['\r', '\n']);
    let prefix = if p.disabled { "#" } else { "" };
    let user = if file {
        format!("{} ", p.user.as_deref().unwrap_or_default())
    } else {
        String::new()
    };
    match p.special_time {
        Some(s) => format!("{prefix}@{} {user}{job}", s.as_str()),
        None => {
            let f = |x: &Option<String>| x.clone().unwrap_or_else(|| "*".into());
            format!(
                "{prefix}{} {} {} {} {} {user}{job}",
                f(&p.minute),
                f(&p.hour),
                f(&p.day),
                f(&p.month),
                f(&p.weekday)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: serde_json::Value) -> Params {
        super::super::args::parse("cron", &v).unwrap()
    }

    #[test]
    fn job_lines_are_upstreams() {
        let p = params(serde_json::json!({"name": "a", "job": "ls\n", "minute": 5, "hour": "2"}));
        assert_eq!(job_line(&p, false), "5 2 * * * ls");
        let p = params(serde_json::json!({
            "name": "a", "job": "ls", "special_time": "reboot", "user": "bob", "disabled": true
        }));
        assert_eq!(job_line(&p, true), "#@reboot bob ls");
    }
}
