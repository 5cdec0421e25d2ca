//! `git`: a checkout of a git repository at a version, as ansible-core 2.19's `git` module
//! keeps it (ansible/modules/git.py `main()`): cloned when `dest` has no repository, else
//! fetched and switched to `version` (a branch, tag, sha or `HEAD`); local modifications are
//! refused unless `force` resets them; submodules updated; optionally archived.
//!
//! Check mode decides with `git ls-remote` (the remote's sha for `version` against the
//! current `HEAD`), as upstream does, and touches nothing. Returns `before`/`after` (shas),
//! `remote_url_changed` on an update, and upstream's messages on refusal.
//!
//! Not done: `verify_commit`/`gpg_allowlist` (refused with a clear message), the `--diff`
//! text, and the fallbacks upstream keeps for git older than 2.3.
//!
//! Longer than most files: the parameters, the first probe and `main()`'s decision tree are
//! one reading of upstream's `main()`; the commands live in `git_ops` and `git_sync`.

use serde::Deserialize;
use serde_json::Value;

use crate::transport::quote::sh;

use super::args::{boolish, opt_u64ish};
use super::git_ops::{Flow, Git, Stop, expand_user, url_changed_value};
use super::git_sync::{self, Want};
use super::host_path;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(GitModule, "git", Params, run);

fn yes() -> bool {
    true
}

fn default_version() -> String {
    "HEAD".into()
}

fn default_remote() -> String {
    "origin".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The repository: a URL (`https://`, `ssh://`, `git@host:path`, `file://`) or a path.
    #[serde(alias = "name")]
    repo: String,
    /// Where the checkout goes (needed unless `clone: false`).
    #[serde(default, deserialize_with = "host_path::opt")]
    dest: Option<String>,
    /// Branch, tag, sha or `HEAD` (the remote's default branch).
    #[serde(default = "default_version", deserialize_with = "stringish")]
    version: String,
    /// Name of the remote.
    #[serde(default = "default_remote")]
    remote: String,
    /// More refs to fetch (`git fetch <remote> <refspec>`).
    refspec: Option<String>,
    /// `git clone --reference`.
    reference: Option<String>,
    /// Discard local modifications of tracked files (`git reset --hard`), and `fetch --force`.
    #[serde(default, deserialize_with = "boolish")]
    force: bool,
    /// Shallow clone with this many commits.
    #[serde(default, deserialize_with = "opt_u64ish")]
    depth: Option<u64>,
    /// Clone when `dest` has no repository (with `false`, only report the remote's sha).
    #[serde(default = "yes", deserialize_with = "boolish")]
    clone: bool,
    /// Fetch and check out `version` when `dest` has a repository (with `false`, only report
    /// the current sha).
    #[serde(default = "yes", deserialize_with = "boolish")]
    update: bool,
    /// Verify the GPG signature of the commit or tag (not supported by kinit).
    #[serde(default, deserialize_with = "boolish")]
    verify_commit: bool,
    /// GPG fingerprints allowed with `verify_commit` (not supported by kinit).
    #[serde(default, alias = "gpg_whitelist")]
    gpg_allowlist: Vec<String>,
    /// Add `-o StrictHostKeyChecking=no` to ssh.
    #[serde(default, deserialize_with = "boolish")]
    accept_hostkey: bool,
    /// Add `-o StrictHostKeyChecking=accept-new` to ssh.
    #[serde(default, deserialize_with = "boolish")]
    accept_newhostkey: bool,
    /// The ssh private key (`-i`, with `IdentitiesOnly=yes`).
    #[serde(default, deserialize_with = "host_path::opt")]
    key_file: Option<String>,
    /// More ssh options (`GIT_SSH_COMMAND`).
    ssh_opts: Option<String>,
    /// The git to run (default `git` from PATH).
    #[serde(default, deserialize_with = "host_path::opt")]
    executable: Option<String>,
    /// A bare repository (no working tree).
    #[serde(default, deserialize_with = "boolish")]
    bare: bool,
    /// Update submodules too.
    #[serde(default = "yes", deserialize_with = "boolish")]
    recursive: bool,
    /// Clone only the wanted branch (`--single-branch`).
    #[serde(default, deserialize_with = "boolish")]
    single_branch: bool,
    /// Move submodules to their remote's `master` (`submodule update --remote`).
    #[serde(default, deserialize_with = "boolish")]
    track_submodules: bool,
    /// Umask for the commands, a quoted octal string (`"0022"`).
    #[serde(default)]
    umask: Option<Value>,
    /// Also write `version` as an archive (`.zip`, `.tar`, `.tar.gz`, `.tgz`).
    #[serde(default, deserialize_with = "host_path::opt")]
    archive: Option<String>,
    /// Folder prefix inside the archive.
    archive_prefix: Option<String>,
    /// Keep the repository's git folder here, away from the working tree.
    #[serde(default, deserialize_with = "host_path::opt")]
    separate_git_dir: Option<String>,
}

/// A string given as a string or a number (`version: 1.0` in YAML is a float).
fn stringish<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    super::args::opt_stringish(d).map(|v| v.unwrap_or_default())
}

/// Argument combinations upstream refuses, with its messages, in its order.
fn refuse(p: &Params) -> Option<String> {
    if p.separate_git_dir.is_some() && p.bare {
        return Some("parameters are mutually exclusive: separate_git_dir|bare".into());
    }
    if p.accept_hostkey && p.accept_newhostkey {
        return Some("parameters are mutually exclusive: accept_hostkey|accept_newhostkey".into());
    }
    if p.archive_prefix.is_some() && p.archive.is_none() {
        return Some("missing parameter(s) required by 'archive_prefix': archive".into());
    }
    if p.verify_commit || !p.gpg_allowlist.is_empty() {
        return Some(
            "kinit's git module does not verify GPG signatures (verify_commit, gpg_allowlist)"
                .into(),
        );
    }
    if let Some(u) = &p.umask {
        match u {
            Value::String(s) if u32::from_str_radix(s, 8).is_ok() => {}
            Value::String(_) => return Some("umask must be an octal integer".into()),
            _ => return Some("umask must be defined as a quoted octal integer".into()),
        }
    }
    if p.dest.is_none() && p.clone {
        return Some("the destination directory must be specified unless clone=no".into());
    }
    None
}

/// The ssh options upstream puts in `GIT_SSH_COMMAND` (`set_git_ssh_env`, after `main()`
/// added the host key options).
fn ssh_options(p: &Params, accept_new: bool, home: &str) -> String {
    let mut user = p.ssh_opts.clone();
    let host_key = if p.accept_hostkey {
        Some("-o StrictHostKeyChecking=no")
    } else if accept_new {
        Some("-o StrictHostKeyChecking=accept-new")
    } else {
        None
    };
    if let Some(opt) = host_key {
        user = Some(match user {
            Some(o)
                if o.contains("-o StrictHostKeyChecking=no")
                    || o.contains("-o StrictHostKeyChecking=accept-new") =>
            {
                o
            }
            Some(o) => format!("{o} {opt}"),
            None => opt.to_string(),
        });
    }
    let mut opts = user.map(|o| format!(" {o}")).unwrap_or_default();
    if p.accept_hostkey && !opts.contains("StrictHostKeyChecking=no") {
        opts.push_str(" -o StrictHostKeyChecking=no");
    }
    if !opts.contains("BatchMode=yes") {
        opts.push_str(" -o BatchMode=yes");
    }
    if let Some(key) = &p.key_file {
        let key_opt = format!("-i {}", expand_user(key, home));
        if !opts.contains(&key_opt) {
            opts.push_str(&format!("  {key_opt}"));
        }
        if !opts.contains("IdentitiesOnly=yes") {
            opts.push_str(" -o IdentitiesOnly=yes");
        }
    }
    opts
}

/// Lexical `os.path.abspath` of `path` against `cwd`.
fn abspath(path: &str, cwd: &str) -> String {
    let full = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    super::git_ops::unfrack(&full)
}

/// What the first probe saw on the host.
#[derive(Debug, Default)]
struct Seen {
    home: String,
    pwd: String,
    git: Option<String>,
    accept_new: bool,
    /// The repository folder (`dest/.git`, `dest` when bare, or where a `.git` file points).
    repo_path: Option<String>,
    /// A `.git` file that points nowhere valid.
    bad_gitfile: Option<String>,
    has_config: bool,
    separate_exists: bool,
    separate_real: Option<String>,
}

fn probe_script(p: &Params, dest: Option<&str>) -> String {
    let mut s = String::from("echo \"home=$HOME\"; echo \"pwd=$PWD\"\n");
    match &p.executable {
        Some(e) => s.push_str(&format!("echo git={}\n", sh(e))),
        None => s.push_str("g=$(command -v git) && echo \"git=$g\"\n"),
    }
    if p.accept_newhostkey {
        s.push_str(
            "ssh -o StrictHostKeyChecking=accept-new -V >/dev/null 2>&1 && echo acceptnew=1\n",
        );
    }
    if let Some(sep) = &p.separate_git_dir {
        s.push_str(&format!(
            "echo \"sep=$(realpath -m {0})\"; [ -e \"$(realpath -m {0})\" ] && echo sepexists=1\n",
            sh(sep)
        ));
    }
    if let Some(dest) = dest {
        let base = if p.bare {
            sh(dest)
        } else {
            sh(&format!("{dest}/.git"))
        };
        // A `.git` file (`gitdir: <path>`, relative to dest) points at the real folder.
        s.push_str(&format!(
            "r={base}\nif [ -f \"$r\" ]; then l=$(cat \"$r\"); case \"$l\" in 'gitdir: '*) g=${{l#gitdir: }};; *) echo \"badgit=$l\"; exit 0;; esac\n\
             case \"$g\" in /*) r=\"$g\";; *) r={d}/\"$g\";; esac\n\
             [ -d \"$r\" ] || {{ echo \"badgit=$r is not a directory\"; exit 0; }}; fi\n\
             echo \"repo=$r\"; [ -e \"$r/config\" ] && echo config=1\n",
            d = sh(dest)
        ));
    }
    s
}

fn parse(out: &str) -> Seen {
    let mut s = Seen::default();
    for line in out.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.to_string();
        match k {
            "home" => s.home = v,
            "pwd" => s.pwd = v,
            "git" => s.git = Some(v),
            "acceptnew" => s.accept_new = true,
            "repo" => s.repo_path = Some(v),
            "badgit" => s.bad_gitfile = Some(v),
            "config" => s.has_config = true,
            "sep" => s.separate_real = Some(v),
            "sepexists" => s.separate_exists = true,
            _ => {}
        }
    }
    s
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if let Some(msg) = refuse(&p) {
        return Ok(ModuleResult::failed(msg));
    }
    match run_flow(ctx, &p).await {
        Ok(r) | Err(Stop::Done(r)) => Ok(r),
        Err(Stop::Err(e)) => Err(e),
    }
}

async fn run_flow(ctx: &ModuleCtx<'_>, p: &Params) -> Flow<ModuleResult> {
    // Relative paths are the shell's: find its folder and home first, then look again with
    // `dest` made absolute.
    let first = parse(&ctx.run(probe_script(p, None)).await?.stdout_str());
    let dest = p
        .dest
        .as_ref()
        .map(|d| abspath(&expand_user(d, &first.home), &first.pwd));
    let seen = match &dest {
        Some(d) => parse(&ctx.run(probe_script(p, Some(d))).await?.stdout_str()),
        None => first,
    };
    let Some(bin) = seen.git.clone() else {
        return Ok(ModuleResult::failed(
            "Failed to find required executable \"git\" in paths",
        ));
    };
    let mut warnings: Vec<String> = Vec::new();
    if p.accept_newhostkey && !seen.accept_new {
        warnings.push(
            "Your ssh client does not support accept_newhostkey option, therefore it cannot be used."
                .into(),
        );
    }
    let mut prefix = String::from("export LANG=C LC_ALL=C LC_MESSAGES=C LC_CTYPE=C LANGUAGE=C\n");
    prefix.push_str(&format!(
        "export GIT_SSH_COMMAND=\"${{GIT_SSH:-${{GIT_SSH_COMMAND:-ssh}}}}\"{}\n",
        sh(&ssh_options(p, seen.accept_new, &seen.home))
    ));
    if let Some(Value::String(u)) = &p.umask {
        prefix.push_str(&format!("umask {}\n", sh(u)));
    }
    let git = Git {
        ctx,
        bin,
        prefix,
        repo_arg: p.repo.clone(),
        home: seen.home.clone(),
    };
    // Path-like URLs become file:// ones, which `depth` needs (upstream's comment).
    let expanded = expand_user(&p.repo, &seen.home);
    let repo = if expanded.starts_with('/') {
        format!("file://{expanded}")
    } else {
        p.repo.clone()
    };
    let separate = p
        .separate_git_dir
        .as_ref()
        .map(|_| seen.separate_real.clone().unwrap_or_default());

    let mut r = ModuleResult::ok();
    if let Some(bad) = &seen.bad_gitfile {
        return Ok(ModuleResult::failed(
            "Current repo does not have a valid reference to a separate Git dir or it refers to \
             the invalid path",
        )
        .with("details", bad.as_str()));
    }
    let dest_s = dest.clone().unwrap_or_default();
    let repo_path = seen.repo_path.clone().unwrap_or_default();
    let repo_exists = git
        .sh(&format!("[ -e {} ]", sh(&repo_path)))
        .await?
        .success()
        && dest.is_some();
    if let Some(sep) = &separate
        && repo_exists
        && *sep != repo_path
    {
        r.changed = true;
        if !ctx.check_mode {
            if seen.separate_exists {
                return Ok(ModuleResult::failed(format!(
                    "Separate-git-dir path {sep} already exists."
                )));
            }
            let script = format!(
                "mv {old} {new} && printf '%s' {line} > {dot}",
                old = sh(&repo_path),
                new = sh(sep),
                line = sh(&format!("gitdir: {sep}")),
                dot = sh(&format!("{dest_s}/.git"))
            );
            let out = git.sh(&script).await?;
            if !out.success() {
                return Ok(ModuleResult::failed(format!(
                    "Unable to move git dir: {}",
                    out.stderr_str().trim_end()
                )));
            }
            r = r
                .with("git_dir_before", repo_path.as_str())
                .with("git_dir_now", sep.as_str());
        }
    }
    let want = Want {
        repo: &repo,
        dest: &dest_s,
        version: &p.version,
        remote: &p.remote,
        refspec: p.refspec.as_deref(),
        depth: p.depth,
        bare: p.bare,
        force: p.force,
    };
    r = r.with("before", Value::Null);
    let mut local_mods = false;
    let mut url_changed = false;
    let before: Option<String>;
    if (dest.is_some() && !seen.has_config) || (dest.is_none() && !p.clone) {
        if ctx.check_mode || !p.clone {
            let head = git
                .remote_head(dest.as_deref(), p.bare, &p.version, &repo)
                .await?;
            r.changed = true;
            return Ok(finish(r.with("after", head), warnings));
        }
        warnings.extend(
            git_sync::clone(
                &git,
                &want,
                p.reference.as_deref(),
                p.single_branch,
                separate.as_deref(),
            )
            .await?,
        );
        before = None;
    } else if !p.update {
        let v = git.version(&dest_s, "HEAD").await?;
        r = r.with("before", v.as_str()).with("after", v.as_str());
        if let Some(archive) = &p.archive {
            if ctx.check_mode {
                r.changed = true;
                return Ok(finish(r, warnings));
            }
            let changed = git_sync::create_archive(
                &git,
                &dest_s,
                archive,
                p.archive_prefix.as_deref(),
                &p.version,
            )
            .await?;
            r.changed = changed;
        }
        return Ok(finish(r, warnings));
    } else {
        local_mods = !p.bare && has_local_mods(&git, &dest_s).await?;
        let v = git.version(&dest_s, "HEAD").await?;
        r = r.with("before", v.as_str());
        if local_mods {
            if !p.force {
                let mut f = r.clone();
                f.failed = true;
                f.msg = Some(format!(
                    "Local modifications exist in the destination: {dest_s} (force=no)."
                ));
                return Ok(finish(f, warnings));
            }
            if !ctx.check_mode {
                git.checked(Some(&dest_s), &["reset", "--hard", "HEAD"])
                    .await?;
                r.changed = true;
                r.msg = Some(format!(
                    "Local modifications exist in the destination: {dest_s}"
                ));
            }
        }
        if ctx.check_mode {
            let url = git.remote_url(&dest_s, &p.remote).await?;
            let (value, changed_url) = url_changed_value(url.as_deref(), &repo);
            let head = git
                .remote_head(Some(&dest_s), p.bare, &p.version, &p.remote)
                .await?;
            r.changed = v != head || changed_url;
            return Ok(finish(
                r.with("remote_url_changed", value).with("after", head),
                warnings,
            ));
        }
        url_changed = git.set_remote_url(&dest_s, &p.remote, &repo).await?;
        r = r.with("remote_url_changed", url_changed);
        git_sync::fetch(&git, &want).await?;
        before = Some(v);
    }
    if !p.bare {
        git_sync::switch_version(&git, &want).await?;
    }
    let mut submodules_updated = false;
    if p.recursive && !p.bare {
        submodules_updated =
            git_sync::submodules_fetch(&git, &dest_s, &p.remote, p.track_submodules).await?;
        if submodules_updated {
            r = r.with("submodules_changed", true);
            git_sync::submodule_update(&git, &dest_s, p.track_submodules, p.force).await?;
        }
    }
    let after = git.version(&dest_s, "HEAD").await?;
    r = r.with("after", after.as_str());
    if before.as_deref() != Some(after.as_str()) || local_mods || submodules_updated || url_changed
    {
        r.changed = true;
    }
    if let Some(archive) = &p.archive {
        let changed = git_sync::create_archive(
            &git,
            &dest_s,
            archive,
            p.archive_prefix.as_deref(),
            &p.version,
        )
        .await?;
        r.changed = changed;
    }
    Ok(finish(r, warnings))
}

/// Local changes to tracked files (`git status --porcelain` without the `??` lines).
async fn has_local_mods(git: &Git<'_>, dest: &str) -> Flow<bool> {
    let out = git.out(Some(dest), &["status", "--porcelain"]).await?;
    Ok(out.stdout_str().lines().any(|l| !l.starts_with("??")))
}

fn finish(mut r: ModuleResult, warnings: Vec<String>) -> ModuleResult {
    if !warnings.is_empty() {
        r = r.with("warnings", warnings);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Params {
        super::super::args::parse("git", &v).unwrap()
    }

    #[test]
    fn ssh_command_options_follow_upstream() {
        let p = params(serde_json::json!({"repo": "r", "dest": "/d"}));
        assert_eq!(ssh_options(&p, false, "/h"), " -o BatchMode=yes");
        let p = params(
            serde_json::json!({"repo": "r", "dest": "/d", "accept_hostkey": true,
            "key_file": "~/.ssh/k", "ssh_opts": "-p 2222"}),
        );
        assert_eq!(
            ssh_options(&p, false, "/h"),
            " -p 2222 -o StrictHostKeyChecking=no -o BatchMode=yes  -i /h/.ssh/k -o IdentitiesOnly=yes"
        );
        let p = params(serde_json::json!({"repo": "r", "dest": "/d", "accept_newhostkey": true}));
        assert_eq!(
            ssh_options(&p, true, "/h"),
            " -o StrictHostKeyChecking=accept-new -o BatchMode=yes"
        );
    }

    #[test]
    fn refused_combinations_use_upstreams_messages() {
        let p = params(serde_json::json!({"repo": "r"}));
        assert_eq!(
            refuse(&p).unwrap(),
            "the destination directory must be specified unless clone=no"
        );
        let p = params(serde_json::json!({"repo": "r", "dest": "/d", "umask": 18}));
        assert_eq!(
            refuse(&p).unwrap(),
            "umask must be defined as a quoted octal integer"
        );
        let p = params(serde_json::json!({"repo": "r", "dest": "/d", "bare": true,
            "separate_git_dir": "/s"}));
        assert_eq!(
            refuse(&p).unwrap(),
            "parameters are mutually exclusive: separate_git_dir|bare"
        );
        let p = params(serde_json::json!({"repo": "r", "dest": "/d", "archive_prefix": "x/"}));
        assert_eq!(
            refuse(&p).unwrap(),
            "missing parameter(s) required by 'archive_prefix': archive"
        );
    }

    #[test]
    fn relative_destinations_are_made_absolute() {
        assert_eq!(abspath("co/x", "/home/u"), "/home/u/co/x");
        assert_eq!(abspath("/a/../b/", "/home/u"), "/b");
    }
}
