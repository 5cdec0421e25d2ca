//! Where `cron` reads and writes a crontab on the host: a user's crontab through the
//! `crontab` program (`-l` to read, `-` to install; `-u user` only for another user than the
//! connecting one, as upstream), or a cron file written through `filewrite`; the backup in a
//! temporary file and the removal of a cron file whose last job went.

use crate::transport::quote::sh;

use super::cron_tab::CronTab;
use super::filewrite::{self, Before, Content, Write};
use super::posix::{Attrs, Kind};
use super::{Diff, ModuleCtx, ModuleError, ModuleResult};

/// Where the crontab lives.
pub enum Target {
    /// A user's crontab through the `crontab` program (`-u user` when it is not the
    /// connecting user).
    User(Option<String>),
    File(String),
}

impl Target {
    pub fn header(&self) -> String {
        match self {
            Target::File(f) => f.clone(),
            Target::User(Some(u)) => format!("crontab for user \"{u}\""),
            Target::User(None) => "crontab".into(),
        }
    }
}

/// sh text running `crontab` with `args`, as `user` when that is not who we are.
pub fn crontab_cmd(user: Option<&str>, args: &str) -> String {
    let missing = "command -v crontab >/dev/null 2>&1 || { echo 'Failed to find required \
                   executable \"crontab\"' >&2; exit 127; }";
    match user {
        None => format!("{missing}; crontab {args}"),
        Some(u) => format!(
            "{missing}; if [ \"$(id -un)\" = {u} ]; then crontab {args}; else crontab -u {u} {args}; fi",
            u = sh(u)
        ),
    }
}

/// Read the crontab as it is: its lines, and what the probe saw of a cron file; `Err` is the
/// failure to report (no `crontab` program, an unreadable crontab).
pub async fn read(
    ctx: &ModuleCtx<'_>,
    target: &Target,
) -> Result<Result<(CronTab, Option<Before>), ModuleResult>, ModuleError> {
    Ok(Ok(match target {
        Target::File(path) => {
            let b = filewrite::probe(ctx, path, true).await?;
            let text = b.text().into_owned();
            (CronTab::from_file(&text), Some(b))
        }
        Target::User(user) => {
            let out = ctx.run(crontab_cmd(user.as_deref(), "-l")).await?;
            // rc 1 is "no crontab for user".
            if out.rc != 0 && out.rc != 1 {
                let why = out.stderr_str().trim().to_string();
                return Ok(Err(ModuleResult::failed(
                    if out.rc == 127 && why.contains("crontab") {
                        why
                    } else {
                        format!("Unable to read crontab: {why}")
                    },
                )));
            }
            let text = if out.rc == 0 {
                out.stdout_str()
            } else {
                String::new()
            };
            (CronTab::from_listing(&text), None)
        }
    }))
}

/// The last job of a cron file went: the file is removed (a change only if it was there).
pub async fn remove_file(
    ctx: &ModuleCtx<'_>,
    cron_file: &str,
    path: &str,
    before: Option<&Before>,
    existing: &str,
) -> Result<ModuleResult, ModuleError> {
    let exists = before.is_some_and(|b| b.stat.kind == Kind::File);
    let mut r = ModuleResult::ok()
        .with("cron_file", cron_file)
        .with("state", "absent");
    r.changed = exists;
    if ctx.diff {
        r.diff = Some(Diff {
            path: Some("/dev/null".into()),
            before: existing.to_string().into(),
            after: String::new().into(),
        });
    }
    if exists && !ctx.check_mode {
        let out = ctx.run(format!("rm -f -- {}", sh(path))).await?;
        if !out.success() {
            return Ok(ModuleResult::failed(format!(
                "cannot remove `{path}`: {}",
                out.stderr_str().trim()
            )));
        }
    }
    Ok(r)
}

/// Save the crontab as it was to a new temporary file on the host, as upstream's
/// `tempfile.mkstemp(prefix='crontab')`; the inner result is the failure to report.
pub async fn backup(
    ctx: &ModuleCtx<'_>,
    text: &str,
) -> Result<Result<String, ModuleResult>, ModuleError> {
    let out = ctx
        .run_with_stdin(
            "umask 077; f=$(mktemp \"${TMPDIR:-/tmp}/crontabXXXXXXXX\") && cat > \"$f\" && printf %s \"$f\"",
            Some(text.as_bytes().to_vec()),
        )
        .await?;
    if !out.success() {
        return Ok(Err(ModuleResult::failed(format!(
            "cannot back up the crontab: {}",
            out.stderr_str().trim()
        ))));
    }
    Ok(Ok(out.stdout_str()))
}

/// Install the new text; `Some` is the failure to report.
pub async fn write(
    ctx: &ModuleCtx<'_>,
    target: &Target,
    before: Option<&Before>,
    text: String,
) -> Result<Option<ModuleResult>, ModuleError> {
    match target {
        Target::File(path) => {
            let before = before.expect("a cron file was probed");
            let attrs = Attrs::default();
            let w = Write {
                dest: path,
                attrs: &attrs,
                backup: false,
                force: true,
                validate: None,
            };
            let r = filewrite::apply(ctx, &w, Content::bytes(text.into_bytes()), before).await?;
            Ok(r.failed.then_some(r))
        }
        Target::User(user) => {
            let out = ctx
                .run_with_stdin(crontab_cmd(user.as_deref(), "-"), Some(text.into_bytes()))
                .await?;
            if out.success() {
                return Ok(None);
            }
            Ok(Some(
                ModuleResult::failed("Failed to install new cronfile").with_output(&out),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_users_crontab_goes_through_dash_u_unless_it_is_ours() {
        let cmd = crontab_cmd(Some("bob smith"), "-l");
        assert!(
            cmd.ends_with(
                "if [ \"$(id -un)\" = 'bob smith' ]; then crontab -l; else crontab -u 'bob smith' -l; fi"
            ),
            "{cmd}"
        );
    }
}
