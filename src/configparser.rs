//! INI text read as Python's `configparser.ConfigParser` reads it, for the places kinit
//! must agree with it: the `ini` lookup and `setup`'s local facts. `=` or `:` between option
//! and value (the first of either), `#`/`;` comment lines, indented continuation lines (a
//! blank line inside a value kept), a `[DEFAULT]` section seen by every section, option names
//! lowercased unless case-sensitive, duplicate options and sections refused (`strict`), and
//! `BasicInterpolation` (`%(name)s`, `%%`) on reading a value. Errors are in configparser's
//! words. (`modules::repo_ini` is the round-trip editor `yum_repository` writes with.)

/// One section's options in file order; `None` is an option without a value.
pub type Section = Vec<(String, Option<String>)>;

/// How to read: `ConfigParser(allow_no_value=...)` and an `optionxform` that keeps case.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    pub case_sensitive: bool,
    pub allow_no_value: bool,
}

/// Why the text cannot be read, as configparser's exceptions say it (`<???>` is the source
/// name configparser gives text that comes from no file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error(
        "While reading from '<???>' [line {line:2}]: option {option} in section {section} already exists"
    )]
    DuplicateOption {
        line: usize,
        /// Both quoted as Python's `repr`.
        section: String,
        option: String,
    },
    #[error("While reading from '<???>' [line {line:2}]: section {section} already exists")]
    DuplicateSection { line: usize, section: String },
    #[error("File contains no section headers.\nfile: '<???>', line: {line}\n{text}")]
    MissingSectionHeader { line: usize, text: String },
    #[error("Source contains parsing errors: '<???>'{}", .0.concat())]
    Parsing(Vec<String>),
}

/// A short string as Python's `repr` quotes it.
pub fn py_repr(s: &str) -> String {
    let body: String = s
        .chars()
        .map(|c| match c {
            '\n' => "\\n".to_string(),
            '\t' => "\\t".to_string(),
            '\r' => "\\r".to_string(),
            '\\' => "\\\\".to_string(),
            c => c.to_string(),
        })
        .collect();
    if s.contains('\'') && !s.contains('"') {
        format!("\"{body}\"")
    } else {
        format!("'{}'", body.replace('\'', "\\'"))
    }
}

/// What the parser holds after reading: `[DEFAULT]` and the other sections in order.
#[derive(Debug, Default)]
pub struct Parser {
    pub defaults: Section,
    pub sections: Vec<(String, Section)>,
}

/// A section being read: its options' values as lists of lines, joined when the text ends.
type ReadSection = (String, Vec<(String, Option<Vec<String>>)>);

fn set_option(section: &mut Section, name: String, value: Option<String>) {
    match section.iter_mut().find(|(k, _)| *k == name) {
        Some((_, v)) => *v = value,
        None => section.push((name, value)),
    }
}

/// An option name as `optionxform` gives it.
pub fn fold(name: &str, case_sensitive: bool) -> String {
    if case_sensitive {
        name.to_string()
    } else {
        name.to_lowercase()
    }
}

impl Parser {
    /// `ConfigParser.read_string`: add `text` to what was read before (a section read again
    /// in a later text gains its options, as configparser's do).
    pub fn read(&mut self, text: &str, opts: ReadOptions) -> Result<(), ReadError> {
        const DEFAULT: &str = "DEFAULT";
        let mut added_sections: Vec<String> = Vec::new();
        let mut added_options: Vec<(String, String)> = Vec::new();
        let mut lines: Vec<ReadSection> = Vec::new();
        let mut cur: Option<usize> = None; // index into `lines`
        let mut opt: Option<usize> = None; // index into the current section's options
        let mut indent_level = 0usize;
        let mut errors: Vec<String> = Vec::new();
        for (n, raw) in text.split_inclusive('\n').enumerate() {
            let lineno = n + 1;
            let stripped = raw.trim();
            let comment = stripped.starts_with('#') || stripped.starts_with(';');
            let value = if comment { "" } else { stripped };
            if value.is_empty() {
                // A blank line inside a value is part of it; a comment line is not.
                if !comment
                    && let (Some(c), Some(o)) = (cur, opt)
                    && let Some(v) = lines[c].1[o].1.as_mut()
                {
                    v.push(String::new());
                } else {
                    indent_level = usize::MAX;
                }
                continue;
            }
            let indent = raw.len() - raw.trim_start().len();
            if let (Some(c), Some(o)) = (cur, opt)
                && indent > indent_level
            {
                if let Some(v) = lines[c].1[o].1.as_mut() {
                    v.push(value.to_string());
                }
                continue;
            }
            indent_level = indent;
            if let Some(rest) = value.strip_prefix('[')
                && let Some(end) = rest.rfind(']')
                && end > 0
            {
                let header = &rest[..end];
                if added_sections.iter().any(|s| s == header) {
                    return Err(ReadError::DuplicateSection {
                        line: lineno,
                        section: py_repr(header),
                    });
                }
                added_sections.push(header.to_string());
                cur = Some(match lines.iter().position(|(s, _)| s == header) {
                    Some(i) => i,
                    None => {
                        lines.push((header.to_string(), Vec::new()));
                        lines.len() - 1
                    }
                });
                opt = None;
                continue;
            }
            let Some(c) = cur else {
                return Err(ReadError::MissingSectionHeader {
                    line: lineno,
                    text: py_repr(raw),
                });
            };
            let (name, val) = match value.find(['=', ':']) {
                Some(at) => (
                    value[..at].trim_end(),
                    Some(value[at + 1..].trim().to_string()),
                ),
                None if opts.allow_no_value => (value, None),
                None => ("", None),
            };
            if name.is_empty() {
                errors.push(format!("\n\t[line {lineno:2}]: {}", py_repr(raw)));
                continue;
            }
            let name = fold(name, opts.case_sensitive);
            let section = &lines[c].0;
            if added_options
                .iter()
                .any(|(s, o)| s == section && *o == name)
            {
                return Err(ReadError::DuplicateOption {
                    line: lineno,
                    section: py_repr(section),
                    option: py_repr(&name),
                });
            }
            added_options.push((section.clone(), name.clone()));
            let options = &mut lines[c].1;
            let value = val.map(|v| vec![v]);
            opt = Some(match options.iter().position(|(k, _)| *k == name) {
                Some(i) => {
                    options[i].1 = value;
                    i
                }
                None => {
                    options.push((name, value));
                    options.len() - 1
                }
            });
        }
        if !errors.is_empty() {
            return Err(ReadError::Parsing(errors));
        }
        for (name, options) in lines {
            let target = if name == DEFAULT {
                &mut self.defaults
            } else {
                match self.sections.iter().position(|(s, _)| *s == name) {
                    Some(i) => &mut self.sections[i].1,
                    None => {
                        self.sections.push((name, Vec::new()));
                        let last = self.sections.len() - 1;
                        &mut self.sections[last].1
                    }
                }
            };
            for (k, v) in options {
                let v = v.map(|l| l.join("\n").trim_end().to_string());
                set_option(target, k, v);
            }
        }
        Ok(())
    }

    /// A section's options over `[DEFAULT]` in `ConfigParser.items`' order (the defaults
    /// first), or `None` for a section that does not exist.
    pub fn items(&self, name: &str) -> Option<Section> {
        let own = &self.sections.iter().find(|(s, _)| s == name)?.1;
        let mut all = self.defaults.clone();
        for (k, v) in own {
            set_option(&mut all, k.clone(), v.clone());
        }
        Some(all)
    }

    /// A section's option names in `ConfigParser.options`' order (its own, then the
    /// defaults it does not set).
    pub fn options(&self, name: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .sections
            .iter()
            .find(|(s, _)| s == name)
            .map(|(_, o)| o.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        for (k, _) in &self.defaults {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
        names
    }
}

/// `BasicInterpolation.before_get` for `option` of `section`, whose options (over the
/// defaults) are `map`: `%%` is `%`, `%(name)s` another option's value, itself interpolated,
/// ten levels deep at most. Errors in configparser's words.
pub fn interpolate(
    map: &Section,
    section: &str,
    option: &str,
    raw: &str,
    case_sensitive: bool,
) -> Result<String, String> {
    struct At<'a> {
        map: &'a Section,
        section: &'a str,
        option: &'a str,
        raw: &'a str,
        case_sensitive: bool,
    }
    fn some(at: &At<'_>, rest: &str, depth: usize, out: &mut String) -> Result<(), String> {
        if depth > 10 {
            return Err(format!(
                "Recursion limit exceeded in value substitution: option {} in section {} \
                 contains an interpolation key which cannot be substituted in 10 steps. \
                 Raw value: {}",
                py_repr(at.option),
                py_repr(at.section),
                py_repr(at.raw)
            ));
        }
        let mut rest = rest;
        while !rest.is_empty() {
            let Some(p) = rest.find('%') else {
                out.push_str(rest);
                return Ok(());
            };
            out.push_str(&rest[..p]);
            rest = &rest[p..];
            if let Some(r) = rest.strip_prefix("%%") {
                out.push('%');
                rest = r;
            } else if let Some(r) = rest.strip_prefix("%(") {
                let reference = r
                    .find(')')
                    .filter(|&e| e > 0 && r[e + 1..].starts_with('s'))
                    .map(|e| (&r[..e], &r[e + 2..]));
                let Some((name, after)) = reference else {
                    return Err(format!(
                        "bad interpolation variable reference {}",
                        py_repr(rest)
                    ));
                };
                let key = fold(name, at.case_sensitive);
                let Some((_, v)) = at.map.iter().find(|(k, _)| *k == key) else {
                    return Err(format!(
                        "Bad value substitution: option {} in section {} contains an \
                         interpolation key {} which is not a valid option name. Raw value: {}",
                        py_repr(at.option),
                        py_repr(at.section),
                        py_repr(&key),
                        py_repr(at.raw)
                    ));
                };
                let v = v.as_deref().unwrap_or_default();
                if v.contains('%') {
                    some(at, v, depth + 1, out)?;
                } else {
                    out.push_str(v);
                }
                rest = after;
            } else {
                return Err(format!(
                    "'%' must be followed by '%' or '(', found: {}",
                    py_repr(rest)
                ));
            }
        }
        Ok(())
    }
    let at = At {
        map,
        section,
        option,
        raw,
        case_sensitive,
    };
    let mut out = String::new();
    some(&at, raw, 1, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{Parser, ReadError, ReadOptions, interpolate};

    #[test]
    fn reads_as_configparser() {
        let mut p = Parser::default();
        let text =
            "[DEFAULT]\nbase = /srv\n[a]\nKey : one\n  two\n\n  three\n# note\nx=%(base)s/x\n";
        p.read(text, ReadOptions::default()).unwrap();
        let a = p.items("a").unwrap();
        assert_eq!(
            a,
            vec![
                ("base".to_string(), Some("/srv".to_string())),
                ("key".into(), Some("one\ntwo\n\nthree".into())),
                ("x".into(), Some("%(base)s/x".into())),
            ]
        );
        assert_eq!(p.options("a"), ["key", "x", "base"]);
        assert_eq!(
            interpolate(&a, "a", "x", "%(base)s/x %%", false).unwrap(),
            "/srv/x %"
        );
        assert_eq!(
            interpolate(&a, "a", "x", "run %u", false).unwrap_err(),
            "'%' must be followed by '%' or '(', found: '%u'"
        );
        let dup = Parser::default().read("[s]\nk=1\nK=2\n", ReadOptions::default());
        assert_eq!(
            dup.unwrap_err().to_string(),
            "While reading from '<???>' [line  3]: option 'k' in section 's' already exists"
        );
        let no_value = Parser::default().read("[s]\nflag\n", ReadOptions::default());
        assert_eq!(
            no_value.unwrap_err(),
            ReadError::Parsing(vec!["\n\t[line  2]: 'flag\\n'".into()])
        );
        let mut cycle = Parser::default();
        cycle
            .read("[s]\na=%(b)s\nb=%(a)s\n", ReadOptions::default())
            .unwrap();
        let s = cycle.items("s").unwrap();
        assert!(
            interpolate(&s, "s", "a", "%(b)s", false)
                .unwrap_err()
                .ends_with("in 10 steps. Raw value: '%(b)s'")
        );
    }
}
