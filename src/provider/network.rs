//! `Network`: libvirt network XML as serde types, and `NatNetwork`, the cluster network kinit
//! creates on a single hypervisor: NAT to the outside, the gateway on the host bridge, one
//! static DHCP entry (MAC → IP → name) and one DNS entry per node.
//!
//! Over 300 lines because libvirt's network XML needs many small serde types; `NatNetwork`
//! is the one place that fills them.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

use super::xml::{Definition, Document, Metadata};
use super::{MacAddr, ProviderError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Network {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub uuid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub metadata: Option<Metadata>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub forward: Option<Forward>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bridge: Option<Bridge>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub virtualport: Option<VirtualPort>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mtu: Option<Mtu>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub domain: Option<DnsDomain>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dns: Option<Dns>,
    #[serde(default)]
    pub ip: Vec<Ip>,
}

impl Document for Network {
    const ROOT: &'static str = "network";
}

impl Definition for Network {
    fn identity(&mut self) -> (&mut Option<String>, &mut Option<Metadata>) {
        (&mut self.uuid, &mut self.metadata)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forward {
    #[serde(rename = "@mode")]
    pub mode: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bridge {
    #[serde(rename = "@name", skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
    #[serde(rename = "@stp", skip_serializing_if = "Option::is_none", default)]
    pub stp: Option<String>,
    #[serde(rename = "@delay", skip_serializing_if = "Option::is_none", default)]
    pub delay: Option<String>,
}

/// `<virtualport type='openvswitch'>` of a network or a guest NIC; `parameters` carries the
/// OVS `interfaceid` (the OVN logical port name) of a NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VirtualPort {
    #[serde(rename = "@type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub parameters: Option<PortParameters>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortParameters {
    #[serde(
        rename = "@interfaceid",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub interfaceid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mtu {
    #[serde(rename = "@size")]
    pub size: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsDomain {
    #[serde(rename = "@name")]
    pub name: String,
    /// `yes`: names in this domain are answered locally, never forwarded upstream.
    #[serde(
        rename = "@localOnly",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub local_only: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Dns {
    #[serde(default)]
    pub host: Vec<DnsHost>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsHost {
    #[serde(rename = "@ip")]
    pub ip: String,
    #[serde(default)]
    pub hostname: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ip {
    #[serde(rename = "@address")]
    pub address: String,
    #[serde(rename = "@prefix")]
    pub prefix: u8,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dhcp: Option<Dhcp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Dhcp {
    #[serde(default)]
    pub range: Vec<DhcpRange>,
    #[serde(default)]
    pub host: Vec<DhcpHost>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DhcpRange {
    // The aliases let the same type be a module parameter (`start:`/`end:`).
    #[serde(rename = "@start", alias = "start")]
    pub start: Ipv4Addr,
    #[serde(rename = "@end", alias = "end")]
    pub end: Ipv4Addr,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DhcpHost {
    #[serde(rename = "@mac")]
    pub mac: String,
    #[serde(rename = "@name")]
    pub name: String,
    #[serde(rename = "@ip")]
    pub ip: Ipv4Addr,
}

/// One node on the cluster network (`virt_network`'s `nat.hosts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetHost {
    /// Short host name (`controller-01`); also published as `<name>.<domain>`.
    pub name: String,
    pub mac: MacAddr,
    pub ip: Ipv4Addr,
}

/// A NAT network for the cluster CIDR (`virt_network`'s `nat:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatNetwork {
    /// The cluster network, e.g. `10.0.0.0/24`.
    pub cidr: Ipv4Net,
    /// The hypervisor's address on it; default the second-to-last address (`.254` in a
    /// /24), as KubeInit.
    #[serde(default)]
    pub gateway: Option<Ipv4Addr>,
    /// Name of the Linux bridge (at most 15 characters); default: libvirt picks `virbrN`.
    #[serde(default)]
    pub bridge: Option<String>,
    /// DNS domain of the cluster (`k8scluster.kubeinit.local`), answered locally.
    #[serde(default)]
    pub domain: Option<String>,
    /// Dynamic DHCP pool for anything that is not a listed host; default none.
    #[serde(default)]
    pub dhcp_range: Option<DhcpRange>,
    /// MTU of the bridge (KubeInit used 1442 under its geneve overlay).
    #[serde(default)]
    pub mtu: Option<u32>,
    /// The nodes: each gets a static DHCP lease and DNS names.
    #[serde(default)]
    pub hosts: Vec<NetHost>,
}

impl NatNetwork {
    /// The network definition called `name`.
    pub fn network(&self, name: &str) -> Result<Network, ProviderError> {
        let cidr = self.cidr.trunc();
        let gateway = match self.gateway {
            Some(g) => g,
            None => default_gateway(cidr)?,
        };
        let inside = |field: &'static str, ip: Ipv4Addr| {
            if cidr.contains(&ip) && ip != cidr.network() && ip != cidr.broadcast() {
                Ok(())
            } else {
                Err(ProviderError::Invalid {
                    field,
                    value: ip.to_string(),
                    expected: "a host address inside `cidr`",
                })
            }
        };
        inside("gateway", gateway)?;
        if let Some(r) = &self.dhcp_range {
            inside("dhcp_range.start", r.start)?;
            inside("dhcp_range.end", r.end)?;
        }
        if let Some(b) = &self.bridge
            && (b.is_empty() || b.len() > 15 || b.contains(['/', ' ']))
        {
            return Err(ProviderError::Invalid {
                field: "bridge",
                value: b.clone(),
                expected: "an interface name of 1 to 15 characters without `/` or spaces",
            });
        }
        if let Some(d) = &self.domain {
            check_dns_name("domain", d)?;
        }
        let (mut macs, mut ips, mut names) = (HashSet::new(), HashSet::new(), HashSet::new());
        for h in &self.hosts {
            check_dns_name("hosts.name", &h.name)?;
            inside("hosts.ip", h.ip)?;
            let dup = |field: &'static str, value: String| ProviderError::Invalid {
                field,
                value,
                expected: "each host to have its own name, MAC and IP",
            };
            if h.ip == gateway || !ips.insert(h.ip) {
                return Err(dup("hosts.ip", h.ip.to_string()));
            }
            if !macs.insert(h.mac) {
                return Err(dup("hosts.mac", h.mac.to_string()));
            }
            if !names.insert(h.name.as_str()) {
                return Err(dup("hosts.name", h.name.clone()));
            }
        }
        let dns_hosts = self
            .hosts
            .iter()
            .map(|h| DnsHost {
                ip: h.ip.to_string(),
                hostname: match &self.domain {
                    Some(d) => vec![format!("{}.{d}", h.name), h.name.clone()],
                    None => vec![h.name.clone()],
                },
            })
            .collect::<Vec<_>>();
        Ok(Network {
            name: name.to_string(),
            uuid: None,
            metadata: None,
            forward: Some(Forward { mode: "nat".into() }),
            bridge: Some(Bridge {
                name: self.bridge.clone(),
                stp: Some("on".into()),
                delay: Some("0".into()),
            }),
            virtualport: None,
            mtu: self.mtu.map(|size| Mtu { size }),
            domain: self.domain.as_ref().map(|d| DnsDomain {
                name: d.clone(),
                local_only: Some("yes".into()),
            }),
            dns: (!dns_hosts.is_empty()).then_some(Dns { host: dns_hosts }),
            ip: vec![Ip {
                address: gateway.to_string(),
                prefix: cidr.prefix_len(),
                dhcp: Some(Dhcp {
                    range: self.dhcp_range.iter().cloned().collect(),
                    host: self
                        .hosts
                        .iter()
                        .map(|h| DhcpHost {
                            mac: h.mac.to_string(),
                            name: h.name.clone(),
                            ip: h.ip,
                        })
                        .collect(),
                }),
            }],
        })
    }
}

fn default_gateway(cidr: Ipv4Net) -> Result<Ipv4Addr, ProviderError> {
    if cidr.prefix_len() >= 30 {
        return Err(ProviderError::Invalid {
            field: "cidr",
            value: cidr.to_string(),
            expected: "a prefix shorter than /30 (room for a gateway and nodes)",
        });
    }
    Ok(Ipv4Addr::from(u32::from(cidr.broadcast()) - 1))
}

/// A DNS name: dot-separated labels of letters, digits and `-`, not starting or ending in `-`.
pub fn check_dns_name(field: &'static str, name: &str) -> Result<(), ProviderError> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if ok {
        Ok(())
    } else {
        Err(ProviderError::Invalid {
            field,
            value: name.to_string(),
            expected: "a DNS name (letters, digits, `-` and dots)",
        })
    }
}
