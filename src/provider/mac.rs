//! `MacAddr`: a validated Ethernet MAC address, as libvirt and cloud-init write it.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ProviderError;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MacAddr([u8; 6]);

impl MacAddr {
    pub fn parse(text: &str) -> Result<Self, ProviderError> {
        let bad = || ProviderError::Invalid {
            field: "mac",
            value: text.to_string(),
            expected: "six hex octets separated by `:` (52:54:00:12:34:56)",
        };
        let mut out = [0u8; 6];
        let parts: Vec<&str> = text.split(':').collect();
        if parts.len() != 6 {
            return Err(bad());
        }
        for (slot, part) in out.iter_mut().zip(parts) {
            if part.len() != 2 {
                return Err(bad());
            }
            *slot = u8::from_str_radix(part, 16).map_err(|_| bad())?;
        }
        Ok(Self(out))
    }

    pub fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// `52-54-00-12-34-56`, the form Windows answer files use to name an adapter.
    pub fn dashed_upper(&self) -> String {
        self.0
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join("-")
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MacAddr({self})")
    }
}

impl std::str::FromStr for MacAddr {
    type Err = ProviderError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for MacAddr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MacAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_lowercase() {
        let m = MacAddr::parse("52:54:00:AB:cd:0f").unwrap();
        assert_eq!(m.to_string(), "52:54:00:ab:cd:0f");
        assert_eq!(m.dashed_upper(), "52-54-00-AB-CD-0F");
    }

    #[test]
    fn rejects_malformed_addresses_naming_the_value() {
        for bad in [
            "",
            "52:54:00:ab:cd",
            "52:54:00:ab:cd:0g",
            "525:4:00:ab:cd:0f",
            "a:b:c:d:e:f",
        ] {
            let err = MacAddr::parse(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
    }
}
