//! Node size defaults, overridable with KubeInit's extra vars (`-e compute_node_ram_size=16777216`
//! as the Windows blog post and KubeInit's CI pass it).
//!
//! One deliberate difference from KubeInit: computes default to 16 GiB of RAM, not 8 GiB,
//! because a Windows worker needs 16 GiB and KubeInit's CI always passed that value.

use serde_json::Value;

use super::error::SpecError;
use super::size::Size;
use super::value::{display, size_value};
use crate::vars::VarMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDefaults {
    pub vcpus: u32,
    pub maxvcpus: u32,
    pub controller_ram: Size,
    pub controller_disk: Size,
    pub compute_ram: Size,
    pub compute_disk: Size,
}

impl Default for NodeDefaults {
    fn default() -> Self {
        Self {
            vcpus: 8,
            maxvcpus: 16,
            controller_ram: Size::from_gib(24),
            controller_disk: Size::from_gib(25),
            compute_ram: Size::from_gib(16),
            compute_disk: Size::from_gib(30),
        }
    }
}

impl NodeDefaults {
    /// Defaults with the size knobs found in `extra_vars` applied.
    pub fn from_extra_vars(vars: &VarMap) -> Result<Self, SpecError> {
        let mut d = NodeDefaults::default();
        let sizes: [(&str, &mut Size); 4] = [
            ("controller_node_ram_size", &mut d.controller_ram),
            ("controller_node_disk_size", &mut d.controller_disk),
            ("compute_node_ram_size", &mut d.compute_ram),
            ("compute_node_disk_size", &mut d.compute_disk),
        ];
        for (name, slot) in sizes {
            if let Some(v) = vars.get(name) {
                *slot = size_value(v).map_err(|error| SpecError::BadSize {
                    at: "extra vars".into(),
                    key: name.to_string(),
                    error,
                })?;
            }
        }
        for (name, slot) in [
            ("cluster_node_vcpus", &mut d.vcpus),
            ("cluster_node_maxvcpus", &mut d.maxvcpus),
        ] {
            if let Some(v) = vars.get(name) {
                *slot = cpu_count(v).ok_or_else(|| SpecError::BadValue {
                    at: "extra vars".into(),
                    key: name.to_string(),
                    value: display(v),
                    expected: "a whole number from 1 to 1024".into(),
                })?;
            }
        }
        Ok(d)
    }
}

/// A whole number from 1 to 1024, given as a number or as digits.
pub(super) fn cpu_count(v: &Value) -> Option<u32> {
    let n = match v {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()?
        }
        _ => return None,
    };
    (1..=1024).contains(&n).then_some(n as u32)
}
