//! The kubeadm configuration kinit renders parses into the kubeadm.k8s.io/v1beta4 types
//! (InitConfiguration, ClusterConfiguration, JoinConfiguration) and the kubelet's
//! KubeletConfiguration, modelled here field for field with `deny_unknown_fields`, so a
//! misspelt or invented field fails the test as kubeadm's strict decoding would.
//! Reference: https://kubernetes.io/docs/reference/config-api/kubeadm-config.v1beta4/

use serde::Deserialize;
use serde_json::json;

use super::fixture::{Compute, context, inventory, render};

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InitConfiguration {
    api_version: String,
    kind: String,
    #[serde(rename = "localAPIEndpoint")]
    local_api_endpoint: ApiEndpoint,
    node_registration: NodeRegistration,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApiEndpoint {
    advertise_address: String,
    bind_port: u16,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeRegistration {
    name: String,
    cri_socket: String,
    #[serde(default)]
    kubelet_extra_args: Vec<Arg>,
    /// `None` keeps kubeadm's default (the control-plane taint); `Some([])` means none.
    taints: Option<Vec<Taint>>,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Arg {
    name: String,
    value: String,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Taint {
    key: String,
    value: String,
    effect: String,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClusterConfiguration {
    api_version: String,
    kind: String,
    cluster_name: String,
    kubernetes_version: String,
    control_plane_endpoint: String,
    networking: Networking,
    api_server: ApiServer,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Networking {
    pod_subnet: ipnet::Ipv4Net,
    service_subnet: ipnet::Ipv4Net,
    dns_domain: String,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApiServer {
    #[serde(rename = "certSANs")]
    cert_sans: Vec<String>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KubeletConfiguration {
    api_version: String,
    kind: String,
    cgroup_driver: String,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JoinConfiguration {
    api_version: String,
    kind: String,
    discovery: Discovery,
    node_registration: NodeRegistration,
    control_plane: Option<JoinControlPlane>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Discovery {
    bootstrap_token: BootstrapTokenDiscovery,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BootstrapTokenDiscovery {
    api_server_endpoint: String,
    token: String,
    ca_cert_hashes: Vec<String>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JoinControlPlane {
    #[serde(rename = "localAPIEndpoint")]
    local_api_endpoint: ApiEndpoint,
    certificate_key: String,
}

/// The three documents of the init configuration, in order.
fn init_config(
    compute: Compute,
    extra: serde_json::Value,
) -> (
    InitConfiguration,
    ClusterConfiguration,
    KubeletConfiguration,
) {
    let inv = inventory(compute);
    let vars = context(&inv, "controller-01", "kinit_control_plane", &extra);
    let text = render(
        "roles/kinit_control_plane/templates/kubeadm-init.yaml.j2",
        &vars,
    );
    let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde_yaml::Value::deserialize(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 3, "{text}");
    let parse = |i: usize| docs[i].clone();
    (
        serde_yaml::from_value(parse(0))
            .unwrap_or_else(|e| panic!("InitConfiguration: {e}\n{text}")),
        serde_yaml::from_value(parse(1))
            .unwrap_or_else(|e| panic!("ClusterConfiguration: {e}\n{text}")),
        serde_yaml::from_value(parse(2))
            .unwrap_or_else(|e| panic!("KubeletConfiguration: {e}\n{text}")),
    )
}

#[test]
fn init_configuration_has_the_cluster_networks_and_endpoint() {
    let (init, cluster, kubelet) = init_config(Compute::Linux, json!({}));
    assert_eq!(
        (init.api_version.as_str(), init.kind.as_str()),
        ("kubeadm.k8s.io/v1beta4", "InitConfiguration")
    );
    assert_eq!(init.local_api_endpoint.advertise_address, "10.0.0.1");
    assert_eq!(init.local_api_endpoint.bind_port, 6443);
    assert_eq!(
        init.node_registration.name,
        "controller-01.k8scluster.kubeinit.local"
    );
    assert_eq!(
        init.node_registration.cri_socket,
        "unix:///run/containerd/containerd.sock"
    );
    assert_eq!(
        init.node_registration.kubelet_extra_args,
        vec![Arg {
            name: "node-ip".into(),
            value: "10.0.0.1".into()
        }]
    );
    // A Linux worker exists: the controller keeps kubeadm's control-plane taint.
    assert!(init.node_registration.taints.is_none());

    assert_eq!(
        (cluster.api_version.as_str(), cluster.kind.as_str()),
        ("kubeadm.k8s.io/v1beta4", "ClusterConfiguration")
    );
    assert_eq!(cluster.cluster_name, "k8scluster");
    assert_eq!(cluster.networking.pod_subnet.to_string(), "10.244.0.0/16");
    assert_eq!(
        cluster.networking.service_subnet.to_string(),
        "10.96.0.0/12"
    );
    assert_eq!(cluster.networking.dns_domain, "cluster.local");
    assert_eq!(
        cluster.control_plane_endpoint,
        "api.k8scluster.kubeinit.local:6443"
    );
    assert!(
        cluster
            .api_server
            .cert_sans
            .contains(&"api.k8scluster.kubeinit.local".to_string())
    );
    assert!(
        cluster
            .api_server
            .cert_sans
            .contains(&"10.0.0.1".to_string())
    );
    assert_eq!(
        cluster.kubernetes_version,
        format!(
            "v{}",
            super::fixture::yaml("playbooks/vars/cluster.yml")["kubernetes_version"]
                .as_str()
                .unwrap()
        )
    );

    assert_eq!(
        (kubelet.api_version.as_str(), kubelet.kind.as_str()),
        ("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration")
    );
    assert_eq!(kubelet.cgroup_driver, "systemd");
}

#[test]
fn kubernetes_version_is_overridable_with_extra_vars() {
    let (_, cluster, _) = init_config(Compute::Linux, json!({"kubernetes_version": "1.36.4"}));
    assert_eq!(cluster.kubernetes_version, "v1.36.4");
}

#[test]
fn controller_is_untainted_when_the_only_worker_runs_windows() {
    let (init, _, _) = init_config(Compute::Windows, json!({}));
    assert_eq!(init.node_registration.taints, Some(vec![]));
}

#[test]
fn dns_service_ip_lies_in_the_service_subnet() {
    let (_, cluster, _) = init_config(Compute::Linux, json!({}));
    let vars = super::fixture::yaml("playbooks/vars/cluster.yml");
    let dns: std::net::Ipv4Addr = vars["kube_dns_service_ip"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(cluster.networking.service_subnet.contains(&dns));
    // kubeadm gives CoreDNS the tenth address of the service range.
    assert_eq!(
        u32::from(dns) - u32::from(cluster.networking.service_subnet.network()),
        10
    );
}

/// The join configuration for `host` with credentials as the credentials task would set them.
fn join_config(
    compute: Compute,
    host: &str,
    role: &str,
    extra: serde_json::Value,
) -> JoinConfiguration {
    let inv = inventory(compute);
    let mut vars = context(&inv, host, role, &extra);
    let fqdn = vars["kinit_fqdn"].clone();
    let socket = if vars["kinit_os"] == "windows" {
        "npipe:////./pipe/containerd-containerd"
    } else {
        "unix:///run/containerd/containerd.sock"
    };
    for (k, v) in [
        ("join_token", json!("abcdef.0123456789abcdef")),
        ("join_ca_cert_hash", json!("sha256:0123")),
        ("join_certificate_key", json!("c0ffee")),
        ("join_node_name", fqdn),
        ("join_cri_socket", json!(socket)),
    ] {
        vars.insert(k.into(), v);
    }
    vars.entry("join_control_plane").or_insert(json!(false));
    let text = render(
        "roles/kinit_linux_join/templates/kubeadm-join.yaml.j2",
        &vars,
    );
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("JoinConfiguration: {e}\n{text}"))
}

#[test]
fn linux_worker_join_configuration() {
    let join = join_config(Compute::Linux, "compute-01", "kinit_linux_join", json!({}));
    assert_eq!(
        (join.api_version.as_str(), join.kind.as_str()),
        ("kubeadm.k8s.io/v1beta4", "JoinConfiguration")
    );
    let bt = &join.discovery.bootstrap_token;
    assert_eq!(bt.api_server_endpoint, "api.k8scluster.kubeinit.local:6443");
    assert_eq!(bt.token, "abcdef.0123456789abcdef");
    assert_eq!(bt.ca_cert_hashes, vec!["sha256:0123"]);
    assert_eq!(
        join.node_registration.name,
        "compute-01.k8scluster.kubeinit.local"
    );
    assert!(join.node_registration.taints.is_none());
    assert!(join.control_plane.is_none());
}

#[test]
fn controller_join_configuration_carries_the_certificate_key() {
    let join = join_config(
        Compute::Linux,
        "controller-01",
        "kinit_control_plane",
        json!({"join_control_plane": true}),
    );
    let cp = join.control_plane.expect("controlPlane section");
    assert_eq!(cp.certificate_key, "c0ffee");
    assert_eq!(cp.local_api_endpoint.advertise_address, "10.0.0.1");
    assert_eq!(cp.local_api_endpoint.bind_port, 6443);
}

#[test]
fn windows_join_registers_the_fqdn_with_the_windows_taint() {
    let join = join_config(
        Compute::Windows,
        "compute-01",
        "kinit_windows_node",
        json!({}),
    );
    assert_eq!(
        join.node_registration.name,
        "compute-01.k8scluster.kubeinit.local"
    );
    assert_eq!(
        join.node_registration.cri_socket,
        "npipe:////./pipe/containerd-containerd"
    );
    assert_eq!(
        join.node_registration.taints,
        Some(vec![Taint {
            key: "os".into(),
            value: "windows".into(),
            effect: "NoSchedule".into()
        }])
    );
    let untainted = join_config(
        Compute::Windows,
        "compute-01",
        "kinit_windows_node",
        json!({"windows_node_taint": false}),
    );
    assert_eq!(untainted.node_registration.taints, Some(vec![]));
}
