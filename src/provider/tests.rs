//! Unit tests of the generated documents: snapshots of the XML and YAML kinit writes, and
//! libvirt's own test driver accepting every generated definition.

use std::net::Ipv4Addr;

use super::cloud_init::{CloudInit, CloudUser};
use super::domain::Domain;
use super::linux_guest::{LinuxGuest, Machine};
use super::network::{DhcpRange, NatNetwork, NetHost, Network};
use super::windows_config::WindowsConfig;
use super::windows_guest::{Firmware, NicModel, WindowsGuest};
use super::xml::{Definition, Document};
use super::{MacAddr, VirtType};
use crate::secret::Secret;

pub(crate) fn mac(s: &str) -> MacAddr {
    MacAddr::parse(s).unwrap()
}

pub(crate) fn linux() -> LinuxGuest {
    LinuxGuest {
        machine: Machine::Q35,
        vcpus: 8,
        max_vcpus: Some(16),
        ram_kib: 25165824,
        disk: "/var/lib/libvirt/images/k8scluster-controller-01.qcow2".into(),
        seed_iso: "/var/lib/libvirt/images/k8scluster-controller-01-seed.iso".into(),
        network: "kimgtnet0".into(),
        mac: mac("52:54:00:4a:1b:01"),
        interface_id: None,
    }
}

pub(crate) fn windows() -> WindowsGuest {
    WindowsGuest {
        vcpus: 8,
        max_vcpus: Some(16),
        ram_kib: 16777216,
        disk: "/var/lib/libvirt/images/k8scluster-compute-01.qcow2".into(),
        install_iso: "/var/lib/libvirt/images/SERVER_EVAL_x64FRE_en-us.iso".into(),
        virtio_iso: "/var/lib/libvirt/images/virtio-win-0.1.229.iso".into(),
        config_iso: "/var/lib/libvirt/images/k8scluster-compute-01-config.iso".into(),
        serial_log: Some("/var/lib/libvirt/images/k8scluster-compute-01-serial.log".into()),
        network: "kimgtnet0".into(),
        mac: mac("52:54:00:4a:1b:02"),
        interface_id: None,
        nic_model: NicModel::E1000e,
        firmware: Firmware::Bios,
        secure_boot: None,
        boot_key_seconds: None,
    }
}

pub(crate) fn nat() -> NatNetwork {
    NatNetwork {
        cidr: "10.0.0.0/24".parse().unwrap(),
        gateway: None,
        bridge: Some("kimgtbr0".into()),
        domain: Some("k8scluster.kubeinit.local".into()),
        dhcp_range: Some(DhcpRange {
            start: Ipv4Addr::new(10, 0, 0, 3),
            end: Ipv4Addr::new(10, 0, 0, 252),
        }),
        mtu: None,
        hosts: vec![
            NetHost {
                name: "controller-01".into(),
                mac: mac("52:54:00:4a:1b:01"),
                ip: Ipv4Addr::new(10, 0, 0, 1),
            },
            NetHost {
                name: "compute-01".into(),
                mac: mac("52:54:00:4a:1b:02"),
                ip: Ipv4Addr::new(10, 0, 0, 2),
            },
        ],
    }
}

pub(crate) fn seed() -> CloudInit {
    CloudInit {
        hostname: "controller-01".into(),
        fqdn: "controller-01.k8scluster.kubeinit.local".into(),
        mac: mac("52:54:00:4a:1b:01"),
        address: "10.0.0.1/24".parse().unwrap(),
        gateway: Ipv4Addr::new(10, 0, 0, 254),
        nameservers: vec![Ipv4Addr::new(10, 0, 0, 253), Ipv4Addr::new(1, 1, 1, 1)],
        search: vec!["k8scluster.kubeinit.local".into()],
        mtu: None,
        root_authorized_keys: vec![
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKinitTestKey root@kinit".into(),
        ],
        cloud_user: Some(CloudUser {
            name: "toor".into(),
            authorized_keys: vec![
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKinitTestKey root@kinit".into(),
            ],
        }),
    }
}

pub(crate) fn windows_config() -> WindowsConfig {
    WindowsConfig {
        computer_name: "compute-01".into(),
        fqdn: Some("compute-01.k8scluster.kubeinit.local".into()),
        admin_password: Secret::new("S3cret-Pa55!<&>"),
        mac: mac("52:54:00:4a:1b:02"),
        address: "10.0.0.2/24".parse().unwrap(),
        gateway: Ipv4Addr::new(10, 0, 0, 254),
        nameservers: vec![Ipv4Addr::new(10, 0, 0, 253), Ipv4Addr::new(1, 1, 1, 1)],
        dns_domain: Some("k8scluster.kubeinit.local".into()),
        image_name: "Windows Server 2022 SERVERDATACENTER".into(),
        virtio_drive: "E:".into(),
        time_zone: "UTC".into(),
        containers: true,
        firmware: Firmware::Bios,
        winrm_ca_dir: None,
        winrm_pfx: None,
        mtu: None,
    }
}

#[test]
fn linux_domain_xml() {
    let d = linux()
        .domain("k8scluster-controller-01", VirtType::Qemu)
        .unwrap();
    insta::assert_snapshot!(d.fingerprinted().unwrap().to_xml().unwrap());
}

#[test]
fn windows_domain_xml() {
    let d = windows()
        .domain("k8scluster-compute-01", VirtType::Kvm)
        .unwrap();
    insta::assert_snapshot!(d.fingerprinted().unwrap().to_xml().unwrap());
}

#[test]
fn windows_uefi_domain_xml() {
    let g = WindowsGuest {
        firmware: Firmware::Uefi,
        ..windows()
    };
    let d = g.domain("k8scluster-compute-01", VirtType::Kvm).unwrap();
    insta::assert_snapshot!(d.fingerprinted().unwrap().to_xml().unwrap());
}

/// Issue 18: a UEFI guest waited at the CD loader's "Press any key" and Setup never started.
/// By default the guest boots SeaBIOS (no firmware selection, loader, SMM or TPM), disk
/// first so the empty disk falls through to the install CD.
#[test]
fn windows_guest_boots_bios_by_default_so_setup_starts_unprompted() {
    let g: WindowsGuest = serde_json::from_value(serde_json::json!({
        "vcpus": 2, "ram_kib": 16777216, "disk": "/i/w.qcow2", "install_iso": "/i/win.iso",
        "virtio_iso": "/i/virtio.iso", "config_iso": "/i/config.iso", "network": "n",
        "mac": "52:54:00:4a:1b:02"}))
    .unwrap();
    assert_eq!(g.firmware, Firmware::Bios);
    assert_eq!(g.boot_keys(), None);
    let d = g.domain("w", VirtType::Qemu).unwrap();
    assert_eq!(d.os.firmware, None);
    assert_eq!(d.os.firmware_features, None);
    assert_eq!(d.os.loader, None);
    assert_eq!(d.features.smm, None);
    assert!(d.devices.tpm.is_empty());
    let order: Vec<&str> = d.os.boot.iter().map(|b| b.dev.as_str()).collect();
    assert_eq!(order, ["hd", "cdrom"]);
    let xml = d.to_xml().unwrap();
    assert!(!xml.contains("efi") && !xml.contains("<loader"), "{xml}");
}

#[test]
fn windows_uefi_is_opt_in_with_secure_boot_and_boot_keys() {
    let uefi = WindowsGuest {
        firmware: Firmware::Uefi,
        ..windows()
    };
    assert_eq!(uefi.boot_keys(), Some(std::time::Duration::from_secs(60)));
    let d = uefi.domain("w", VirtType::Qemu).unwrap();
    assert_eq!(d.os.firmware.as_deref(), Some("efi"));
    assert!(d.os.loader.is_some() && d.features.smm.is_some());
    assert_eq!(d.devices.tpm.len(), 1);
    let plain = WindowsGuest {
        secure_boot: Some(false),
        boot_key_seconds: Some(90),
        ..uefi
    };
    assert_eq!(plain.boot_keys(), Some(std::time::Duration::from_secs(90)));
    let d = plain.domain("w", VirtType::Qemu).unwrap();
    assert_eq!(d.os.firmware.as_deref(), Some("efi"));
    assert_eq!(d.os.loader, None);
    assert_eq!(d.features.smm, None);
}

#[test]
fn secure_boot_or_boot_keys_with_bios_are_refused() {
    let g = WindowsGuest {
        secure_boot: Some(true),
        ..windows()
    };
    let e = g.domain("w", VirtType::Qemu).unwrap_err().to_string();
    assert!(
        e.contains("secure_boot") && e.contains("firmware: uefi"),
        "{e}"
    );
    let g = WindowsGuest {
        boot_key_seconds: Some(30),
        ..windows()
    };
    let e = g.domain("w", VirtType::Qemu).unwrap_err().to_string();
    assert!(e.contains("boot_key_seconds") && e.contains("`30`"), "{e}");
    let off = WindowsGuest {
        secure_boot: Some(false),
        ..windows()
    };
    assert!(off.domain("w", VirtType::Qemu).is_ok());
}

#[test]
fn nat_network_xml() {
    let n = nat().network("kimgtnet0").unwrap();
    insta::assert_snapshot!(n.fingerprinted().unwrap().to_xml().unwrap());
}

#[test]
fn cloud_init_seed_files() {
    let s = seed().seed().unwrap();
    insta::assert_snapshot!(format!(
        "--- meta-data\n{}--- user-data\n{}--- network-config\n{}",
        s.meta_data, s.user_data, s.network_config
    ));
}

#[test]
fn generated_xml_reads_back_into_the_same_types() {
    let d = windows().domain("w", VirtType::Qemu).unwrap();
    assert_eq!(Domain::from_xml(&d.to_xml().unwrap()).unwrap(), d);
    let n = nat().network("n").unwrap().fingerprinted().unwrap();
    assert_eq!(Network::from_xml(&n.to_xml().unwrap()).unwrap(), n);
}

#[test]
fn fingerprint_follows_the_definition_not_the_uuid() {
    let a = linux().domain("g", VirtType::Qemu).unwrap();
    let mut b = a.clone();
    b.uuid = Some("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into());
    assert_eq!(a.fingerprint().unwrap(), b.fingerprint().unwrap());
    let mut c = linux();
    c.ram_kib += 1024;
    let c = c.domain("g", VirtType::Qemu).unwrap();
    assert_ne!(a.fingerprint().unwrap(), c.fingerprint().unwrap());
}

#[test]
fn user_values_are_escaped_not_spliced() {
    let mut g = linux();
    g.disk = "/images/a'b\"<c>&.qcow2".into();
    let xml = g.domain("x", VirtType::Qemu).unwrap().to_xml().unwrap();
    assert!(!xml.contains("<c>"), "{xml}");
    let back = Domain::from_xml(&xml).unwrap();
    assert_eq!(
        back.devices.disk[0].source.as_ref().unwrap().file,
        "/images/a'b\"<c>&.qcow2"
    );
}

#[test]
fn bad_settings_name_the_field_and_value() {
    let mut g = linux();
    g.ram_kib = 512;
    let e = g.domain("x", VirtType::Qemu).unwrap_err().to_string();
    assert!(e.contains("ram_kib") && e.contains("`512`"), "{e}");
    let mut g = linux();
    g.max_vcpus = Some(2);
    let e = g.domain("x", VirtType::Qemu).unwrap_err().to_string();
    assert!(e.contains("max_vcpus"), "{e}");
    let mut g = linux();
    g.disk = "relative.qcow2".into();
    let e = g.domain("x", VirtType::Qemu).unwrap_err().to_string();
    assert!(e.contains("disk") && e.contains("relative.qcow2"), "{e}");
    let mut n = nat();
    n.hosts[1].ip = Ipv4Addr::new(10, 0, 1, 2);
    let e = n.network("n").unwrap_err().to_string();
    assert!(e.contains("hosts.ip") && e.contains("10.0.1.2"), "{e}");
    let mut n = nat();
    n.hosts[1].mac = n.hosts[0].mac;
    let e = n.network("n").unwrap_err().to_string();
    assert!(e.contains("hosts.mac"), "{e}");
}

#[test]
fn tcg_windows_domain_leaves_out_kvm_only_enlightenments() {
    let d = windows().domain("w", VirtType::Qemu).unwrap();
    let hv = d.features.hyperv.unwrap();
    assert!(hv.relaxed.is_some() && hv.spinlocks.is_some());
    assert!(hv.synic.is_none() && hv.stimer.is_none());
    let d = windows().domain("w", VirtType::Kvm).unwrap();
    assert!(d.features.hyperv.unwrap().stimer.is_some());
}
