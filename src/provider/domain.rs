//! `Domain`: the part of libvirt's domain XML kinit writes, as serde types.
//!
//! Only what kinit's guests use is modelled; reading `dumpxml` back into these types ignores
//! everything else. Field order is the element order libvirt documents.

use serde::{Deserialize, Serialize};

use super::xml::{self, Empty, Metadata};
use super::{ProviderError, VirtType};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    #[serde(rename = "@type")]
    pub virt_type: VirtType,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub uuid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub metadata: Option<Metadata>,
    pub memory: Memory,
    #[serde(rename = "currentMemory")]
    pub current_memory: Memory,
    pub vcpu: Vcpu,
    pub os: Os,
    #[serde(default)]
    pub features: Features,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu: Option<Cpu>,
    pub clock: Clock,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub on_poweroff: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub on_reboot: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub on_crash: Option<String>,
    pub devices: Devices,
}

impl Domain {
    /// The XML document libvirt is given.
    pub fn to_xml(&self) -> Result<String, ProviderError> {
        xml::to_xml("domain", self, "domain")
    }

    pub fn from_xml(text: &str) -> Result<Self, ProviderError> {
        xml::from_xml(text, "domain")
    }

    /// The fingerprint of this definition: a hash of the document without uuid and metadata,
    /// so that neither a carried-over uuid nor the fingerprint itself changes it.
    pub fn fingerprint(&self) -> Result<String, ProviderError> {
        let bare = Domain {
            uuid: None,
            metadata: None,
            ..self.clone()
        };
        Ok(xml::sha256(&bare.to_xml()?))
    }

    /// This definition with its fingerprint stored in `<metadata>`.
    pub fn fingerprinted(mut self) -> Result<Self, ProviderError> {
        self.metadata = Some(Metadata::with_fingerprint(self.fingerprint()?));
        Ok(self)
    }
}

/// A size in KiB (`<memory unit='KiB'>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    #[serde(rename = "@unit")]
    pub unit: String,
    #[serde(rename = "$text")]
    pub value: u64,
}

impl Memory {
    pub fn kib(value: u64) -> Self {
        Self {
            unit: "KiB".into(),
            value,
        }
    }
}

impl Default for Memory {
    fn default() -> Self {
        Self::kib(0)
    }
}

/// `<vcpu placement='static' current='N'>MAX</vcpu>`: `current` vCPUs online, hot-pluggable
/// up to `max`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vcpu {
    #[serde(rename = "@placement", default)]
    pub placement: String,
    #[serde(rename = "@current", skip_serializing_if = "Option::is_none", default)]
    pub current: Option<u32>,
    #[serde(rename = "$text")]
    pub max: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Os {
    /// `efi` lets libvirt pick the OVMF build matching the requested features.
    #[serde(rename = "@firmware", skip_serializing_if = "Option::is_none", default)]
    pub firmware: Option<String>,
    #[serde(rename = "type")]
    pub os_type: OsType,
    #[serde(rename = "firmware", skip_serializing_if = "Option::is_none", default)]
    pub firmware_features: Option<FirmwareFeatures>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub loader: Option<Loader>,
    #[serde(default)]
    pub boot: Vec<Boot>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OsType {
    #[serde(rename = "@arch")]
    pub arch: String,
    #[serde(rename = "@machine")]
    pub machine: String,
    #[serde(rename = "$text")]
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct FirmwareFeatures {
    #[serde(default)]
    pub feature: Vec<FirmwareFeature>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirmwareFeature {
    #[serde(rename = "@enabled")]
    pub enabled: String,
    #[serde(rename = "@name")]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Loader {
    #[serde(rename = "@secure", skip_serializing_if = "Option::is_none", default)]
    pub secure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Boot {
    #[serde(rename = "@dev")]
    pub dev: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Features {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub acpi: Option<Empty>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub apic: Option<Empty>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hyperv: Option<HyperV>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub smm: Option<State>,
}

/// `<x state='on'/>`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    #[serde(rename = "@state")]
    pub state: String,
}

impl State {
    pub fn on() -> Self {
        Self { state: "on".into() }
    }
}

/// Hyper-V enlightenments: paravirtual interfaces Windows uses when it finds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HyperV {
    #[serde(rename = "@mode", default)]
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub relaxed: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub vapic: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub spinlocks: Option<Spinlocks>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub vpindex: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub runtime: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub synic: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stimer: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reset: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub frequencies: Option<State>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spinlocks {
    #[serde(rename = "@state")]
    pub state: String,
    #[serde(rename = "@retries", skip_serializing_if = "Option::is_none", default)]
    pub retries: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    #[serde(rename = "@mode")]
    pub mode: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    #[serde(rename = "@offset")]
    pub offset: String,
    #[serde(default)]
    pub timer: Vec<Timer>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timer {
    #[serde(rename = "@name")]
    pub name: String,
    #[serde(
        rename = "@tickpolicy",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub tickpolicy: Option<String>,
    #[serde(rename = "@present", skip_serializing_if = "Option::is_none", default)]
    pub present: Option<String>,
}

impl Timer {
    pub fn tick(name: &str, policy: &str) -> Self {
        Self {
            name: name.into(),
            tickpolicy: Some(policy.into()),
            present: None,
        }
    }
    pub fn present(name: &str, present: bool) -> Self {
        Self {
            name: name.into(),
            tickpolicy: None,
            present: Some(if present { "yes" } else { "no" }.into()),
        }
    }
}

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
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub model: Option<Model>,
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
            model: Some(Model { kind: model.into() }),
        }
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
}

impl CharDev {
    pub fn pty_serial() -> Self {
        Self {
            kind: "pty".into(),
            target: CharTarget {
                kind: None,
                port: Some(0),
            },
        }
    }
    pub fn pty_console() -> Self {
        Self {
            kind: "pty".into(),
            target: CharTarget {
                kind: Some("serial".into()),
                port: Some(0),
            },
        }
    }
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
