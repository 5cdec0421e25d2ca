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

/// A source of random numbers: the OS's, or Python's seeded generator.
enum Draw {
    Os,
    Seeded(Box<Mt>),
}

impl Draw {
    fn new(seed: Option<&Value>) -> Result<Self, Error> {
        match seed {
            Some(s) if !s.is_none() && !s.is_undefined() => {
                Ok(Draw::Seeded(Box::new(Mt::from_key(&seed_key(s)?))))
            }
            _ => Ok(Draw::Os),
        }
    }

    /// A number in `0..n` (`n` > 0), as Python's `Random._randbelow`.
    fn below(&mut self, n: u64) -> u64 {
        match self {
            Draw::Os => {
                // Rejection keeps every number equally likely.
                let zone = u64::MAX - u64::MAX % n;
                loop {
                    let mut b = [0u8; 8];
                    getrandom::fill(&mut b).expect("the OS random source works");
                    let r = u64::from_le_bytes(b);
                    if r < zone {
                        return r % n;
                    }
                }
            }
            Draw::Seeded(mt) => mt.below(n),
        }
    }
}

/// The 32-bit words CPython seeds its generator with for `seed` (least significant first):
/// an integer's absolute value; a string's UTF-8 bytes followed by their SHA-512, read as
/// one big-endian number.
fn seed_key(seed: &Value) -> Result<Vec<u32>, Error> {
    use sha2::Digest;
    let bytes: Vec<u8> = match seed.kind() {
        ValueKind::String => {
            let text = seed.as_str().unwrap_or_default().as_bytes().to_vec();
            let digest = sha2::Sha512::digest(&text);
            [text, digest.to_vec()].concat()
        }
        ValueKind::Bool => vec![u8::from(seed.is_true())],
        ValueKind::Number if seed.is_integer() => {
            let n = i128::try_from(seed.clone())?.unsigned_abs();
            n.to_be_bytes().to_vec()
        }
        _ => {
            return Err(filter_error(
                "The only supported seed types are: None, int, float, str, bytes, and bytearray.",
            ));
        }
    };
    let mut words: Vec<u32> = bytes
        .rchunks(4)
        .map(|c| c.iter().fold(0u32, |w, b| (w << 8) | u32::from(*b)))
        .collect();
    while words.len() > 1 && words.last() == Some(&0) {
        words.pop();
    }
    Ok(words)
}

/// MT19937, as CPython's `random` module runs it.
struct Mt {
    state: [u32; 624],
    index: usize,
}

impl Mt {
    const N: usize = 624;

    fn from_seed(s: u32) -> Self {
        let mut state = [0u32; 624];
        state[0] = s;
        for i in 1..Self::N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt {
            state,
            index: Self::N,
        }
    }

    /// `init_by_array`.
    fn from_key(key: &[u32]) -> Self {
        let mut mt = Self::from_seed(19_650_218);
        let s = &mut mt.state;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..Self::N.max(key.len()) {
            let prev = s[i - 1];
            s[i] = (s[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= Self::N {
                s[0] = s[Self::N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..Self::N - 1 {
            let prev = s[i - 1];
            s[i] =
                (s[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= Self::N {
                s[0] = s[Self::N - 1];
                i = 1;
            }
        }
        s[0] = 0x8000_0000;
        mt
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= Self::N {
            for k in 0..Self::N {
                let y =
                    (self.state[k] & 0x8000_0000) | (self.state[(k + 1) % Self::N] & 0x7fff_ffff);
                let mut v = self.state[(k + 397) % Self::N] ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.state[k] = v;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(k)`, `k` <= 64: 32-bit words, least significant first, the last one
    /// cut to what is left.
    fn bits(&mut self, k: u32) -> u64 {
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        low | (high << 32)
    }

    /// `_randbelow_with_getrandbits(n)`.
    fn below(&mut self, n: u64) -> u64 {
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.bits(k);
            if r < n {
                return r;
            }
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
