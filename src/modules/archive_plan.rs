//! The decisions of `archive` that need no host: reading the probe of the `path` and
//! `exclude_path` globs, upstream's source set, archive root and member names, the
//! `exclusion_patterns` match (Python's `fnmatch`), and what the module must do.
//!
//! community.general 11's `plugins/modules/archive.py` is the reference: `expand_paths`,
//! `common_path` (a character-wise common prefix, as `os.path.commonprefix`), `strip_prefix`,
//! and `Archive.__init__` deciding `must_archive` and the default `dest`.

use regex::Regex;

/// What the probe saw at one expanded source path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub path: String,
    /// Absent (`os.path.lexists` is false).
    pub missing: bool,
    /// A directory (links followed, as `os.path.isdir`).
    pub dir: bool,
    /// Everything below a directory, as `os.walk` (links not followed) yields it, each with
    /// whether it is a folder.
    pub members: Vec<(String, bool)>,
}

/// The probe of the sources: expanded `path` entries (with kinds and members) and expanded
/// `exclude_path` entries, each in the order given.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Survey {
    pub expanded: Vec<Source>,
    pub excluded: Vec<String>,
}

/// Read the probe's NUL-separated `tag, path, kind` triples: `P` a source, `M` a member of the
/// last directory source, `X` an excluded path.
pub fn parse_survey(out: &[u8]) -> Option<Survey> {
    let text = String::from_utf8_lossy(out);
    let fields: Vec<&str> = text.split('\0').collect();
    let mut survey = Survey::default();
    let mut chunks = fields.chunks_exact(3);
    for c in chunks.by_ref() {
        let (tag, path, kind) = (c[0], c[1], c[2]);
        match tag {
            "P" => survey.expanded.push(Source {
                path: path.to_string(),
                missing: kind == "-",
                dir: kind == "d",
                members: Vec::new(),
            }),
            "M" => survey
                .expanded
                .last_mut()?
                .members
                .push((path.to_string(), kind == "d")),
            "X" => survey.excluded.push(path.to_string()),
            _ => return None,
        }
    }
    (chunks.remainder() == [""]).then_some(survey)
}

/// Whether upstream treats a `path` entry as a glob (only `*` and `?` count).
pub fn is_glob(path: &str) -> bool {
    path.contains('*') || path.contains('?')
}

/// `common_path`: the folder (with a trailing `/`) of the character-wise common prefix of
/// the sources' folders.
pub fn common_path(paths: &[String]) -> String {
    let dirs: Vec<String> = paths.iter().map(|p| join_empty(&dirname(p))).collect();
    let Some(first) = dirs.first() else {
        return String::new();
    };
    let mut len = first.len();
    for d in &dirs[1..] {
        len = first
            .bytes()
            .zip(d.bytes())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
    }
    while !first.is_char_boundary(len) {
        len -= 1;
    }
    join_empty(&dirname(&first[..len]))
}

/// `os.path.join(p, "")`: `p` with one trailing `/` (nothing added to `""` or a `/` end).
fn join_empty(p: &str) -> String {
    if p.is_empty() || p.ends_with('/') {
        p.to_string()
    } else {
        format!("{p}/")
    }
}

/// `os.path.dirname`: everything before the last `/`, trailing slashes of that head removed
/// unless it is all slashes; `""` for a bare name.
fn dirname(p: &str) -> String {
    match p.rfind('/') {
        None => String::new(),
        Some(i) => {
            let head = &p[..=i];
            let trimmed = head.trim_end_matches('/');
            if trimmed.is_empty() {
                head.to_string()
            } else {
                trimmed.to_string()
            }
        }
    }
}

/// A member's name in the archive: its path without the root (`strip_prefix`).
pub fn archive_name<'a>(root: &str, path: &'a str) -> &'a str {
    path.strip_prefix(root).unwrap_or(path)
}

/// Python's `fnmatch.fnmatch` on POSIX (see `fnmatch::regex`).
pub fn fnmatch_regex(pattern: &str) -> Regex {
    super::fnmatch::regex(pattern)
}

/// The archive format (`format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Gz,
    Bz2,
    Xz,
    Tar,
    Zip,
}

impl Format {
    pub fn ext(self) -> &'static str {
        match self {
            Format::Gz => "gz",
            Format::Bz2 => "bz2",
            Format::Xz => "xz",
            Format::Tar => "tar",
            Format::Zip => "zip",
        }
    }

    /// The filter that decompresses this format to stdout (`cat` for plain tar).
    pub fn decompress(self) -> &'static str {
        match self {
            Format::Gz => "gzip -dc",
            Format::Bz2 => "bzip2 -dc",
            Format::Xz => "xz -dc",
            Format::Tar | Format::Zip => "cat",
        }
    }

    /// The filter that compresses stdin to stdout (`cat` for plain tar).
    pub fn compress(self) -> &'static str {
        match self {
            Format::Gz => "gzip -c",
            Format::Bz2 => "bzip2 -c",
            Format::Xz => "xz -c",
            Format::Tar | Format::Zip => "cat",
        }
    }
}

/// `is_archive`: whether a file name looks like an archive (for `dest_state` when every
/// source is missing).
pub fn looks_like_archive(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    [
        ".tar", ".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".tbz2", ".zip",
    ]
    .iter()
    .any(|e| name.ends_with(e))
}

/// The sources after expansion, exclusion, sorting and de-duplication (`self.paths`).
pub fn sources(survey: &Survey) -> Vec<&Source> {
    let mut v: Vec<&Source> = survey
        .expanded
        .iter()
        .filter(|s| !survey.excluded.contains(&s.path))
        .collect();
    v.sort_by(|a, b| a.path.cmp(&b.path));
    v.dedup_by(|a, b| a.path == b.path);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_folder_of_the_character_wise_common_prefix() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(common_path(&p(&["/a/b/dir"])), "/a/b/");
        assert_eq!(common_path(&p(&["/a/bc/x", "/a/bd/y"])), "/a/");
        assert_eq!(common_path(&p(&["/a/b/x", "/a/b/y/z"])), "/a/b/");
        assert_eq!(common_path(&p(&["/x"])), "/");
        assert_eq!(common_path(&p(&["/x", "/y"])), "/");
        assert_eq!(common_path(&p(&["rel"])), "");
    }

    #[test]
    fn fnmatch_stars_cross_slashes_and_classes_negate() {
        let m = |p: &str, s: &str| fnmatch_regex(p).is_match(s);
        assert!(m("*.log", "dir/sub/a.log"));
        assert!(m("dir/*", "dir/sub/a"));
        assert!(!m("*.log", "a.txt"));
        assert!(m("a?c", "abc"));
        assert!(m("[!x]y", "ay") && !m("[!x]y", "xy"));
        assert!(m("[ab]", "b"));
        assert!(m("a[b", "a[b"));
        assert!(m("{a,b}", "{a,b}"));
        assert!(m("a.b", "a.b") && !m("a.b", "axb"));
    }

    #[test]
    fn the_survey_parses_sources_members_and_exclusions() {
        let out = b"P\0/s/d\0d\0M\0/s/d/f\0f\0P\0/s/gone\0-\0X\0/s/x\0-\0";
        let s = parse_survey(out).unwrap();
        assert_eq!(s.expanded.len(), 2);
        assert!(s.expanded[0].dir && s.expanded[1].missing);
        assert_eq!(s.expanded[0].members, vec![("/s/d/f".to_string(), false)]);
        assert_eq!(s.excluded, vec!["/s/x"]);
        assert!(parse_survey(b"P\0/s\0").is_none());
    }

    #[test]
    fn archive_names_and_types() {
        assert_eq!(archive_name("/a/", "/a/b/c"), "b/c");
        assert!(looks_like_archive("/x/y.TAR.GZ"));
        assert!(!looks_like_archive("/x/y.gz"));
    }
}
