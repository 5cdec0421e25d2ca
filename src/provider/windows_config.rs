//! `WindowsConfig`: what goes on a Windows guest's config ISO: `autounattend.xml` built from
//! the node's settings, and the first-logon PowerShell scripts it runs from that ISO.
//!
//! The scripts live on the ISO because a `FirstLogonCommands` command line is limited to
//! 1024 characters; each command only finds the ISO by its volume label and runs one script.
//!
//! Over 300 lines because the answer file and the scripts it runs share the node's settings
//! and must agree (drive letters, labels, script names); keeping them together shows that.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::Deserialize;

use super::install_stage::InstallStage;
use super::network::check_dns_name;
use super::unattend::*;
use super::windows_guest::Firmware;
use super::winrm_cert::LeafRequest;
use super::{MacAddr, ProviderError, xml};
use crate::secret::Secret;
use crate::transport::quote;

/// Volume label of the config ISO; the first-logon commands look for it.
pub const CONFIG_LABEL: &str = "KINITCFG";
pub const WINRM_SCRIPT: &str = "kinit-winrm.ps1";
pub const CONTAINERS_SCRIPT: &str = "kinit-containers.ps1";
/// The WinRM certificate and key (PKCS#12) the cluster CA issued, beside `WINRM_SCRIPT`.
pub const WINRM_PFX: &str = "kinit-winrm.pfx";
pub const MTU_SCRIPT: &str = "kinit-mtu.ps1";

/// The settings of a Windows config ISO (`virt_config_iso`'s `windows:`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowsConfig {
    /// NetBIOS computer name (at most 15 letters, digits and `-`): the node name.
    pub computer_name: String,
    /// Fully qualified name, added to the WinRM certificate.
    #[serde(default)]
    pub fqdn: Option<String>,
    /// Administrator password (never logged; only written into the answer file).
    pub admin_password: Secret,
    /// MAC of the NIC that gets the static address.
    pub mac: MacAddr,
    /// The node's address with the network's prefix (`10.0.0.2/24`).
    pub address: Ipv4Net,
    pub gateway: Ipv4Addr,
    #[serde(default)]
    pub nameservers: Vec<Ipv4Addr>,
    /// DNS suffix of the adapter.
    #[serde(default)]
    pub dns_domain: Option<String>,
    /// Image to install from the ISO's `install.wim`.
    #[serde(default = "default_image")]
    pub image_name: String,
    /// Drive letter of the virtio-win ISO in Windows Setup (the second CD-ROM).
    #[serde(default = "default_virtio_drive")]
    pub virtio_drive: String,
    /// Windows time zone name.
    #[serde(default = "default_tz")]
    pub time_zone: String,
    /// Install the Containers feature at first logon (default true).
    #[serde(default = "yes")]
    pub containers: bool,
    /// The guest's firmware (`virt_guest`'s `windows.firmware`), which picks the disk layout:
    /// `bios` (default) MBR, `uefi` GPT.
    #[serde(default)]
    pub firmware: Firmware,
    /// The folder, on the machine running kinit, holding the cluster's WinRM CA (the cluster
    /// state folder, see `winrm_cert`). With it the guest's WinRM certificate is issued by
    /// that CA for `address`, `computer_name` and `fqdn`; without it the guest makes a
    /// self-signed one, which kinit trusts only through a CA file of the user's or with
    /// validation off.
    #[serde(default)]
    pub winrm_ca_dir: Option<String>,
    /// The issued certificate as PKCS#12, encrypted with `admin_password`: filled in by
    /// `virt_config_iso` from `winrm_ca_dir`, never an argument.
    #[serde(skip)]
    pub winrm_pfx: Option<Vec<u8>>,
    /// MTU of the NIC, set at first logon (the Linux guests' `mtu`: 1442 on OVN). Only
    /// virtio-net tells the guest the MTU libvirt's `<mtu>` sets (VIRTIO_NET_F_MTU); the
    /// emulated e1000e Windows boots with stays at 1500 otherwise.
    #[serde(default)]
    pub mtu: Option<u32>,
}

fn default_image() -> String {
    "Windows Server 2022 SERVERDATACENTER".into()
}
fn default_virtio_drive() -> String {
    "E:".into()
}
fn default_tz() -> String {
    "UTC".into()
}
fn yes() -> bool {
    true
}

impl WindowsConfig {
    /// Every file of the config ISO: `autounattend.xml` first, then the scripts.
    pub fn files(&self) -> Result<Vec<(String, Vec<u8>)>, ProviderError> {
        let unattend = xml::to_xml("unattend", &self.unattend()?, "autounattend")?;
        let mut files = vec![(
            "autounattend.xml".to_string(),
            format!("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n{unattend}").into_bytes(),
        )];
        files.push((WINRM_SCRIPT.into(), self.winrm_script().into_bytes()));
        if let Some(pfx) = &self.winrm_pfx {
            files.push((WINRM_PFX.into(), pfx.clone()));
        }
        if let Some(script) = self.mtu_script() {
            files.push((MTU_SCRIPT.into(), script.into_bytes()));
        }
        if self.containers {
            files.push((CONTAINERS_SCRIPT.into(), CONTAINERS.as_bytes().to_vec()));
        }
        Ok(files)
    }

    fn check(&self) -> Result<(), ProviderError> {
        let n = &self.computer_name;
        let ok = !n.is_empty()
            && n.len() <= 15
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !n.chars().all(|c| c.is_ascii_digit());
        if !ok {
            return Err(ProviderError::Invalid {
                field: "computer_name",
                value: n.clone(),
                expected: "1 to 15 letters, digits and `-`, not only digits",
            });
        }
        if let Some(f) = &self.fqdn {
            check_dns_name("fqdn", f)?;
        }
        if let Some(d) = &self.dns_domain {
            check_dns_name("dns_domain", d)?;
        }
        let d = self.virtio_drive.as_bytes();
        if !(d.len() == 2 && d[0].is_ascii_uppercase() && d[1] == b':') {
            return Err(ProviderError::Invalid {
                field: "virtio_drive",
                value: self.virtio_drive.clone(),
                expected: "a drive letter such as `E:`",
            });
        }
        if self.admin_password.is_empty() {
            return Err(ProviderError::Invalid {
                field: "admin_password",
                value: String::new(),
                expected: "a non-empty password",
            });
        }
        if let Some(mtu) = self.mtu
            && !(576..=9000).contains(&mtu)
        {
            return Err(ProviderError::Invalid {
                field: "mtu",
                value: mtu.to_string(),
                expected: "an MTU from 576 to 9000",
            });
        }
        if !self.address.contains(&self.gateway) {
            return Err(ProviderError::Invalid {
                field: "gateway",
                value: self.gateway.to_string(),
                expected: "an address inside the node's network",
            });
        }
        Ok(())
    }

    /// The answer file.
    pub fn unattend(&self) -> Result<Unattend, ProviderError> {
        self.check()?;
        let password = || Password {
            value: self.admin_password.clone(),
            plain_text: true,
        };
        let keyed = |i: usize, v: String| KeyedValue {
            action: Some("add".into()),
            key_value: (i + 1).to_string(),
            value: v,
        };
        let drive = &self.virtio_drive;
        let driver_paths = [r"amd64\2k22", r"viostor\2k22\amd64", r"NetKVM\2k22\amd64"]
            .iter()
            .enumerate()
            .map(|(i, p)| PathAndCredentials {
                action: Some("add".into()),
                key_value: (i + 1).to_string(),
                path: format!(r"{drive}\{p}"),
            })
            .collect();
        let locale = "en-US".to_string();

        let mut intl = Component::new("Microsoft-Windows-International-Core-WinPE");
        intl.setup_ui_language = Some(SetupUiLanguage {
            ui_language: locale.clone(),
        });
        intl.input_locale = Some(locale.clone());
        intl.system_locale = Some(locale.clone());
        intl.ui_language = Some(locale.clone());
        intl.user_locale = Some(locale);

        let mut pnp = Component::new("Microsoft-Windows-PnpCustomizationsWinPE");
        pnp.driver_paths = Some(DriverPaths {
            path_and_credentials: driver_paths,
        });

        let mut setup = Component::new("Microsoft-Windows-Setup");
        let (layout, windows_partition) = match self.firmware {
            Firmware::Bios => (mbr_disk_layout(), 2),
            Firmware::Uefi => (uefi_disk_layout(), 3),
        };
        setup.disk_configuration = Some(layout);
        setup.image_install = Some(ImageInstall {
            os_image: OsImage {
                install_from: InstallFrom {
                    meta_data: vec![ImageMetaData {
                        action: Some("add".into()),
                        key: "/IMAGE/NAME".into(),
                        value: self.image_name.clone(),
                    }],
                },
                install_to: InstallTo {
                    disk_id: 0,
                    partition_id: windows_partition,
                },
            },
        });
        setup.user_data = Some(UserData {
            accept_eula: true,
            product_key: ProductKey::default(),
        });
        setup.run_synchronous = Some(mark_stage(InstallStage::WindowsPe));
        let mut deployment = Component::new("Microsoft-Windows-Deployment");
        deployment.run_synchronous = Some(mark_stage(InstallStage::Specialize));

        let mut shell = Component::new("Microsoft-Windows-Shell-Setup");
        shell.computer_name = Some(self.computer_name.clone());
        shell.time_zone = Some(self.time_zone.clone());

        let adapter = self.mac.dashed_upper();
        let mut tcpip = Component::new("Microsoft-Windows-TCPIP");
        tcpip.interfaces = Some(Interfaces {
            interface: vec![NetInterface {
                action: Some("add".into()),
                ipv4_settings: Some(Ipv4Settings {
                    dhcp_enabled: false,
                }),
                identifier: adapter.clone(),
                unicast_ip_addresses: Some(IpList {
                    ip_address: vec![keyed(0, self.address.to_string())],
                }),
                routes: Some(Routes {
                    route: vec![Route {
                        action: Some("add".into()),
                        identifier: "0".into(),
                        prefix: "0.0.0.0/0".into(),
                        next_hop_address: self.gateway.to_string(),
                    }],
                }),
                ..NetInterface::default()
            }],
        });
        let mut dns = Component::new("Microsoft-Windows-DNS-Client");
        dns.interfaces = Some(Interfaces {
            interface: vec![NetInterface {
                action: Some("add".into()),
                identifier: adapter,
                dns_server_search_order: (!self.nameservers.is_empty()).then(|| IpList {
                    ip_address: self
                        .nameservers
                        .iter()
                        .enumerate()
                        .map(|(i, a)| keyed(i, a.to_string()))
                        .collect(),
                }),
                dns_domain: self.dns_domain.clone(),
                ..NetInterface::default()
            }],
        });

        let mut oobe = Component::new("Microsoft-Windows-Shell-Setup");
        oobe.user_accounts = Some(UserAccounts {
            administrator_password: password(),
        });
        // One automatic logon runs the FirstLogonCommands.
        oobe.auto_logon = Some(AutoLogon {
            enabled: true,
            username: "Administrator".into(),
            password: password(),
            logon_count: 1,
        });
        oobe.oobe = Some(Oobe {
            hide_eula_page: true,
            hide_local_account_screen: true,
            hide_online_account_screens: true,
            hide_wireless_setup_in_oobe: true,
            protect_your_pc: 3,
        });
        let mark = |stage: InstallStage| {
            (
                stage.command_line(),
                format!("Mark the install stage `{stage}` on COM1"),
            )
        };
        let mut commands = vec![mark(InstallStage::OobeSystem)];
        if self.mtu.is_some() {
            commands.push((run_from_config_iso(MTU_SCRIPT), "Set the NIC's MTU".into()));
        }
        if self.containers {
            commands.push((
                run_from_config_iso(CONTAINERS_SCRIPT),
                "Install the Containers feature".into(),
            ));
        }
        commands.push(mark(InstallStage::Winrm));
        commands.push((
            run_from_config_iso(WINRM_SCRIPT),
            if self.winrm_pfx.is_some() {
                "Open WinRM over HTTPS (5986) with the certificate from the cluster CA".into()
            } else {
                "Open WinRM over HTTPS (5986) with a self-signed certificate".into()
            },
        ));
        oobe.first_logon_commands = Some(FirstLogonCommands {
            synchronous_command: commands
                .into_iter()
                .enumerate()
                .map(|(i, (command_line, description))| SynchronousCommand {
                    action: Some("add".into()),
                    order: i as u32 + 1,
                    command_line,
                    description,
                })
                .collect(),
        });

        Ok(Unattend {
            xmlns: UNATTEND_NS.into(),
            xmlns_wcm: WCM_NS.into(),
            settings: vec![
                Settings {
                    pass: "windowsPE".into(),
                    component: vec![intl, pnp, setup],
                },
                Settings {
                    pass: "specialize".into(),
                    component: vec![shell, deployment, tcpip, dns],
                },
                Settings {
                    pass: "oobeSystem".into(),
                    component: vec![oobe],
                },
            ],
        })
    }

    /// What the guest's WinRM certificate is issued for: its address, computer name and FQDN.
    pub fn winrm_request(&self) -> LeafRequest {
        let mut dns = vec![self.computer_name.clone()];
        dns.extend(self.fqdn.clone());
        LeafRequest {
            name: self.computer_name.clone(),
            ip: self.address.addr().into(),
            dns,
        }
    }

    /// Enables remoting, replaces any HTTPS listener with one on the certificate the cluster
    /// CA issued (imported from the PKCS#12 beside the script) or, without one, on a fresh
    /// self-signed certificate for the node's names; allows Basic auth (HTTPS only:
    /// unencrypted stays off) and opens TCP 5986 in the firewall.
    pub fn winrm_script(&self) -> String {
        let cert = if self.winrm_pfx.is_some() {
            // Import-PfxCertificate returns every certificate it imported; the listener takes
            // the one with the key.
            format!(
                "$pfxPassword = ConvertTo-SecureString -String {pw} -AsPlainText -Force\r\n\
                 $cert = Import-PfxCertificate -FilePath (Join-Path $PSScriptRoot {pfx}) -CertStoreLocation Cert:\\LocalMachine\\My -Password $pfxPassword | Where-Object {{ $_.HasPrivateKey }} | Select-Object -First 1\r\n",
                pw = quote::ps(self.admin_password.expose()),
                pfx = quote::ps(WINRM_PFX),
            )
        } else {
            let mut names = vec![quote::ps(&self.computer_name)];
            if let Some(f) = &self.fqdn {
                names.push(quote::ps(f));
            }
            format!(
                "$cert = New-SelfSignedCertificate -DnsName {names} -CertStoreLocation Cert:\\LocalMachine\\My -NotAfter (Get-Date).AddYears(5)\r\n",
                names = names.join(","),
            )
        };
        format!(
            "$ErrorActionPreference = 'Stop'\r\n\
             Enable-PSRemoting -SkipNetworkProfileCheck -Force\r\n\
             {cert}\
             Get-ChildItem WSMan:\\localhost\\Listener | Where-Object {{ $_.Keys -contains 'Transport=HTTPS' }} | Remove-Item -Recurse -Force\r\n\
             New-Item -Path WSMan:\\localhost\\Listener -Transport HTTPS -Address * -CertificateThumbPrint $cert.Thumbprint -Force | Out-Null\r\n\
             Set-Item -Path WSMan:\\localhost\\Service\\Auth\\Basic -Value $true\r\n\
             Set-Item -Path WSMan:\\localhost\\Service\\AllowUnencrypted -Value $false\r\n\
             New-NetFirewallRule -Name 'kinit-winrm-https' -DisplayName 'WinRM over HTTPS (kinit)' -Direction Inbound -Protocol TCP -LocalPort 5986 -Action Allow -Profile Any | Out-Null\r\n\
             Set-Service -Name WinRM -StartupType Automatic\r\n\
             Restart-Service -Name WinRM\r\n",
        )
    }
}

impl WindowsConfig {
    /// Sets the MTU on the NIC with the node's MAC (IPv4, the family kinit configures), when
    /// an MTU is asked for. start.ps1 sets it again on the vEthernet adapter the Hyper-V
    /// switch moves the address to.
    pub fn mtu_script(&self) -> Option<String> {
        let mtu = self.mtu?;
        Some(format!(
            "$ErrorActionPreference = 'Stop'\r\n\
             $adapter = Get-NetAdapter | Where-Object {{ $_.MacAddress -eq {mac} }}\r\n\
             if (-not $adapter) {{ throw 'no network adapter with MAC {mac_text}' }}\r\n\
             Set-NetIPInterface -InterfaceIndex $adapter.ifIndex -AddressFamily IPv4 -NlMtuBytes {mtu}\r\n",
            mac = quote::ps(&self.mac.dashed_upper()),
            mac_text = self.mac.dashed_upper(),
        ))
    }
}

/// Installs the feature; the reboot it needs is left to kinit, which follows the install.
const CONTAINERS: &str = "$ErrorActionPreference = 'Stop'\r\n\
                          Install-WindowsFeature -Name Containers | Out-Null\r\n";

/// The pass-start command that writes `stage`'s marker to COM1 (see `install_stage`).
fn mark_stage(stage: InstallStage) -> RunSynchronous {
    RunSynchronous {
        run_synchronous_command: vec![RunSynchronousCommand {
            action: Some("add".into()),
            order: 1,
            path: stage.command_line(),
            description: format!("Mark the install stage `{stage}` on COM1"),
        }],
    }
}

/// A first-logon command line that runs `script` from the config ISO, found by its label
/// (drive letters depend on the order Windows enumerates the CD-ROMs).
fn run_from_config_iso(script: &str) -> String {
    quote::ps_command_line(&format!(
        "$d = (Get-Volume -FileSystemLabel {label} | Select-Object -First 1).DriveLetter; & \"$($d):\\{script}\"",
        label = quote::ps(CONFIG_LABEL),
    ))
}

fn create(order: u32, kind: &str, size: Option<u32>) -> CreatePartition {
    CreatePartition {
        action: Some("add".into()),
        order,
        kind: kind.into(),
        size,
        extend: size.is_none().then_some(true),
    }
}

fn modify(order: u32, format: Option<&str>, label: Option<&str>) -> ModifyPartition {
    ModifyPartition {
        action: Some("add".into()),
        order,
        partition_id: order,
        format: format.map(Into::into),
        label: label.map(Into::into),
        letter: None,
        active: None,
    }
}

fn disk0(create: Vec<CreatePartition>, modify: Vec<ModifyPartition>) -> DiskConfiguration {
    DiskConfiguration {
        disk: vec![DiskSpec {
            action: Some("add".into()),
            disk_id: 0,
            will_wipe_disk: true,
            create_partitions: CreatePartitions {
                create_partition: create,
            },
            modify_partitions: ModifyPartitions {
                modify_partition: modify,
            },
        }],
    }
}

/// BIOS layout on disk 0 (KubeInit's and sig-windows-dev-tools' answer files): an active
/// 500 MB system partition the BIOS boots (boot manager, WinRE), then Windows on the rest.
fn mbr_disk_layout() -> DiskConfiguration {
    let windows = ModifyPartition {
        letter: Some("C".into()),
        ..modify(2, Some("NTFS"), Some("Windows"))
    };
    disk0(
        vec![create(1, "Primary", Some(500)), create(2, "Primary", None)],
        vec![
            ModifyPartition {
                active: Some(true),
                ..modify(1, Some("NTFS"), Some("System"))
            },
            windows,
        ],
    )
}

/// UEFI layout on disk 0: EFI system partition, MSR, then Windows on the rest.
fn uefi_disk_layout() -> DiskConfiguration {
    let windows = ModifyPartition {
        letter: Some("C".into()),
        ..modify(3, Some("NTFS"), Some("Windows"))
    };
    disk0(
        vec![
            create(1, "EFI", Some(100)),
            create(2, "MSR", Some(16)),
            create(3, "Primary", None),
        ],
        vec![
            modify(1, Some("FAT32"), Some("System")),
            modify(2, None, None),
            windows,
        ],
    )
}
