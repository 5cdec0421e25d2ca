//! The `ini` lookup (ansible-core's plugins/lookup/ini.py): a key's value in a section of an
//! INI file, or of a Java properties file (`type=properties`), found like the `file`
//! lookup's. With `re=true` the key is a regular expression (Python's `re.match`) and every
//! matching option's value comes back. Options come as keyword arguments or, the legacy way,
//! as `k=v` words in the term after the key (`'user section=mysqld file=my.ini'`).
//!
//! The file is read as Python's `configparser.ConfigParser` reads it (`crate::configparser`),
//! interpolating unless `interpolation=false`. Every term's file is read into the same
//! parser, as upstream's one `self.cp` per run.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use super::pyrepr;
use crate::codec::Codec;
use crate::configparser::{Parser, ReadError, ReadOptions, fold, interpolate};
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
        let read = ReadOptions {
            case_sensitive: opts.case_sensitive,
            allow_no_value: opts.allow_no_value,
        };
        parser.read(&text, read).map_err(|e| match e {
            // Upstream's `ValueError`, then the `DuplicateOptionError` behind it.
            ReadError::DuplicateOption { .. } => invalid(format!(
                "Duplicate option in {}: {e}",
                pyrepr::quote_str(&opts.file)
            )),
            e => invalid(e.to_string()),
        })?;
        let Some(items) = parser.items(&section) else {
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
                Some(v) if opts.interpolation => Value::from(
                    interpolate(&items, &section, k, v, opts.case_sensitive).map_err(invalid)?,
                ),
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
        let folded = fold(&key, opts.case_sensitive);
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
    use super::parse_params;

    #[test]
    fn inline_words_as_upstream_splits_them() {
        assert_eq!(
            parse_params("value1   type=properties file=a b.ini re=true"),
            vec!["value1", "type=properties", "file=a b.ini", "re=true"]
        );
        assert_eq!(parse_params("file=x.ini"), vec!["file=x.ini"]);
    }
}
