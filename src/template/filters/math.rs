//! ansible-core's math and size filters (`plugins/filter/mathstuff.py`): `log`, `pow`,
//! `root`, `human_readable`, `human_to_bytes`, `combinations`, `permutations` and
//! `rekey_on_member`, with its words for bad input. The size conversions are also what
//! `setup`'s facts and the module argument type `bytes` use, so they live here, below both.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use crate::template::pyrepr;

fn failed(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// A Python number (a bool counts, as `True` is 1), or `None`.
fn number(v: &Value) -> Option<f64> {
    match v.kind() {
        ValueKind::Number | ValueKind::Bool => f64::try_from(v.clone()).ok(),
        _ => None,
    }
}

/// The number `v`, or the filter's words with Python's `TypeError` after them (`log() can
/// only be used on numbers: must be real number, not str`).
fn real(filter: &str, v: &Value) -> Result<f64, Error> {
    number(v).ok_or_else(|| {
        failed(format!(
            "{filter}() can only be used on numbers: must be real number, not {}",
            super::core::type_debug(v.clone())
        ))
    })
}

fn float(x: f64) -> Result<Value, Error> {
    if x.is_nan() {
        return Err(failed("math domain error"));
    }
    Ok(Value::from(x))
}

/// `log(base=e)`: `math.log`, `math.log10` for base 10.
pub fn log(x: Value, base: Option<Value>) -> Result<Value, Error> {
    let x = real("log", &x)?;
    let base = match &base {
        Some(b) => real("log", b)?,
        None => std::f64::consts::E,
    };
    if x <= 0.0 || base <= 0.0 || base == 1.0 {
        return Err(failed(if base == 1.0 {
            "float division by zero"
        } else {
            "math domain error"
        }));
    }
    float(if base == 10.0 {
        x.log10()
    } else {
        x.ln() / base.ln()
    })
}

/// `pow(y)`: `math.pow`, always a float.
pub fn pow(x: Value, y: Value) -> Result<Value, Error> {
    float(real("pow", &x)?.powf(real("pow", &y)?))
}

/// `root(base=2)`: `math.sqrt`, or `x ** (1 / base)`.
pub fn root(x: Value, base: Option<Value>) -> Result<Value, Error> {
    let x = real("root", &x)?;
    let base = match &base {
        Some(b) => real("root", b)?,
        None => 2.0,
    };
    let r = if base == 2.0 {
        x.sqrt()
    } else {
        x.powf(1.0 / base)
    };
    if r.is_nan() {
        return Err(failed(
            "root() can only be used on numbers: math domain error",
        ));
    }
    Ok(Value::from(r))
}

const SIZE_RANGES: [(char, u32); 9] = [
    ('Y', 80),
    ('Z', 70),
    ('E', 60),
    ('P', 50),
    ('T', 40),
    ('G', 30),
    ('M', 20),
    ('K', 10),
    ('B', 0),
];

/// `bytes_to_human` (`module_utils/common/text/formatters.py`): two decimals in the largest
/// unit the size reaches, or in `unit`; `Bytes`/`bits` below a kilo.
pub fn bytes_to_human(size: f64, isbits: bool, unit: Option<&str>) -> String {
    let wanted = unit
        .and_then(|u| u.chars().next())
        .map(|c| c.to_ascii_uppercase());
    let (suffix, shift) = SIZE_RANGES
        .iter()
        .copied()
        .find(|&(s, shift)| match wanted {
            None => size >= 2f64.powi(shift as i32),
            Some(w) => w == s,
        })
        .unwrap_or(('B', 0));
    let base = if isbits { "bits" } else { "Bytes" };
    let suffix = if shift == 0 {
        base.to_string()
    } else {
        format!("{suffix}{}", &base[..1])
    };
    format!("{:.2} {suffix}", size / 2f64.powi(shift as i32))
}

/// `human_to_bytes` (`formatters.py`): `10M` or `10 MB` in bytes (`10 Mb` in bits with
/// `isbits`); a number without a unit takes `default_unit`. The error is ansible-core's.
pub fn human_to_bytes(text: &str, default_unit: Option<&str>, isbits: bool) -> Result<i64, String> {
    let t = text.trim_end();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim_start());
    let num_ok = !num.is_empty()
        && num.matches('.').count() <= 1
        && !num.ends_with('.')
        && num.chars().any(|c| c.is_ascii_digit());
    if !num_ok || !unit.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(format!(
            "human_to_bytes() can't interpret following string: {text}"
        ));
    }
    let n: f64 = num.parse().map_err(|_| {
        format!("human_to_bytes() can't interpret following number: {num} (original input string: {text})")
    })?;
    let unit = if unit.is_empty() {
        default_unit
    } else {
        Some(unit)
    };
    let Some(unit) = unit.filter(|u| !u.is_empty()) else {
        return Ok(round_half_even(n) as i64);
    };
    let key = unit.chars().next().unwrap_or('B').to_ascii_uppercase();
    let Some(&(_, shift)) = SIZE_RANGES.iter().find(|(s, _)| *s == key) else {
        return Err(format!(
            "human_to_bytes() failed to convert {text} (unit = {unit}). The suffix must be one \
             of Y, Z, E, P, T, G, M, K, B"
        ));
    };
    if unit.len() > 1 {
        const WORDS: [&str; 9] = [
            "byte",
            "kilobyte",
            "megabyte",
            "gigabyte",
            "terabyte",
            "petabyte",
            "exabyte",
            "zetabyte",
            "yottabyte",
        ];
        let word = WORDS[shift as usize / 10];
        let word = if isbits {
            word.replace("byte", "bit")
        } else {
            word.to_string()
        };
        let class = if isbits { 'b' } else { 'B' };
        let short = if key == 'B' {
            class.to_string()
        } else {
            format!("{key}{class}")
        };
        if unit.to_lowercase() != word && unit != short {
            let expect = if key == 'B' {
                format!("expect {class} or {}", if isbits { "bit" } else { "byte" })
            } else {
                format!("expect {key}{class} or {key}")
            };
            return Err(format!(
                "human_to_bytes() failed to convert {text}. Value is not a valid string ({expect})"
            ));
        }
    }
    Ok(round_half_even(n * 2f64.powi(shift as i32)) as i64)
}

/// Python's `round()`: halves go to the even neighbour.
fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - x.signum()
    } else {
        r
    }
}

/// `human_readable(isbits=False, unit=None)`.
pub fn human_readable(size: Value, kwargs: Kwargs) -> Result<String, Error> {
    let isbits = kwargs.get::<Option<bool>>("isbits")?.unwrap_or(false);
    let unit = kwargs.get::<Option<String>>("unit")?;
    kwargs.assert_all_used()?;
    let size = number(&size).ok_or_else(|| {
        failed(format!(
            "human_readable() failed on bad input: '>=' not supported between instances of \
             '{}' and 'int'",
            super::core::type_debug(size.clone())
        ))
    })?;
    Ok(bytes_to_human(size, isbits, unit.as_deref()))
}

/// `human_to_bytes(default_unit=None, isbits=False)`.
pub fn human_to_bytes_filter(
    size: Value,
    default_unit: Option<String>,
    kwargs: Kwargs,
) -> Result<i64, Error> {
    let default_unit = kwargs
        .get::<Option<String>>("default_unit")?
        .or(default_unit);
    let isbits = kwargs.get::<Option<bool>>("isbits")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    let text = pyrepr::to_str(&size)?;
    human_to_bytes(&text, default_unit.as_deref(), isbits)
        .map_err(|e| failed(format!("human_to_bytes() can't interpret the input: {e}")))
}

/// The items of an iterable as Python iterates it (a string's characters, a dict's keys).
fn iterable(v: &Value) -> Result<Vec<Value>, Error> {
    match v.kind() {
        ValueKind::Seq | ValueKind::Map | ValueKind::String | ValueKind::Iterable => {
            Ok(v.try_iter()?.collect())
        }
        _ => Err(failed(format!(
            "'{}' object is not iterable",
            super::core::type_debug(v.clone())
        ))),
    }
}

/// `combinations(r)`: `itertools.combinations`, each a list, in its order.
pub fn combinations(value: Value, r: usize) -> Result<Value, Error> {
    let items = iterable(&value)?;
    let n = items.len();
    let mut out = Vec::new();
    if r > n {
        return Ok(Value::from(out));
    }
    let mut idx: Vec<usize> = (0..r).collect();
    loop {
        out.push(Value::from(
            idx.iter().map(|&i| items[i].clone()).collect::<Vec<_>>(),
        ));
        let Some(i) = (0..r).rev().find(|&i| idx[i] != i + n - r) else {
            break;
        };
        idx[i] += 1;
        for j in i + 1..r {
            idx[j] = idx[j - 1] + 1;
        }
    }
    Ok(Value::from(out))
}

/// `permutations(r=None)`: `itertools.permutations`, each a list, in its order.
pub fn permutations(value: Value, r: Option<usize>) -> Result<Value, Error> {
    fn walk(
        items: &[Value],
        r: usize,
        used: &mut Vec<bool>,
        cur: &mut Vec<Value>,
        out: &mut Vec<Value>,
    ) {
        if cur.len() == r {
            out.push(Value::from(cur.clone()));
            return;
        }
        for i in 0..items.len() {
            if !used[i] {
                used[i] = true;
                cur.push(items[i].clone());
                walk(items, r, used, cur, out);
                cur.pop();
                used[i] = false;
            }
        }
    }
    let items = iterable(&value)?;
    let r = r.unwrap_or(items.len());
    let mut out = Vec::new();
    if r <= items.len() {
        walk(
            &items,
            r,
            &mut vec![false; items.len()],
            &mut Vec::new(),
            &mut out,
        );
    }
    Ok(Value::from(out))
}

/// `rekey_on_member(key, duplicates='error')`: a dict of the items (a list's, or a dict's
/// values) keyed by each item's `key`.
pub fn rekey_on_member(data: Value, key: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let duplicates = kwargs
        .get::<Option<String>>("duplicates")?
        .unwrap_or_else(|| "error".into());
    kwargs.assert_all_used()?;
    if duplicates != "error" && duplicates != "overwrite" {
        return Err(failed(format!(
            "duplicates parameter to rekey_on_member has unknown value {}",
            pyrepr::quote_str(&duplicates)
        )));
    }
    let items: Vec<Value> = match data.kind() {
        ValueKind::Map => data
            .try_iter()?
            .map(|k| data.get_item(&k))
            .collect::<Result<_, _>>()?,
        ValueKind::Seq | ValueKind::Iterable => data.try_iter()?.collect(),
        _ => return Err(failed("Type is not a valid list, set, or dict")),
    };
    let mut out: Vec<(Value, Value)> = Vec::new();
    for item in items {
        if item.kind() != ValueKind::Map {
            return Err(failed("List item is not a valid dict"));
        }
        let k = item
            .get_item(&key)
            .ok()
            .filter(|k| !k.is_undefined())
            .ok_or_else(|| {
                failed(format!(
                    "Key {} was not found.",
                    pyrepr::to_repr(&key).unwrap_or_default()
                ))
            })?;
        match out.iter_mut().find(|(have, _)| *have == k) {
            Some(_) if duplicates == "error" => {
                return Err(failed(format!(
                    "Key {} is not unique, cannot convert to dict.",
                    pyrepr::to_repr(&k).unwrap_or_default()
                )));
            }
            Some(slot) => slot.1 = item,
            None => out.push((k, item)),
        }
    }
    Ok(Value::from_iter(out))
}
