//! `OvsNetwork`: the cluster network on a hypervisor that is one of several, as KubeInit
//! builds it: a libvirt network in bridge mode on the Open vSwitch integration bridge
//! (`br-int`) that OVN manages. The addresses, gateway and NAT live in OVN (a logical switch
//! and router spanning the hypervisors over geneve), so the libvirt side carries no `<ip>`,
//! DHCP or DNS; each guest NIC names its OVN logical port through the OVS `interfaceid`
//! (see `interface_id`). libvirt refuses an `<mtu>` on a bridge-mode network, so the geneve
//! MTU (1442) goes on each guest NIC instead (and into the guest's network-config).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ProviderError;
use super::network::{Bridge, Forward, Network, VirtualPort};

/// MTU under the geneve overlay (1500 less the encapsulation), as KubeInit.
pub const GENEVE_MTU: u32 = 1442;

fn default_bridge() -> String {
    "br-int".into()
}

/// A bridge-mode network on an OVS bridge (`virt_network`'s `ovs:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OvsNetwork {
    /// The OVS bridge guests are plugged into; default `br-int`, the bridge ovn-controller
    /// manages.
    #[serde(default = "default_bridge")]
    pub bridge: String,
}

impl Default for OvsNetwork {
    fn default() -> Self {
        Self {
            bridge: default_bridge(),
        }
    }
}

impl OvsNetwork {
    /// The network definition called `name`.
    pub fn network(&self, name: &str) -> Result<Network, ProviderError> {
        let b = &self.bridge;
        if b.is_empty() || b.len() > 15 || b.contains(['/', ' ']) {
            return Err(ProviderError::Invalid {
                field: "bridge",
                value: b.clone(),
                expected: "an interface name of 1 to 15 characters without `/` or spaces",
            });
        }
        Ok(Network {
            name: name.to_string(),
            uuid: None,
            metadata: None,
            forward: Some(Forward {
                mode: "bridge".into(),
            }),
            bridge: Some(Bridge {
                name: Some(b.clone()),
                stp: None,
                delay: None,
            }),
            virtualport: Some(VirtualPort {
                kind: "openvswitch".into(),
                parameters: None,
            }),
            mtu: None,
            domain: None,
            dns: None,
            ip: Vec::new(),
        })
    }
}

/// The OVS `interfaceid` of a node's NIC, which is also its OVN logical switch port name:
/// a UUID made from the SHA-256 of cluster and node name, so it is the same on every run and
/// differs between nodes and clusters.
pub fn interface_id(cluster: &str, node: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"kinit-ovn-port\0");
    h.update(cluster.as_bytes());
    h.update(b"\0");
    h.update(node.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    // RFC 9562 version 8 (custom), variant 10.
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x: String = b.iter().map(|v| format!("{v:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &x[..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..]
    )
}

/// Checks that `id` is a UUID in its usual text form (what libvirt accepts as `interfaceid`).
pub fn check_interface_id(id: &str) -> Result<(), ProviderError> {
    let groups: Vec<&str> = id.split('-').collect();
    let ok = groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()));
    if ok {
        Ok(())
    } else {
        Err(ProviderError::Invalid {
            field: "interface_id",
            value: id.to_string(),
            expected: "a UUID like `0f1e2d3c-4b5a-8978-8796-a5b4c3d2e1f0`",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_ids_are_stable_distinct_uuids() {
        let a = interface_id("k8scluster", "controller-01");
        assert_eq!(a, interface_id("k8scluster", "controller-01"));
        assert_ne!(a, interface_id("k8scluster", "controller-02"));
        assert_ne!(a, interface_id("other", "controller-01"));
        check_interface_id(&a).unwrap();
        assert_eq!(&a[14..15], "8");
    }

    #[test]
    fn bad_ovs_settings_name_the_field() {
        let e = OvsNetwork {
            bridge: "a-very-long-bridge-name".into(),
        }
        .network("n")
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("bridge") && e.contains("a-very-long-bridge-name"),
            "{e}"
        );
        let e = check_interface_id("nope").unwrap_err().to_string();
        assert!(e.contains("interface_id") && e.contains("nope"), "{e}");
    }
}
