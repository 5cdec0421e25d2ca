//! `apt_repository`: add or remove a one-line apt repository (`deb ...` / `deb-src ...`), as
//! ansible-core 2.19's `apt_repository` (lib/ansible/modules/apt_repository.py) does.
//!
//! One probe asks the host's `apt-config` where `sources.list` and `sources.list.d` are (so
//! `APT_CONFIG` is honoured as python-apt honours it) and reads every `*.list` file;
//! `apt_sources` (pure) works out the new texts; only files whose text changes are written
//! (temp file + rename beside them, the old file's owner and mode kept), a file left with no
//! lines is removed, and `apt-get update` runs when `update_cache` is on; if it keeps failing,
//! every file is put back as it was and the task fails, as upstream reverts.
//!
//! `install_python_apt` is accepted and ignored: kinit needs no Python on the host. A
//! `ppa:` line is expanded as upstream expands it, and one already present is left alone;
//! adding a new one needs Launchpad's API and a keyserver, which kinit does not reach from
//! the host, so that is refused with a message that says what to write instead.

use std::time::Duration;

use serde::Deserialize;

use crate::transport::quote::sh;

use super::apt_sources::{SourcesList, expand_ppa, source_of, suggest_filename};
use super::args::{boolish, opt_u64ish};
use super::command::yes;
use super::lineinfile::State;
use super::mode::{Mode, opt_mode};
use super::pkg::APT_LOCK_WAIT;
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(AptRepository, "apt_repository", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The repository line (`deb [signed-by=/k.gpg] https://host/path suite comp`), or
    /// `ppa:owner/name`.
    repo: String,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// The mode of the file a repository is added to (a new file gets 0644 without it).
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Run `apt-get update` after a change (default yes).
    #[serde(default = "yes", alias = "update-cache", deserialize_with = "boolish")]
    update_cache: bool,
    /// How many times `apt-get update` is tried (default 5).
    #[serde(default, deserialize_with = "opt_u64ish")]
    update_cache_retries: Option<u64>,
    /// The longest wait in seconds between those tries (default 12).
    #[serde(default, deserialize_with = "opt_u64ish")]
    update_cache_retry_max_delay: Option<u64>,
    /// The file name (without `.list`) in `sources.list.d`, or a path with a `/`; derived
    /// from the repository's address when unset.
    filename: Option<String>,
    /// Accepted and ignored: upstream installs python3-apt to run; kinit needs no Python.
    #[serde(default, deserialize_with = "boolish")]
    install_python_apt: bool,
    /// Accepted: only used by upstream to fetch PPA details, which kinit does not do.
    #[serde(default = "yes", deserialize_with = "boolish")]
    validate_certs: bool,
    /// The release codename a `ppa:` line expands with (the host's by default).
    codename: Option<String>,
}

/// What the probe found on the host.
struct Host {
    sourceparts: String,
    distro: String,
    codename: String,
    /// Each file read: its path, where writes go (symlinks resolved), and its text.
    files: Vec<(String, String, String)>,
}

async fn probe(ctx: &ModuleCtx<'_>) -> Result<Option<Host>, ModuleError> {
    let script = r#"command -v apt-config >/dev/null 2>&1 || exit 0
eval "$(apt-config shell L Dir::Etc::sourcelist/f P Dir::Etc::sourceparts/d)"
P=${P%/}
( ID=; VERSION_CODENAME=; UBUNTU_CODENAME=; [ -r /etc/os-release ] && . /etc/os-release
  printf 'kinit-apt|%s|%s|%s|%s\n' "$L" "$P" "$ID" "${UBUNTU_CODENAME:-$VERSION_CODENAME}" )
for f in "$L" "$P"/*.list; do
  [ -f "$f" ] || continue
  printf 'kinit-file|%s|%s|%s\n' "$(wc -c < "$f")" "$f" "$(readlink -f -- "$f")"
  cat -- "$f"
done
"#;
    let out = ctx.run(script).await?;
    let bytes = &out.stdout;
    let mut pos = 0;
    let next_line = |pos: &mut usize| -> Option<String> {
        let end = bytes[*pos..].iter().position(|b| *b == b'\n')? + *pos;
        let l = String::from_utf8_lossy(&bytes[*pos..end]).into_owned();
        *pos = end + 1;
        Some(l)
    };
    let Some(head) = next_line(&mut pos) else {
        return Ok(None);
    };
    let f: Vec<&str> = head
        .strip_prefix("kinit-apt|")
        .map(|h| h.split('|').collect())
        .unwrap_or_default();
    if f.len() < 4 {
        return Ok(None);
    }
    let mut host = Host {
        sourceparts: f[1].to_string(),
        distro: f[2].to_string(),
        codename: f[3].to_string(),
        files: Vec::new(),
    };
    while let Some(l) = next_line(&mut pos) {
        let mut g = l.strip_prefix("kinit-file|").unwrap_or("").splitn(3, '|');
        let (Some(n), Some(path), Some(target)) = (g.next(), g.next(), g.next()) else {
            break;
        };
        let n: usize = n.trim().parse().unwrap_or(0);
        let end = (pos + n).min(bytes.len());
        let text = String::from_utf8_lossy(&bytes[pos..end]).into_owned();
        pos = end;
        host.files
            .push((path.to_string(), target.to_string(), text.to_string()));
    }
    Ok(Some(host))
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = (p.install_python_apt, p.validate_certs);
    if p.repo.is_empty() {
        return Ok(ModuleResult::failed(
            "Please set argument 'repo' to a non-empty value",
        ));
    }
    let Some(host) = probe(ctx).await? else {
        return Ok(ModuleResult::failed(
            "Module apt_repository is not supported on target.",
        ));
    };
    if host.sourceparts.is_empty() {
        return Ok(ModuleResult::failed(
            "`apt-config` on the host names no sources.list.d folder (Dir::Etc::sourceparts)",
        ));
    }
    let mut list = SourcesList::default();
    for (path, _, text) in &host.files {
        list.load(path, text);
    }
    let before = list.dump();
    let present = p.state == State::Present;

    // The source line and the file a new one goes to.
    let codename = p.codename.clone().unwrap_or(host.codename.clone());
    let (source, file) = if p.repo.starts_with("ppa:") {
        let (line, owner, name) = expand_ppa(&p.repo, &codename);
        if present && !list.has_enabled(&line) {
            let why = if host.distro == "ubuntu" {
                "adding a PPA needs its signing key from Launchpad and a keyserver, which \
                 kinit does not fetch"
                    .to_string()
            } else {
                format!(
                    "PPAs are built for Ubuntu, and `{}` runs `{}`",
                    ctx.host, host.distro
                )
            };
            return Ok(ModuleResult::failed(format!(
                "cannot add `{}`: {why}; give the repository as a line instead, e.g. \
                 `deb [signed-by=/etc/apt/keyrings/{owner}-{name}.gpg] \
                 https://ppa.launchpadcontent.net/{owner}/{name}/ubuntu {codename} main`",
                p.repo
            )));
        }
        let file = suggest_filename(&format!("{}_{codename}", p.repo), p.filename.as_deref());
        (line, file)
    } else {
        match source_of(&p.repo) {
            Ok(s) => {
                let file = suggest_filename(&s, p.filename.as_deref());
                (s, file)
            }
            Err(e) => return Ok(ModuleResult::failed(e.to_string())),
        }
    };
    let file = if file.contains('/') {
        file
    } else {
        format!("{}/{file}", host.sourceparts)
    };
    let mut appended = false;
    if present {
        appended = list.add(&source, &file);
    } else {
        list.remove(&source);
    }
    let after = list.dump();
    let changed = before != after;
    let names =
        |d: &[(String, String)]| -> Vec<String> { d.iter().map(|(p, _)| p.clone()).collect() };
    let (bn, an) = (names(&before), names(&after));
    let added: Vec<String> = an.iter().filter(|f| !bn.contains(f)).cloned().collect();
    let removed: Vec<String> = bn.iter().filter(|f| !an.contains(f)).cloned().collect();
    let mut r = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("repo", p.repo.as_str())
    .with("sources_added", added.clone())
    .with("sources_removed", removed.clone())
    .with("state", if present { "present" } else { "absent" });
    let text_of = |d: &[(String, String)], f: &str| {
        d.iter()
            .find(|(p, _)| p == f)
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    };
    if changed && ctx.diff {
        // Upstream diffs the files added or removed; a line added to or removed from a file
        // that stays is shown too (the one file that changed).
        let path = added
            .first()
            .or(removed.first())
            .cloned()
            .or_else(|| {
                an.iter()
                    .chain(&bn)
                    .find(|f| text_of(&before, f) != text_of(&after, f))
                    .cloned()
            })
            .unwrap_or(file.clone());
        r.diff = Some(Diff {
            before: text_of(&before, &path).into(),
            after: text_of(&after, &path).into(),
            path: Some(path),
        });
    }
    if !changed || ctx.check_mode {
        return Ok(r);
    }

    // Write what changed; remember how to put it back.
    let original = |path: &str| host.files.iter().find(|(p, _, _)| p == path);
    let mut undo: Vec<(String, Option<String>)> = Vec::new();
    for (path, lines) in &list.files {
        let new = text_of(&after, path);
        let old = original(path);
        let target = old.map_or(path.as_str(), |(_, t, _)| t.as_str());
        let old_text = old.map(|(_, _, t)| t.clone());
        if lines.is_empty() {
            if old_text.as_deref().is_some_and(|t| !t.is_empty()) {
                // Only a file this change emptied is removed (upstream also removes files that
                // were empty before, which would take an empty `sources.list` away).
                remove(ctx, target).await?;
                undo.push((target.to_string(), old_text));
            }
            continue;
        }
        let rewrite = old_text.as_deref() != Some(new.as_str());
        let mode = if appended && path == &file {
            p.mode.clone()
        } else {
            None
        };
        if rewrite || mode.is_some() {
            if let Err(msg) = write(ctx, target, &new, mode.as_ref()).await? {
                restore(ctx, &undo).await?;
                return Ok(ModuleResult::failed(msg));
            }
            undo.push((target.to_string(), old_text));
        }
    }
    if p.update_cache {
        let retries = p.update_cache_retries.unwrap_or(5);
        let max_delay = p.update_cache_retry_max_delay.unwrap_or(12);
        if let Err(err) = update_cache(ctx, retries, max_delay).await? {
            restore(ctx, &undo).await?;
            return Ok(ModuleResult::failed(format!(
                "Failed to update apt cache after {retries} retries: {err}"
            )));
        }
    }
    Ok(r)
}

/// Replace `path` with `text` through a temp file beside it, keeping an existing file's owner
/// and mode (a new file gets 0644), then `mode` when given.
async fn write(
    ctx: &ModuleCtx<'_>,
    path: &str,
    text: &str,
    mode: Option<&Mode>,
) -> Result<Result<(), String>, ModuleError> {
    let chmod = mode
        .and_then(Mode::chmod_arg)
        .map(|m| format!(" && chmod {} \"$t\"", sh(&m)))
        .unwrap_or_default();
    let script = format!(
        "f={f}; d=$(dirname -- \"$f\") && mkdir -p -- \"$d\" && \
         t=$(mktemp \"$d/.kinit-apt-XXXXXX\") && cat > \"$t\" && \
         {{ if [ -e \"$f\" ]; then chmod --reference=\"$f\" \"$t\" && chown --reference=\"$f\" \"$t\"; \
         else chmod 0644 \"$t\"; fi; }}{chmod} && mv -f -- \"$t\" \"$f\" || {{ rm -f -- \"$t\"; exit 1; }}",
        f = sh(path)
    );
    let out = ctx
        .run_with_stdin(script, Some(text.as_bytes().to_vec()))
        .await?;
    Ok(if out.success() {
        Ok(())
    } else {
        Err(format!(
            "cannot write `{path}`: {}",
            out.stderr_str().trim()
        ))
    })
}

async fn remove(ctx: &ModuleCtx<'_>, path: &str) -> Result<(), ModuleError> {
    let out = ctx.run(format!("rm -f -- {}", sh(path))).await?;
    if !out.success() {
        return Err(ModuleError::Failed {
            msg: format!("cannot remove `{path}`: {}", out.stderr_str().trim()),
        });
    }
    Ok(())
}

/// Put the files back as they were before this task (`None`: the file was not there).
async fn restore(
    ctx: &ModuleCtx<'_>,
    undo: &[(String, Option<String>)],
) -> Result<(), ModuleError> {
    for (path, old) in undo.iter().rev() {
        match old {
            None => remove(ctx, path).await?,
            Some(text) => {
                if let Err(msg) = write(ctx, path, text, None).await? {
                    return Err(ModuleError::Failed { msg });
                }
            }
        }
    }
    Ok(())
}

/// `apt-get update`, tried `retries` times with upstream's backoff (2^n seconds plus up to
/// one, at most `max_delay` plus up to one); a fetch that fails counts as a failure, as it
/// does for python-apt's `Cache.update`. `Err` holds the last failure's text.
async fn update_cache(
    ctx: &ModuleCtx<'_>,
    retries: u64,
    max_delay: u64,
) -> Result<Result<(), String>, ModuleError> {
    let mut err = String::from("unknown reason");
    let mut jitter = [0u8; 2];
    getrandom::fill(&mut jitter).expect("the OS random source works");
    let randomize = f64::from(u16::from_le_bytes(jitter) % 1000) / 1000.0;
    for retry in 0..retries {
        let out = ctx
            .run(format!(
                "LC_ALL=C apt-get {} {} -q update 2>&1",
                APT_LOCK_WAIT[0], APT_LOCK_WAIT[1]
            ))
            .await?;
        let text = out.stdout_str();
        let failures: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("E:") || l.starts_with("W: Failed to fetch"))
            .collect();
        if out.success() && failures.is_empty() {
            return Ok(Ok(()));
        }
        err = if failures.is_empty() {
            text.trim().to_string()
        } else {
            failures.join("\n")
        };
        let mut delay = 2f64.powi(retry.min(30) as i32) + randomize;
        if delay > max_delay as f64 {
            delay = max_delay as f64 + randomize;
        }
        tokio::time::sleep(Duration::from_secs_f64(delay)).await;
    }
    Ok(Err(err))
}
