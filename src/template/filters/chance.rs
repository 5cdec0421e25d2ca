//! `random`, `shuffle` and `random_mac`, as ansible-core's `rand` and `randomize_list` and
//! community.general's `random_mac` behave: a number from a range, a choice from a
//! sequence, a list in random order, a MAC address completing a prefix. Without `seed` the
//! OS random source is used; with one, Python's own `random.Random(seed)`: the Mersenne
//! Twister seeded as CPython seeds it (`Modules/_randommodule.c` `init_by_array`,
//! `random.py` `seed` version 2 for strings, `_randbelow_with_getrandbits`), so
//! `59 | random(seed=inventory_hostname)`, the usual way to spread cron jobs, gives each host
//! the minute ansible-playbook gives it.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use crate::template::pyrandom::{PyRandom, system_below};

/// A source of random numbers: the OS's, or Python's seeded generator.
enum Draw {
    Os,
    Seeded(Box<PyRandom>),
}

impl Draw {
    fn new(seed: Option<&Value>) -> Result<Self, Error> {
        let Some(s) = seed.filter(|s| !s.is_none() && !s.is_undefined()) else {
            return Ok(Draw::Os);
        };
        let r = match s.kind() {
            ValueKind::String => PyRandom::from_str_seed(s.as_str().unwrap_or_default()),
            ValueKind::Bool => PyRandom::from_int_seed(i128::from(s.is_true())),
            ValueKind::Number if s.is_integer() => {
                PyRandom::from_int_seed(i128::try_from(s.clone())?)
            }
            _ => {
                return Err(filter_error(
                    "The only supported seed types are: None, int, float, str, bytes, and bytearray.",
                ));
            }
        };
        Ok(Draw::Seeded(Box::new(r)))
    }

    /// A number in `0..n` (`n` > 0), as Python's `Random._randbelow`.
    fn below(&mut self, n: u64) -> u64 {
        match self {
            Draw::Os => system_below(n).expect("the OS random source works"),
            Draw::Seeded(r) => r.below(n),
        }
    }
}

fn filter_error(msg: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.to_string())
}

/// `end | random(start=0, step=1, seed=None)`: `randrange(start, end, step)` for an integer,
/// `choice(end)` for a sequence (where `start`/`step` are refused).
pub fn random(end: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let start: Option<Value> = kwargs.get("start")?;
    let step: Option<Value> = kwargs.get("step")?;
    let seed: Option<Value> = kwargs.get("seed")?;
    kwargs.assert_all_used()?;
    let mut draw = Draw::new(seed.as_ref())?;
    let given = |v: &Option<Value>| v.as_ref().is_some_and(Value::is_true);
    if end.kind() == ValueKind::Number && end.is_integer() {
        let end = i64::try_from(end)?;
        let start = start
            .filter(Value::is_true)
            .map(i64::try_from)
            .transpose()?
            .unwrap_or(0);
        let step = step
            .filter(Value::is_true)
            .map(i64::try_from)
            .transpose()?
            .unwrap_or(1);
        if step == 0 {
            return Err(filter_error("zero step for randrange()"));
        }
        // Python's randrange: the values start, start+step, ... short of end.
        let width = end - start;
        let n = if step == 1 {
            width
        } else if step > 0 {
            (width + step - 1).div_euclid(step)
        } else {
            (width + step + 1).div_euclid(step)
        };
        if n <= 0 {
            return Err(filter_error(&match step {
                1 => format!("empty range in randrange({start}, {end}, {step})"),
                _ => "empty range for randrange()".to_string(),
            }));
        }
        return Ok(Value::from(start + step * draw.below(n as u64) as i64));
    }
    match end.kind() {
        ValueKind::Seq | ValueKind::Map | ValueKind::String | ValueKind::Iterable => {
            if given(&start) || given(&step) {
                return Err(filter_error(
                    "start and step can only be used with integer values",
                ));
            }
            let items: Vec<Value> = end.try_iter()?.collect();
            if items.is_empty() {
                return Err(filter_error("Cannot choose from an empty sequence"));
            }
            Ok(items[draw.below(items.len() as u64) as usize].clone())
        }
        _ => Err(filter_error(
            "random can only be used on sequences and integers",
        )),
    }
}

/// `shuffle(seed=None)`: the items in random order; a value that is not iterable comes back
/// as it is (upstream swallows the error).
pub fn shuffle(value: Value, seed: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let seed = match seed {
        Some(s) => Some(s),
        None => kwargs.get("seed")?,
    };
    kwargs.assert_all_used()?;
    let Ok(iter) = value.try_iter() else {
        return Ok(value);
    };
    let mut items: Vec<Value> = iter.collect();
    // A falsy seed (`0`, `''`) shuffles at random, as upstream tests `if seed:`.
    let mut draw = Draw::new(seed.as_ref().filter(|s| s.is_true()))?;
    for i in (1..items.len()).rev() {
        items.swap(i, draw.below(i as u64 + 1) as usize);
    }
    Ok(Value::from(items))
}

/// `prefix | random_mac(seed=None)`: the prefix (up to five `xx:` bytes) completed to a MAC
/// address with random bytes (community.general's `random_mac`, its draw included).
pub fn random_mac(value: Value, seed: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let seed = match seed {
        Some(s) => Some(s),
        None => kwargs.get("seed")?,
    };
    kwargs.assert_all_used()?;
    let Some(prefix) = value.as_str().map(str::to_lowercase) else {
        return Err(filter_error(&format!(
            "Invalid value type (<class '{}'>) for random_mac ({value})",
            super::core::type_debug(value.clone())
        )));
    };
    let items: Vec<&str> = prefix.split(':').collect();
    if items.len() > 5 {
        return Err(filter_error(&format!(
            "Invalid value ({prefix}) for random_mac: 5 colon(:) separated items max"
        )));
    }
    let errors: Vec<String> = items
        .iter()
        .filter_map(|m| match m {
            &"" => Some("empty item".to_string()),
            m if m.len() < 2 || !m.chars().take(2).all(|c| c.is_ascii_hexdigit()) => {
                Some(format!("{m} not hexa byte"))
            }
            _ => None,
        })
        .collect();
    if !errors.is_empty() {
        return Err(filter_error(&format!(
            "Invalid value ({prefix}) for random_mac: {}",
            errors.join(",")
        )));
    }
    let mut draw = Draw::new(seed.as_ref())?;
    // randint(0x1000000000, 0xFFFFFFFFFF): ten hex digits, the first of them not zero.
    let v = 68_719_476_736 + draw.below(1_099_511_627_775 - 68_719_476_736 + 1);
    let remain = 2 * (6 - items.len());
    let hex = format!("{v:x}");
    let mut out = prefix.clone();
    for pair in hex.as_bytes()[..remain].chunks(2) {
        out.push(':');
        out.push_str(std::str::from_utf8(pair).unwrap_or_default());
    }
    Ok(Value::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded(seed: Value) -> Draw {
        Draw::new(Some(&seed)).unwrap()
    }

    /// The draws CPython 3.11 makes (`random.Random(seed).randrange(...)`, `.shuffle(...)`).
    #[test]
    fn seeded_draws_are_pythons() {
        assert_eq!(seeded(Value::from("web01")).below(59), 22);
        assert_eq!(seeded(Value::from(42)).below(100), 81);
        assert_eq!(
            seeded(Value::from(12_345_678_901_234_567_890u64)).below(10),
            8
        );
        let shuffled = shuffle(
            Value::from((1..=10).collect::<Vec<i64>>()),
            Some(Value::from("s")),
            Kwargs::from_iter(std::iter::empty::<(&str, Value)>()),
        )
        .unwrap();
        assert_eq!(shuffled.to_string(), "[4, 3, 2, 5, 9, 1, 7, 6, 10, 8]");
    }

    #[test]
    fn a_mac_prefix_is_completed_and_checked() {
        let none = || Kwargs::from_iter(std::iter::empty::<(&str, Value)>());
        let mac = random_mac(
            Value::from("52:54:00"),
            Some(Value::from("kube-node-1")),
            none(),
        );
        assert_eq!(mac.unwrap().as_str(), Some("52:54:00:2b:ca:62"));
        let err = random_mac(Value::from("52:zz"), None, none()).unwrap_err();
        assert!(err.to_string().contains("zz not hexa byte"), "{err}");
        let err = random_mac(Value::from("1:2:3:4:5:6"), None, none()).unwrap_err();
        assert!(
            err.to_string().contains("5 colon(:) separated items max"),
            "{err}"
        );
    }
}
