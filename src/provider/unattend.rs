//! The Windows answer file (`autounattend.xml`) as typed structures, and the settings it is
//! made from.
//!
//! One `Component` type carries every setting kinit uses, each optional, so the same types
//! write the file and read it back in tests. The answer file is for Windows Server 2022 from
//! the evaluation ISO: UEFI disk layout, virtio drivers from the virtio-win ISO, computer
//! name, static address, the administrator password, and first-logon scripts (on the config
//! ISO, see `windows_config`) that install the Containers feature and open WinRM over HTTPS.
//!
//! Over 300 lines because it is one element tree: the structs follow the answer file's nesting
//! top to bottom, which splitting would scatter.
//!
//! One file: the types and the writer are one format (its tests are `unattend_tests.rs`).

use serde::{Deserialize, Serialize, Serializer};

use crate::secret::Secret;

pub const UNATTEND_NS: &str = "urn:schemas-microsoft-com:unattend";
pub const WCM_NS: &str = "http://schemas.microsoft.com/WMIConfig/2002/State";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unattend {
    #[serde(rename = "@xmlns", default)]
    pub xmlns: String,
    #[serde(rename = "@xmlns:wcm", default)]
    pub xmlns_wcm: String,
    #[serde(default)]
    pub settings: Vec<Settings>,
}

impl Unattend {
    /// The settings of configuration pass `pass` (`windowsPE`, `specialize`, `oobeSystem`).
    pub fn pass(&self, pass: &str) -> Option<&Settings> {
        self.settings.iter().find(|s| s.pass == pass)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    #[serde(rename = "@pass")]
    pub pass: String,
    #[serde(default)]
    pub component: Vec<Component>,
}

impl Settings {
    pub fn component(&self, name: &str) -> Option<&Component> {
        self.component.iter().find(|c| c.name == name)
    }
}

/// `wcm:action="add"` on list items.
fn add() -> Option<String> {
    Some("add".into())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct Component {
    #[serde(rename = "@name")]
    pub name: String,
    #[serde(rename = "@processorArchitecture")]
    pub processor_architecture: String,
    #[serde(rename = "@publicKeyToken")]
    pub public_key_token: String,
    #[serde(rename = "@language")]
    pub language: String,
    #[serde(rename = "@versionScope")]
    pub version_scope: String,
    #[serde(
        rename = "SetupUILanguage",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub setup_ui_language: Option<SetupUiLanguage>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub input_locale: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub system_locale: Option<String>,
    #[serde(
        rename = "UILanguage",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub ui_language: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub user_locale: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub driver_paths: Option<DriverPaths>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub disk_configuration: Option<DiskConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub image_install: Option<ImageInstall>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub user_data: Option<UserData>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub computer_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub time_zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub interfaces: Option<Interfaces>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub user_accounts: Option<UserAccounts>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub auto_logon: Option<AutoLogon>,
    #[serde(rename = "OOBE", skip_serializing_if = "Option::is_none", default)]
    pub oobe: Option<Oobe>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub first_logon_commands: Option<FirstLogonCommands>,
    /// Commands a pass runs as it starts (`windowsPE` in `Microsoft-Windows-Setup`,
    /// `specialize` in `Microsoft-Windows-Deployment`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub run_synchronous: Option<RunSynchronous>,
}

impl Component {
    /// An amd64 component with the standard Microsoft attributes.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            processor_architecture: "amd64".into(),
            public_key_token: "31bf3856ad364e35".into(),
            language: "neutral".into(),
            version_scope: "nonSxS".into(),
            ..Self::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SetupUiLanguage {
    #[serde(rename = "UILanguage")]
    pub ui_language: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DriverPaths {
    #[serde(default)]
    pub path_and_credentials: Vec<PathAndCredentials>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PathAndCredentials {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    #[serde(rename = "@wcm:keyValue", alias = "@keyValue")]
    pub key_value: String,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DiskConfiguration {
    pub disk: Vec<DiskSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DiskSpec {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    #[serde(rename = "DiskID")]
    pub disk_id: u32,
    pub will_wipe_disk: bool,
    pub create_partitions: CreatePartitions,
    pub modify_partitions: ModifyPartitions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreatePartitions {
    pub create_partition: Vec<CreatePartition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreatePartition {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    pub order: u32,
    #[serde(rename = "Type")]
    pub kind: String,
    /// MB; absent for the partition that takes the rest of the disk.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub extend: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ModifyPartitions {
    pub modify_partition: Vec<ModifyPartition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ModifyPartition {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    pub order: u32,
    #[serde(rename = "PartitionID")]
    pub partition_id: u32,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub letter: Option<String>,
    /// MBR only: the partition the BIOS boots (the system partition).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub active: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ImageInstall {
    #[serde(rename = "OSImage")]
    pub os_image: OsImage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct OsImage {
    pub install_from: InstallFrom,
    pub install_to: InstallTo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct InstallFrom {
    pub meta_data: Vec<ImageMetaData>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ImageMetaData {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct InstallTo {
    #[serde(rename = "DiskID")]
    pub disk_id: u32,
    #[serde(rename = "PartitionID")]
    pub partition_id: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UserData {
    pub accept_eula: bool,
    /// Empty: the evaluation edition needs no key.
    pub product_key: ProductKey,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ProductKey {
    #[serde(default)]
    pub key: String,
}

/// Adapters of `Microsoft-Windows-TCPIP` and `Microsoft-Windows-DNS-Client`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Interfaces {
    pub interface: Vec<NetInterface>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct NetInterface {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ipv4_settings: Option<Ipv4Settings>,
    /// The adapter, by MAC address (`52-54-00-12-34-56`).
    pub identifier: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub unicast_ip_addresses: Option<IpList>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub routes: Option<Routes>,
    #[serde(
        rename = "DNSServerSearchOrder",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub dns_server_search_order: Option<IpList>,
    #[serde(rename = "DNSDomain", skip_serializing_if = "Option::is_none", default)]
    pub dns_domain: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Ipv4Settings {
    pub dhcp_enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct IpList {
    pub ip_address: Vec<KeyedValue>,
}

/// `<IpAddress wcm:action="add" wcm:keyValue="1">10.0.0.2/24</IpAddress>`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyedValue {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    #[serde(rename = "@wcm:keyValue", alias = "@keyValue")]
    pub key_value: String,
    #[serde(rename = "$text")]
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Routes {
    pub route: Vec<Route>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Route {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    pub identifier: String,
    pub prefix: String,
    pub next_hop_address: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UserAccounts {
    pub administrator_password: Password,
}

/// A password in clear text, as Windows Setup reads it. The value is a `Secret`: it is
/// written into the file and nowhere else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Password {
    #[serde(serialize_with = "expose")]
    pub value: Secret,
    pub plain_text: bool,
}

fn expose<S: Serializer>(secret: &Secret, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(secret.expose())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AutoLogon {
    pub enabled: bool,
    pub username: String,
    pub password: Password,
    pub logon_count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Oobe {
    #[serde(rename = "HideEULAPage")]
    pub hide_eula_page: bool,
    pub hide_local_account_screen: bool,
    pub hide_online_account_screens: bool,
    pub hide_wireless_setup_in_oobe: bool,
    pub protect_your_pc: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct FirstLogonCommands {
    pub synchronous_command: Vec<SynchronousCommand>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SynchronousCommand {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    pub order: u32,
    pub command_line: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RunSynchronous {
    pub run_synchronous_command: Vec<RunSynchronousCommand>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RunSynchronousCommand {
    #[serde(rename = "@wcm:action", alias = "@action", default = "add")]
    pub action: Option<String>,
    pub order: u32,
    pub path: String,
    pub description: String,
}
