//! libvirt's own validation of every generated definition: define on the test driver, read
//! back with dumpxml, assert the fields that matter.

use kinit::provider::domain::Domain;
use kinit::provider::network::{NatNetwork, Network};
use kinit::provider::storage::{Pool, Volume};
use kinit::provider::xml::{Definition, Document};
use kinit::provider::{Hypervisor, VirtType};
use serde_json::json;

use super::TEST_URI;

fn linux_settings(disk: &str) -> kinit::provider::linux_guest::LinuxGuest {
    serde_json::from_value(json!({
        "vcpus": 2, "max_vcpus": 4, "ram_kib": 2097152,
        "disk": disk, "seed_iso": "/var/lib/libvirt/images/v-linux-seed.iso",
        "network": "v-net", "mac": "52:54:00:10:00:01"
    }))
    .unwrap()
}

fn windows_settings() -> kinit::provider::windows_guest::WindowsGuest {
    serde_json::from_value(json!({
        "vcpus": 4, "ram_kib": 16777216,
        "disk": "/var/lib/libvirt/images/v-win.qcow2",
        "install_iso": "/var/lib/libvirt/images/win.iso",
        "virtio_iso": "/var/lib/libvirt/images/virtio-win.iso",
        "config_iso": "/var/lib/libvirt/images/v-win-config.iso",
        "serial_log": "/var/lib/libvirt/images/v-win-serial.log",
        "network": "v-net", "mac": "52:54:00:10:00:02"
    }))
    .unwrap()
}

async fn dumpxml(hv: &Hypervisor, name: &str) -> String {
    let n = name.to_string();
    hv.call(format!("dumpxml `{name}`"), move |c| {
        c.lookup_domain_by_name(&n)?.xml_desc(0)
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn libvirt_accepts_linux_and_windows_domains() {
    let hv = Hypervisor::open(TEST_URI).await.unwrap();
    for vt in [VirtType::Kvm, VirtType::Qemu] {
        let name = format!("v-linux-{vt:?}");
        let d = linux_settings("/var/lib/libvirt/images/v-linux.qcow2")
            .domain(&name, vt)
            .unwrap()
            .fingerprinted()
            .unwrap();
        hv.define_guest(&name, d.to_xml().unwrap()).await.unwrap();
        let back = Domain::from_xml(&dumpxml(&hv, &name).await).unwrap();
        assert_eq!(back.virt_type, vt);
        assert_eq!(back.memory.value, 2097152);
        assert_eq!((back.vcpu.current, back.vcpu.max), (Some(2), 4));
        assert_eq!(back.os.os_type.machine, "q35");
        assert!(back.features.acpi.is_some());
        let disks: Vec<(&str, &str)> = back
            .devices
            .disk
            .iter()
            .map(|d| (d.device.as_str(), d.source.as_ref().unwrap().file.as_str()))
            .collect();
        assert_eq!(
            disks,
            [
                ("disk", "/var/lib/libvirt/images/v-linux.qcow2"),
                ("cdrom", "/var/lib/libvirt/images/v-linux-seed.iso")
            ]
        );
        let nic = &back.devices.interface[0];
        assert_eq!(nic.mac.as_ref().unwrap().address, "52:54:00:10:00:01");
        assert_eq!(nic.source.network.as_deref(), Some("v-net"));
        assert_eq!(nic.model.as_ref().unwrap().kind, "virtio");
        assert_eq!(back.devices.serial.len(), 1);
        // The fingerprint survives libvirt's rewrite of the document.
        let info = hv.guest(&name).await.unwrap().unwrap();
        assert_eq!(info.fingerprint, Some(d.fingerprint().unwrap()));
        hv.undefine_guest(&name, &info).await.unwrap();
    }

    // The default Windows guest boots SeaBIOS: no firmware selection, NVRAM, SMM or TPM.
    let name = "v-windows-bios";
    let d = windows_settings().domain(name, VirtType::Qemu).unwrap();
    hv.define_guest(name, d.to_xml().unwrap()).await.unwrap();
    let back = Domain::from_xml(&dumpxml(&hv, name).await).unwrap();
    assert_eq!(back.os.firmware, None);
    assert_eq!(back.os.loader, None);
    assert_eq!(back.features.smm, None);
    assert!(back.devices.tpm.is_empty());
    let info = hv.guest(name).await.unwrap().unwrap();
    assert!(!info.has_tpm && !info.has_nvram);
    hv.undefine_guest(name, &info).await.unwrap();

    let name = "v-windows";
    let uefi = kinit::provider::windows_guest::WindowsGuest {
        firmware: kinit::provider::windows_guest::Firmware::Uefi,
        ..windows_settings()
    };
    let d = uefi.domain(name, VirtType::Qemu).unwrap();
    hv.define_guest(name, d.to_xml().unwrap()).await.unwrap();
    let back = Domain::from_xml(&dumpxml(&hv, name).await).unwrap();
    assert_eq!(back.os.firmware.as_deref(), Some("efi"));
    assert_eq!(back.os.os_type.machine, "q35");
    let fw: Vec<(&str, &str)> = back
        .os
        .firmware_features
        .as_ref()
        .unwrap()
        .feature
        .iter()
        .map(|f| (f.name.as_str(), f.enabled.as_str()))
        .collect();
    assert!(fw.contains(&("secure-boot", "yes")), "{fw:?}");
    assert!(back.features.smm.is_some());
    assert!(back.features.hyperv.as_ref().unwrap().relaxed.is_some());
    assert_eq!(back.devices.tpm[0].model, "tpm-crb");
    assert_eq!(back.devices.tpm[0].backend.version, "2.0");
    assert_eq!(back.devices.disk.len(), 4);
    assert!(back.devices.disk.iter().all(|d| d.target.bus == "sata"));
    assert_eq!(
        back.devices.interface[0].model.as_ref().unwrap().kind,
        "e1000e"
    );
    // COM1 (where the answer file writes the install stages) is logged to a file.
    let serial = &back.devices.serial[0];
    assert_eq!(
        serial
            .log
            .as_ref()
            .map(|l| (l.file.as_str(), l.append.as_str())),
        Some(("/var/lib/libvirt/images/v-win-serial.log", "on"))
    );
    let info = hv.guest(name).await.unwrap().unwrap();
    assert!(info.has_tpm && info.has_nvram);
    hv.start_guest(name).await.unwrap();
    hv.destroy_guest(name).await.unwrap();
    hv.undefine_guest(name, &info).await.unwrap();
    assert!(hv.guest(name).await.unwrap().is_none());
}

#[tokio::test]
async fn libvirt_accepts_the_cluster_network() {
    let hv = Hypervisor::open(TEST_URI).await.unwrap();
    let nat: NatNetwork = serde_json::from_value(json!({
        "cidr": "10.7.0.0/24", "bridge": "v-br0", "domain": "vcluster.kubeinit.local",
        "dhcp_range": {"start": "10.7.0.3", "end": "10.7.0.252"}, "mtu": 1442,
        "hosts": [
            {"name": "controller-01", "mac": "52:54:00:10:00:01", "ip": "10.7.0.1"},
            {"name": "compute-01", "mac": "52:54:00:10:00:02", "ip": "10.7.0.2"}
        ]
    }))
    .unwrap();
    let net = nat.network("v-net").unwrap().fingerprinted().unwrap();
    hv.define_network("v-net", net.to_xml().unwrap())
        .await
        .unwrap();
    hv.start_network("v-net").await.unwrap();
    let text = hv
        .call("dumpxml".into(), |c| {
            c.lookup_network_by_name("v-net")?.xml_desc(0)
        })
        .await
        .unwrap();
    let back = Network::from_xml(&text).unwrap();
    assert_eq!(back.forward.unwrap().mode, "nat");
    let ip = &back.ip[0];
    assert_eq!((ip.address.as_str(), ip.prefix), ("10.7.0.254", 24));
    let hosts: Vec<(String, String, String)> = ip
        .dhcp
        .as_ref()
        .unwrap()
        .host
        .iter()
        .map(|h| (h.mac.clone(), h.ip.to_string(), h.name.clone()))
        .collect();
    assert_eq!(
        hosts,
        [
            (
                "52:54:00:10:00:01".into(),
                "10.7.0.1".into(),
                "controller-01".into()
            ),
            (
                "52:54:00:10:00:02".into(),
                "10.7.0.2".into(),
                "compute-01".into()
            )
        ]
    );
    let dns = back.dns.unwrap();
    assert_eq!(
        dns.host[0].hostname,
        ["controller-01.vcluster.kubeinit.local", "controller-01"]
    );
    assert_eq!(back.mtu.unwrap().size, 1442);
    let info = hv.network("v-net").await.unwrap().unwrap();
    assert!(info.active);
    assert_eq!(info.fingerprint, Some(net.fingerprint().unwrap()));
    hv.stop_network("v-net").await.unwrap();
    hv.undefine_network("v-net").await.unwrap();
    assert!(hv.network("v-net").await.unwrap().is_none());
}

#[tokio::test]
async fn libvirt_accepts_pools_and_overlay_volumes() {
    let hv = Hypervisor::open(TEST_URI).await.unwrap();
    let pool = Pool::dir("v-pool", "/var/lib/libvirt/images/v-pool");
    hv.define_pool("v-pool", pool.to_xml().unwrap())
        .await
        .unwrap();
    hv.start_pool("v-pool").await.unwrap();
    let back = hv.pool("v-pool").await.unwrap().unwrap();
    assert_eq!(
        back.definition.target.path,
        "/var/lib/libvirt/images/v-pool"
    );
    assert!(back.active);
    let vol: Volume = Volume::from_xml(
        "<volume><name>v.qcow2</name><capacity unit='bytes'>21474836480</capacity>\
         <target><format type='qcow2'/></target></volume>",
    )
    .unwrap();
    hv.create_volume("v-pool", "v.qcow2", vol.to_xml().unwrap())
        .await
        .unwrap();
    let v = hv.volume("v-pool", "v.qcow2").await.unwrap().unwrap();
    assert_eq!(v.definition.capacity.value, 21474836480);
    assert_eq!(v.path, "/var/lib/libvirt/images/v-pool/v.qcow2");
    hv.delete_volume("v-pool", "v.qcow2").await.unwrap();
    assert!(hv.volume("v-pool", "v.qcow2").await.unwrap().is_none());
    hv.stop_pool("v-pool").await.unwrap();
    hv.undefine_pool("v-pool").await.unwrap();
}
