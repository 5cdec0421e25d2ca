//! Storage pool and volume XML as serde types, and sizes written the way KubeInit wrote them
//! (`25G`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

use super::ProviderError;
use super::xml::Document;

/// `<pool type='dir'>`: a directory of images on the hypervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pool {
    #[serde(rename = "@type")]
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub uuid: Option<String>,
    pub target: PoolTarget,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolTarget {
    pub path: String,
}

impl Pool {
    pub fn dir(name: &str, path: &str) -> Self {
        Self {
            kind: "dir".into(),
            name: name.into(),
            uuid: None,
            target: PoolTarget { path: path.into() },
        }
    }
}

impl Document for Pool {
    const ROOT: &'static str = "pool";
}

/// `<volume>`: a disk image in a pool, optionally a copy-on-write overlay over `backingStore`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Volume {
    pub name: String,
    pub capacity: Capacity,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub target: Option<VolumeTarget>,
    #[serde(
        rename = "backingStore",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub backing_store: Option<BackingStore>,
}

impl Document for Volume {
    const ROOT: &'static str = "volume";
}

impl Volume {
    pub fn format(&self) -> Option<&str> {
        self.target
            .as_ref()
            .and_then(|t| t.format.as_ref())
            .map(|f| f.kind.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    #[serde(rename = "@unit")]
    pub unit: String,
    #[serde(rename = "$text")]
    pub value: u64,
}

impl Capacity {
    pub fn bytes(value: u64) -> Self {
        Self {
            unit: "bytes".into(),
            value,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct VolumeTarget {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub format: Option<Format>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Format {
    #[serde(rename = "@type")]
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackingStore {
    pub path: String,
    pub format: Format,
}

/// A size in bytes, written as a number of bytes or with a binary suffix `K`, `M`, `G`, `T`
/// (`30G` is 30 GiB, as `qemu-img` reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub fn parse(text: &str) -> Result<Self, ProviderError> {
        let bad = || ProviderError::Invalid {
            field: "size",
            value: text.to_string(),
            expected: "bytes, or a number with K, M, G or T (binary units), e.g. `30G`",
        };
        let t = text.trim();
        let (num, shift) = match t.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => {
                let shift = match c.to_ascii_uppercase() {
                    'B' => 0,
                    'K' => 10,
                    'M' => 20,
                    'G' => 30,
                    'T' => 40,
                    _ => return Err(bad()),
                };
                (&t[..i], shift)
            }
            _ => (t, 0),
        };
        let n: u64 = num.parse().map_err(|_| bad())?;
        n.checked_mul(1u64 << shift)
            .filter(|v| *v > 0)
            .map(ByteSize)
            .ok_or_else(bad)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes", self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => ByteSize::parse(&n.to_string()),
            Raw::S(s) => ByteSize::parse(&s),
        }
        .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(ByteSize::parse("30G").unwrap().0, 30 << 30);
        assert_eq!(ByteSize::parse("512m").unwrap().0, 512 << 20);
        assert_eq!(ByteSize::parse("4096").unwrap().0, 4096);
        for bad in ["", "G", "3.5G", "10X", "0", "-1G", "99999999999T"] {
            assert!(ByteSize::parse(bad).is_err(), "{bad}");
        }
    }
}
