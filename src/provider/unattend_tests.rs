//! The generated `autounattend.xml`, parsed back and checked pass by pass.

use base64::Engine;

use super::install_stage::InstallStage;
use super::tests::windows_config;
use super::unattend::Unattend;
use super::windows_config::{
    CONFIG_LABEL, CONTAINERS_SCRIPT, MTU_SCRIPT, WINRM_PFX, WINRM_SCRIPT, WindowsConfig,
};
use super::windows_guest::Firmware;
use super::xml;

fn files() -> Vec<(String, String)> {
    windows_config()
        .files()
        .unwrap()
        .into_iter()
        .map(|(n, d)| (n, String::from_utf8(d).unwrap()))
        .collect()
}

fn unattend() -> Unattend {
    let files = files();
    let text = &files
        .iter()
        .find(|(n, _)| n == "autounattend.xml")
        .unwrap()
        .1;
    assert!(text.starts_with("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<unattend xmlns=\"urn:schemas-microsoft-com:unattend\""));
    xml::from_xml(text, "autounattend").unwrap()
}

/// The script a first-logon command runs: its `-EncodedCommand` decoded.
fn decoded(command_line: &str) -> String {
    let b64 = command_line.rsplit(' ').next().unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).unwrap()
}

#[test]
fn config_iso_holds_the_answer_file_and_its_scripts() {
    let names: Vec<String> = files().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["autounattend.xml", WINRM_SCRIPT, CONTAINERS_SCRIPT]);
}

#[test]
fn windows_pe_pass_partitions_the_disk_and_loads_virtio_drivers() {
    let u = unattend();
    let pe = u.pass("windowsPE").expect("windowsPE pass");
    let intl = pe
        .component("Microsoft-Windows-International-Core-WinPE")
        .unwrap();
    assert_eq!(intl.ui_language.as_deref(), Some("en-US"));
    let pnp = pe
        .component("Microsoft-Windows-PnpCustomizationsWinPE")
        .unwrap();
    let paths: Vec<&str> = pnp
        .driver_paths
        .as_ref()
        .unwrap()
        .path_and_credentials
        .iter()
        .map(|p| p.path.as_str())
        .collect();
    assert!(paths.contains(&r"E:\amd64\2k22"), "{paths:?}");
    assert!(paths.contains(&r"E:\NetKVM\2k22\amd64"), "{paths:?}");
    let setup = pe.component("Microsoft-Windows-Setup").unwrap();
    let disk = &setup.disk_configuration.as_ref().unwrap().disk[0];
    assert_eq!(disk.disk_id, 0);
    assert!(disk.will_wipe_disk);
    // Issue 18: the guest boots BIOS by default, so the disk is MBR: an active system
    // partition the BIOS boots, then Windows (as KubeInit's and sig-windows-dev-tools').
    let parts: Vec<(&str, Option<u32>, Option<bool>)> = disk
        .create_partitions
        .create_partition
        .iter()
        .map(|p| (p.kind.as_str(), p.size, p.extend))
        .collect();
    assert_eq!(
        parts,
        [("Primary", Some(500), None), ("Primary", None, Some(true))]
    );
    let modify = &disk.modify_partitions.modify_partition;
    assert_eq!(modify[0].active, Some(true));
    assert_eq!(modify[0].format.as_deref(), Some("NTFS"));
    let windows = &modify[1];
    assert_eq!(windows.partition_id, 2);
    assert_eq!(windows.active, None);
    assert_eq!(windows.format.as_deref(), Some("NTFS"));
    assert_eq!(windows.letter.as_deref(), Some("C"));
    let img = &setup.image_install.as_ref().unwrap().os_image;
    assert_eq!(img.install_to.partition_id, 2);
    assert_eq!(img.install_from.meta_data[0].key, "/IMAGE/NAME");
    assert_eq!(
        img.install_from.meta_data[0].value,
        "Windows Server 2022 SERVERDATACENTER"
    );
    assert!(setup.user_data.as_ref().unwrap().accept_eula);
}

#[test]
fn uefi_guests_get_the_gpt_layout() {
    let c = WindowsConfig {
        firmware: Firmware::Uefi,
        ..windows_config()
    };
    let u = c.unattend().unwrap();
    let setup = u
        .pass("windowsPE")
        .unwrap()
        .component("Microsoft-Windows-Setup")
        .unwrap();
    let disk = &setup.disk_configuration.as_ref().unwrap().disk[0];
    let parts: Vec<(&str, Option<u32>)> = disk
        .create_partitions
        .create_partition
        .iter()
        .map(|p| (p.kind.as_str(), p.size))
        .collect();
    assert_eq!(
        parts,
        [("EFI", Some(100)), ("MSR", Some(16)), ("Primary", None)]
    );
    assert!(
        disk.modify_partitions
            .modify_partition
            .iter()
            .all(|m| m.active.is_none())
    );
    let img = &setup.image_install.as_ref().unwrap().os_image;
    assert_eq!(img.install_to.partition_id, 3);
}

/// The answer file as Windows Setup reads it: well-formed XML whose MBR system partition
/// carries `<Active>true</Active>` (checked with xmllint, a parser kinit did not write).
#[test]
fn answer_file_is_well_formed_with_an_active_system_partition() {
    let files = files();
    let text = &files
        .iter()
        .find(|(n, _)| n == "autounattend.xml")
        .unwrap()
        .1;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("autounattend.xml");
    std::fs::write(&path, text).unwrap();
    let out = std::process::Command::new("xmllint")
        .arg("--xpath")
        .arg(
            "//*[local-name()='ModifyPartition'][*[local-name()='Active']='true']\
             /*[local-name()='PartitionID']/text()",
        )
        .arg(&path)
        .output()
        .expect("xmllint (apt libxml2-utils) is installed by ci/deps.sh test");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1", "{text}");
}

#[test]
fn specialize_pass_names_the_computer_and_sets_a_static_address() {
    let u = unattend();
    let sp = u.pass("specialize").expect("specialize pass");
    let shell = sp.component("Microsoft-Windows-Shell-Setup").unwrap();
    assert_eq!(shell.computer_name.as_deref(), Some("compute-01"));
    let tcpip = sp.component("Microsoft-Windows-TCPIP").unwrap();
    let nic = &tcpip.interfaces.as_ref().unwrap().interface[0];
    assert_eq!(nic.identifier, "52-54-00-4A-1B-02");
    assert!(!nic.ipv4_settings.as_ref().unwrap().dhcp_enabled);
    assert_eq!(
        nic.unicast_ip_addresses.as_ref().unwrap().ip_address[0].value,
        "10.0.0.2/24"
    );
    let route = &nic.routes.as_ref().unwrap().route[0];
    assert_eq!(
        (route.prefix.as_str(), route.next_hop_address.as_str()),
        ("0.0.0.0/0", "10.0.0.254")
    );
    let dns = sp.component("Microsoft-Windows-DNS-Client").unwrap();
    let nic = &dns.interfaces.as_ref().unwrap().interface[0];
    assert_eq!(nic.identifier, "52-54-00-4A-1B-02");
    let servers: Vec<&str> = nic
        .dns_server_search_order
        .as_ref()
        .unwrap()
        .ip_address
        .iter()
        .map(|a| a.value.as_str())
        .collect();
    assert_eq!(servers, ["10.0.0.253", "1.1.1.1"]);
    assert_eq!(nic.dns_domain.as_deref(), Some("k8scluster.kubeinit.local"));
}

#[test]
fn oobe_pass_sets_the_password_and_runs_first_logon_scripts() {
    let u = unattend();
    let oobe = u.pass("oobeSystem").expect("oobeSystem pass");
    let shell = oobe.component("Microsoft-Windows-Shell-Setup").unwrap();
    let admin = &shell.user_accounts.as_ref().unwrap().administrator_password;
    // Markup characters in the password survive as text.
    assert_eq!(admin.value.expose(), "S3cret-Pa55!<&>");
    assert!(admin.plain_text);
    let logon = shell.auto_logon.as_ref().unwrap();
    assert!(logon.enabled);
    assert_eq!(logon.username, "Administrator");
    assert_eq!(logon.password.value.expose(), "S3cret-Pa55!<&>");
    assert!(shell.oobe.as_ref().unwrap().hide_eula_page);
    let cmds = &shell
        .first_logon_commands
        .as_ref()
        .unwrap()
        .synchronous_command;
    assert_eq!(
        cmds.iter().map(|c| c.order).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    // Stage markers (checked in `every_pass_marks_its_stage_on_com1`) around the scripts.
    for (cmd, script) in [&cmds[1], &cmds[3]]
        .into_iter()
        .zip([CONTAINERS_SCRIPT, WINRM_SCRIPT])
    {
        assert!(
            cmd.command_line.len() <= 1024,
            "Windows limit: {}",
            cmd.command_line.len()
        );
        let ps = decoded(&cmd.command_line);
        assert!(
            ps.contains(&format!("-FileSystemLabel '{CONFIG_LABEL}'")),
            "{ps}"
        );
        assert!(ps.contains(script), "{ps}");
    }
}

/// Each pass writes `kinit-stage: <stage>` to COM1 as it starts, and the first logon marks
/// the WinRM step before running it: `virt_install_wait` follows the install by these lines.
#[test]
fn every_pass_marks_its_stage_on_com1() {
    let u = unattend();
    let pass_command = |pass: &str, component: &str| {
        let cmds = &u
            .pass(pass)
            .unwrap()
            .component(component)
            .unwrap_or_else(|| panic!("{pass} has {component}"))
            .run_synchronous
            .as_ref()
            .unwrap_or_else(|| panic!("{pass} runs commands"))
            .run_synchronous_command;
        assert_eq!(cmds.len(), 1, "{cmds:?}");
        assert_eq!(cmds[0].order, 1);
        cmds[0].path.clone()
    };
    assert_eq!(
        pass_command("windowsPE", "Microsoft-Windows-Setup"),
        "cmd.exe /c echo kinit-stage: windowsPE>COM1"
    );
    assert_eq!(
        pass_command("specialize", "Microsoft-Windows-Deployment"),
        "cmd.exe /c echo kinit-stage: specialize>COM1"
    );
    let logon: Vec<String> = u
        .pass("oobeSystem")
        .unwrap()
        .component("Microsoft-Windows-Shell-Setup")
        .unwrap()
        .first_logon_commands
        .as_ref()
        .unwrap()
        .synchronous_command
        .iter()
        .map(|c| c.command_line.clone())
        .collect();
    assert_eq!(logon[0], "cmd.exe /c echo kinit-stage: oobeSystem>COM1");
    assert_eq!(logon[2], "cmd.exe /c echo kinit-stage: winrm>COM1");
    assert!(decoded(&logon[3]).contains(WINRM_SCRIPT), "{logon:?}");
    // The stages read back from those lines, in install order.
    let echoed = |cmd: &str| {
        cmd.strip_prefix("cmd.exe /c echo ")
            .and_then(|c| c.strip_suffix(">COM1"))
            .map(str::to_string)
            .unwrap()
    };
    let seen: Vec<InstallStage> = [
        pass_command("windowsPE", "Microsoft-Windows-Setup"),
        pass_command("specialize", "Microsoft-Windows-Deployment"),
        logon[0].clone(),
        logon[2].clone(),
    ]
    .iter()
    .map(|c| InstallStage::from_line(&echoed(c)).unwrap())
    .collect();
    assert_eq!(seen, InstallStage::ALL);
}

#[test]
fn winrm_script_opens_an_https_listener_and_the_firewall() {
    let files = files();
    let ps = &files.iter().find(|(n, _)| n == WINRM_SCRIPT).unwrap().1;
    assert!(ps.contains(
        "New-SelfSignedCertificate -DnsName 'compute-01','compute-01.k8scluster.kubeinit.local'"
    ));
    assert!(ps.contains("-Transport HTTPS -Address * -CertificateThumbPrint $cert.Thumbprint"));
    assert!(ps.contains("-Direction Inbound -Protocol TCP -LocalPort 5986 -Action Allow"));
    assert!(ps.contains("AllowUnencrypted -Value $false"));
    let containers = &files
        .iter()
        .find(|(n, _)| n == CONTAINERS_SCRIPT)
        .unwrap()
        .1;
    assert!(containers.contains("Install-WindowsFeature -Name Containers"));
}

/// With a certificate from the cluster CA the listener uses it, imported from the PKCS#12
/// beside the script (opened with the administrator password); nothing self-signed.
#[test]
fn winrm_script_uses_the_cluster_certificate_when_given() {
    let c = WindowsConfig {
        winrm_pfx: Some(b"pkcs12 bytes".to_vec()),
        ..windows_config()
    };
    let files = c.files().unwrap();
    let ps = &files.iter().find(|(n, _)| n == WINRM_SCRIPT).unwrap().1;
    let ps = String::from_utf8_lossy(ps);
    assert!(!ps.contains("New-SelfSignedCertificate"), "{ps}");
    assert!(
        ps.contains(
            "$cert = Import-PfxCertificate -FilePath (Join-Path $PSScriptRoot 'kinit-winrm.pfx') \
             -CertStoreLocation Cert:\\LocalMachine\\My -Password $pfxPassword \
             | Where-Object { $_.HasPrivateKey } | Select-Object -First 1"
        ),
        "{ps}"
    );
    assert!(ps.contains("ConvertTo-SecureString -String 'S3cret-Pa55!<&>' -AsPlainText"));
    assert!(ps.contains("-CertificateThumbPrint $cert.Thumbprint"));
    let pfx = &files.iter().find(|(n, _)| n == WINRM_PFX).unwrap().1;
    assert_eq!(pfx, b"pkcs12 bytes");
    // Without one: no PKCS#12 on the ISO.
    let plain = windows_config().files().unwrap();
    assert!(!plain.iter().any(|(n, _)| n == WINRM_PFX));
}

#[test]
fn the_password_never_prints() {
    let c = windows_config();
    assert!(!format!("{c:?}").contains("S3cret"));
    assert!(!format!("{:?}", c.unattend().unwrap()).contains("S3cret"));
}

#[test]
fn bad_computer_names_are_refused() {
    for bad in ["", "a-name-longer-than-15", "12345", "bad_name"] {
        let mut c = windows_config();
        c.computer_name = bad.into();
        let e = c.files().unwrap_err().to_string();
        assert!(
            e.contains("computer_name") && e.contains(&format!("`{bad}`")),
            "{e}"
        );
    }
}

/// Issue 18, point 6: on OVN the path MTU is 1442 and the emulated NIC does not learn it from
/// libvirt, so first logon sets it on the adapter with the node's MAC, before WinRM opens;
/// without an MTU there is no such script or command.
#[test]
fn an_mtu_is_set_at_first_logon_on_the_adapter_with_the_nodes_mac() {
    let c = WindowsConfig {
        mtu: Some(1442),
        ..windows_config()
    };
    let files = c.files().unwrap();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "autounattend.xml",
            WINRM_SCRIPT,
            MTU_SCRIPT,
            CONTAINERS_SCRIPT
        ]
    );
    let script = String::from_utf8(files[2].1.clone()).unwrap();
    assert!(
        script.contains("Where-Object { $_.MacAddress -eq '52-54-00-4A-1B-02' }"),
        "{script}"
    );
    assert!(
        script.contains(
            "Set-NetIPInterface -InterfaceIndex $adapter.ifIndex -AddressFamily IPv4 -NlMtuBytes 1442"
        ),
        "{script}"
    );
    let u = c.unattend().unwrap();
    let shell = u
        .pass("oobeSystem")
        .unwrap()
        .component("Microsoft-Windows-Shell-Setup")
        .unwrap();
    let cmds = &shell
        .first_logon_commands
        .as_ref()
        .unwrap()
        .synchronous_command;
    // Right after the first stage marker: before the Containers feature and WinRM.
    assert!(decoded(&cmds[1].command_line).contains(MTU_SCRIPT));
    assert_eq!(cmds.len(), 5);

    let plain = windows_config();
    assert!(plain.mtu_script().is_none());
    assert!(plain.files().unwrap().iter().all(|(n, _)| n != MTU_SCRIPT));
    let bad = WindowsConfig {
        mtu: Some(100),
        ..windows_config()
    };
    assert!(bad.files().unwrap_err().to_string().contains("mtu"));
}
