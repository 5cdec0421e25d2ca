//! The cluster spec string `<distro>-<driver>-<controllers>-<computes>-<hypervisors>[-suffix]`
//! with KubeInit's rules: controllers 1, 3 or 5 (compared as text, so `01` is refused),
//! computes >= 0, hypervisors >= 1, driver `libvirt`. The suffix (CI's `h`/`c`) is kept but
//! has no effect. Distros KubeInit knew besides `k8s` are recognised and refused by name.

use std::fmt;

/// Distros kinit deploys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Distro {
    K8s,
}

impl Distro {
    pub fn as_str(self) -> &'static str {
        match self {
            Distro::K8s => "k8s",
        }
    }
}

/// Distros KubeInit supported that kinit does not (yet).
pub const KNOWN_UNSUPPORTED_DISTROS: &[&str] = &["okd", "ocp", "eks", "rke", "cdk", "kid"];

/// Upper bounds that keep a typo (`k8s-libvirt-1-1000000-1`) from expanding into a huge plan.
pub const MAX_COMPUTES: u32 = 1000;
pub const MAX_HYPERVISORS: u32 = 100;

/// A parsed, validated spec string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub distro: Distro,
    pub controllers: u32,
    pub computes: u32,
    pub hypervisors: u32,
    /// Anything after the fifth part, e.g. `h` in `k8s-libvirt-1-1-1-h`.
    pub suffix: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error(
        "spec `{spec}` has {parts} part(s); expected `<distro>-<driver>-<controllers>-<computes>-<hypervisors>[-suffix]`, e.g. `k8s-libvirt-1-1-1`"
    )]
    TooFewParts { spec: String, parts: usize },
    #[error("spec `{spec}`: distro `{distro}` is not supported yet; supported: `k8s`")]
    UnsupportedDistro { spec: String, distro: String },
    #[error("spec `{spec}`: distro `{distro}` is unknown; supported: `k8s`")]
    UnknownDistro { spec: String, distro: String },
    #[error("spec `{spec}`: driver `{driver}` is not supported; expected `libvirt`")]
    Driver { spec: String, driver: String },
    #[error("spec `{spec}`: controllers `{value}` must be 1, 3 or 5")]
    Controllers { spec: String, value: String },
    #[error("spec `{spec}`: computes `{value}` must be a whole number from 0 to {MAX_COMPUTES}")]
    Computes { spec: String, value: String },
    #[error(
        "spec `{spec}`: hypervisors `{value}` must be a whole number from 1 to {MAX_HYPERVISORS}"
    )]
    Hypervisors { spec: String, value: String },
    #[error("spec `{spec}`: the suffix after the fifth `-` is empty")]
    EmptySuffix { spec: String },
}

impl Shape {
    pub fn parse(spec: &str) -> Result<Shape, ShapeError> {
        let owned = || spec.to_string();
        let parts: Vec<&str> = spec.splitn(6, '-').collect();
        if parts.len() < 5 {
            return Err(ShapeError::TooFewParts {
                spec: owned(),
                parts: parts.len(),
            });
        }
        let distro = match parts[0] {
            "k8s" => Distro::K8s,
            d if KNOWN_UNSUPPORTED_DISTROS.contains(&d) => {
                return Err(ShapeError::UnsupportedDistro {
                    spec: owned(),
                    distro: d.to_string(),
                });
            }
            d => {
                return Err(ShapeError::UnknownDistro {
                    spec: owned(),
                    distro: d.to_string(),
                });
            }
        };
        if parts[1] != "libvirt" {
            return Err(ShapeError::Driver {
                spec: owned(),
                driver: parts[1].to_string(),
            });
        }
        let controllers = match parts[2] {
            "1" => 1,
            "3" => 3,
            "5" => 5,
            v => {
                return Err(ShapeError::Controllers {
                    spec: owned(),
                    value: v.to_string(),
                });
            }
        };
        let computes = count(parts[3], 0, MAX_COMPUTES).ok_or_else(|| ShapeError::Computes {
            spec: owned(),
            value: parts[3].to_string(),
        })?;
        let hypervisors =
            count(parts[4], 1, MAX_HYPERVISORS).ok_or_else(|| ShapeError::Hypervisors {
                spec: owned(),
                value: parts[4].to_string(),
            })?;
        let suffix = match parts.get(5) {
            None => None,
            Some(&"") => return Err(ShapeError::EmptySuffix { spec: owned() }),
            Some(s) => Some(s.to_string()),
        };
        Ok(Shape {
            distro,
            controllers,
            computes,
            hypervisors,
            suffix,
        })
    }
}

/// A decimal count within `min..=max` (digits only: no sign, no spaces).
fn count(text: &str, min: u32, max: u32) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u32>().ok().filter(|n| (min..=max).contains(n))
}

/// The canonical spec string (without the suffix it was given with, if any).
impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-libvirt-{}-{}-{}",
            self.distro.as_str(),
            self.controllers,
            self.computes,
            self.hypervisors
        )?;
        if let Some(s) = &self.suffix {
            write!(f, "-{s}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubeinit_specs() {
        let s = Shape::parse("k8s-libvirt-3-2-2").unwrap();
        assert_eq!((s.controllers, s.computes, s.hypervisors), (3, 2, 2));
        assert_eq!(s.suffix, None);
        let s = Shape::parse("k8s-libvirt-1-0-1-h").unwrap();
        assert_eq!((s.computes, s.suffix.as_deref()), (0, Some("h")));
        assert_eq!(s.to_string(), "k8s-libvirt-1-0-1-h");
        // Parts after the fifth are one suffix, dashes included.
        let s = Shape::parse("k8s-libvirt-5-1-1-a-b").unwrap();
        assert_eq!(s.suffix.as_deref(), Some("a-b"));
    }
}
