//! The capacity margins `run-validations` checks each hypervisor against, overridable with
//! extra vars. `-e key=value` passes them as strings, so digits are accepted here, and
//! anything else is refused before the first phase instead of failing (or passing, after a
//! template's `| float` turned it into 0) inside the validation role.

use serde_json::Value;

use super::defaults::cpu_count;
use super::error::SpecError;
use super::value::display;
use crate::vars::VarMap;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacityMargins {
    /// `capacity_headroom`: the factor the guests' disk and RAM are multiplied by before
    /// they are compared with what the hypervisor has (0 switches the check off).
    pub headroom: f64,
    /// `vcpus_per_core`: how many guest vCPUs one physical core may carry.
    pub vcpus_per_core: u32,
}

impl Default for CapacityMargins {
    /// The role defaults (`roles/kinit_validations/defaults/main.yml`).
    fn default() -> Self {
        Self {
            headroom: 1.1,
            vcpus_per_core: 4,
        }
    }
}

impl CapacityMargins {
    pub fn from_extra_vars(vars: &VarMap) -> Result<Self, SpecError> {
        let mut m = CapacityMargins::default();
        if let Some(v) = vars.get("capacity_headroom") {
            m.headroom = headroom(v).ok_or_else(|| bad("capacity_headroom", v, "a number >= 0"))?;
        }
        if let Some(v) = vars.get("vcpus_per_core") {
            m.vcpus_per_core = cpu_count(v)
                .ok_or_else(|| bad("vcpus_per_core", v, "a whole number from 1 to 1024"))?;
        }
        Ok(m)
    }
}

fn bad(key: &str, v: &Value, expected: &str) -> SpecError {
    SpecError::BadValue {
        at: "extra vars".into(),
        key: key.into(),
        value: display(v),
        expected: expected.into(),
    }
}

fn headroom(v: &Value) -> Option<f64> {
    let n = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (n.is_finite() && n >= 0.0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, Value)]) -> VarMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn numeric_strings_from_key_value_extra_vars_are_numbers() {
        let m = CapacityMargins::from_extra_vars(&vars(&[
            ("capacity_headroom", "0".into()),
            ("vcpus_per_core", "64".into()),
        ]))
        .unwrap();
        assert_eq!(m.headroom, 0.0);
        assert_eq!(m.vcpus_per_core, 64);
        let m =
            CapacityMargins::from_extra_vars(&vars(&[("capacity_headroom", 1.25.into())])).unwrap();
        assert_eq!(m.headroom, 1.25);
        assert_eq!(m.vcpus_per_core, 4);
    }

    #[test]
    fn non_numbers_name_the_var_value_and_expectation() {
        let err = CapacityMargins::from_extra_vars(&vars(&[("capacity_headroom", "lots".into())]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "extra vars: `capacity_headroom` is `lots`; expected a number >= 0"
        );
        let err = CapacityMargins::from_extra_vars(&vars(&[("vcpus_per_core", "1.5".into())]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "extra vars: `vcpus_per_core` is `1.5`; expected a whole number from 1 to 1024"
        );
    }
}
