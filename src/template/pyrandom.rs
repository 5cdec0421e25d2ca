//! Python's `random.Random(seed)`: CPython's Mersenne Twister (`Modules/_randommodule.c`
//! `init_genrand`, `init_by_array`, `genrand_uint32`), seeded as `random.py`'s `seed` seeds it
//! (version 2: a string's UTF-8 bytes followed by their SHA-512, read as one big-endian number;
//! an integer's absolute value), and `_randbelow_with_getrandbits`. The `password` lookup, the
//! `random`/`shuffle` filters and `random_mac` draw from it when given a seed, so they give
//! what ansible-playbook gives; without one they use the system's randomness (`system_below`).

use sha2::{Digest, Sha512};

pub(crate) struct PyRandom {
    mt: [u32; 624],
    index: usize,
}

impl PyRandom {
    const N: usize = 624;

    fn init_genrand(s: u32) -> Self {
        let mut mt = [0u32; 624];
        mt[0] = s;
        for i in 1..Self::N {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        PyRandom { mt, index: Self::N }
    }

    fn init_by_array(key: &[u32]) -> Self {
        let mut g = Self::init_genrand(19_650_218);
        let mt = &mut g.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..Self::N.max(key.len()) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= Self::N {
                mt[0] = mt[Self::N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..Self::N - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= Self::N {
                mt[0] = mt[Self::N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        g
    }

    /// `random.Random(text)`.
    pub(crate) fn from_str_seed(seed: &str) -> Self {
        let mut bytes = seed.as_bytes().to_vec();
        bytes.extend_from_slice(&Sha512::digest(seed.as_bytes()));
        Self::from_big_endian(&bytes)
    }

    /// `random.Random(n)` for a whole number.
    pub(crate) fn from_int_seed(n: i128) -> Self {
        Self::from_big_endian(&n.unsigned_abs().to_be_bytes())
    }

    /// The key of a big-endian number: 32-bit words from the least significant end, without
    /// leading zero words (at least one word).
    fn from_big_endian(bytes: &[u8]) -> Self {
        let significant = match bytes.iter().position(|b| *b != 0) {
            Some(p) => &bytes[p..],
            None => &[][..],
        };
        let mut key: Vec<u32> = significant
            .rchunks(4)
            .map(|c| c.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)))
            .collect();
        if key.is_empty() {
            key.push(0);
        }
        Self::init_by_array(&key)
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= Self::N {
            for k in 0..Self::N {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % Self::N] & 0x7fff_ffff);
                let mut v = self.mt[(k + 397) % Self::N] ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.mt[k] = v;
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(k)`, `k` <= 64: 32-bit words, least significant first, the last one cut
    /// to what is left.
    fn bits(&mut self, k: u32) -> u64 {
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        low | (high << 32)
    }

    /// `_randbelow(n)` (`n` > 0): `getrandbits(n.bit_length())` until below `n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.bits(k);
            if r < n {
                return r;
            }
        }
    }
}

/// A uniform number below `n` (> 0) from the system's randomness (rejection sampling, no
/// bias).
pub(crate) fn system_below(n: u64) -> Result<u64, getrandom::Error> {
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b)?;
        let r = u64::from_le_bytes(b);
        if r < zone {
            return Ok(r % n);
        }
    }
}
