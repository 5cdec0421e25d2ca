//! Memory and disk sizes: KubeInit's KiB integers (`16777216`) and human sizes with binary
//! units (`16GiB`, `16Gi`, `30G`, `512M`); `G` means GiB, as it does for `qemu-img`.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// A size in KiB (KubeInit's unit for RAM; disks are converted to it too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct Size(u64);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error(
        "`{value}` is not a size; expected KiB as an integer (`16777216`) or a number with a unit K, M, G or T (`16GiB`, `30G`)"
    )]
    Malformed { value: String },
    #[error("`{value}` is zero; a size must be at least 1 KiB")]
    Zero { value: String },
    #[error("`{value}` is too large")]
    TooLarge { value: String },
}

impl Size {
    pub const fn from_kib(kib: u64) -> Self {
        Size(kib)
    }

    pub const fn from_gib(gib: u64) -> Self {
        Size(gib * 1024 * 1024)
    }

    pub const fn kib(self) -> u64 {
        self.0
    }

    /// Whole MiB, rounded down (what `virt-install --memory` takes).
    pub const fn mib(self) -> u64 {
        self.0 / 1024
    }

    /// Parse a size as given on the command line or in a spec.
    pub fn parse(text: &str) -> Result<Size, SizeError> {
        let value = text.trim();
        let malformed = || SizeError::Malformed {
            value: text.to_string(),
        };
        let split = value
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(value.len());
        let (digits, unit) = value.split_at(split);
        if digits.is_empty() {
            return Err(malformed());
        }
        let shift = match unit.trim_start().to_ascii_lowercase().as_str() {
            "" | "k" | "ki" | "kib" => 0,
            "m" | "mi" | "mib" => 10,
            "g" | "gi" | "gib" => 20,
            "t" | "ti" | "tib" => 30,
            _ => return Err(malformed()),
        };
        let n: u64 = digits.parse().map_err(|_| SizeError::TooLarge {
            value: text.to_string(),
        })?;
        if n == 0 {
            return Err(SizeError::Zero {
                value: text.to_string(),
            });
        }
        n.checked_mul(1u64 << shift)
            .map(Size)
            .ok_or_else(|| SizeError::TooLarge {
                value: text.to_string(),
            })
    }
}

/// The shortest exact form: `24 GiB`, `1536 MiB`, `100 KiB`.
impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (shift, unit) in [(30, "TiB"), (20, "GiB"), (10, "MiB")] {
            if self.0.is_multiple_of(1u64 << shift) {
                return write!(f, "{} {unit}", self.0 >> shift);
            }
        }
        write!(f, "{} KiB", self.0)
    }
}

/// Accepts a JSON number (KiB) or a string in any form `Size::parse` takes.
impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
            Other(serde_json::Value),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Int(n) => n.to_string(),
            Raw::Text(s) => s,
            Raw::Other(v) => v.to_string(),
        };
        Size::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kib_integers_and_units() {
        assert_eq!(Size::parse("16777216").unwrap(), Size::from_gib(16));
        assert_eq!(Size::parse("16GiB").unwrap(), Size::from_gib(16));
        assert_eq!(Size::parse("16Gi").unwrap(), Size::from_gib(16));
        assert_eq!(Size::parse("30G").unwrap(), Size::from_gib(30));
        assert_eq!(Size::parse("512M").unwrap().kib(), 512 * 1024);
        assert_eq!(Size::parse("1 TiB").unwrap(), Size::from_gib(1024));
        assert_eq!(Size::parse("100k").unwrap().kib(), 100);
    }

    #[test]
    fn display_is_the_shortest_exact_unit() {
        assert_eq!(Size::from_gib(24).to_string(), "24 GiB");
        assert_eq!(Size::from_kib(1536 * 1024).to_string(), "1536 MiB");
        assert_eq!(Size::from_kib(100).to_string(), "100 KiB");
        assert_eq!(Size::from_gib(2048).to_string(), "2 TiB");
    }

    #[test]
    fn deserializes_numbers_and_strings() {
        let s: Size = serde_json::from_str("8388608").unwrap();
        assert_eq!(s, Size::from_gib(8));
        let s: Size = serde_json::from_str("\"8G\"").unwrap();
        assert_eq!(s, Size::from_gib(8));
        let e = serde_json::from_str::<Size>("-1").unwrap_err().to_string();
        assert!(e.starts_with("`-1` is not a size"), "{e}");
    }
}
