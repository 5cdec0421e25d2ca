//! The `ini` lookup (ansible-core's plugins/lookup/ini.py): a key's value in a section of an
//! INI file, or of a Java properties file (`type=properties`), found like the `file`
//! lookup's. With `re=true` the key is a regular expression (Python's `re.match`) and every
//! matching option's value comes back. Options come as keyword arguments or, the legacy way,
//! as `k=v` words in the term after the key (`'user section=mysqld file=my.ini'`).
//!
//! The file is read as Python's `configparser.ConfigParser` reads it, which the lookup uses:
//! `=` or `:` between option and value, `#`/`;` comment lines, indented continuation lines,
//! a `[DEFAULT]` section seen by every section, option names lowercased unless
//! `case_sensitive`, duplicate options and sections refused, and `BasicInterpolation`
//! (`%(name)s`, `%%`) unless `interpolation=false`. Every term's file is read into the same
//! parser, as upstream's one `self.cp` per run.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use super::pyrepr;
use crate::codec::Codec;
use crate::pyre::{Anchor, Flags, PyRegex};

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// The options in upstream's order (its inline-word parser tries them in this order).
const OPTIONS: &[&str] = &[
    "type",
    "file",
    "section",
    "re",
    "encoding",
    "default",
    "case_sensitive",
    "allow_no_value",
    "interpolation",
];

#[derive(Clone)]
struct Options {
    properties: bool,
    file: String,
    section: String,
    re: bool,
    encoding: String,
    default: Value,
    case_sensitive: bool,
    allow_no_value: bool,
    interpolation: bool,
}

/// Ansible's `boolean()` for an option given as a word or a value.
fn boolean(name: &str, v: &Value) -> Result<bool, Error> {
    if v.kind() == ValueKind::Bool || v.kind() == ValueKind::Number {
        return Ok(v.is_true());
    }
    let s = pyrepr::to_str(v)?;
    match s.trim().to_lowercase().as_str() {
        "y" | "yes" | "on" | "1" | "true" | "t" => Ok(true),
        "n" | "no" | "off" | "0" | "false" | "f" | "" => Ok(false),
        _ => Err(invalid(format!(
            "Invalid value for '{name}': {} is not a valid boolean.",
            pyrepr::quote_str(&s)
        ))),
    }
}

impl Options {
    fn set(&mut self, name: &str, value: Value) -> Result<(), Error> {
        let text = || pyrepr::to_str(&value);
        match name {
            "type" => {
                let t = text()?;
                self.properties = match t.as_str() {
                    "ini" => false,
                    "properties" => true,
                    _ => {
                        return Err(invalid(format!(
                            "Invalid value {} for config 'type' for 'ini' lookup plugin.",
                            pyrepr::quote_str(&t)
                        )));
                    }
                }
            }
            "file" => self.file = text()?,
            "section" => self.section = text()?,
            "re" => self.re = boolean(name, &value)?,
            "encoding" => self.encoding = text()?,
            "default" => self.default = value,
            "case_sensitive" => self.case_sensitive = boolean(name, &value)?,
            "allow_no_value" | "allow_none" => self.allow_no_value = boolean(name, &value)?,
            "interpolation" => self.interpolation = boolean(name, &value)?,
            // Upstream's words.
            _ => return Err(invalid(format!("'{name}' is not a valid option."))),
        }
        Ok(())
    }
}

/// Upstream's `_parse_params`: the term split on whitespace; a word holding `<option>=`
/// starts that option, other words go on the current one (the key first), joined by a space.
fn parse_params(term: &str) -> Vec<String> {
    let mut params: Vec<(&str, String)> = Vec::new();
    let mut current = "key";
    for (i, phrase) in term.split_whitespace().enumerate() {
        if phrase.contains('=') {
            for k in OPTIONS {
                if phrase.contains(&format!("{k}=")) {
                    current = k;
                }
            }
        }
        match params.iter_mut().find(|(k, _)| *k == current) {
            Some((_, v)) if i != 0 && !v.is_empty() => {
                v.push(' ');
                v.push_str(phrase);
            }
            Some((_, v)) => *v = phrase.to_string(),
            None => params.push((current, phrase.to_string())),
        }
    }
    params.into_iter().map(|(_, v)| v).collect()
}

/// One section's options in file order; `None` is an option without a value.
type Section = Vec<(String, Option<String>)>;

/// A section being read: its options' values as lists of lines, joined when the file ends.
type ReadSection = (String, Vec<(String, Option<Vec<String>>)>);

/// What `ConfigParser` holds after reading: `[DEFAULT]` and the other sections in order.
#[derive(Default)]
struct Parser {
    defaults: Section,
    sections: Vec<(String, Section)>,
}

fn set_option(section: &mut Section, name: String, value: Option<String>) {
    match section.iter_mut().find(|(k, _)| *k == name) {
        Some((_, v)) => *v = value,
        None => section.push((name, value)),
    }
}

impl Parser {
    /// `ConfigParser.read_file` with the lookup's settings; `file` names the file in errors
    /// as upstream's messages name it.
    fn read(&mut self, text: &str, opts: &Options, file: &str) -> Result<(), Error> {
        const DEFAULT: &str = "DEFAULT";
        let fold = |name: &str| {
            if opts.case_sensitive {
                name.to_string()
            } else {
                name.to_lowercase()
            }
        };
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
                    return Err(invalid(format!(
                        "While reading from '<???>' [line {lineno:2}]: section {} already exists",
                        pyrepr::quote_str(header)
                    )));
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
                return Err(invalid(format!(
                    "File contains no section headers.\nfile: '<???>', line: {lineno}\n{}",
                    pyrepr::quote_str(raw)
                )));
            };
            let split = value.find(['=', ':']);
            let (name, val) = match split {
                Some(at) => (
                    value[..at].trim_end(),
                    Some(value[at + 1..].trim().to_string()),
                ),
                None if opts.allow_no_value => (value, None),
                None => {
                    errors.push(format!("\n\t[line {lineno:2}]: {}", pyrepr::quote_str(raw)));
                    continue;
                }
            };
            if name.is_empty() {
                errors.push(format!("\n\t[line {lineno:2}]: {}", pyrepr::quote_str(raw)));
                continue;
            }
            let name = fold(name);
            let section = &lines[c].0;
            if added_options
                .iter()
                .any(|(s, o)| s == section && *o == name)
            {
                // Upstream's words: its `ValueError`, then the `DuplicateOptionError` behind it.
                return Err(invalid(format!(
                    "Duplicate option in {}: While reading from '<???>' [line {lineno:2}]: \
                     option {} in section {} already exists",
                    pyrepr::quote_str(file),
                    pyrepr::quote_str(&name),
                    pyrepr::quote_str(section)
                )));
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
            return Err(invalid(format!(
                "Source contains parsing errors: '<???>'{}",
                errors.concat()
            )));
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

    /// A section's options over `[DEFAULT]` (`ConfigParser.items`' order), or `None`.
    fn section(&self, name: &str) -> Option<Section> {
        let own = &self.sections.iter().find(|(s, _)| s == name)?.1;
        let mut all = self.defaults.clone();
        for (k, v) in own {
            set_option(&mut all, k.clone(), v.clone());
        }
        Some(all)
    }
}

/// `BasicInterpolation.before_get`: `%%` is `%`, `%(name)s` another option's value in the
/// same section (itself interpolated, ten levels deep at most).
fn interpolate(
    map: &Section,
    section: &str,
    option: &str,
    value: &str,
    case_sensitive: bool,
) -> Result<String, Error> {
    fn some(
        map: &Section,
        section: &str,
        option: &str,
        rest: &str,
        depth: usize,
        case_sensitive: bool,
        out: &mut String,
    ) -> Result<(), Error> {
        if depth > 10 {
            return Err(invalid(format!(
                "Recursion limit exceeded in value substitution: option {} in section {} \
                 contains an interpolation key which cannot be substituted in 10 steps. \
                 Raw value: {}",
                pyrepr::quote_str(option),
                pyrepr::quote_str(section),
                pyrepr::quote_str(rest)
            )));
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
                    return Err(invalid(format!(
                        "bad interpolation variable reference {}",
                        pyrepr::quote_str(rest)
                    )));
                };
                let key = if case_sensitive {
                    name.to_string()
                } else {
                    name.to_lowercase()
                };
                let Some((_, v)) = map.iter().find(|(k, _)| *k == key) else {
                    return Err(invalid(format!(
                        "Bad value substitution: option {} in section {} contains an \
                         interpolation key {} which is not a valid option name. Raw value: {}",
                        pyrepr::quote_str(option),
                        pyrepr::quote_str(section),
                        pyrepr::quote_str(&key),
                        pyrepr::quote_str(rest)
                    )));
                };
                let v = v.as_deref().unwrap_or_default();
                if v.contains('%') {
                    some(map, section, option, v, depth + 1, case_sensitive, out)?;
                } else {
                    out.push_str(v);
                }
                rest = after;
            } else {
                return Err(invalid(format!(
                    "'%' must be followed by '%' or '(', found: {}",
                    pyrepr::quote_str(rest)
                )));
            }
        }
        Ok(())
    }
    let mut out = String::new();
    some(map, section, option, value, 1, case_sensitive, &mut out)?;
    Ok(out)
}

/// Run the lookup; `find` locates a file as the `file` lookup does (`None` when missing).
pub fn run(
    terms: &[Value],
    kwargs: &Kwargs,
    find: impl Fn(&str) -> Option<std::path::PathBuf>,
) -> Result<Vec<Value>, Error> {
    let mut opts = Options {
        properties: false,
        file: "ansible.ini".into(),
        section: "global".into(),
        re: false,
        encoding: "utf-8".into(),
        default: Value::from(""),
        case_sensitive: false,
        allow_no_value: false,
        interpolation: true,
    };
    // Unknown keyword arguments are ignored, as upstream's `set_options(direct=...)` does.
    for name in OPTIONS.iter().chain(&["allow_none"]) {
        if let Some(v) = kwargs.get::<Option<Value>>(name)? {
            opts.set(name, v)?;
        }
    }
    let mut parser = Parser::default();
    let mut out = Vec::new();
    for term in terms {
        let term = pyrepr::to_str(term)?;
        let mut key = term.clone();
        if term.contains('=') || term.trim().contains(' ') {
            let params = parse_params(&term);
            let mut updated_key = false;
            for param in &params {
                if param.contains('=') {
                    let mut parts = param.split('=');
                    let (Some(name), Some(value), None) =
                        (parts.next(), parts.next(), parts.next())
                    else {
                        return Err(invalid(format!(
                            "Could not use {} from {}: too many values to unpack (expected 2)",
                            pyrepr::quote_str(param),
                            pyrepr::to_repr(&Value::from(params.clone()))?
                        )));
                    };
                    if name == "allow_none" || !OPTIONS.contains(&name) {
                        return Err(invalid(format!(
                            "{} is not a valid option.",
                            pyrepr::quote_str(name)
                        )));
                    }
                    opts.set(name, Value::from(value))?;
                } else if key == term {
                    // Only the first: the inline form never took several keys.
                    key = param.clone();
                    updated_key = true;
                }
            }
            if !updated_key {
                return Err(invalid(format!(
                    "No key to look up was provided as first term within string inline \
                     options: {term}"
                )));
            }
        }
        // Upstream's words, then which file it was.
        let path = find(&opts.file).ok_or_else(|| {
            invalid(format!(
                "Invalid filename None: {} is not in the expected paths.",
                pyrepr::quote_str(&opts.file)
            ))
        })?;
        let bytes = std::fs::read(&path)
            .map_err(|e| invalid(format!("Unable to read {}: {e}", path.display())))?;
        let codec = Codec::lookup(&opts.encoding)
            .ok_or_else(|| invalid(format!("unknown encoding: {}", opts.encoding)))?;
        let text = codec.decode(&bytes).map_err(|at| {
            invalid(format!(
                "'{}' codec can't decode byte 0x{:02x} in position {at} of {}",
                opts.encoding,
                bytes.get(at).copied().unwrap_or_default(),
                path.display()
            ))
        })?;
        let mut section = opts.section.clone();
        let text = if opts.properties {
            section = "java_properties".into();
            format!("[java_properties]\n{text}")
        } else {
            text
        };
        parser.read(&text, &opts, &opts.file)?;
        let Some(items) = parser.section(&section) else {
            return Err(invalid(format!(
                "No section {} in {}.",
                pyrepr::quote_str(&section),
                pyrepr::quote_str(&opts.file)
            )));
        };
        let get = |k: &str, v: &Option<String>| -> Result<Value, Error> {
            Ok(match v {
                None if opts.re => Value::from(""),
                None => Value::from(()),
                Some(v) if opts.interpolation => {
                    Value::from(interpolate(&items, &section, k, v, opts.case_sensitive)?)
                }
                Some(v) => Value::from(v.as_str()),
            })
        };
        if opts.re {
            let re = PyRegex::with(&key, Flags::default(), Anchor::Match)
                .map_err(|e| invalid(e.to_string()))?;
            for (k, v) in &items {
                if re.is_match(k) {
                    out.push(get(k, v)?);
                }
            }
            continue;
        }
        let folded = if opts.case_sensitive {
            key.clone()
        } else {
            key.to_lowercase()
        };
        let value = match items.iter().find(|(k, _)| *k == folded) {
            Some((k, v)) => get(k, v)?,
            None => opts.default.clone(),
        };
        // A list (a list default) is spread; an option without a value adds nothing.
        match value.kind() {
            ValueKind::Seq => out.extend(value.try_iter()?),
            ValueKind::None => {}
            _ => out.push(value),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{Options, Parser, interpolate, parse_params};
    use minijinja::Value;

    fn opts() -> Options {
        Options {
            properties: false,
            file: "t.ini".into(),
            section: "global".into(),
            re: false,
            encoding: "utf-8".into(),
            default: Value::from(""),
            case_sensitive: false,
            allow_no_value: false,
            interpolation: true,
        }
    }

    #[test]
    fn reads_as_configparser() {
        let mut p = Parser::default();
        let text =
            "[DEFAULT]\nbase = /srv\n[a]\nKey : one\n  two\n\n  three\n# note\nx=%(base)s/x\n";
        p.read(text, &opts(), "t.ini").unwrap();
        let a = p.section("a").unwrap();
        assert_eq!(
            a,
            vec![
                ("base".to_string(), Some("/srv".to_string())),
                ("key".into(), Some("one\ntwo\n\nthree".into())),
                ("x".into(), Some("%(base)s/x".into())),
            ]
        );
        assert_eq!(
            interpolate(&a, "a", "x", "%(base)s/x %%", false).unwrap(),
            "/srv/x %"
        );
        assert!(interpolate(&a, "a", "x", "run %u", false).is_err());
        let dup = Parser::default().read("[s]\nk=1\nK=2\n", &opts(), "t.ini");
        assert!(
            dup.unwrap_err()
                .to_string()
                .contains("Duplicate option in 't.ini': ")
        );
        let no_value = Parser::default().read("[s]\nflag\n", &opts(), "t.ini");
        assert!(
            no_value
                .unwrap_err()
                .to_string()
                .contains("[line  2]: 'flag\\n'")
        );
    }

    #[test]
    fn inline_words_as_upstream_splits_them() {
        assert_eq!(
            parse_params("value1   type=properties file=a b.ini re=true"),
            vec!["value1", "type=properties", "file=a b.ini", "re=true"]
        );
        assert_eq!(parse_params("file=x.ini"), vec!["file=x.ini"]);
    }
}
