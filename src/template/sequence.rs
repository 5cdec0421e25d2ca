//! The `sequence` lookup (and `with_sequence`): numbers from `start=.. end=.. stride=..
//! format=..` or `count=..`, the shortcut `[start-]end[/stride][:format]`, and options given
//! as keyword arguments (`query('sequence', count=5, start=10)`), as ansible-core's
//! `plugins/lookup/sequence.py` reads them, with its messages.

/// The options of one sequence: keyword arguments first, then what a term sets.
#[derive(Clone)]
struct Options {
    start: i64,
    end: Option<i64>,
    count: Option<i64>,
    stride: i64,
    format: String,
}

/// An option's number: decimal, hex (`0x`) or octal (`0o`/`0`), as upstream's option check.
fn int(field: &str, t: &str) -> Result<i64, String> {
    let t = t.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let n = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16)
    } else if let Some(o) = t.strip_prefix("0o") {
        i64::from_str_radix(o, 8)
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8)
    } else {
        t.parse::<i64>()
    }
    // Upstream's option check (`set_option` of an `integer` option).
    .map_err(|_| {
        format!(
            "Config '{field}' for 'sequence' lookup plugin from 'Direct' has an invalid value: \
             Invalid value provided for 'integer': '{t}'"
        )
    })?;
    Ok(if neg { -n } else { n })
}

impl Options {
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "start" => self.start = int("start", value)?,
            "end" => self.end = Some(int("end", value)?),
            "count" => self.count = Some(int("count", value)?),
            "stride" => self.stride = int("stride", value)?,
            "format" => self.format = value.to_string(),
            // Upstream lists the unknown names as a Python list.
            _ => {
                return Err(format!(
                    "unrecognized arguments to with_sequence: ['{}']",
                    key.replace('\'', "\\'")
                ));
            }
        }
        Ok(())
    }

    /// A term's settings: the shortcut form, else `k=v` words.
    fn read_term(&mut self, term: &str) -> Result<(), String> {
        let mut words = term.split_whitespace().peekable();
        if let Some(first) = words.peek().filter(|w| !w.contains('=')) {
            let (range, fmt) = match first.split_once(':') {
                Some((r, f)) => (r, Some(f.to_string())),
                None => (*first, None),
            };
            let (range, step) = match range.split_once('/') {
                Some((r, st)) => (r, Some(int("stride", st)?)),
                None => (range, None),
            };
            match range.rsplit_once('-').filter(|(a, _)| !a.is_empty()) {
                Some((a, b)) => {
                    self.start = int("start", a)?;
                    self.end = Some(int("end", b)?);
                }
                None => self.end = Some(int("end", range)?),
            }
            if let Some(st) = step {
                self.stride = st;
            }
            if let Some(f) = fmt {
                self.format = f;
            }
            words.next();
        }
        for tok in words {
            let (k, v) = tok
                .split_once('=')
                .ok_or(format!("bad `with_sequence` part `{tok}`"))?;
            self.set(k, v)?;
        }
        Ok(())
    }

    /// Upstream's `sanity_check` then `generate_sequence`, in its order and words.
    fn generate(self) -> Result<Vec<String>, String> {
        let Options {
            start,
            mut end,
            count,
            stride,
            format,
        } = self;
        if count.is_none() && end.is_none() {
            return Err("must specify count or end in with_sequence".into());
        }
        if let Some(c) = count {
            if end.is_some() {
                return Err("can't specify both count and end in with_sequence".into());
            }
            if c == 0 {
                return Ok(Vec::new());
            }
            // Ansible's conversion, exactly: end = start + count * stride - 1.
            end = Some(start + c * stride - 1);
        }
        let end = end.unwrap_or(start);
        if stride > 0 && end < start {
            return Err("to count backwards make stride negative".into());
        }
        if stride < 0 && end > start {
            return Err("to count forward don't make stride negative".into());
        }
        if stride == 0 {
            return Ok(Vec::new());
        }
        if format.matches('%').count() != 1 {
            return Err(format!("bad formatting string: {format}"));
        }
        let mut out = Vec::new();
        let mut i = start;
        while (stride > 0 && i <= end) || (stride < 0 && i >= end) {
            out.push(printf_int(&format, i));
            i += stride;
        }
        Ok(out)
    }
}

/// The numbers of every term, each read over the keyword options (`kwargs`, as
/// `(name, value as text)`); with options and no term, one empty term, as upstream.
pub fn sequence(terms: &[String], kwargs: &[(String, String)]) -> Result<Vec<String>, String> {
    let mut base = Options {
        start: 1,
        end: None,
        count: None,
        stride: 1,
        format: "%d".into(),
    };
    for (k, v) in kwargs {
        base.set(k, v)?;
    }
    let empty = [String::new()];
    let terms = if terms.is_empty() && !kwargs.is_empty() {
        &empty[..]
    } else {
        terms
    };
    let mut out = Vec::new();
    for term in terms {
        let mut o = base.clone();
        o.read_term(term.trim())?;
        out.extend(o.generate()?);
    }
    Ok(out)
}

/// Python's `format % n` for the integer conversions sequence formats use: `%d`, `%i`,
/// `%x`, `%X`, `%o`, `%s`, with an optional `0` flag and width; `%%` is a percent sign.
fn printf_int(f: &str, n: i64) -> String {
    let mut out = String::new();
    let mut chars = f.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = chars.peek() {
            if d.is_ascii_digit() {
                spec.push(d);
                chars.next();
            } else {
                break;
            }
        }
        let zero = spec.starts_with('0');
        let width: usize = spec.parse().unwrap_or(0);
        let body = match chars.next() {
            Some('d' | 'i' | 's') => n.to_string(),
            Some('x') => format!("{n:x}"),
            Some('X') => format!("{n:X}"),
            Some('o') => format!("{n:o}"),
            Some('%') => {
                out.push('%');
                continue;
            }
            Some(other) => {
                out.push('%');
                out.push_str(&spec);
                out.push(other);
                continue;
            }
            None => {
                out.push('%');
                out.push_str(&spec);
                continue;
            }
        };
        if zero {
            out.push_str(&format!("{body:0>width$}"));
        } else {
            out.push_str(&format!("{body:>width$}"));
        }
    }
    out
}
