//! `Domain`: the part of libvirt's domain XML kinit writes, as serde types.
//!
//! Only what kinit's guests use is modelled; reading `dumpxml` back into these types ignores
//! everything else. Field order is the element order libvirt documents.

use serde::{Deserialize, Serialize};

use super::VirtType;
pub use super::devices::*;
use super::xml::{Definition, Document, Empty, Metadata};

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

impl Document for Domain {
    const ROOT: &'static str = "domain";
}

impl Definition for Domain {
    fn identity(&mut self) -> (&mut Option<String>, &mut Option<Metadata>) {
        (&mut self.uuid, &mut self.metadata)
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
