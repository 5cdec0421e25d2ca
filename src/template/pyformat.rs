//! Python's `%` string formatting (`'%02d' % n`, `'%s-%s' % (a, b)`, `'%(k)s' % d`), which
//! Jinja2 under Ansible gets from Python's `str.__mod__` and minijinja lacks. Conversions:
//! `s r a d i u o x X e E f F g G c %`, with flags `-+ 0#`, width and precision (`*` takes
//! them from the arguments); errors are Python's `TypeError`/`ValueError` words. Python
//! tells a tuple from a list and a template here cannot: a one-item list formatted by one
//! conversion gives its item, where Python gives the list (`'%s' % [1]` is `[1]`).

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, Value};

use super::pyrepr;

fn type_error(msg: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("Error rendering template: {}", msg.into()),
    )
}

/// `fmt % args`.
pub(super) fn percent(fmt: &str, args: &Value) -> Result<String, Error> {
    // A tuple gives the positional arguments, anything else is one. A template's tuple and
    // list are both sequences here, so a sequence is one argument where the format takes one
    // and the sequence has another length (`'%s' % [1, 2]` is `[1, 2]`, as in Python).
    let positional: Vec<Value> = match args.kind() {
        ValueKind::Seq if args.len() == Some(1) || conversions(fmt) != 1 => {
            args.try_iter()?.collect()
        }
        _ => vec![args.clone()],
    };
    let mapping = args.kind() == ValueKind::Map;
    let mut next = positional.into_iter();
    let mut out = String::with_capacity(fmt.len() + 8);
    let mut chars = fmt.chars().peekable();
    let mut used_mapping = false;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // A key, `%(name)s`, reads the mapping.
        let mut value: Option<Value> = None;
        if chars.peek() == Some(&'(') {
            chars.next();
            let key: String = chars.by_ref().take_while(|&c| c != ')').collect();
            if !mapping {
                return Err(type_error("format requires a mapping"));
            }
            used_mapping = true;
            value = Some(
                args.get_item(&Value::from(key.as_str()))
                    .ok()
                    .filter(|v| !v.is_undefined())
                    .ok_or_else(|| type_error(format!("KeyError: '{key}'")))?,
            );
        }
        let mut flags = String::new();
        while let Some(&f) = chars.peek().filter(|f| "-+ 0#".contains(**f)) {
            flags.push(f);
            chars.next();
        }
        let mut number = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            if chars.peek() == Some(&'*') {
                chars.next();
                return match next.next() {
                    Some(v) => v
                        .as_i64()
                        .map(|n| Some(n.max(0) as usize))
                        .ok_or_else(|| type_error("* wants int")),
                    None => Err(type_error("not enough arguments for format string")),
                };
            }
            let digits: String =
                std::iter::from_fn(|| chars.next_if(char::is_ascii_digit)).collect();
            Ok(digits.parse().ok())
        };
        let width = number(&mut chars)?;
        let precision = if chars.peek() == Some(&'.') {
            chars.next();
            Some(number(&mut chars)?.unwrap_or(0))
        } else {
            None
        };
        while chars.next_if(|c| "hlL".contains(*c)).is_some() {}
        let Some(conv) = chars.next() else {
            return Err(type_error("ValueError: incomplete format"));
        };
        if conv == '%' {
            out.push('%');
            continue;
        }
        let value = match value {
            Some(v) => v,
            None if mapping => args.clone(),
            None => next
                .next()
                .ok_or_else(|| type_error("not enough arguments for format string"))?,
        };
        let body = convert(conv, &flags, precision, &value)?;
        pad(&mut out, &body, width.unwrap_or(0), &flags, conv);
    }
    if !mapping && !used_mapping && next.next().is_some() {
        return Err(type_error(
            "not all arguments converted during string formatting",
        ));
    }
    Ok(out)
}

/// How many arguments `fmt` converts (`%%` takes none).
fn conversions(fmt: &str) -> usize {
    let mut n = 0;
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c == '%' && chars.next() != Some('%') {
            n += 1;
        }
    }
    n
}

/// One conversion's text, before padding to its width.
fn convert(conv: char, flags: &str, precision: Option<usize>, v: &Value) -> Result<String, Error> {
    let sign = |negative: bool| {
        if negative {
            "-"
        } else if flags.contains('+') {
            "+"
        } else if flags.contains(' ') {
            " "
        } else {
            ""
        }
    };
    let real = |what: &str| -> Result<f64, Error> {
        match v.kind() {
            ValueKind::Number | ValueKind::Bool => {
                f64::try_from(v.clone()).map_err(|e| type_error(e.to_string()))
            }
            _ => Err(type_error(format!(
                "{what} format: a real number is required, not {}",
                super::filters::core::type_debug(v.clone())
            ))),
        }
    };
    Ok(match conv {
        's' | 'r' | 'a' => {
            let text = if conv == 's' {
                pyrepr::to_str(v)?
            } else {
                pyrepr::to_repr(v)?
            };
            match precision {
                Some(p) => text.chars().take(p).collect(),
                None => text,
            }
        }
        'd' | 'i' | 'u' => {
            let n: i128 = match v.kind() {
                ValueKind::Bool => i128::from(v.is_true()),
                _ if v.is_integer() => v.to_string().parse().unwrap_or_default(),
                _ => real("%d")?.trunc() as i128,
            };
            format!("{}{}", sign(n < 0), n.unsigned_abs())
        }
        'o' | 'x' | 'X' => {
            let n = v
                .as_i64()
                .filter(|_| v.is_integer() || v.kind() == ValueKind::Bool)
                .ok_or_else(|| {
                    type_error(format!(
                        "%{conv} format: an integer is required, not {}",
                        super::filters::core::type_debug(v.clone())
                    ))
                })?;
            let digits = match conv {
                'o' => format!("{:o}", n.unsigned_abs()),
                'x' => format!("{:x}", n.unsigned_abs()),
                _ => format!("{:X}", n.unsigned_abs()),
            };
            let prefix = match (flags.contains('#'), conv) {
                (true, 'o') => "0o",
                (true, 'x') => "0x",
                (true, _) => "0X",
                _ => "",
            };
            format!("{}{prefix}{digits}", sign(n < 0))
        }
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
            let f = real(&format!("%{conv}"))?;
            let p = precision.unwrap_or(6);
            let body = match conv {
                'f' | 'F' => format!("{:.p$}", f.abs()),
                'e' | 'E' => exponent(f.abs(), p),
                _ => general(f.abs(), p.max(1), flags.contains('#')),
            };
            let body = if conv.is_ascii_uppercase() {
                body.to_uppercase()
            } else {
                body
            };
            format!("{}{body}", sign(f.is_sign_negative() && f != 0.0))
        }
        'c' => match (v.as_str(), v.as_i64()) {
            (Some(s), _) if s.chars().count() == 1 => s.to_string(),
            (None, Some(n)) => char::from_u32(n as u32)
                .map(String::from)
                .ok_or_else(|| type_error("%c arg not in range(0x110000)"))?,
            _ => return Err(type_error("%c requires int or char")),
        },
        other => {
            return Err(type_error(format!(
                "ValueError: unsupported format character '{other}'"
            )));
        }
    })
}

/// `%e`: Python writes at least two exponent digits and a sign (`1.500000e+00`).
fn exponent(f: f64, precision: usize) -> String {
    let s = format!("{f:.precision$e}");
    match s.split_once('e') {
        Some((m, e)) => match e.strip_prefix('-') {
            Some(d) => format!("{m}e-{d:0>2}"),
            None => format!("{m}e+{e:0>2}"),
        },
        None => s,
    }
}

/// `%g`: `precision` significant digits, fixed or exponent form as C's printf chooses,
/// trailing zeros dropped unless `#`.
fn general(f: f64, precision: usize, keep_zeros: bool) -> String {
    let exp = if f == 0.0 {
        0
    } else {
        f.log10().floor() as i32
    };
    let body = if exp < -4 || exp >= precision as i32 {
        exponent(f, precision - 1)
    } else {
        let decimals = (precision as i32 - 1 - exp).max(0) as usize;
        format!("{f:.decimals$}")
    };
    if keep_zeros {
        return body;
    }
    let (mantissa, exp) = match body.split_once('e') {
        Some((m, e)) => (m.to_string(), format!("e{e}")),
        None => (body, String::new()),
    };
    let mantissa = if mantissa.contains('.') {
        mantissa
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        mantissa
    };
    mantissa + &exp
}

/// `body` padded to `width`: left-aligned with `-`, zero-filled after the sign with `0` (for
/// numbers), else right-aligned with spaces.
fn pad(out: &mut String, body: &str, width: usize, flags: &str, conv: char) {
    let len = body.chars().count();
    if len >= width {
        out.push_str(body);
        return;
    }
    let fill = width - len;
    if flags.contains('-') {
        out.push_str(body);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if flags.contains('0') && !"srac".contains(conv) {
        let signed = body.starts_with(['-', '+', ' ']);
        let (sign, digits) = body.split_at(usize::from(signed));
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(digits);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(body);
    }
}
