//! `--hypervisor-hosts-spec` (list of entries matched to `hypervisor-01..` by position) and
//! its shortcut `--hypervisor-hosts nyctea,tyto` (each name becomes that entry's
//! `ansible_host`, exactly as `[{"ansible_host":"nyctea"},{"ansible_host":"tyto"}]`).

use serde_json::Value;

use super::error::SpecError;
use super::input::parse_structured;
use super::value::Entry;
use crate::extra_vars::json_kind;

const OPTION: &str = "`--hypervisor-hosts-spec`";
const KEYS: &[&str] = &[
    "host",
    "ansible_host",
    "ssh_hostname",
    "ssh_user",
    "ssh_username",
    "ssh_port",
];

/// What the user said about one hypervisor; unset fields get defaults during expansion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HypervisorSpec {
    /// Inventory name (default `hypervisor-NN`); what `target_order` refers to.
    pub host: Option<String>,
    /// What SSH connects to (an address, a DNS name or a `~/.ssh/config` alias).
    pub ansible_host: Option<String>,
    /// The `Hostname` for generated ssh configs, when it differs from `ansible_host`.
    pub ssh_hostname: Option<String>,
    /// SSH user (default `root`); KubeInit's `ssh_username` is accepted as the same key.
    pub ssh_user: Option<String>,
    pub ssh_port: Option<u16>,
}

/// Parse the `--hypervisor-hosts-spec` text.
pub fn parse_hypervisor_hosts_spec(text: &str) -> Result<Vec<HypervisorSpec>, SpecError> {
    let value = parse_structured(text).map_err(|error| SpecError::Syntax {
        at: OPTION.to_string(),
        error,
    })?;
    let items = match &value {
        Value::Array(items) => items.as_slice(),
        Value::Object(_) => std::slice::from_ref(&value),
        other => {
            return Err(SpecError::WrongType {
                at: OPTION.to_string(),
                expected: "a list of hypervisor entries",
                found: json_kind(other),
            });
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            entry(Entry::new(
                format!("{OPTION} entry #{}", i + 1),
                item,
                KEYS,
            )?)
        })
        .collect()
}

fn entry(e: Entry<'_>) -> Result<HypervisorSpec, SpecError> {
    let ssh_user = match (e.string("ssh_user")?, e.string("ssh_username")?) {
        (Some(_), Some(_)) => {
            return Err(SpecError::Conflict {
                at: e.at.clone(),
                a: "ssh_user",
                b: "ssh_username",
            });
        }
        (a, b) => a.or(b),
    };
    let host = e.string("host")?;
    if let Some(h) = &host {
        check_host_name(&e.at, h)?;
    }
    Ok(HypervisorSpec {
        host,
        ansible_host: e.string("ansible_host")?,
        ssh_hostname: e.string("ssh_hostname")?,
        ssh_user,
        ssh_port: e.count("ssh_port", 1, 65535)?.map(|p| p as u16),
    })
}

/// Inventory names become group members and file names: keep them to letters, digits, `-`,
/// `_` and `.`.
fn check_host_name(at: &str, name: &str) -> Result<(), SpecError> {
    let ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(SpecError::BadValue {
            at: at.to_string(),
            key: "host".into(),
            value: name.to_string(),
            expected: "a name of letters, digits, `-`, `_` and `.`".into(),
        })
    }
}

/// Parse `--hypervisor-hosts nyctea,tyto`.
pub fn parse_hypervisor_hosts(text: &str) -> Result<Vec<HypervisorSpec>, SpecError> {
    text.split(',')
        .enumerate()
        .map(|(i, name)| {
            let name = name.trim();
            if name.is_empty() {
                return Err(SpecError::EmptyHost { position: i + 1 });
            }
            Ok(HypervisorSpec {
                ansible_host: Some(name.to_string()),
                ..HypervisorSpec::default()
            })
        })
        .collect()
}
