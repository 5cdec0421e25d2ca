//! Addresses in the cluster network, as KubeInit allocates them: cluster nodes upward from the
//! first address, service nodes downward from the third-to-last, the gateway second-to-last,
//! DHCP for whatever is left. MACs are derived from the cluster and node names so a re-run
//! gives every guest the same MAC (KubeInit's were random on every run).

use std::collections::HashSet;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use sha2::{Digest, Sha256};

/// The layout of one network for a given number of cluster and service nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub cluster: Vec<Ipv4Addr>,
    pub service: Vec<Ipv4Addr>,
    pub gateway: Ipv4Addr,
    pub dhcp_start: Ipv4Addr,
    pub dhcp_end: Ipv4Addr,
}

/// `None` when the nodes plus at least one DHCP address do not fit; `Err` carries the number
/// of addresses the network has for nodes and DHCP.
pub fn allocate(net: Ipv4Net, cluster: u32, service: u32) -> Result<Allocation, u64> {
    let base = u64::from(u32::from(net.network()));
    let size = 1u64 << (32 - u32::from(net.prefix_len()));
    // .1 ..= size-3: everything but the network address, gateway and broadcast.
    let pool = size.saturating_sub(3);
    if u64::from(cluster) + u64::from(service) + 1 > pool {
        return Err(pool);
    }
    let addr = |offset: u64| Ipv4Addr::from((base + offset) as u32);
    Ok(Allocation {
        cluster: (1..=u64::from(cluster)).map(addr).collect(),
        service: (0..u64::from(service))
            .map(|i| addr(size - 3 - i))
            .collect(),
        gateway: addr(size - 2),
        dhcp_start: addr(1 + u64::from(cluster)),
        dhcp_end: addr(size - 3 - u64::from(service)),
    })
}

/// `52:54:00:xx:yy:zz` (QEMU's prefix) from SHA-256 of `<cluster>/<node>`; a clash within the
/// cluster is resolved by rehashing with a counter, so the result stays deterministic.
pub fn derive_mac(cluster: &str, node: &str, taken: &mut HashSet<String>) -> String {
    for attempt in 0u32.. {
        let mut h = Sha256::new();
        h.update(cluster.as_bytes());
        h.update(b"/");
        h.update(node.as_bytes());
        if attempt > 0 {
            h.update(attempt.to_be_bytes());
        }
        let d = h.finalize();
        let mac = format!("52:54:00:{:02x}:{:02x}:{:02x}", d[0], d[1], d[2]);
        if taken.insert(mac.clone()) {
            return mac;
        }
    }
    unreachable!("a free MAC exists among 2^24 candidates")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeinit_layout_on_a_24() {
        let a = allocate("10.0.0.0/24".parse().unwrap(), 2, 1).unwrap();
        assert_eq!(
            a.cluster,
            [
                "10.0.0.1".parse::<Ipv4Addr>().unwrap(),
                "10.0.0.2".parse().unwrap()
            ]
        );
        assert_eq!(a.service, ["10.0.0.253".parse::<Ipv4Addr>().unwrap()]);
        assert_eq!(a.gateway, "10.0.0.254".parse::<Ipv4Addr>().unwrap());
        assert_eq!(a.dhcp_start, "10.0.0.3".parse::<Ipv4Addr>().unwrap());
        assert_eq!(a.dhcp_end, "10.0.0.252".parse::<Ipv4Addr>().unwrap());
    }

    #[test]
    fn a_29_fits_four_nodes_and_one_dhcp_address() {
        let net = "192.168.7.0/29".parse().unwrap();
        let a = allocate(net, 3, 1).unwrap();
        assert_eq!(a.dhcp_start, a.dhcp_end);
        assert_eq!(allocate(net, 4, 1), Err(5));
    }

    #[test]
    fn macs_are_stable_and_distinct() {
        let mut taken = HashSet::new();
        let a = derive_mac("k8scluster", "controller-01", &mut taken);
        let b = derive_mac("k8scluster", "compute-01", &mut taken);
        assert_ne!(a, b);
        assert_eq!(
            a,
            derive_mac("k8scluster", "controller-01", &mut HashSet::new())
        );
        assert!(a.starts_with("52:54:00:"));
        // Same node name in another cluster: another MAC.
        assert_ne!(a, derive_mac("other", "controller-01", &mut HashSet::new()));
        // A clash is resolved deterministically.
        let again = derive_mac("k8scluster", "controller-01", &mut taken);
        assert_ne!(again, a);
    }
}
