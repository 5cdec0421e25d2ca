//! `random` and `shuffle`, as ansible-core's `rand` and `randomize_list` behave: a number
//! from a range, a choice from a sequence, a list in random order. Without `seed` the OS
//! random source is used; with one, the same seed gives the same result run after run (but
//! not Python's `random.Random(seed)` sequence: kinit has no Mersenne Twister).

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

/// A source of random numbers: splitmix64 over a seed.
struct Draw(u64);

impl Draw {
    fn new(seed: Option<&Value>) -> Self {
        match seed {
            Some(s) if !s.is_none() && !s.is_undefined() => {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                s.to_string().hash(&mut h);
                Draw(h.finish())
            }
            _ => {
                let mut b = [0u8; 8];
                getrandom::fill(&mut b).expect("the OS random source works");
                Draw(u64::from_le_bytes(b))
            }
        }
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
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
    let mut draw = Draw::new(seed.as_ref());
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
        let n = if step > 0 {
            (end - start + step - 1).div_euclid(step)
        } else {
            (start - end - step - 1).div_euclid(-step)
        };
        if n <= 0 {
            return Err(filter_error(&format!(
                "empty range in randrange({start}, {end}, {step})"
            )));
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
pub fn shuffle(value: Value, seed: Option<Value>) -> Result<Value, Error> {
    let Ok(iter) = value.try_iter() else {
        return Ok(value);
    };
    let mut items: Vec<Value> = iter.collect();
    let mut draw = Draw::new(seed.as_ref());
    for i in (1..items.len()).rev() {
        items.swap(i, draw.below(i as u64 + 1) as usize);
    }
    Ok(Value::from(items))
}
