//! `WindowsGuest`: a Windows Server node installed from ISO (Windows ISO, virtio-win ISO and
//! a config ISO carrying `autounattend.xml`), and the libvirt domain it becomes: q35, SeaBIOS
//! (or UEFI on request), Hyper-V enlightenments.
//!
//! # Why BIOS by default
//!
//! The guest boots disk first, then the install ISO: the empty disk fails on the first start,
//! Setup runs from the CD, and every later boot takes the installed disk. That only works
//! unattended when the CD's boot loader starts without a key press:
//!
//! - BIOS: Microsoft's El Torito loader `etfsboot.com` asks "Press any key to boot from CD or
//!   DVD" only when a bootable hard disk exists; on the empty disk it starts Setup at once.
//! - UEFI: the stock media's `\efi\microsoft\boot\cdboot.efi` always asks, and with no key
//!   the firmware moves on to the next boot entry (Microsoft, J. Howard, "Hyper-V generation 2
//!   virtual machines, part 9": "The default version, cdboot.efi prompts for a keypress. The
//!   unused version, cdboot_noprompt.efi doesn't prompt"). Setup never starts.
//!
//! Upstream deployers of Windows guests on KVM boot BIOS: KubeInit's Windows role
//! (`deploy_windows_guest.yml`, removed in kubeinit commit e9a6e671) ran `virt-install` without
//! `--boot uefi` (SeaBIOS), its `autounattend.xml.j2` an MBR layout (an `Active` system
//! partition, Windows on partition 2); sig-windows-dev-tools'
//! `experiments/swdt/packer/kvm/win2022.pkr.hcl` sets `efi_boot = false`, its answer file the
//! same MBR layout. So `firmware: bios` is the default, and `WindowsConfig` writes the
//! matching MBR layout.
//!
//! `firmware: uefi` stays available, with secure boot (Microsoft's keys enrolled, SMM-protected
//! variables, OVMF picked by libvirt's firmware autoselection) and a TPM 2.0 emulator (swtpm).
//! The prompt is then answered through libvirt (`virDomainSendKey`, Enter once a second for
//! `boot_key_seconds` after `virt_guest` starts the domain), as Packer templates for Server
//! 2022 on UEFI do with their `boot_command`. Remastering the ISO with
//! `efisys_noprompt.bin` would avoid the keys but copies ~5 GB per hypervisor.

use serde::{Deserialize, Serialize};

use super::domain::*;
use super::linux_guest::{check_cpus_ram, check_path, host_cpu};
use super::xml::Empty;
use super::{MacAddr, ProviderError, VirtType};

/// The NIC model Windows sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NicModel {
    /// Intel 82574, driver built into Windows: the network works before virtio drivers.
    #[default]
    E1000e,
    /// virtio-net, faster; needs NetKVM from the virtio-win ISO.
    Virtio,
}

/// The firmware a Windows guest boots (see the file's doc for why BIOS is the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Firmware {
    /// SeaBIOS; Setup starts from the CD without a key press. MBR disk layout.
    #[default]
    Bios,
    /// OVMF, secure boot on by default; the CD prompt is answered with key presses. GPT
    /// disk layout.
    Uefi,
}

/// The settings of a Windows guest (`virt_guest`'s `windows:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowsGuest {
    /// vCPUs online at boot.
    pub vcpus: u32,
    /// vCPUs the guest may grow to; default `vcpus`.
    #[serde(default)]
    pub max_vcpus: Option<u32>,
    /// RAM in KiB (KubeInit required at least 16 GiB, `16777216`, for Windows workers).
    pub ram_kib: u64,
    /// Path on the hypervisor of the (empty, then installed) qcow2 system disk.
    pub disk: String,
    /// Path of the Windows Server installation ISO.
    pub install_iso: String,
    /// Path of the virtio-win drivers ISO.
    pub virtio_iso: String,
    /// Path of the config ISO holding `autounattend.xml`.
    pub config_iso: String,
    /// Path on the hypervisor of a file that receives everything the guest writes to its
    /// first serial port (COM1), appended across reboots; the answer file writes its install
    /// stages there (`virt_install_wait` follows them). None: the serial port is not logged.
    #[serde(default)]
    pub serial_log: Option<String>,
    /// libvirt network the NIC is attached to.
    pub network: String,
    /// MAC address of the NIC.
    pub mac: MacAddr,
    /// On an OVS (OVN) network: the NIC's `interfaceid`, a UUID that is also its OVN logical
    /// switch port; none on a NAT network.
    #[serde(default)]
    pub interface_id: Option<String>,
    /// `e1000e` (default) or `virtio`.
    #[serde(default)]
    pub nic_model: NicModel,
    /// `bios` (default) or `uefi`; must match the config ISO's `windows.firmware`.
    #[serde(default)]
    pub firmware: Firmware,
    /// UEFI secure boot with Microsoft's keys enrolled (default: on with `uefi`; an error
    /// with `bios`).
    #[serde(default)]
    pub secure_boot: Option<bool>,
    /// `uefi` only: seconds after `virt_guest` starts the domain during which it presses
    /// Enter once a second, answering the CD loader's "Press any key" (default 60).
    #[serde(default)]
    pub boot_key_seconds: Option<u32>,
}

impl WindowsGuest {
    /// Whether the firmware enforces secure boot; refuses it with BIOS.
    fn secure_boot(&self) -> Result<bool, ProviderError> {
        match (self.firmware, self.secure_boot) {
            (Firmware::Bios, Some(true)) => Err(ProviderError::Invalid {
                field: "secure_boot",
                value: "true".into(),
                expected: "`false` with `firmware: bios` (secure boot needs `firmware: uefi`)",
            }),
            (Firmware::Bios, _) => Ok(false),
            (Firmware::Uefi, on) => Ok(on.unwrap_or(true)),
        }
    }

    /// How long `virt_guest` presses Enter after starting the domain: only UEFI prompts.
    pub fn boot_keys(&self) -> Option<std::time::Duration> {
        (self.firmware == Firmware::Uefi)
            .then(|| std::time::Duration::from_secs(self.boot_key_seconds.unwrap_or(60).into()))
    }
}

impl WindowsGuest {
    pub fn domain(&self, name: &str, virt_type: VirtType) -> Result<Domain, ProviderError> {
        if let Some(id) = &self.interface_id {
            super::ovs_network::check_interface_id(id)?;
        }
        let max = check_cpus_ram(self.vcpus, self.max_vcpus, self.ram_kib)?;
        for (field, path) in [
            ("disk", &self.disk),
            ("install_iso", &self.install_iso),
            ("virtio_iso", &self.virtio_iso),
            ("config_iso", &self.config_iso),
        ] {
            check_path(field, path)?;
        }
        if let Some(log) = &self.serial_log {
            check_path("serial_log", log)?;
        }
        let secure_boot = self.secure_boot()?;
        let uefi = self.firmware == Firmware::Uefi;
        if let Some(n) = self.boot_key_seconds
            && !uefi
        {
            return Err(ProviderError::Invalid {
                field: "boot_key_seconds",
                value: n.to_string(),
                expected: "no value with `firmware: bios` (only the UEFI CD loader prompts)",
            });
        }
        let onoff = |b: bool| if b { "yes" } else { "no" }.to_string();
        let nic = match self.nic_model {
            NicModel::E1000e => "e1000e",
            NicModel::Virtio => "virtio",
        };
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
                firmware: uefi.then(|| "efi".into()),
                os_type: OsType {
                    arch: "x86_64".into(),
                    machine: "q35".into(),
                    kind: "hvm".into(),
                },
                firmware_features: uefi.then(|| FirmwareFeatures {
                    feature: vec![
                        FirmwareFeature {
                            enabled: onoff(secure_boot),
                            name: "secure-boot".into(),
                        },
                        FirmwareFeature {
                            enabled: onoff(secure_boot),
                            name: "enrolled-keys".into(),
                        },
                    ],
                }),
                loader: secure_boot.then(|| Loader {
                    secure: Some("yes".into()),
                }),
                // The empty disk fails to boot on the first start, so the installer ISO runs
                // (unprompted under BIOS, see the file's doc); once Windows is installed the
                // disk wins.
                boot: vec![
                    Boot { dev: "hd".into() },
                    Boot {
                        dev: "cdrom".into(),
                    },
                ],
            },
            features: Features {
                acpi: Some(Empty {}),
                apic: Some(Empty {}),
                hyperv: Some(hyperv(virt_type)),
                // Secure boot firmware keeps its variables in SMM-protected flash.
                smm: secure_boot.then(State::on),
            },
            cpu: host_cpu(virt_type),
            // Windows keeps the RTC in local time.
            clock: Clock {
                offset: "localtime".into(),
                timer: vec![
                    Timer::tick("rtc", "catchup"),
                    Timer::tick("pit", "delay"),
                    Timer::present("hpet", false),
                    Timer::present("hypervclock", true),
                ],
            },
            on_poweroff: Some("destroy".into()),
            on_reboot: Some("restart".into()),
            on_crash: Some("destroy".into()),
            devices: Devices {
                // SATA: Windows Setup has AHCI drivers built in, so the system disk is visible
                // without loading viostor first.
                disk: vec![
                    Disk::qcow2(&self.disk, "sda", "sata"),
                    Disk::cdrom(&self.install_iso, "sdb", "sata"),
                    Disk::cdrom(&self.virtio_iso, "sdc", "sata"),
                    Disk::cdrom(&self.config_iso, "sdd", "sata"),
                ],
                interface: vec![
                    Interface::network(&self.network, &self.mac.to_string(), nic)
                        .with_ovs_port(self.interface_id.as_deref()),
                ],
                serial: vec![CharDev::pty_serial().logged_to(self.serial_log.as_deref())],
                console: vec![CharDev::pty_console()],
                // A USB tablet keeps the VNC pointer in sync with the guest's.
                input: vec![Input {
                    kind: "tablet".into(),
                    bus: "usb".into(),
                }],
                graphics: vec![Graphics {
                    kind: "vnc".into(),
                    autoport: Some("yes".into()),
                    listen: Some("127.0.0.1".into()),
                }],
                video: vec![Video {
                    model: Model { kind: "vga".into() },
                }],
                // Measured boot goes with UEFI; Windows Server 2022 needs no TPM, so a BIOS
                // guest does without one (and the hypervisor without swtpm).
                tpm: uefi
                    .then(|| Tpm {
                        model: "tpm-crb".into(),
                        backend: TpmBackend {
                            kind: "emulator".into(),
                            version: "2.0".into(),
                        },
                    })
                    .into_iter()
                    .collect(),
                rng: Vec::new(),
            },
        })
    }
}

/// Hyper-V enlightenments. Under KVM the full set Windows benefits from; under TCG only the
/// ones QEMU emulates itself (synic, stimer and friends are KVM-only and refuse to start).
fn hyperv(virt_type: VirtType) -> HyperV {
    let on = || Some(State::on());
    let mut hv = HyperV {
        mode: "custom".into(),
        relaxed: on(),
        vapic: on(),
        spinlocks: Some(Spinlocks {
            state: "on".into(),
            retries: Some(8191),
        }),
        ..HyperV::default()
    };
    if virt_type == VirtType::Kvm {
        hv.vpindex = on();
        hv.runtime = on();
        hv.synic = on();
        hv.stimer = on();
        hv.reset = on();
        hv.frequencies = on();
    }
    hv
}
