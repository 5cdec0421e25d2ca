//! The git commands the `git` module is built from, each the one upstream runs
//! (ansible/modules/git.py, ansible-core 2.19): `ls-remote` probes for branches, tags and
//! the remote's head, the checked-out branch, the remote URL, `fetch` with upstream's
//! refspecs, the checkout of a version, submodules and `git archive`. Every command runs in
//! the C locale (upstream screen-scrapes git's output) with the task's ssh options.
//!
//! A failing command ends the module with upstream's result for that failure
//! ([`Stop::Done`]), carried out through `?` by [`Flow`].

use serde_json::Value;

use crate::transport::ExecOutput;
use crate::transport::quote::{sh, sh_join};

use super::{ModuleCtx, ModuleError, ModuleResult};

/// Why the module stops early: a transport/argument error, or a finished (usually failed)
/// result.
pub enum Stop {
    Err(ModuleError),
    Done(ModuleResult),
}

impl From<ModuleError> for Stop {
    fn from(e: ModuleError) -> Self {
        Stop::Err(e)
    }
}

pub type Flow<T> = Result<T, Stop>;

/// A failed result with the command's output, as `run_command(check_rc=True)` fails.
pub fn failed_cmd(argv: &[String], out: &ExecOutput) -> Stop {
    let err = out.stderr_str();
    Stop::Done(
        ModuleResult::failed(err.trim_end())
            .with("cmd", sh_join(argv))
            .with("rc", out.rc)
            .with_streams(out.stdout_str(), err),
    )
}

/// A failed result with `msg` and the command's `stdout`/`stderr`/`rc`.
pub fn failed_with(msg: impl Into<String>, out: &ExecOutput) -> ModuleResult {
    ModuleResult::failed(msg)
        .with_streams(out.stdout_str(), out.stderr_str())
        .with("rc", out.rc)
}

/// Runs git on the host: the binary, and the shell prefix every command shares (locale,
/// `GIT_SSH_COMMAND`, umask).
pub struct Git<'a> {
    pub ctx: &'a ModuleCtx<'a>,
    pub bin: String,
    pub prefix: String,
    /// The `repo` argument as given (upstream's `module.params['repo']`), to tell a clone
    /// source from a remote name.
    pub repo_arg: String,
    pub home: String,
}

impl Git<'_> {
    /// Run sh text with the shared prefix.
    pub async fn sh(&self, script: &str) -> Result<ExecOutput, ModuleError> {
        self.ctx.run(format!("{}{script}", self.prefix)).await
    }

    /// `git args` in `cwd` (a folder that does not exist is ignored, as `run_command` does).
    pub async fn out(&self, cwd: Option<&str>, args: &[&str]) -> Result<ExecOutput, ModuleError> {
        let cd = cwd
            .map(|d| format!("cd {} 2>/dev/null; ", sh(d)))
            .unwrap_or_default();
        self.sh(&format!("{cd}{}", sh_join(&self.argv(args)))).await
    }

    pub fn argv(&self, args: &[&str]) -> Vec<String> {
        std::iter::once(self.bin.clone())
            .chain(args.iter().map(|a| a.to_string()))
            .collect()
    }

    /// `git args` that must succeed (upstream's `check_rc=True`).
    pub async fn checked(&self, cwd: Option<&str>, args: &[&str]) -> Flow<ExecOutput> {
        let out = self.out(cwd, args).await?;
        if !out.success() {
            return Err(failed_cmd(&self.argv(args), &out));
        }
        Ok(out)
    }

    /// `git rev-parse ref` in `dest` (upstream's `get_version`; its output, even on failure).
    pub async fn version(&self, dest: &str, rf: &str) -> Result<String, ModuleError> {
        let out = self.out(Some(dest), &["rev-parse", rf]).await?;
        Ok(out.stdout_str().trim_end_matches('\n').to_string())
    }

    /// Whether `version` names a branch of `remote` (upstream tests the name as a substring
    /// of `ls-remote`'s output).
    pub async fn is_remote_branch(&self, dest: Option<&str>, remote: &str, v: &str) -> Flow<bool> {
        let rf = format!("refs/heads/{v}");
        let out = self
            .checked(dest, &["ls-remote", remote, "-h", &rf])
            .await?;
        Ok(out.stdout_str().contains(v))
    }

    pub async fn is_remote_tag(&self, dest: Option<&str>, remote: &str, v: &str) -> Flow<bool> {
        let rf = format!("refs/tags/{v}");
        let out = self
            .checked(dest, &["ls-remote", remote, "-t", &rf])
            .await?;
        Ok(out.stdout_str().contains(v))
    }

    /// `git branch -a` lines, trimmed.
    async fn branches(&self, dest: &str) -> Flow<Vec<String>> {
        let out = self
            .out(Some(dest), &["branch", "--no-color", "-a"])
            .await?;
        if !out.success() {
            let msg = format!(
                "Could not determine branch data - received {}",
                out.stdout_str()
            );
            return Err(Stop::Done(failed_with(msg, &out)));
        }
        Ok(out
            .stdout_str()
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect())
    }

    pub async fn is_local_branch(&self, dest: &str, branch: &str) -> Flow<bool> {
        let b = self.branches(dest).await?;
        Ok(b.iter().any(|l| l == branch || *l == format!("* {branch}")))
    }

    async fn is_not_a_branch(&self, dest: &str) -> Flow<bool> {
        Ok(self.branches(dest).await?.iter().any(|b| {
            b.starts_with("* ")
                && (b.contains("no branch")
                    || b.contains("detached from")
                    || b.contains("detached at"))
        }))
    }

    /// The branch HEAD is on (upstream's `get_head_branch`): `HEAD` of the repository
    /// (found again each time: a clone may have just made it, maybe behind a `.git` file),
    /// or when detached the remote's `HEAD`, cut as `head_splitter` cuts it. Upstream's
    /// word `None` when the file is missing.
    pub async fn head_branch(&self, dest: &str, remote: &str, bare: bool) -> Flow<String> {
        let file = if self.is_not_a_branch(dest).await? {
            format!("refs/remotes/{remote}/HEAD")
        } else {
            "HEAD".to_string()
        };
        let d = sh(dest);
        let r = if bare {
            d.clone()
        } else {
            sh(&format!("{dest}/.git"))
        };
        let script = format!(
            "r={r}\nif [ -f \"$r\" ]; then g=$(sed -n 's/^gitdir: //p' \"$r\"); \
             case \"$g\" in /*) r=\"$g\";; *) r={d}/\"$g\";; esac; fi\n\
             head -n 1 \"$r\"/{} 2>/dev/null\n",
            sh(&file)
        );
        let line = self.sh(&script).await?.stdout_str();
        if line.is_empty() {
            return Ok("None".into());
        }
        let line = line.replacen(&format!("refs/remotes/{remote}"), "", 1);
        let last = line.split(' ').next_back().unwrap_or("");
        let part = last.splitn(3, '/').last().unwrap_or("");
        Ok(part.trim_end_matches('\n').to_string())
    }

    /// The remote's revision for `version` (upstream's `get_remote_head`): the sha of the
    /// branch, the tag (dereferenced when annotated) or the remote's HEAD; anything else is
    /// taken to be a sha and returned as it is.
    pub async fn remote_head(
        &self,
        dest: Option<&str>,
        bare: bool,
        version: &str,
        remote: &str,
    ) -> Flow<String> {
        let cloning = remote == self.repo_arg
            || remote == format!("file://{}", expand_user(&self.repo_arg, &self.home));
        let cwd = if cloning { None } else { dest };
        let mut tag = false;
        let (flag, rf) = if version == "HEAD" {
            if cloning {
                ("-h", "HEAD".to_string())
            } else {
                let branch = self.head_branch(dest.unwrap_or("."), remote, bare).await?;
                ("-h", format!("refs/heads/{branch}"))
            }
        } else if self.is_remote_branch(dest, remote, version).await? {
            ("-h", format!("refs/heads/{version}"))
        } else if self.is_remote_tag(dest, remote, version).await? {
            tag = true;
            ("-t", format!("refs/tags/{version}*"))
        } else {
            return Ok(version.to_string());
        };
        let out = self.checked(cwd, &["ls-remote", remote, flag, &rf]).await?;
        let text = out.stdout_str();
        if text.is_empty() {
            return Err(Stop::Done(failed_with(
                format!("Could not determine remote revision for {version}"),
                &out,
            )));
        }
        let mut line = text.as_str();
        if tag {
            for t in text.split('\n') {
                if t.ends_with(&format!("{version}^{{}}")) {
                    line = t;
                    break;
                } else if t.ends_with(version) {
                    line = t;
                }
            }
        }
        Ok(line.split_whitespace().next().unwrap_or("").to_string())
    }

    /// `git ls-remote --get-url remote` (`None` when git cannot say).
    pub async fn remote_url(
        &self,
        dest: &str,
        remote: &str,
    ) -> Result<Option<String>, ModuleError> {
        let out = self
            .out(Some(dest), &["ls-remote", "--get-url", remote])
            .await?;
        Ok(out
            .success()
            .then(|| out.stdout_str().trim_end_matches('\n').to_string()))
    }

    /// Point `remote` at `repo` unless it already is (upstream's `set_remote_url`); whether
    /// the URL changed.
    pub async fn set_remote_url(&self, dest: &str, remote: &str, repo: &str) -> Flow<bool> {
        let url = self.remote_url(dest, remote).await?;
        if let Some(u) = &url
            && (u == repo || unfrack(u) == unfrack(repo))
        {
            return Ok(false);
        }
        let out = self
            .out(Some(dest), &["remote", "set-url", remote, repo])
            .await?;
        if !out.success() {
            return Err(Stop::Done(ModuleResult::failed(format!(
                "Failed to set a new url {repo} for {remote}: {} {}",
                out.stdout_str(),
                out.stderr_str()
            ))));
        }
        Ok(url.is_some())
    }
}

/// `~` and `~/x` with the host's home (Ansible's `expanduser` on the host).
pub fn expand_user(path: &str, home: &str) -> String {
    if path == "~" {
        home.to_string()
    } else if let Some(rest) = path.strip_prefix("~/") {
        format!("{}/{rest}", home.trim_end_matches('/'))
    } else {
        path.to_string()
    }
}

/// Upstream's `unfrackgitpath` without the symlink resolution: repeated slashes, `.` and
/// `..` folded, so `file:///x/./y` and `file:/x/y` compare equal.
pub fn unfrack(path: &str) -> String {
    let abs = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("{}{}", if abs { "/" } else { "" }, parts.join("/"))
}

/// A JSON value for upstream's `remote_url_changed` in check mode: the URL itself when it is
/// empty or missing (Python's `a and b and c` returns the first falsy operand), else a bool.
pub fn url_changed_value(url: Option<&str>, repo: &str) -> (Value, bool) {
    match url {
        None => (Value::Null, false),
        Some("") => (Value::from(""), false),
        Some(u) => {
            let changed = u != repo && unfrack(u) != unfrack(repo);
            (Value::from(changed), changed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_fold_as_normpath_does() {
        assert_eq!(unfrack("file:///tmp/./x//y"), "file:/tmp/x/y");
        assert_eq!(unfrack("/a/b/../c"), "/a/c");
        assert_eq!(unfrack("file:///tmp/r"), unfrack("file:/tmp/r"));
        assert_eq!(expand_user("~/r", "/home/u/"), "/home/u/r");
        assert_eq!(expand_user("/r", "/home/u"), "/r");
    }

    #[test]
    fn url_changed_keeps_pythons_falsy_values() {
        assert_eq!(url_changed_value(None, "x").0, Value::Null);
        assert_eq!(url_changed_value(Some(""), "x").0, Value::from(""));
        assert_eq!(url_changed_value(Some("x"), "x").0, Value::from(false));
        assert_eq!(url_changed_value(Some("y"), "x").0, Value::from(true));
    }
}
