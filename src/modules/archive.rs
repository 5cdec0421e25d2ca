//! `archive` (community.general's): pack files and trees on the host into a tar (plain, gz,
//! bz2, xz) or zip archive, or compress one file, with the host's `tar`, `gzip`/`bzip2`/`xz`
//! and `zip`, as upstream's module does there with Python's `tarfile`/`zipfile`.
//!
//! One command expands the `path` and `exclude_path` globs and lists every member below the
//! source folders; the controller then works out the sources, the archive root, the member
//! names and the `exclusion_patterns` (`archive_plan`). A second command builds the archive
//! beside `dest` and compares its member listing with the old archive's (names, modes, ids,
//! sizes and times for tar, as upstream compares tar header checksums; names and CRCs for zip;
//! the uncompressed bytes for a compressed file): only a different archive replaces `dest`,
//! so a second run is ok and leaves the file alone. Check mode predicts as upstream does: an
//! archive of several sources always changes, a compressed file only when `dest` is missing.
//!
//! Over 300 lines because the build script and the result it is read into are one contract.

use serde::Deserialize;

use crate::transport::quote::sh;

use super::archive_plan::{self as plan, Format, Source};
use super::args::boolish;
use super::host_path;
use super::mode::{Mode, opt_mode};
use super::posix::{self, Attrs, Kind, StatReq};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Archive, "archive", Params, run);

fn gz() -> Format {
    Format::Gz
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Absolute paths or globs (`*`, `?`) of the files and folders to pack, on the host.
    #[serde(deserialize_with = "host_path::list")]
    path: Vec<String>,
    /// The archive to write (its folder must exist); required for more than one source.
    #[serde(default, deserialize_with = "host_path::opt")]
    dest: Option<String>,
    /// `gz` (default), `bz2`, `xz` (tar compressed that way, or one file compressed), `tar`,
    /// `zip`.
    #[serde(default = "gz")]
    format: Format,
    /// Paths or globs taken out of the expanded `path` list.
    #[serde(default, deserialize_with = "host_path::list")]
    exclude_path: Vec<String>,
    /// Glob patterns (`fnmatch`) of members left out of the archive: matched against the name
    /// in the archive for tar, the full path for zip, as upstream.
    #[serde(default, deserialize_with = "host_path::list")]
    exclusion_patterns: Vec<String>,
    /// Archive even a single file (instead of only compressing it).
    #[serde(default, deserialize_with = "boolish")]
    force_archive: bool,
    /// Remove the sources once they are archived.
    #[serde(default, deserialize_with = "boolish")]
    remove: bool,
    /// Permissions of `dest`.
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Owner of `dest` (name or uid).
    owner: Option<String>,
    /// Group of `dest` (name or gid).
    group: Option<String>,
}

/// The probe: each `path` entry expanded (a glob by the host's shell, with `IFS` empty so only
/// pathname expansion happens), its kind and, for a folder, everything below it.
fn survey_script(paths: &[String], excludes: &[String]) -> String {
    let mut s = String::from(
        r#"IFS=
_e() {
  if [ -d "$2" ]; then _k=d; elif [ -e "$2" ] || [ -L "$2" ]; then _k=f; else _k=-; fi
  printf '%s\0%s\0%s\0' "$1" "$2" "$_k"
  if [ "$1" = P ] && [ $_k = d ]; then find -H "$2" -mindepth 1 -printf 'M\0%p\0%y\0'; fi
}
"#,
    );
    for (tag, list) in [("P", paths), ("X", excludes)] {
        for p in list {
            if plan::is_glob(p) {
                s.push_str(&format!(
                    "_g={}\nfor _f in $_g; do if [ -e \"$_f\" ] || [ -L \"$_f\" ]; then _e {tag} \"$_f\"; fi; done\n",
                    sh(p)
                ));
            } else {
                s.push_str(&format!("_e {tag} {}\n", sh(p)));
            }
        }
    }
    s.push_str("exit 0\n");
    s
}

/// What the module does once the sources are known.
struct Job<'a> {
    format: Format,
    dest: String,
    root: String,
    /// Several sources (or forced): a real archive; else one file compressed (or, for tar and
    /// zip, archived alone).
    must_archive: bool,
    targets: Vec<&'a Source>,
    missing: Vec<String>,
}

impl Job<'_> {
    /// The members to add (full path, name in the archive, whether upstream reports it as
    /// archived), `exclusion_patterns` applied. A folder in a zip is stored as `name/`, so
    /// upstream's `contains(name)` misses it and it is never listed as archived.
    fn members(&self, patterns: &[regex::Regex]) -> Vec<(String, String, bool)> {
        let mut out = Vec::new();
        for t in &self.targets {
            let paths: Vec<(&String, bool)> = if t.dir {
                t.members.iter().map(|(p, d)| (p, *d)).collect()
            } else {
                vec![(&t.path, false)]
            };
            for (p, dir) in paths {
                let name = plan::archive_name(&self.root, p).to_string();
                let zip = self.format == Format::Zip;
                let subject = if zip { p } else { &name };
                if !patterns.iter().any(|re| re.is_match(subject)) {
                    out.push((p.clone(), name, !(zip && dir)));
                }
            }
        }
        out
    }

    /// Compressing one file, not archiving.
    fn compress_only(&self) -> bool {
        !self.must_archive && !matches!(self.format, Format::Tar | Format::Zip)
    }

    /// The sh text that builds the archive from the names on stdin beside `dest` and
    /// replaces `dest` only when its listing differs; prints `kinit-new` or `kinit-same`.
    fn build_script(&self, remove: &[String]) -> String {
        let f = self.format;
        let root = if self.root.is_empty() {
            "."
        } else {
            &self.root
        };
        let (tmp, build, lister) = match f {
            Format::Zip => (
                "\"$d.kinit-tmp$$.zip\"",
                format!("(cd {} && zip -q \"$t\" -@) >/dev/null || fail build", sh(root)),
                "{ unzip -v \"$1\" 2>/dev/null || echo kinit-bad; } | \
                 awk '/^kinit-bad/ {print} NF >= 8 && $7 ~ /^[0-9a-f]+$/ {$1=$2=$3=$4=$5=$6=\"\"; print}' \
                 | LC_ALL=C sort"
                    .to_string(),
            ),
            _ if self.compress_only() => (
                "\"$d.kinit-tmp$$\"",
                format!(
                    "{} < {} > \"$t\" || fail build",
                    f.compress(),
                    sh(&self.targets[0].path)
                ),
                format!(
                    "{{ {} < \"$1\" 2>/dev/null || echo kinit-bad; }} | cksum",
                    f.decompress()
                ),
            ),
            _ => (
                "\"$d.kinit-tmp$$\"",
                format!(
                    "tar -C {} --no-recursion --null -T - -cf \"$t.raw\" || fail build\n\
                     {} < \"$t.raw\" > \"$t\" || fail build\nrm -f \"$t.raw\"",
                    sh(root),
                    f.compress()
                ),
                // A stream the decompressor refuses lists as `kinit-bad` (through fd 3, past
                // the pipe), so an old archive of another format never looks the same.
                format!(
                    "{{ {{ {} < \"$1\" 2>/dev/null || echo kinit-bad >&3; }} | \
                     {{ tar --full-time --numeric-owner -tvf - 2>/dev/null || echo kinit-bad; }} \
                     | LC_ALL=C sort; }} 3>&1",
                    f.decompress()
                ),
            ),
        };
        let removal: String = remove
            .iter()
            .map(|p| format!("rm -rf -- {} || fail remove\n", sh(p)))
            .collect();
        format!(
            r#"d={d}; t={tmp}
fail() {{ rm -f "$t" "$t.raw"; echo "kinit-fail=$1"; exit 0; }}
lst() {{ {lister}; }}
[ -d "$d" ] && fail isdir
{build}
if [ -e "$d" ] && [ "$(lst "$d")" = "$(lst "$t")" ]; then rm -f "$t"; echo kinit-same
else
  if [ -e "$d" ]; then chmod --reference="$d" "$t"; chown --reference="$d" "$t" 2>/dev/null; fi
  mv -f "$t" "$d" || fail move
  echo kinit-new
fi
{removal}exit 0
"#,
            d = sh(&self.dest),
        )
    }
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let out = ctx.run(survey_script(&p.path, &p.exclude_path)).await?;
    let survey = plan::parse_survey(&out.stdout).ok_or_else(|| ModuleError::Failed {
        msg: format!(
            "cannot list the sources on the host: {}",
            out.stderr_str().trim()
        ),
    })?;
    let expanded: Vec<String> = survey.expanded.iter().map(|s| s.path.clone()).collect();
    let sources = plan::sources(&survey);
    let lists = |r: ModuleResult| {
        r.with("expanded_paths", expanded.clone())
            .with("expanded_exclude_paths", survey.excluded.clone())
    };
    if sources.is_empty() {
        // Upstream's fail_json joins the lists into strings here.
        let r = ModuleResult::failed("Error, no source paths were found")
            .with("path", p.path.join(", "))
            .with("expanded_paths", expanded.join(", "))
            .with("expanded_exclude_paths", survey.excluded.join(", "));
        return super::path_info::add(ctx, r, &p.path.join(", ")).await;
    }
    let names: Vec<String> = sources.iter().map(|s| s.path.clone()).collect();
    let root = plan::common_path(&names);
    let must_archive = p.force_archive
        || p.path.iter().any(|x| plan::is_glob(x))
        || sources[0].dir
        || sources.len() > 1;
    let dest = match (&p.dest, must_archive) {
        (Some(d), _) => d.clone(),
        (None, false) => format!("{}.{}", names[0], p.format.ext()),
        (None, true) => {
            let r = ModuleResult::failed(
                "Error, must specify \"dest\" when archiving multiple files or trees",
            )
            .with("dest", serde_json::Value::Null)
            .with("path", p.path.join(", "));
            return super::path_info::add(ctx, r, &p.path.join(", ")).await;
        }
    };
    if p.remove
        && sources
            .iter()
            .any(|s| s.dir && dest.starts_with(&format!("{}/", s.path.trim_end_matches('/'))))
    {
        let r = ModuleResult::failed(
            "Error, created archive can not be contained in source paths when remove=true",
        )
        .with("path", names.join(", "));
        // Upstream's fail_json adds the state of `path` as exit_json does.
        return super::path_info::add(ctx, r, &names.join(", ")).await;
    }
    let (targets, missing): (Vec<&Source>, Vec<&Source>) =
        sources.into_iter().partition(|s| !s.missing);
    let job = Job {
        format: p.format,
        dest,
        root,
        must_archive,
        targets,
        missing: missing.iter().map(|s| s.path.clone()).collect(),
    };

    let mut changed = false;
    let mut dest_state = "absent";
    let mut archived: Vec<String> = Vec::new();
    if !job.targets.is_empty() && !ctx.check_mode {
        let patterns: Vec<regex::Regex> = p
            .exclusion_patterns
            .iter()
            .map(|x| plan::fnmatch_regex(x))
            .collect();
        let members = if job.compress_only() {
            vec![(job.targets[0].path.clone(), String::new(), true)]
        } else {
            job.members(&patterns)
        };
        archived = members
            .iter()
            .filter(|m| m.2)
            .map(|m| m.0.clone())
            .collect();
        let remove = if p.remove {
            removal(&job, &archived)
        } else {
            Vec::new()
        };
        let sep = if job.format == Format::Zip {
            "\n"
        } else {
            "\0"
        };
        let stdin: String = members.iter().map(|m| format!("{}{sep}", m.1)).collect();
        let out = ctx
            .run_with_stdin(job.build_script(&remove), Some(stdin.into_bytes()))
            .await?;
        let text = out.stdout_str();
        if let Some(why) = text.lines().find_map(|l| l.strip_prefix("kinit-fail=")) {
            let err = out.stderr_str().trim().to_string();
            let msg = match why {
                "isdir" => format!("destination `{}` is a directory", job.dest),
                "remove" => format!("Error deleting some source files: {err}"),
                _ => format!("Errors when writing archive at {}: {err}", job.dest),
            };
            return Ok(lists(ModuleResult::failed(msg)).with("dest", job.dest.as_str()));
        }
        if !text.contains("kinit-same") && !text.contains("kinit-new") {
            return Ok(ModuleResult::failed(format!(
                "cannot write `{}` on the host: {}",
                job.dest,
                out.stderr_str().trim()
            )));
        }
        changed = text.contains("kinit-new");
        dest_state = if !job.must_archive && job.compress_only() {
            "compress"
        } else if job.must_archive && !job.missing.is_empty() {
            "incomplete"
        } else {
            "archive"
        };
    }

    // The archive as it is now: its state when nothing was packed, its attributes always.
    let out = ctx
        .run(posix::stat_script(&[StatReq {
            path: &job.dest,
            follow: true,
            checksum: None,
        }]))
        .await?;
    let (_, stats, _) = posix::parse_probe(&out.stdout, 1).ok_or_else(|| ModuleError::Failed {
        msg: format!(
            "cannot inspect `{}` on the host: {}",
            job.dest,
            out.stderr_str().trim()
        ),
    })?;
    let stat = &stats[0];
    if job.targets.is_empty() {
        if stat.exists() {
            dest_state = if plan::looks_like_archive(&job.dest) {
                "archive"
            } else {
                "compress"
            };
        }
    } else if ctx.check_mode {
        changed = job.must_archive || !stat.exists();
    }
    if stat.exists() {
        let attrs = Attrs {
            mode: p.mode.clone(),
            owner: p.owner.clone(),
            group: p.group.clone(),
        };
        let fix = attrs.fix_script(&job.dest, stat, false);
        if !fix.is_empty() {
            changed = true;
            if !ctx.check_mode && stat.kind == Kind::File {
                let out = ctx.run(fix).await?;
                if !out.success() {
                    return Ok(ModuleResult::failed(format!(
                        "cannot set attributes of `{}`: {}",
                        job.dest,
                        out.stderr_str().trim()
                    )));
                }
            }
        }
    }
    let r = lists(ModuleResult {
        changed,
        ..ModuleResult::ok()
    })
    .with("archived", archived)
    .with("dest", job.dest.as_str())
    .with("dest_state", dest_state)
    .with("arcroot", job.root.as_str())
    .with("missing", job.missing.clone());
    super::path_info::add(ctx, r, &job.dest).await
}

/// What `remove` deletes: every source folder, and every archived path not inside one
/// (upstream removes the archived paths, then the source folders whole).
fn removal(job: &Job<'_>, archived: &[String]) -> Vec<String> {
    let dirs: Vec<String> = job
        .targets
        .iter()
        .filter(|t| t.dir)
        .map(|t| t.path.clone())
        .collect();
    let inside = |p: &str| {
        dirs.iter()
            .any(|d| p.starts_with(&format!("{}/", d.trim_end_matches('/'))))
    };
    let mut out: Vec<String> = archived.iter().filter(|a| !inside(a)).cloned().collect();
    out.extend(dirs.iter().cloned());
    out.dedup();
    out
}
