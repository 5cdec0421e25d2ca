//! `LinuxGuest`: a Linux node booted from a cloud image (a qcow2 overlay) with a cloud-init
//! NoCloud seed ISO, and the libvirt domain it becomes.

use serde::{Deserialize, Serialize};

use super::domain::*;
use super::xml::Empty;
use super::{MacAddr, ProviderError, VirtType};

/// The PC machine type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Machine {
    /// Modern PCIe chipset (no IDE: CD-ROMs go on SATA).
    #[default]
    Q35,
    /// The older i440FX chipset.
    Pc,
}

impl Machine {
    fn name(self) -> &'static str {
        match self {
            Machine::Q35 => "q35",
            Machine::Pc => "pc",
        }
    }
    fn cdrom_bus(self) -> &'static str {
        match self {
            Machine::Q35 => "sata",
            Machine::Pc => "ide",
        }
    }
}

/// The settings of a Linux guest (`virt_guest`'s `linux:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinuxGuest {
    /// Machine type: `q35` (default) or `pc`.
    #[serde(default)]
    pub machine: Machine,
    /// vCPUs online at boot.
    pub vcpus: u32,
    /// vCPUs the guest may grow to (KubeInit's `maxvcpus`); default `vcpus`.
    #[serde(default)]
    pub max_vcpus: Option<u32>,
    /// RAM in KiB, as KubeInit's `ram` (`8388608` is 8 GiB).
    pub ram_kib: u64,
    /// Path on the hypervisor of the guest's qcow2 disk (an overlay over the cloud image).
    pub disk: String,
    /// Path on the hypervisor of the cloud-init NoCloud seed ISO.
    pub seed_iso: String,
    /// libvirt network the NIC is attached to.
    pub network: String,
    /// MAC address of the NIC; the network's static DHCP entry and the seed's network-config
    /// match on it.
    pub mac: MacAddr,
    /// On an OVS (OVN) network: the NIC's `interfaceid`, a UUID that is also its OVN logical
    /// switch port; none on a NAT network.
    #[serde(default)]
    pub interface_id: Option<String>,
}

impl LinuxGuest {
    /// The domain definition for a guest called `name`.
    pub fn domain(&self, name: &str, virt_type: VirtType) -> Result<Domain, ProviderError> {
        if let Some(id) = &self.interface_id {
            super::ovs_network::check_interface_id(id)?;
        }
        let max = check_cpus_ram(self.vcpus, self.max_vcpus, self.ram_kib)?;
        check_path("disk", &self.disk)?;
        check_path("seed_iso", &self.seed_iso)?;
        Ok(Domain {
            virt_type,
            name: name.to_string(),
            uuid: None,
            metadata: None,
            memory: Memory::kib(self.ram_kib),
            current_memory: Memory::kib(self.ram_kib),
            vcpu: Vcpu {
                placement: "static".into(),
                current: (max != self.vcpus).then_some(self.vcpus),
                max,
            },
            os: Os {
                firmware: None,
                os_type: OsType {
                    arch: "x86_64".into(),
                    machine: self.machine.name().into(),
                    kind: "hvm".into(),
                },
                firmware_features: None,
                loader: None,
                boot: vec![Boot { dev: "hd".into() }],
            },
            // Without ACPI a guest's poweroff only halts the CPU and the domain stays running.
            features: Features {
                acpi: Some(Empty {}),
                apic: Some(Empty {}),
                ..Features::default()
            },
            cpu: host_cpu(virt_type),
            clock: Clock {
                offset: "utc".into(),
                timer: vec![
                    Timer::tick("rtc", "catchup"),
                    Timer::tick("pit", "delay"),
                    Timer::present("hpet", false),
                ],
            },
            on_poweroff: Some("destroy".into()),
            on_reboot: Some("restart".into()),
            on_crash: Some("destroy".into()),
            devices: Devices {
                disk: vec![
                    Disk::qcow2(&self.disk, "vda", "virtio"),
                    Disk::cdrom(&self.seed_iso, "sda", self.machine.cdrom_bus()),
                ],
                interface: vec![
                    Interface::network(&self.network, &self.mac.to_string(), "virtio")
                        .with_ovs_port(self.interface_id.as_deref()),
                ],
                serial: vec![CharDev::pty_serial()],
                console: vec![CharDev::pty_console()],
                rng: vec![Rng {
                    model: "virtio".into(),
                    backend: RngBackend {
                        model: "random".into(),
                        device: "/dev/urandom".into(),
                    },
                }],
                ..Devices::default()
            },
        })
    }
}

/// The host CPU model under KVM (guests see the real features); QEMU's default model under
/// TCG, which cannot emulate an arbitrary host CPU.
pub(crate) fn host_cpu(virt_type: VirtType) -> Option<Cpu> {
    match virt_type {
        VirtType::Kvm => Some(Cpu {
            mode: "host-passthrough".into(),
        }),
        VirtType::Qemu => None,
    }
}

/// Checks vCPU and RAM settings; returns the maximum vCPU count.
pub(crate) fn check_cpus_ram(
    vcpus: u32,
    max_vcpus: Option<u32>,
    ram_kib: u64,
) -> Result<u32, ProviderError> {
    if vcpus == 0 {
        return Err(ProviderError::Invalid {
            field: "vcpus",
            value: vcpus.to_string(),
            expected: "at least 1",
        });
    }
    let max = max_vcpus.unwrap_or(vcpus);
    if max < vcpus {
        return Err(ProviderError::Invalid {
            field: "max_vcpus",
            value: max.to_string(),
            expected: "at least `vcpus`",
        });
    }
    // 64 MiB: below that no installer or cloud image boots; catches MiB/GiB given as KiB.
    if ram_kib < 65536 {
        return Err(ProviderError::Invalid {
            field: "ram_kib",
            value: ram_kib.to_string(),
            expected: "RAM in KiB, at least 65536 (64 MiB)",
        });
    }
    Ok(max)
}

pub(crate) fn check_path(field: &'static str, path: &str) -> Result<(), ProviderError> {
    if path.starts_with('/') && !path.contains('\0') {
        Ok(())
    } else {
        Err(ProviderError::Invalid {
            field,
            value: path.to_string(),
            expected: "an absolute path on the hypervisor",
        })
    }
}
