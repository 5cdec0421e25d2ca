//! Flannel and the Windows CNI: the net-conf.json both operating systems read, the merge patch
//! of the upstream kube-flannel-cfg ConfigMap, the Windows CNI configuration and the start.ps1
//! invocation agree on network, backend, VNI and port, for host-gw and for vxlan.

use std::collections::BTreeMap;

use kinit::template::Templar;
use serde::Deserialize;
use serde_json::{Value, json};

use super::fixture::{Compute, backends, context, inventory, render, task};

/// flannel's net-conf.json (flannel `pkg/subnet` config).
#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetConf {
    #[serde(rename = "Network")]
    pub network: ipnet::Ipv4Net,
    #[serde(rename = "EnableNFTables")]
    pub enable_nftables: bool,
    #[serde(rename = "Backend")]
    pub backend: Backend,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Backend {
    #[serde(rename = "Type")]
    pub kind: String,
    #[serde(rename = "VNI")]
    pub vni: Option<u32>,
    #[serde(rename = "Port")]
    pub port: Option<u16>,
}

/// The Windows CNI configuration: flannel's CNI plugin delegating to sdnbridge/sdnoverlay.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CniConf {
    cni_version: String,
    name: String,
    #[serde(rename = "type")]
    kind: String,
    capabilities: BTreeMap<String, bool>,
    delegate: Delegate,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Delegate {
    #[serde(rename = "type")]
    kind: String,
    #[serde(rename = "optionalFlags")]
    optional_flags: Option<BTreeMap<String, bool>>,
    #[serde(rename = "AdditionalArgs")]
    additional_args: Vec<AdditionalArg>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct AdditionalArg {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "Value")]
    value: Policy,
}

#[derive(Deserialize, Debug)]
#[serde(tag = "Type", content = "Settings")]
enum Policy {
    OutBoundNAT {
        #[serde(rename = "Exceptions")]
        exceptions: Vec<ipnet::Ipv4Net>,
    },
    #[serde(rename = "SDNRoute")]
    SdnRoute {
        #[serde(rename = "DestinationPrefix")]
        destination_prefix: ipnet::Ipv4Net,
        #[serde(rename = "NeedEncap")]
        need_encap: bool,
    },
    ProviderAddress {
        #[serde(rename = "ProviderAddress")]
        provider_address: std::net::Ipv4Addr,
    },
}

pub fn net_conf(vars: &kinit::vars::VarMap) -> (String, NetConf) {
    let text = render("roles/kinit_network/templates/net-conf.json.j2", vars);
    let parsed =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("net-conf.json: {e}\n{text}"));
    (text, parsed)
}

/// `-Name value` pairs of the rendered start.ps1 command line.
pub fn start_ps1_args(vars: &kinit::vars::VarMap) -> (String, BTreeMap<String, String>) {
    let t = task(
        "roles/kinit_windows_node/tasks/main.yml",
        "Node components and kubeadm join (start.ps1, started as a scheduled task)",
    );
    let line = Templar::new()
        .render_str(t["vars"]["start_ps1_command"].as_str().unwrap(), vars)
        .unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[..2], ["&", "'C:\\k\\start.ps1'"], "{line}");
    let mut args = BTreeMap::new();
    for pair in words[2..].chunks(2) {
        let name = pair[0]
            .strip_prefix('-')
            .unwrap_or_else(|| panic!("`{}` in {line}", pair[0]));
        args.insert(name.to_string(), pair[1].trim_matches('\'').to_string());
    }
    (line, args)
}

#[test]
fn net_conf_backend_follows_flannel_backend() {
    let inv = inventory(Compute::Windows);
    for (backend, extra) in backends() {
        let vars = context(&inv, "controller-01", "kinit_network", &extra);
        let (_, conf) = net_conf(&vars);
        assert_eq!(conf.network.to_string(), "10.244.0.0/16");
        assert!(!conf.enable_nftables);
        match backend {
            "host-gw" => assert_eq!(
                conf.backend,
                Backend {
                    kind: "host-gw".into(),
                    vni: None,
                    port: None
                }
            ),
            _ => assert_eq!(
                conf.backend,
                Backend {
                    kind: "vxlan".into(),
                    vni: Some(4096),
                    port: Some(4789)
                }
            ),
        }
    }
}

/// On OVN (more than one hypervisor, or `kinit_ovn=true`) the default backend is vxlan: OVN's
/// port security drops host-gw's pod-addressed packets. On a libvirt NAT network it is host-gw.
#[test]
fn default_backend_is_vxlan_on_ovn_and_host_gw_on_a_nat_network() {
    let inv = inventory(Compute::Windows);
    for (ovn, kind) in [(true, "vxlan"), (false, "host-gw")] {
        let vars = context(
            &inv,
            "controller-01",
            "kinit_network",
            &json!({ "kinit_ovn": ovn }),
        );
        assert_eq!(net_conf(&vars).1.backend.kind, kind, "kinit_ovn={ovn}");
    }
}

#[test]
fn flannel_configmap_patch_carries_net_conf() {
    let inv = inventory(Compute::Windows);
    let t = task(
        "roles/kinit_network/tasks/main.yml",
        "Merge patch for the upstream kube-flannel-cfg ConfigMap",
    );
    for (_, extra) in backends() {
        let mut vars = context(&inv, "controller-01", "kinit_network", &extra);
        let (text, conf) = net_conf(&vars);
        vars.insert("net_conf".into(), json!({"stdout": text.trim_end()}));
        let content = Templar::new()
            .render_value(&t["copy"]["content"], &vars)
            .unwrap();
        let patch: Value = serde_json::from_str(content.as_str().unwrap()).unwrap();
        let cm: k8s_openapi::api::core::v1::ConfigMap =
            serde_json::from_value(patch.clone()).unwrap();
        // Every field survived the typed round trip: nothing misspelt or unknown.
        assert_eq!(serde_json::to_value(&cm).unwrap(), patch);
        assert_eq!(cm.metadata.name.as_deref(), Some("kube-flannel-cfg"));
        assert_eq!(cm.metadata.namespace.as_deref(), Some("kube-flannel"));
        let data = cm.data.unwrap();
        let patched: NetConf = serde_json::from_str(&data["net-conf.json"]).unwrap();
        assert_eq!(patched, conf);
    }
}

#[test]
fn windows_cni_config_matches_the_backend_and_excludes_cluster_ranges_from_nat() {
    let inv = inventory(Compute::Windows);
    for (backend, extra) in backends() {
        let vars = context(&inv, "compute-01", "kinit_windows_node", &extra);
        let text = render("roles/kinit_windows_node/templates/cni.conf.j2", &vars);
        let cni: CniConf =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("CNI config: {e}\n{text}"));
        assert_eq!(cni.kind, "flannel");
        assert_eq!(cni.cni_version, "0.3.0");
        assert_eq!(cni.capabilities.get("portMappings"), Some(&true));
        assert!(
            cni.delegate
                .additional_args
                .iter()
                .all(|a| a.name == "EndpointPolicy")
        );
        let policies: Vec<&Policy> = cni
            .delegate
            .additional_args
            .iter()
            .map(|a| &a.value)
            .collect();
        let Policy::OutBoundNAT { exceptions } = policies[0] else {
            panic!("first policy must be OutBoundNAT: {text}")
        };
        let exceptions: Vec<String> = exceptions.iter().map(ToString::to_string).collect();
        assert_eq!(exceptions, ["10.244.0.0/16", "10.96.0.0/12", "10.0.0.0/24"]);
        assert!(
            matches!(policies[1], Policy::SdnRoute { destination_prefix, need_encap: true } if destination_prefix.to_string() == "10.96.0.0/12")
        );
        match backend {
            "host-gw" => {
                assert_eq!(cni.name, "cbr0");
                assert_eq!(cni.delegate.kind, "sdnbridge");
                assert!(cni.delegate.optional_flags.as_ref().unwrap()["forceBridgeGateway"]);
                assert!(
                    matches!(policies[2], Policy::SdnRoute { destination_prefix, need_encap: true } if destination_prefix.to_string() == "10.0.0.2/32")
                );
            }
            _ => {
                assert_eq!(cni.name, "flannel.4096");
                assert_eq!(cni.delegate.kind, "sdnoverlay");
                // The node's own address, not controller-01's (KubeInit hard-coded 10.0.0.1).
                assert!(
                    matches!(policies[2], Policy::ProviderAddress { provider_address } if provider_address.to_string() == "10.0.0.2")
                );
            }
        }
    }
}

#[test]
fn linux_and_windows_sides_agree() {
    let inv = inventory(Compute::Windows);
    for (backend, extra) in backends() {
        let linux = context(&inv, "controller-01", "kinit_network", &extra);
        let windows = context(&inv, "compute-01", "kinit_windows_node", &extra);
        let (linux_text, linux_conf) = net_conf(&linux);
        let (windows_text, windows_conf) = net_conf(&windows);
        assert_eq!(linux_text, windows_text);
        assert_eq!(linux_conf, windows_conf);

        let (line, args) = start_ps1_args(&windows);
        let mode = if backend == "vxlan" {
            "overlay"
        } else {
            "l2bridge"
        };
        assert_eq!(args["NetworkMode"], mode, "{line}");
        assert_eq!(args["ClusterCIDR"], linux_conf.network.to_string());
        assert_eq!(args["ServiceCIDR"], "10.96.0.0/12");
        assert_eq!(args["KubeDnsServiceIP"], "10.96.0.10");
        assert_eq!(args["ManagementIP"], "10.0.0.2");
        assert_eq!(args["NodeName"], "compute-01.k8scluster.kubeinit.local");
        assert_eq!(
            args["KubernetesVersion"],
            linux["kubernetes_version"].as_str().unwrap()
        );
        assert_eq!(
            args["FlannelVersion"],
            linux["flannel_version"].as_str().unwrap()
        );

        let cni: Value = serde_json::from_str(&render(
            "roles/kinit_windows_node/templates/cni.conf.j2",
            &windows,
        ))
        .unwrap();
        let expected_name = match linux_conf.backend.vni {
            Some(vni) => format!("flannel.{vni}"),
            None => "cbr0".to_string(),
        };
        assert_eq!(cni["name"], expected_name.as_str());
    }
}

/// Issue 18, point 6: on OVN the Linux guests' seed sets MTU 1442; the Windows guest's config
/// ISO gets a first-logon script setting it on the NIC with the node's MAC, and start.ps1 gets
/// `-Mtu 1442` to set it again on the vEthernet adapter. On a libvirt NAT network neither.
#[test]
fn windows_guests_get_the_ovn_mtu_at_first_logon_and_in_start_ps1() {
    use kinit::provider::windows_config::{MTU_SCRIPT, WindowsConfig};
    let inv = inventory(Compute::Windows);
    let t = task(
        "roles/kinit_libvirt/tasks/guests.yml",
        "Windows guest config ISO (autounattend.xml)",
    );
    for (ovn, mtu) in [(true, Some(1442)), (false, None)] {
        let extra = json!({"kinit_ovn": ovn, "kinit_windows_admin_password": "Pa55-word-1"});
        let vars = context(&inv, "compute-01", "kinit_libvirt", &extra);
        let mut args = Templar::new()
            .render_value(&t["virt_config_iso"]["windows"], &vars)
            .unwrap();
        kinit::template::strip_omit(&mut args);
        let config: WindowsConfig =
            serde_json::from_value(args.clone()).unwrap_or_else(|e| panic!("{e}: {args}"));
        assert_eq!(config.mtu, mtu, "kinit_ovn={ovn}");
        let files = config.files().unwrap();
        let script = files
            .iter()
            .find(|(n, _)| n == MTU_SCRIPT)
            .map(|(_, b)| String::from_utf8(b.clone()).unwrap());
        match mtu {
            Some(_) => assert!(
                script.as_deref().unwrap().contains("-NlMtuBytes 1442"),
                "{script:?}"
            ),
            None => assert!(script.is_none(), "{script:?}"),
        }
        let vars = context(&inv, "compute-01", "kinit_windows_node", &extra);
        let (_, start) = start_ps1_args(&vars);
        assert_eq!(start["Mtu"], if ovn { "1442" } else { "0" });
    }
}
