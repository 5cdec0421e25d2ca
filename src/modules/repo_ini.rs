//! A `.repo` file as Python's `configparser.RawConfigParser` reads and writes it, which is
//! how ansible-core's `yum_repository` edits one: sections in file order, option names
//! lower-cased, `key = value` / `key: value`, indented continuation lines joined with `\n`,
//! comments and blank lines dropped; written back as `[section]`, `key = value` (a newline
//! in a value continued with a tab) and a blank line after each section.
//!
//! Also upstream's `dump` (sections and keys sorted), which is what it compares to decide
//! whether anything changed.

/// One section: its name and options in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub options: Vec<(String, String)>,
}

/// The file's sections in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoFile {
    pub sections: Vec<Section>,
}

/// Why configparser would refuse the text (upstream's module fails with a traceback then).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("line {line}: an option before the first [section]")]
    NoSection { line: usize },
    #[error("line {line}: section `{name}` appears twice")]
    DuplicateSection { line: usize, name: String },
    #[error("line {line}: option `{option}` appears twice in section `{section}`")]
    DuplicateOption {
        line: usize,
        section: String,
        option: String,
    },
    #[error("line {line}: `{text}` is neither a [section] nor a `key = value` line")]
    Garbage { line: usize, text: String },
}

impl RepoFile {
    /// Parse as `RawConfigParser.read_string` does (default comment prefixes `#` and `;`,
    /// strict, empty lines allowed inside values).
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut file = RepoFile::default();
        // The option being read: its indent and its lines so far.
        let mut current: Option<(usize, Vec<String>)> = None;
        let finish = |file: &mut RepoFile, current: &mut Option<(usize, Vec<String>)>| {
            if let Some((_, lines)) = current.take()
                && let Some(opt) = file.sections.last_mut().and_then(|s| s.options.last_mut())
            {
                opt.1 = lines.join("\n").trim_end().to_string();
            }
        };
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let stripped = raw.trim();
            if stripped.starts_with('#') || stripped.starts_with(';') {
                continue;
            }
            if stripped.is_empty() {
                if let Some((_, lines)) = current.as_mut() {
                    lines.push(String::new());
                }
                continue;
            }
            let indent = raw.len() - raw.trim_start().len();
            if let Some((level, lines)) = current.as_mut()
                && indent > *level
            {
                lines.push(stripped.to_string());
                continue;
            }
            finish(&mut file, &mut current);
            if let Some(rest) = stripped.strip_prefix('[')
                && let Some(end) = rest.rfind(']')
                && end > 0
            {
                let name = rest[..end].to_string();
                if file.sections.iter().any(|s| s.name == name) {
                    return Err(ParseError::DuplicateSection { line, name });
                }
                file.sections.push(Section {
                    name,
                    options: Vec::new(),
                });
                continue;
            }
            let Some(split) = stripped.find(['=', ':']) else {
                return Err(ParseError::Garbage {
                    line,
                    text: stripped.to_string(),
                });
            };
            let key = stripped[..split].trim_end().to_lowercase();
            let value = stripped[split + 1..].trim().to_string();
            let Some(section) = file.sections.last_mut() else {
                return Err(ParseError::NoSection { line });
            };
            if section.options.iter().any(|(k, _)| *k == key) {
                return Err(ParseError::DuplicateOption {
                    line,
                    section: section.name.clone(),
                    option: key,
                });
            }
            section.options.push((key, value.clone()));
            current = Some((indent, vec![value]));
        }
        finish(&mut file, &mut current);
        Ok(file)
    }

    /// The text `RawConfigParser.write` produces.
    pub fn write(&self) -> String {
        let mut out = String::new();
        for s in &self.sections {
            out.push_str(&format!("[{}]\n", s.name));
            for (k, v) in &s.options {
                out.push_str(&format!("{k} = {}\n", v.replace('\n', "\n\t")));
            }
            out.push('\n');
        }
        out
    }

    /// Upstream's `YumRepo.dump`: sections and options sorted, values as they are.
    pub fn dump(&self) -> String {
        let mut sections: Vec<&Section> = self.sections.iter().collect();
        sections.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out = String::new();
        for s in sections {
            out.push_str(&format!("[{}]\n", s.name));
            let mut opts: Vec<&(String, String)> = s.options.iter().collect();
            opts.sort();
            for (k, v) in opts {
                out.push_str(&format!("{k} = {v}\n"));
            }
            out.push('\n');
        }
        out
    }

    /// Drop a section (nothing when absent).
    pub fn remove(&mut self, name: &str) {
        self.sections.retain(|s| s.name != name);
    }

    /// Replace a section: removed, then added at the end (`remove_section` + `add_section`).
    pub fn replace(&mut self, section: Section) {
        self.remove(&section.name);
        self.sections.push(section);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_configparser_and_writes_like_it() {
        let text = "# comment\n[b]\nName: B repo\nbaseurl = http://a/\n  http://b/\n\n; c\n[a]\nenabled=1\n";
        let f = RepoFile::parse(text).unwrap();
        assert_eq!(f.sections.len(), 2);
        assert_eq!(
            f.sections[0].options,
            vec![
                ("name".to_string(), "B repo".to_string()),
                ("baseurl".to_string(), "http://a/\nhttp://b/".to_string())
            ]
        );
        assert_eq!(
            f.write(),
            "[b]\nname = B repo\nbaseurl = http://a/\n\thttp://b/\n\n[a]\nenabled = 1\n\n"
        );
        assert_eq!(
            f.dump(),
            "[a]\nenabled = 1\n\n[b]\nbaseurl = http://a/\nhttp://b/\nname = B repo\n\n"
        );
    }

    #[test]
    fn a_replaced_section_moves_to_the_end() {
        let mut f = RepoFile::parse("[a]\nx = 1\n[b]\ny = 2\n").unwrap();
        f.replace(Section {
            name: "a".into(),
            options: vec![("x".into(), "3".into())],
        });
        assert_eq!(f.write(), "[b]\ny = 2\n\n[a]\nx = 3\n\n");
    }

    #[test]
    fn refuses_what_configparser_refuses() {
        assert_eq!(
            RepoFile::parse("x = 1\n"),
            Err(ParseError::NoSection { line: 1 })
        );
        assert!(matches!(
            RepoFile::parse("[a]\n[a]\n"),
            Err(ParseError::DuplicateSection { .. })
        ));
        assert!(matches!(
            RepoFile::parse("[a]\nx=1\nX=2\n"),
            Err(ParseError::DuplicateOption { .. })
        ));
        assert!(matches!(
            RepoFile::parse("[a]\njunk\n"),
            Err(ParseError::Garbage { .. })
        ));
    }
}
