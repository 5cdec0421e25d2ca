//! The one-line-style apt sources (`sources.list` and `sources.list.d/*.list`) as
//! `apt_repository` sees them: each file a list of parsed lines, repositories added or removed
//! as whole lines, and each file rendered back in the normalised form ansible-core 2.19's
//! `apt_repository` writes (lib/ansible/modules/apt_repository.py, `SourcesList`): a disabled
//! line as `# source`, a trailing comment as ` # comment`, runs of blanks in a source line
//! collapsed. Pure: the module reads and writes the files.

/// The first words that make a line a repository.
const SOURCE_TYPES: [&str; 2] = ["deb", "deb-src"];

/// One line of a sources file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// A `deb`/`deb-src` line (enabled or commented out).
    pub valid: bool,
    /// Not commented out.
    pub enabled: bool,
    /// The line without its `#` prefix and trailing comment (blanks collapsed when valid).
    pub source: String,
    /// The text after a `#` inside the line.
    pub comment: String,
}

impl Line {
    /// Parse one line as upstream's `SourcesList._parse` does.
    pub fn parse(raw: &str) -> Self {
        let mut line = raw.trim();
        let mut enabled = true;
        if let Some(rest) = line.strip_prefix('#') {
            enabled = false;
            line = rest;
        }
        let mut comment = String::new();
        // A `#` at the very start of what is left is not a comment (upstream: `i > 0`).
        if let Some(i) = line.find('#').filter(|i| *i > 0) {
            comment = line[i + 1..].trim().to_string();
            line = &line[..i];
        }
        let mut source = line.trim().to_string();
        let words: Vec<&str> = source.split_whitespace().collect();
        let valid = words.first().is_some_and(|w| SOURCE_TYPES.contains(w));
        if valid {
            source = words.join(" ");
        }
        Line {
            valid,
            enabled,
            source,
            comment,
        }
    }

    fn render(&self) -> String {
        let mut s = String::new();
        if !self.enabled {
            s.push_str("# ");
        }
        s.push_str(&self.source);
        if !self.comment.is_empty() {
            s.push_str(" # ");
            s.push_str(&self.comment);
        }
        s.push('\n');
        s
    }
}

/// A repository line that cannot be added or removed: upstream's `InvalidSource`, whose text
/// is the line after its `#` and comment were cut off.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid repository string: {0}")]
pub struct InvalidSource(pub String);

/// The source part of a repository line given to the module: an enabled `deb`/`deb-src` line.
pub fn source_of(repo: &str) -> Result<String, InvalidSource> {
    let l = Line::parse(repo);
    if l.valid && l.enabled {
        return Ok(l.source);
    }
    // The text upstream reports: the line as `_parse` had cut it when it gave up.
    let mut cut = repo.trim();
    cut = cut.strip_prefix('#').unwrap_or(cut);
    if let Some(i) = cut.find('#').filter(|i| *i > 0) {
        cut = &cut[..i];
    }
    Err(InvalidSource(cut.to_string()))
}

/// The file name upstream derives from a source line (`_suggest_filename`): options and URL
/// schemes dropped, the first word after the type without its `user:password@`, every run of
/// other characters than ASCII letters and digits made one `_`, then `.list`; `filename` (the
/// module's option) replaces the derived stem.
pub fn suggest_filename(source: &str, filename: Option<&str>) -> String {
    if let Some(f) = filename {
        return format!("{f}.list");
    }
    let options = regex::Regex::new(r"\[[^\]]+\]").expect("valid");
    let scheme = regex::Regex::new(r"\w+://").expect("valid");
    let line = options.replace_all(source, "");
    let line = scheme.replace_all(&line, "");
    let first = line
        .split_whitespace()
        .find(|w| !SOURCE_TYPES.contains(w))
        .unwrap_or("");
    let first = first.split_once('@').map_or(first, |(_, host)| host);
    let stem: Vec<&str> = first
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    format!("{}.list", stem.join("_"))
}

/// The `deb` line of a Launchpad PPA (`ppa:owner/name`, `name` defaulting to `ppa`) for a
/// release codename, as upstream's `_expand_ppa` builds it.
pub fn expand_ppa(ppa: &str, codename: &str) -> (String, String, String) {
    let spec = ppa.split(':').nth(1).unwrap_or("");
    let mut parts = spec.split('/');
    let owner = parts.next().unwrap_or("").to_string();
    let name = parts.next().unwrap_or("ppa").to_string();
    let line =
        format!("deb https://ppa.launchpadcontent.net/{owner}/{name}/ubuntu {codename} main");
    (line, owner, name)
}

/// Every sources file apt reads one-line entries from, in reading order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourcesList {
    pub files: Vec<(String, Vec<Line>)>,
}

impl SourcesList {
    /// Add a file as read (`text` its content).
    pub fn load(&mut self, path: &str, text: &str) {
        self.files
            .push((path.to_string(), text.lines().map(Line::parse).collect()));
    }

    /// Whether an enabled line has this source (upstream's `repos_urls` membership).
    pub fn has_enabled(&self, source: &str) -> bool {
        self.files
            .iter()
            .flat_map(|(_, ls)| ls)
            .any(|l| l.valid && l.enabled && l.source == source)
    }

    /// Add `source`: every line that has it already (commented out or not) is enabled;
    /// when none has, it is appended to `file`. Returns whether it was appended.
    pub fn add(&mut self, source: &str, file: &str) -> bool {
        let mut found = false;
        for (_, lines) in &mut self.files {
            for l in lines.iter_mut().filter(|l| l.valid && l.source == source) {
                l.enabled = true;
                found = true;
            }
        }
        if found {
            return false;
        }
        let line = Line {
            valid: true,
            enabled: true,
            source: source.to_string(),
            comment: String::new(),
        };
        match self.files.iter_mut().find(|(p, _)| p == file) {
            Some((_, lines)) => lines.push(line),
            None => self.files.push((file.to_string(), vec![line])),
        }
        true
    }

    /// Remove every enabled line that has `source` (removed, not commented out).
    pub fn remove(&mut self, source: &str) {
        for (_, lines) in &mut self.files {
            lines.retain(|l| !(l.valid && l.enabled && l.source == source));
        }
    }

    /// Each file that has lines, with its normalised text (upstream's `dump`).
    pub fn dump(&self) -> Vec<(String, String)> {
        self.files
            .iter()
            .filter(|(_, ls)| !ls.is_empty())
            .map(|(p, ls)| (p.clone(), ls.iter().map(Line::render).collect()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_render_as_upstream() {
        let l = Line::parse("  deb   http://x/  stable main  # mine ");
        assert!(l.valid && l.enabled);
        assert_eq!(l.render(), "deb http://x/ stable main # mine\n");
        let l = Line::parse("#deb http://x/ stable main");
        assert!(l.valid && !l.enabled);
        assert_eq!(l.render(), "# deb http://x/ stable main\n");
        assert_eq!(Line::parse("## note").render(), "# # note\n");
        assert_eq!(Line::parse("").render(), "\n");
        assert!(!Line::parse("Types: deb").valid);
    }

    #[test]
    fn invalid_lines_are_refused_with_upstreams_text() {
        assert_eq!(
            source_of("# deb http://x/ y z").unwrap_err().to_string(),
            "Invalid repository string:  deb http://x/ y z"
        );
        assert_eq!(
            source_of("foo bar # c").unwrap_err().to_string(),
            "Invalid repository string: foo bar "
        );
        assert_eq!(source_of("deb  a b").unwrap(), "deb a b");
    }

    #[test]
    fn filenames_are_derived_as_upstream() {
        assert_eq!(
            suggest_filename(
                "deb http://dl.google.com/linux/chrome/deb/ stable main",
                None
            ),
            "dl_google_com_linux_chrome_deb.list"
        );
        assert_eq!(
            suggest_filename(
                "deb [arch=amd64 signed-by=/k.gpg] https://u:p@apt.example.com/x stable main",
                None
            ),
            "apt_example_com_x.list"
        );
        assert_eq!(
            suggest_filename("deb file:/srv/r ./", None),
            "file_srv_r.list"
        );
        assert_eq!(suggest_filename("deb x y", Some("mine")), "mine.list");
        assert_eq!(
            suggest_filename("ppa:deadsnakes/ppa_jammy", None),
            "ppa_deadsnakes_ppa_jammy.list"
        );
    }

    #[test]
    fn add_enables_a_commented_line_and_remove_drops_enabled_ones() {
        let mut s = SourcesList::default();
        s.load("/a.list", "# deb http://x/ y z\ndeb http://q/ r s\n");
        assert!(!s.add("deb http://x/ y z", "/b.list"));
        assert_eq!(
            s.dump(),
            vec![(
                "/a.list".to_string(),
                "deb http://x/ y z\ndeb http://q/ r s\n".to_string()
            )]
        );
        assert!(s.add("deb http://n/ y z", "/b.list"));
        s.remove("deb http://q/ r s");
        s.remove("deb http://n/ y z");
        assert_eq!(s.dump().len(), 1);
    }

    #[test]
    fn ppas_expand_to_launchpad_lines() {
        assert_eq!(
            expand_ppa("ppa:deadsnakes/ppa", "jammy").0,
            "deb https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu jammy main"
        );
        assert_eq!(expand_ppa("ppa:owner", "noble").2, "ppa");
    }
}
