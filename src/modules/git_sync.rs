//! The changing steps of the `git` module, each as ansible-core 2.19's git.py does it:
//! `clone` (with `--depth`/`--branch`/`--single-branch` only where upstream adds them),
//! `fetch` (the minimal refspecs with `depth`, else everything and the tags), the checkout of
//! the wanted version, submodules, and `git archive` (replacing an archive only when its
//! bytes differ).

use crate::transport::quote::sh;

use super::ModuleResult;
use super::git_ops::{Flow, Git, Stop, failed_with};

/// What `clone` and `fetch` need to know about the request.
pub struct Want<'a> {
    pub repo: &'a str,
    pub dest: &'a str,
    pub version: &'a str,
    pub remote: &'a str,
    pub refspec: Option<&'a str>,
    pub depth: Option<u64>,
    pub bare: bool,
    pub force: bool,
}

/// `git clone` into `dest` (its parent folder made first), then the extra remote a bare
/// clone gets and the `refspec` fetch. Returns upstream's warnings.
pub async fn clone(
    git: &Git<'_>,
    w: &Want<'_>,
    reference: Option<&str>,
    single_branch: bool,
    separate_git_dir: Option<&str>,
) -> Flow<Vec<String>> {
    let parent = match w.dest.rsplit_once('/') {
        Some(("", _)) => "/".to_string(),
        Some((p, _)) => p.to_string(),
        None => ".".to_string(),
    };
    git.sh(&format!("mkdir -p {} 2>/dev/null", sh(&parent)))
        .await?;
    let mut warnings = Vec::new();
    let mut args: Vec<String> = vec!["clone".into()];
    if w.bare {
        args.push("--bare".into());
    } else {
        args.extend(["--origin".into(), w.remote.to_string()]);
    }
    let branch_or_tag = git
        .is_remote_branch(Some(w.dest), w.repo, w.version)
        .await?
        || git.is_remote_tag(Some(w.dest), w.repo, w.version).await?;
    if let Some(depth) = w.depth {
        if w.version == "HEAD" || w.refspec.is_some() {
            args.extend(["--depth".into(), depth.to_string()]);
        } else if branch_or_tag {
            args.extend(["--depth".into(), depth.to_string()]);
            args.extend(["--branch".into(), w.version.to_string()]);
        } else {
            warnings.push(
                "Ignoring depth argument. Shallow clones are only available for HEAD, branches, \
                 tags or in combination with refspec."
                    .to_string(),
            );
        }
    }
    if let Some(r) = reference {
        args.extend(["--reference".into(), r.to_string()]);
    }
    if single_branch {
        args.push("--single-branch".into());
        if branch_or_tag {
            args.extend(["--branch".into(), w.version.to_string()]);
        }
    }
    if let Some(d) = separate_git_dir {
        args.push(format!("--separate-git-dir={d}"));
    }
    args.extend([w.repo.to_string(), w.dest.to_string()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    git.checked(Some(&parent), &refs).await?;
    if w.bare && w.remote != "origin" {
        git.checked(Some(w.dest), &["remote", "add", w.remote, w.repo])
            .await?;
    }
    if let Some(refspec) = w.refspec {
        let depth = w.depth.map(|d| d.to_string());
        let mut args = vec!["fetch"];
        if let Some(d) = &depth {
            args.extend(["--depth", d]);
        }
        args.extend([w.remote, refspec]);
        git.checked(Some(w.dest), &args).await?;
    }
    Ok(warnings)
}

/// Bring the remote's objects and refs in (upstream's `fetch`).
pub async fn fetch(git: &Git<'_>, w: &Want<'_>) -> Flow<()> {
    git.set_remote_url(w.dest, w.remote, w.repo).await?;
    let mut refspecs: Vec<String> = Vec::new();
    let mut args: Vec<String> = vec!["fetch".into()];
    if let Some(depth) = w.depth {
        // The fewest refs that make the checkout work (upstream's comment: a full fetch
        // otherwise).
        let current = git.head_branch(w.dest, w.remote, w.bare).await?;
        if let Some(r) = w.refspec {
            refspecs.push(r.into());
        } else if w.version == "HEAD" {
            refspecs.push(current);
        } else if git
            .is_remote_branch(Some(w.dest), w.repo, w.version)
            .await?
        {
            if current != w.version {
                refspecs.push(format!("+refs/heads/{0}:refs/heads/{0}", w.version));
            }
            refspecs.push(format!(
                "+refs/heads/{0}:refs/remotes/{1}/{0}",
                w.version, w.remote
            ));
        } else if git.is_remote_tag(Some(w.dest), w.repo, w.version).await? {
            refspecs.push(format!("+refs/tags/{0}:refs/tags/{0}", w.version));
        }
        if !refspecs.is_empty() {
            args.extend(["--depth".into(), depth.to_string()]);
        }
    }
    if w.depth.is_none() || refspecs.is_empty() {
        if w.bare {
            refspecs = vec![
                "+refs/heads/*:refs/heads/*".into(),
                "+refs/tags/*:refs/tags/*".into(),
            ];
        } else {
            args.push("--tags".into());
        }
        if let Some(r) = w.refspec {
            refspecs.push(r.into());
        }
    }
    if w.force {
        args.push("--force".into());
    }
    args.push(w.remote.into());
    args.extend(refspecs);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = git.out(Some(w.dest), &refs).await?;
    if !out.success() {
        return Err(Stop::Done(
            ModuleResult::failed(format!(
                "Failed to download remote objects and refs: {} {}",
                out.stdout_str(),
                out.stderr_str()
            ))
            .with("cmd", git.argv(&refs)),
        ));
    }
    Ok(())
}

/// Check out `version` (upstream's `switch_version`): the remote's branch for `HEAD`, a
/// tracking branch for a remote branch (reset to the remote), else `checkout --force`.
pub async fn switch_version(git: &Git<'_>, w: &Want<'_>) -> Flow<()> {
    let (dest, remote, version) = (Some(w.dest), w.remote, w.version);
    let fail_msg;
    let args: Vec<String> = if version == "HEAD" {
        let branch = git.head_branch(w.dest, remote, w.bare).await?;
        let out = git.out(dest, &["checkout", "--force", &branch]).await?;
        if !out.success() {
            return Err(Stop::Done(failed_with(
                format!("Failed to checkout branch {branch}"),
                &out,
            )));
        }
        fail_msg = format!("Failed to checkout branch {branch}");
        vec![
            "reset".into(),
            "--hard".into(),
            format!("{remote}/{branch}"),
            "--".into(),
        ]
    } else {
        fail_msg = format!("Failed to checkout {version}");
        if git.is_remote_branch(dest, remote, version).await? {
            if let Some(depth) = w.depth
                && !git.is_local_branch(w.dest, version).await?
            {
                // A shallow clone has only its one branch: fetch this one first.
                let depth = format!("--depth={depth}");
                let local = format!("+refs/heads/{version}:refs/heads/{version}");
                let tracking = format!("+refs/heads/{version}:refs/remotes/{remote}/{version}");
                let out = git
                    .out(dest, &["fetch", &depth, remote, &local, &tracking])
                    .await?;
                if !out.success() {
                    return Err(Stop::Done(failed_with(
                        format!("Failed to fetch branch from remote: {version}"),
                        &out,
                    )));
                }
            }
            if !git.is_local_branch(w.dest, version).await? {
                vec![
                    "checkout".into(),
                    "--track".into(),
                    "-b".into(),
                    version.into(),
                    format!("{remote}/{version}"),
                ]
            } else {
                let out = git.out(dest, &["checkout", "--force", version]).await?;
                if !out.success() {
                    return Err(Stop::Done(failed_with(
                        format!("Failed to checkout branch {version}"),
                        &out,
                    )));
                }
                vec![
                    "reset".into(),
                    "--hard".into(),
                    format!("{remote}/{version}"),
                ]
            }
        } else {
            vec!["checkout".into(), "--force".into(), version.into()]
        }
    };
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = git.out(dest, &refs).await?;
    if !out.success() {
        let r = failed_with(fail_msg, &out).with("cmd", git.argv(&refs).join(" "));
        return Err(Stop::Done(r));
    }
    Ok(())
}

/// Submodule sha by path (`git submodule foreach git rev-parse <version>`).
async fn submodule_versions(
    git: &Git<'_>,
    dest: &str,
    version: &str,
) -> Flow<Vec<(String, String)>> {
    let bin = git.bin.clone();
    let out = git
        .out(
            Some(dest),
            &["submodule", "foreach", &bin, "rev-parse", version],
        )
        .await?;
    if !out.success() {
        return Err(Stop::Done(failed_with(
            "Unable to determine hashes of submodules",
            &out,
        )));
    }
    let mut found = Vec::new();
    let mut name: Option<String> = None;
    for line in out.stdout_str().lines() {
        if let Some(n) = line.strip_prefix("Entering '") {
            name = Some(n.trim_end_matches('\'').to_string());
        } else if line.trim().len() == 40 {
            let Some(n) = name.take() else {
                return Err(Stop::Done(ModuleResult::failed("")));
            };
            found.push((n, line.trim().to_string()));
        } else {
            return Err(Stop::Done(ModuleResult::failed(format!(
                "Unable to parse submodule hash line: {}",
                line.trim()
            ))));
        }
    }
    if let Some(n) = name {
        return Err(Stop::Done(ModuleResult::failed(format!(
            "Unable to find hash for submodule: {n}"
        ))));
    }
    Ok(found)
}

/// Whether submodules need an update (upstream's `submodules_fetch`): one not yet checked
/// out, or after a fetch one not at the commit the superproject (or with `track_submodules`
/// the remote's `master`) names.
pub async fn submodules_fetch(git: &Git<'_>, dest: &str, remote: &str, track: bool) -> Flow<bool> {
    let d = sh(dest);
    let probe = format!(
        "cd {d} 2>/dev/null || exit 0\n[ -f .gitmodules ] || exit 0\necho has\n\
         sed -n 's/^[[:space:]]*path[[:space:]]*=[[:space:]]*//p' .gitmodules | while IFS= read -r p; do \
         [ -e \"$p/.git\" ] || echo new; done\n"
    );
    let out = git.sh(&probe).await?.stdout_str();
    if !out.lines().any(|l| l == "has") {
        return Ok(false);
    }
    if out.lines().any(|l| l == "new") {
        return Ok(true);
    }
    let begin = submodule_versions(git, dest, "HEAD").await?;
    let bin = git.bin.clone();
    git.checked(Some(dest), &["submodule", "foreach", &bin, "fetch"])
        .await?;
    if track {
        let after = submodule_versions(git, dest, &format!("{remote}/master")).await?;
        return Ok(begin != after);
    }
    let status = git.checked(Some(dest), &["submodule", "status"]).await?;
    Ok(status.stdout_str().lines().any(|l| !l.starts_with(' ')))
}

/// `git submodule sync` and `update --init --recursive` (with `--remote` when tracking).
pub async fn submodule_update(git: &Git<'_>, dest: &str, track: bool, force: bool) -> Flow<()> {
    let has = git
        .sh(&format!("[ -f {}/.gitmodules ]", sh(dest)))
        .await?
        .success();
    if !has {
        return Ok(());
    }
    git.checked(Some(dest), &["submodule", "sync"]).await?;
    let mut args = vec!["submodule", "update", "--init", "--recursive"];
    if track {
        args.push("--remote");
    }
    if force {
        args.push("--force");
    }
    let out = git.out(Some(dest), &args).await?;
    if !out.success() {
        return Err(Stop::Done(ModuleResult::failed(format!(
            "Failed to init/update submodules: {}{}",
            out.stdout_str(),
            out.stderr_str()
        ))));
    }
    Ok(())
}

/// The `git archive` format of an archive path, by its extension.
pub fn archive_format(archive: &str) -> Option<&'static str> {
    let name = archive.rsplit('/').next().unwrap_or(archive);
    let ext = name.rsplit_once('.');
    match ext {
        Some((stem, e)) if !stem.is_empty() => match e {
            "zip" => Some("zip"),
            "gz" => Some("tar.gz"),
            "tar" => Some("tar"),
            "tgz" => Some("tgz"),
            _ => None,
        },
        _ => None,
    }
}

/// Write `version` of the repository at `dest` to `archive` (upstream's `create_archive`);
/// whether the archive changed. An existing archive is replaced only when a fresh one
/// differs from it.
pub async fn create_archive(
    git: &Git<'_>,
    dest: &str,
    archive: &str,
    prefix: Option<&str>,
    version: &str,
) -> Flow<bool> {
    let Some(fmt) = archive_format(archive) else {
        return Err(Stop::Done(
            ModuleResult::failed(format!(
                "Unable to get file extension from archive file name : {archive}"
            ))
            .with(
                "details",
                "Please specify archive as filename with extension. File extension can be one \
                 of ['tar', 'tar.gz', 'zip', 'tgz']",
            ),
        ));
    };
    let mut args = vec!["archive", "--format", fmt, "--output", "\"$out\""];
    if let Some(p) = prefix {
        args.extend(["--prefix", p]);
    }
    let argv: Vec<String> = git
        .argv(&args)
        .into_iter()
        .map(|a| if a == "\"$out\"" { a } else { sh(&a) })
        .chain(std::iter::once(sh(version)))
        .collect();
    let a = sh(archive);
    // Build next to nothing else (a temp folder), compare with cmp, move over on a difference.
    let script = format!(
        "cd {d} 2>/dev/null\nif [ -e {a} ]; then t=$(mktemp -d) || exit 1; out=\"$t/new.{fmt}\"\n\
         {cmd} || {{ rc=$?; rm -rf \"$t\"; exit $rc; }}\n\
         if cmp -s \"$out\" {a}; then rm -rf \"$t\"; echo same; else mv -f \"$out\" {a} && rm -rf \"$t\" && echo moved; fi\n\
         else out={a}; {cmd} && echo new; fi\n",
        d = sh(dest),
        cmd = argv.join(" ")
    );
    let out = git.sh(&script).await?;
    if !out.success() {
        return Err(Stop::Done(
            ModuleResult::failed("Failed to perform archive operation").with(
                "details",
                format!(
                    "Git archive command failed to create archive {archive} using {dest} \
                     directory.Error: {}",
                    out.stderr_str()
                ),
            ),
        ));
    }
    Ok(!out.stdout_str().contains("same"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_formats_follow_the_extension() {
        assert_eq!(archive_format("/x/r.zip"), Some("zip"));
        assert_eq!(archive_format("/x/r.tar.gz"), Some("tar.gz"));
        assert_eq!(archive_format("r.tgz"), Some("tgz"));
        assert_eq!(archive_format("/x/r.tar"), Some("tar"));
        assert_eq!(archive_format("/x/r"), None);
        assert_eq!(archive_format("/x/.zip"), None);
        assert_eq!(archive_format("/x/r.rar"), None);
    }
}
