//! The cloud-init NoCloud seed of a Linux guest: `meta-data`, `user-data` (hostname, FQDN,
//! SSH keys for root and an optional cloud user) and `network-config` (version 2, a static
//! address matched on the NIC's MAC). Each file is a typed structure written as YAML.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

use super::network::check_dns_name;
use super::{MacAddr, ProviderError};

/// The settings of a seed (`virt_config_iso`'s `cloud_init:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudInit {
    /// Short host name (`controller-01`).
    pub hostname: String,
    /// Fully qualified name (`controller-01.k8scluster.kubeinit.local`).
    pub fqdn: String,
    /// MAC of the NIC the static address goes on.
    pub mac: MacAddr,
    /// The node's address with the network's prefix (`10.0.0.1/24`).
    pub address: Ipv4Net,
    /// Default gateway (`10.0.0.254`).
    pub gateway: Ipv4Addr,
    /// DNS servers, in order.
    #[serde(default)]
    pub nameservers: Vec<Ipv4Addr>,
    /// DNS search domains.
    #[serde(default)]
    pub search: Vec<String>,
    /// MTU of the NIC.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Public keys allowed to log in as root.
    #[serde(default)]
    pub root_authorized_keys: Vec<String>,
    /// An extra login user with passwordless sudo (KubeInit's `toor`).
    #[serde(default)]
    pub cloud_user: Option<CloudUser>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudUser {
    pub name: String,
    #[serde(default)]
    pub authorized_keys: Vec<String>,
}

/// The three files of a NoCloud seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Seed {
    pub meta_data: String,
    pub user_data: String,
    pub network_config: String,
}

impl Seed {
    /// The files by name, as they go on the `cidata` ISO.
    pub fn files(&self) -> Vec<(String, Vec<u8>)> {
        vec![
            ("meta-data".into(), self.meta_data.clone().into_bytes()),
            ("user-data".into(), self.user_data.clone().into_bytes()),
            (
                "network-config".into(),
                self.network_config.clone().into_bytes(),
            ),
        ]
    }
}

#[derive(Serialize)]
struct MetaData<'a> {
    #[serde(rename = "instance-id")]
    instance_id: String,
    #[serde(rename = "local-hostname")]
    local_hostname: &'a str,
}

#[derive(Serialize)]
struct UserData<'a> {
    hostname: &'a str,
    fqdn: &'a str,
    prefer_fqdn_over_hostname: bool,
    manage_etc_hosts: bool,
    /// `false`, else cloud-init prefixes root's keys with a "log in as user" command.
    disable_root: bool,
    ssh_pwauth: bool,
    /// The keys for root also go here: with `disable_root: false` cloud-init installs them
    /// for root as they are.
    ssh_authorized_keys: &'a [String],
    users: Vec<User<'a>>,
}

#[derive(Serialize)]
struct User<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    sudo: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shell: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lock_passwd: Option<bool>,
    ssh_authorized_keys: &'a [String],
}

#[derive(Serialize)]
struct NetworkConfig {
    version: u8,
    ethernets: indexmap::IndexMap<String, Ethernet>,
}

#[derive(Serialize)]
struct Ethernet {
    #[serde(rename = "match")]
    matches: Match,
    #[serde(rename = "set-name")]
    set_name: String,
    dhcp4: bool,
    addresses: Vec<String>,
    gateway4: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    nameservers: Option<Nameservers>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mtu: Option<u32>,
}

#[derive(Serialize)]
struct Match {
    macaddress: String,
}

#[derive(Serialize)]
struct Nameservers {
    addresses: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    search: Vec<String>,
}

fn yaml<T: Serialize>(what: &'static str, v: &T) -> Result<String, ProviderError> {
    serde_yaml::to_string(v).map_err(|source| ProviderError::WriteYaml { what, source })
}

impl CloudInit {
    pub fn seed(&self) -> Result<Seed, ProviderError> {
        check_dns_name("hostname", &self.hostname)?;
        check_dns_name("fqdn", &self.fqdn)?;
        for s in &self.search {
            check_dns_name("search", s)?;
        }
        if !self.address.contains(&self.gateway) {
            return Err(ProviderError::Invalid {
                field: "gateway",
                value: self.gateway.to_string(),
                expected: "an address inside the node's network",
            });
        }
        let keys_ok = |field: &'static str, keys: &[String]| match keys
            .iter()
            .find(|k| k.trim().is_empty() || k.contains('\n'))
        {
            Some(k) => Err(ProviderError::Invalid {
                field,
                value: k.clone(),
                expected: "one public key per entry, on one line",
            }),
            None => Ok(()),
        };
        keys_ok("root_authorized_keys", &self.root_authorized_keys)?;
        let mut users = vec![User {
            name: "root",
            sudo: None,
            shell: None,
            lock_passwd: None,
            ssh_authorized_keys: &self.root_authorized_keys,
        }];
        if let Some(u) = &self.cloud_user {
            check_user_name(&u.name)?;
            keys_ok("cloud_user.authorized_keys", &u.authorized_keys)?;
            users.push(User {
                name: &u.name,
                sudo: Some("ALL=(ALL) NOPASSWD:ALL"),
                shell: Some("/bin/bash"),
                lock_passwd: Some(true),
                ssh_authorized_keys: &u.authorized_keys,
            });
        }
        let meta = MetaData {
            instance_id: format!("iid-{}", self.hostname),
            local_hostname: &self.hostname,
        };
        let user = UserData {
            hostname: &self.hostname,
            fqdn: &self.fqdn,
            prefer_fqdn_over_hostname: false,
            manage_etc_hosts: true,
            disable_root: false,
            ssh_pwauth: false,
            ssh_authorized_keys: &self.root_authorized_keys,
            users,
        };
        let mut ethernets = indexmap::IndexMap::new();
        ethernets.insert(
            "eth0".to_string(),
            Ethernet {
                matches: Match {
                    macaddress: self.mac.to_string(),
                },
                set_name: "eth0".into(),
                dhcp4: false,
                addresses: vec![self.address.to_string()],
                // The default route as `gateway4`, which every renderer turns into its own
                // gateway setting (ifupdown: `gateway`, applied with `ip route`). A `routes`
                // entry is rendered by cloud-init 22.4 (Debian 12) for ifupdown as
                // `post-up route add default gw ... || true`, which needs net-tools: without
                // it the guest silently has no default route. (`to: default` is worse there:
                // rejected as "not a valid ip network", so no network configuration at all.)
                gateway4: self.gateway.to_string(),
                nameservers: (!self.nameservers.is_empty() || !self.search.is_empty()).then(|| {
                    Nameservers {
                        addresses: self.nameservers.iter().map(|a| a.to_string()).collect(),
                        search: self.search.clone(),
                    }
                }),
                mtu: self.mtu,
            },
        );
        let net = NetworkConfig {
            version: 2,
            ethernets,
        };
        Ok(Seed {
            meta_data: yaml("meta-data", &meta)?,
            user_data: format!("#cloud-config\n{}", yaml("user-data", &user)?),
            network_config: yaml("network-config", &net)?,
        })
    }
}

fn check_user_name(name: &str) -> Result<(), ProviderError> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ProviderError::Invalid {
            field: "cloud_user.name",
            value: name.to_string(),
            expected: "a POSIX user name (lowercase letters, digits, `_`, `-`)",
        })
    }
}
