//! The `csvfile` lookup (ansible-core's plugins/lookup/csvfile.py): for each search key, the
//! `col` field of the first row whose `keycol` field equals it, in a CSV file found like the
//! `file` lookup's. Options come as keyword arguments or, the legacy way, as `k=v` words in
//! the term after the key (`'Smith file=people.csv delimiter=, col=1'`).

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use super::kv;
use super::pyrepr;

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

const OPTIONS: &[&str] = &["file", "col", "keycol", "delimiter", "default", "encoding"];

/// The lookup's settings: the defaults, then keyword arguments, then a term's `k=v` words.
#[derive(Clone)]
struct Options {
    file: String,
    col: Value,
    keycol: Value,
    delimiter: String,
    default: Option<Value>,
    encoding: String,
}

impl Options {
    fn set(&mut self, name: &str, value: Value) -> Result<(), Error> {
        let text = || pyrepr::to_str(&value);
        match name {
            "file" => self.file = text()?,
            "col" => self.col = value,
            "keycol" => self.keycol = value,
            "delimiter" => self.delimiter = text()?,
            "default" => self.default = Some(value).filter(|v| !v.is_none()),
            "encoding" => self.encoding = text()?,
            // Upstream's words.
            _ => return Err(invalid(format!("'{name}' is not a valid option"))),
        }
        Ok(())
    }

    /// `col`/`keycol` as upstream's `int` option type takes them.
    fn index(&self, name: &str) -> Result<usize, Error> {
        let v = if name == "col" {
            &self.col
        } else {
            &self.keycol
        };
        let n = match v.kind() {
            ValueKind::Number if v.is_integer() => i64::try_from(v.clone()).ok(),
            ValueKind::Number => f64::try_from(v.clone()).ok().map(|f| f as i64),
            _ => pyrepr::to_str(v)?.trim().parse::<i64>().ok(),
        };
        let Some(n) = n else {
            return Err(invalid(format!(
                "Config '{name}' for 'csvfile' lookup plugin from 'Direct' has an invalid \
                 value: Invalid value provided for 'int': {}",
                match v.as_str() {
                    Some(s) => pyrepr::quote_str(s),
                    None => pyrepr::to_str(v)?,
                }
            )));
        };
        // A negative index counts from the end in Python; kinit refuses it plainly.
        usize::try_from(n).map_err(|_| invalid(format!("`{name}` must not be negative, got {n}")))
    }
}

/// Run the lookup; `find` locates a file as the `file` lookup does (`None` when missing).
pub fn run(
    terms: &[Value],
    kwargs: &Kwargs,
    find: impl Fn(&str) -> Option<std::path::PathBuf>,
) -> Result<Vec<Value>, Error> {
    let mut base = Options {
        file: "ansible.csv".into(),
        col: Value::from(1),
        keycol: Value::from(0),
        delimiter: "TAB".into(),
        default: None,
        encoding: "utf-8".into(),
    };
    // Unknown keyword arguments are ignored, as upstream's `set_options(direct=...)` does.
    for name in OPTIONS {
        if let Some(v) = kwargs.get::<Option<Value>>(name)? {
            base.set(name, v)?;
        }
    }
    for key in kwargs.args() {
        if !matches!(key, "wantlist" | "errors") {
            let _ = kwargs.get::<Value>(key)?;
        }
    }
    let missing_key = || invalid("Search key is required but was not found".into());
    if terms.is_empty() {
        return Err(missing_key());
    }
    let mut out = Vec::new();
    for term in terms {
        let mut opts = base.clone();
        let mut raw = Vec::new();
        for word in kv::split_kv(&pyrepr::to_str(term)?) {
            let decoded = kv::decode_escapes(&word);
            match find_unescaped_eq(&decoded) {
                Some(eq) => opts.set(
                    decoded[..eq].trim(),
                    Value::from(kv::unquote(decoded[eq + 1..].trim())),
                )?,
                // A word without `=` is part of the key, quotes and all.
                None => raw.push(word),
            }
        }
        if raw.is_empty() {
            return Err(missing_key());
        }
        let key = raw.join(" ");
        if opts.delimiter == "TAB" {
            opts.delimiter = "\t".into();
        }
        // kinit keeps backslashes in Jinja string literals as written, where Ansible decodes
        // them in a conditional (`delimiter='\t'` in an `assert` is a tab there): an escape
        // that is otherwise a too-long delimiter is decoded.
        if opts.delimiter.chars().count() > 1 {
            opts.delimiter = kv::decode_escapes(&opts.delimiter);
        }
        let mut delim = opts.delimiter.chars();
        let (Some(delim), None) = (delim.next(), delim.next()) else {
            return Err(invalid("\"delimiter\" must be a 1-character string".into()));
        };
        let (col, keycol) = (opts.index("col")?, opts.index("keycol")?);
        // Upstream hands `None` to `open` for a file it cannot find.
        let path = find(&opts.file).ok_or_else(|| {
            invalid("expected str, bytes or os.PathLike object, not NoneType".into())
        })?;
        let bytes = std::fs::read(&path).map_err(|e| {
            invalid(format!(
                "[Errno {}] {}: '{}'",
                e.raw_os_error().unwrap_or(0),
                e.to_string().split(" (os error").next().unwrap_or_default(),
                path.display()
            ))
        })?;
        let text = decode(&bytes, &opts.encoding)?;
        let found = rows(&text, delim)
            .into_iter()
            .find(|row| !row.is_empty() && row.get(keycol).is_some_and(|k| *k == key));
        let value = match found {
            Some(row) => Some(Value::from(
                row.get(col)
                    .ok_or_else(|| invalid("list index out of range".into()))?
                    .clone(),
            )),
            None => opts.default.clone(),
        };
        match value {
            Some(v) if v.kind() == ValueKind::Seq => out.extend(v.try_iter()?),
            Some(v) => out.push(v),
            None => {}
        }
    }
    Ok(out)
}

fn find_unescaped_eq(word: &str) -> Option<usize> {
    let b = word.as_bytes();
    (1..b.len()).find(|&i| b[i] == b'=' && b[i - 1] != b'\\')
}

fn decode(bytes: &[u8], encoding: &str) -> Result<String, Error> {
    let norm = encoding.to_ascii_lowercase().replace('_', "-");
    match norm.as_str() {
        "utf-8" | "utf8" | "ascii" | "us-ascii" => String::from_utf8(bytes.to_vec())
            .map_err(|e| invalid(format!("'{encoding}' codec can't decode the file: {e}"))),
        "latin-1" | "latin1" | "iso-8859-1" | "iso8859-1" => {
            Ok(bytes.iter().map(|&b| char::from(b)).collect())
        }
        // Python's words for a codec it does not know.
        _ => Err(invalid(format!("unknown encoding: {encoding}"))),
    }
}

/// Python's `csv.reader` with the `excel` dialect: `"` quotes a field (a doubled `"` inside
/// is one), a quoted field may hold the delimiter and line breaks, text after a closing
/// quote is kept, and `\r\n`, `\r` or `\n` end a row.
fn rows(text: &str, delim: char) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let (mut quoted, mut at_start, mut any) = (false, true, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        any = true;
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' if at_start => {
                quoted = true;
                at_start = false;
            }
            c if c == delim => {
                row.push(std::mem::take(&mut field));
                at_start = true;
            }
            '\r' | '\n' => {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                row.push(std::mem::take(&mut field));
                // A blank line is an empty row, which the lookup skips.
                if row.len() == 1 && row[0].is_empty() {
                    row.clear();
                }
                rows.push(std::mem::take(&mut row));
                at_start = true;
                any = false;
            }
            c => {
                field.push(c);
                at_start = false;
            }
        }
    }
    if any {
        row.push(field);
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::rows;

    #[test]
    fn csv_rows_as_python_reads_them() {
        let r = rows("a,\"b,c\",d\r\n\n\"x\"\"y\"@z,\"multi\nline\"\n", ',');
        assert_eq!(
            r,
            vec![
                vec!["a".to_string(), "b,c".into(), "d".into()],
                vec![],
                vec!["x\"y@z".into(), "multi\nline".into()],
            ]
        );
        assert_eq!(
            rows("k\x1av", '\x1a'),
            vec![vec!["k".to_string(), "v".into()]]
        );
    }
}
