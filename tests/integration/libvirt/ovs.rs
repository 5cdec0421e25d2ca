//! The OVS-bridge cluster network (several hypervisors joined by OVN) on libvirt's test
//! driver: the network definition and a guest whose NIC carries the OVS `interfaceid` are
//! accepted and read back, and `virt_network` with `ovs:` is idempotent. The test driver
//! checks the documents only; no Open vSwitch bridge exists behind them here.

use kinit::provider::Hypervisor;
use kinit::provider::domain::Domain;
use kinit::provider::network::Network;
use kinit::provider::ovs_network::{OvsNetwork, interface_id};
use kinit::provider::xml::{Definition, Document};
use kinit::provider::{VirtType, linux_guest::LinuxGuest};
use serde_json::json;

use super::{TEST_URI, ok, run_module};

async fn net_xml(hv: &Hypervisor, name: &str) -> String {
    let n = name.to_string();
    hv.call("dumpxml".into(), move |c| {
        c.lookup_network_by_name(&n)?.xml_desc(0)
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn libvirt_accepts_the_ovs_network_and_a_guest_on_it() {
    let hv = Hypervisor::open(TEST_URI).await.unwrap();
    let net = OvsNetwork::default()
        .network("o-net")
        .unwrap()
        .fingerprinted()
        .unwrap();
    hv.define_network("o-net", net.to_xml().unwrap())
        .await
        .unwrap();
    hv.start_network("o-net").await.unwrap();
    let back = Network::from_xml(&net_xml(&hv, "o-net").await).unwrap();
    assert_eq!(back.forward.unwrap().mode, "bridge");
    assert_eq!(back.bridge.unwrap().name.as_deref(), Some("br-int"));
    assert_eq!(back.virtualport.unwrap().kind, "openvswitch");
    assert!(back.ip.is_empty() && back.dns.is_none());

    let id = interface_id("ocluster", "controller-01");
    let guest: LinuxGuest = serde_json::from_value(json!({
        "vcpus": 2, "ram_kib": 2097152,
        "disk": "/var/lib/libvirt/images/o-guest.qcow2",
        "seed_iso": "/var/lib/libvirt/images/o-guest-seed.iso",
        "network": "o-net", "mac": "52:54:00:30:00:01", "interface_id": id
    }))
    .unwrap();
    let d = guest.domain("o-guest", VirtType::Qemu).unwrap();
    hv.define_guest("o-guest", d.to_xml().unwrap())
        .await
        .unwrap();
    let text = hv
        .call("dumpxml".into(), |c| {
            c.lookup_domain_by_name("o-guest")?.xml_desc(0)
        })
        .await
        .unwrap();
    let back = Domain::from_xml(&text).unwrap();
    let nic = &back.devices.interface[0];
    assert_eq!(nic.source.network.as_deref(), Some("o-net"));
    let port = nic.virtualport.as_ref().expect("virtualport read back");
    assert_eq!(port.kind, "openvswitch");
    assert_eq!(
        port.parameters.as_ref().unwrap().interfaceid.as_deref(),
        Some(id.as_str())
    );
    assert_eq!(nic.mtu.as_ref().unwrap().size, 1442);
    let info = hv.guest("o-guest").await.unwrap().unwrap();
    hv.undefine_guest("o-guest", &info).await.unwrap();
    hv.stop_network("o-net").await.unwrap();
    hv.undefine_network("o-net").await.unwrap();
}

#[tokio::test]
async fn virt_network_ovs_is_idempotent_and_exclusive_with_nat() {
    let args = json!({"name": "mo-net", "uri": TEST_URI, "autostart": true, "ovs": {}});
    let r = ok("virt_network", args.clone()).await;
    assert!(r.changed);
    let r = ok("virt_network", args.clone()).await;
    assert!(!r.changed, "{:?}", r.data);
    let r = ok(
        "virt_network",
        json!({"name": "mo-net", "uri": TEST_URI, "ovs": {"bridge": "br-kinit"}}),
    )
    .await;
    assert!(r.changed);
    let hv = Hypervisor::open(TEST_URI).await.unwrap();
    assert!(
        net_xml(&hv, "mo-net")
            .await
            .contains("<bridge name='br-kinit'/>")
    );
    let both = json!({"name": "mo-net", "uri": TEST_URI, "ovs": {},
        "nat": {"cidr": "10.9.9.0/24"}});
    let e = run_module("virt_network", both, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("`nat` or `ovs`"), "{e}");
    let absent = json!({"name": "mo-net", "uri": TEST_URI, "state": "absent"});
    assert!(ok("virt_network", absent).await.changed);
}
