//! `--network-spec` (network name, CIDR, upstream DNS) and `--cluster-spec` (cluster name and
//! DNS domain), with KubeInit's defaults: `kimgtnet0`, `10.0.0.0/24`, `1.1.1.1`,
//! `<distro>cluster`, `kubeinit.local`.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::error::SpecError;
use super::input::parse_structured;
use super::value::Entry;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSpec {
    /// The libvirt network's name.
    pub name: String,
    pub cidr: Ipv4Net,
    /// Upstream resolvers the cluster DNS forwards to.
    pub dns_public: Vec<Ipv4Addr>,
}

impl Default for NetworkSpec {
    fn default() -> Self {
        Self {
            name: "kimgtnet0".into(),
            cidr: "10.0.0.0/24".parse().expect("valid default network"),
            dns_public: vec![Ipv4Addr::new(1, 1, 1, 1)],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterIdentity {
    pub name: String,
    pub domain: String,
}

pub fn parse_network_spec(text: &str) -> Result<NetworkSpec, SpecError> {
    const AT: &str = "`--network-spec`";
    let value = parse_structured(text).map_err(|error| SpecError::Syntax {
        at: AT.to_string(),
        error,
    })?;
    let e = Entry::new(
        AT.into(),
        &value,
        &["network_name", "network", "dns_public"],
    )?;
    let mut spec = NetworkSpec::default();
    if let Some(name) = e.string("network_name")? {
        check_label(&e.at, "network_name", &name)?;
        spec.name = name;
    }
    if let Some(text) = e.string("network")? {
        let bad = |expected: &str| SpecError::BadValue {
            at: e.at.clone(),
            key: "network".into(),
            value: text.clone(),
            expected: expected.into(),
        };
        let cidr: Ipv4Net = text
            .parse()
            .map_err(|_| bad("an IPv4 network such as `10.0.0.0/24`"))?;
        if cidr.prefix_len() >= 30 {
            return Err(bad("a prefix shorter than /30"));
        }
        if cidr.trunc() != cidr {
            return Err(bad(&format!("the network address `{}`", cidr.trunc())));
        }
        spec.cidr = cidr;
    }
    if let Some(list) = e.list("dns_public")? {
        spec.dns_public = list
            .iter()
            .map(|s| {
                s.parse().map_err(|_| SpecError::BadValue {
                    at: e.at.clone(),
                    key: "dns_public".into(),
                    value: s.clone(),
                    expected: "IPv4 addresses such as `1.1.1.1`".into(),
                })
            })
            .collect::<Result<_, _>>()?;
    }
    Ok(spec)
}

/// Parse `--cluster-spec`; unset parts fall back to `default_name` and `kubeinit.local`.
pub fn parse_cluster_spec(
    text: Option<&str>,
    default_name: &str,
) -> Result<ClusterIdentity, SpecError> {
    const AT: &str = "`--cluster-spec`";
    let mut id = ClusterIdentity {
        name: default_name.to_string(),
        domain: "kubeinit.local".into(),
    };
    let Some(text) = text else { return Ok(id) };
    let value = parse_structured(text).map_err(|error| SpecError::Syntax {
        at: AT.to_string(),
        error,
    })?;
    let e = Entry::new(AT.into(), &value, &["cluster_name", "cluster_domain"])?;
    if let Some(name) = e.string("cluster_name")? {
        check_label(&e.at, "cluster_name", &name)?;
        id.name = name;
    }
    if let Some(domain) = e.string("cluster_domain")? {
        for label in domain.split('.') {
            if !is_label(label) {
                return Err(SpecError::BadValue {
                    at: e.at.clone(),
                    key: "cluster_domain".into(),
                    value: domain.clone(),
                    expected: "a DNS domain such as `kubeinit.local`".into(),
                });
            }
        }
        id.domain = domain;
    }
    Ok(id)
}

/// A DNS label: lowercase letters, digits and inner `-`, 1 to 63 characters.
fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn check_label(at: &str, key: &str, value: &str) -> Result<(), SpecError> {
    if is_label(value) {
        Ok(())
    } else {
        Err(SpecError::BadValue {
            at: at.to_string(),
            key: key.to_string(),
            value: value.to_string(),
            expected: "lowercase letters, digits and `-` (a DNS label)".into(),
        })
    }
}
