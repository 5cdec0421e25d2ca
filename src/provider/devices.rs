//! The `<devices>` of a libvirt domain as serde types: disks, NICs, consoles, graphics, TPM,
//! RNG, with constructors for the shapes kinit's guests use.

use serde::{Deserialize, Serialize};

use super::network::{Mtu, PortParameters, VirtualPort};
use super::ovs_network::GENEVE_MTU;
use super::xml::Empty;

/// Devices by kind. libvirt does not care about their order, and reading `dumpxml` (which
/// interleaves kinds) relies on quick-xml's `overlapped-lists`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Devices {
    #[serde(default)]
    pub disk: Vec<Disk>,
    #[serde(default)]
    pub interface: Vec<Interface>,
    #[serde(default)]
    pub serial: Vec<CharDev>,
    #[serde(default)]
    pub console: Vec<CharDev>,
    #[serde(default)]
    pub input: Vec<Input>,
    #[serde(default)]
    pub graphics: Vec<Graphics>,
    #[serde(default)]
    pub video: Vec<Video>,
    #[serde(default)]
    pub tpm: Vec<Tpm>,
    #[serde(default)]
    pub rng: Vec<Rng>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disk {
    #[serde(rename = "@type")]
    pub kind: String,
    /// `disk` or `cdrom`.
    #[serde(rename = "@device")]
    pub device: String,
    pub driver: DiskDriver,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub source: Option<DiskSource>,
    pub target: DiskTarget,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub readonly: Option<Empty>,
}

impl Disk {
    /// A qcow2 file as a writable disk on `bus` (`virtio`, `sata`).
    pub fn qcow2(path: &str, dev: &str, bus: &str) -> Self {
        Self {
            kind: "file".into(),
            device: "disk".into(),
            driver: DiskDriver {
                name: "qemu".into(),
                format: "qcow2".into(),
                discard: Some("unmap".into()),
            },
            source: Some(DiskSource { file: path.into() }),
            target: DiskTarget {
                dev: dev.into(),
                bus: bus.into(),
            },
            readonly: None,
        }
    }

    /// An ISO image in a read-only CD-ROM drive on `bus` (`sata`; q35 has no IDE).
    pub fn cdrom(path: &str, dev: &str, bus: &str) -> Self {
        Self {
            kind: "file".into(),
            device: "cdrom".into(),
            driver: DiskDriver {
                name: "qemu".into(),
                format: "raw".into(),
                discard: None,
            },
            source: Some(DiskSource { file: path.into() }),
            target: DiskTarget {
                dev: dev.into(),
                bus: bus.into(),
            },
            readonly: Some(Empty {}),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskDriver {
    #[serde(rename = "@name")]
    pub name: String,
    #[serde(rename = "@type")]
    pub format: String,
    #[serde(rename = "@discard", skip_serializing_if = "Option::is_none", default)]
    pub discard: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskSource {
    #[serde(rename = "@file")]
    pub file: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskTarget {
    #[serde(rename = "@dev")]
    pub dev: String,
    #[serde(rename = "@bus")]
    pub bus: String,
}

/// `<interface type='network'>` on a libvirt network, with a fixed MAC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    #[serde(rename = "@type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mac: Option<MacElem>,
    pub source: InterfaceSource,
    /// On an OVS network: the port's `interfaceid` (its OVN logical switch port).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub virtualport: Option<VirtualPort>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub model: Option<Model>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mtu: Option<Mtu>,
    /// On an OVS network: `<driver><host csum='off'/></driver>`, see [`Interface::with_ovs_port`].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub driver: Option<InterfaceDriver>,
}

/// `<driver>` of a NIC: only the host-side offloads kinit sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceDriver {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub host: Option<DriverHost>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverHost {
    #[serde(rename = "@csum", skip_serializing_if = "Option::is_none", default)]
    pub csum: Option<String>,
}

impl Interface {
    pub fn network(network: &str, mac: &str, model: &str) -> Self {
        Self {
            kind: "network".into(),
            mac: Some(MacElem {
                address: mac.into(),
            }),
            source: InterfaceSource {
                network: Some(network.into()),
            },
            virtualport: None,
            model: Some(Model { kind: model.into() }),
            mtu: None,
            driver: None,
        }
    }

    /// Plugs the NIC into an OVS network as the port `interface_id` (when given), with the
    /// geneve overlay's MTU and without checksum offload from the guest: Open vSwitch's
    /// userspace datapath (used where the kernel module is missing) forwards the partial
    /// checksums of an offloading guest unfinished, so its TCP reached the hypervisor and the
    /// other guests with bad checksums and was dropped (ICMP, checksummed in software, worked).
    pub fn with_ovs_port(mut self, interface_id: Option<&str>) -> Self {
        self.virtualport = interface_id.map(|id| VirtualPort {
            kind: "openvswitch".into(),
            parameters: Some(PortParameters {
                interfaceid: Some(id.into()),
            }),
        });
        self.mtu = interface_id.map(|_| Mtu { size: GENEVE_MTU });
        self.driver = interface_id.map(|_| InterfaceDriver {
            host: Some(DriverHost {
                csum: Some("off".into()),
            }),
        });
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacElem {
    #[serde(rename = "@address")]
    pub address: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceSource {
    #[serde(rename = "@network", skip_serializing_if = "Option::is_none", default)]
    pub network: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Model {
    #[serde(rename = "@type")]
    pub kind: String,
}

/// A serial port or console backed by a host pty (`virsh console`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CharDev {
    #[serde(rename = "@type")]
    pub kind: String,
    pub target: CharTarget,
    /// A file on the hypervisor that also receives everything the guest writes (virtlogd).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub log: Option<CharLog>,
}

impl CharDev {
    pub fn pty_serial() -> Self {
        Self {
            kind: "pty".into(),
            target: CharTarget {
                kind: None,
                port: Some(0),
            },
            log: None,
        }
    }
    pub fn pty_console() -> Self {
        Self {
            kind: "pty".into(),
            target: CharTarget {
                kind: Some("serial".into()),
                port: Some(0),
            },
            log: None,
        }
    }

    /// The same device with its output also appended to `path`.
    pub fn logged_to(self, path: Option<&str>) -> Self {
        Self {
            log: path.map(|p| CharLog {
                file: p.to_string(),
                append: "on".into(),
            }),
            ..self
        }
    }
}

/// `<log file=... append='on'/>`: appending keeps the output of every boot of the guest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CharLog {
    #[serde(rename = "@file")]
    pub file: String,
    #[serde(rename = "@append")]
    pub append: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CharTarget {
    #[serde(rename = "@type", skip_serializing_if = "Option::is_none", default)]
    pub kind: Option<String>,
    #[serde(rename = "@port", skip_serializing_if = "Option::is_none", default)]
    pub port: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    #[serde(rename = "@type")]
    pub kind: String,
    #[serde(rename = "@bus")]
    pub bus: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graphics {
    #[serde(rename = "@type")]
    pub kind: String,
    #[serde(rename = "@autoport", skip_serializing_if = "Option::is_none", default)]
    pub autoport: Option<String>,
    #[serde(rename = "@listen", skip_serializing_if = "Option::is_none", default)]
    pub listen: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Video {
    pub model: Model,
}

/// A TPM; Windows 11/Server 2022 setup and BitLocker want TPM 2.0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tpm {
    #[serde(rename = "@model")]
    pub model: String,
    pub backend: TpmBackend,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TpmBackend {
    #[serde(rename = "@type")]
    pub kind: String,
    #[serde(rename = "@version")]
    pub version: String,
}

/// virtio-rng: lets a freshly booted cloud image generate SSH host keys without waiting
/// for entropy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rng {
    #[serde(rename = "@model")]
    pub model: String,
    pub backend: RngBackend,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RngBackend {
    #[serde(rename = "@model")]
    pub model: String,
    #[serde(rename = "$text")]
    pub device: String,
}
