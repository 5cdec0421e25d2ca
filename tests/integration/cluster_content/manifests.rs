//! Kubernetes objects kinit renders (validation workloads, the Linux-only nodeSelector patch,
//! the service account kubeconfigs of the Windows services) parse into typed Kubernetes
//! structures (`k8s-openapi`), and every field survives the typed round trip.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Service};
use serde::Deserialize;
use serde_json::{Value, json};

use super::fixture::{Compute, context, inventory, render, task};

/// The documents of a multi-document YAML text, as JSON values.
fn documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// Parse `doc` as `T` and require that nothing was dropped on the way.
fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value) -> T {
    let obj: T = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{e}: {doc}"));
    assert_eq!(
        &serde_json::to_value(&obj).unwrap(),
        doc,
        "fields lost in the typed round trip"
    );
    obj
}

fn node_selector(d: &Deployment) -> BTreeMap<String, String> {
    d.spec
        .template
        .spec
        .as_ref()
        .unwrap()
        .node_selector
        .clone()
        .unwrap()
}

#[test]
fn linux_validation_workload_is_pinned_to_linux() {
    let inv = inventory(Compute::Windows);
    let vars = context(&inv, "controller-01", "kinit_validations", &json!({}));
    let docs = documents(&render(
        "roles/kinit_validations/templates/validation-linux.yaml.j2",
        &vars,
    ));
    assert_eq!(docs.len(), 3);
    let ns: Namespace = typed(&docs[0]);
    assert_eq!(ns.metadata.name.as_deref(), Some("kinit-validation"));
    let deploy: Deployment = typed(&docs[1]);
    assert_eq!(node_selector(&deploy)["kubernetes.io/os"], "linux");
    let pod = deploy.spec.template.spec.as_ref().unwrap();
    assert!(
        pod.tolerations.is_none(),
        "Linux workloads must not tolerate the Windows taint"
    );
    let svc: Service = typed(&docs[2]);
    let labels = deploy
        .spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    assert_eq!(svc.spec.unwrap().selector.unwrap(), labels);
}

#[test]
fn windows_validation_workload_is_pinned_to_windows_and_tolerates_the_taint() {
    let inv = inventory(Compute::Windows);
    let vars = context(&inv, "controller-01", "kinit_validations", &json!({}));
    let docs = documents(&render(
        "roles/kinit_validations/templates/validation-windows.yaml.j2",
        &vars,
    ));
    assert_eq!(docs.len(), 2);
    let deploy: Deployment = typed(&docs[0]);
    assert_eq!(node_selector(&deploy)["kubernetes.io/os"], "windows");
    let pod = deploy.spec.template.spec.as_ref().unwrap();
    let image = pod.containers[0].image.as_deref().unwrap();
    assert!(
        image.ends_with("ltsc2022"),
        "Windows Server 2022 needs an ltsc2022 image, got {image}"
    );
    let tol = &pod.tolerations.as_ref().unwrap()[0];
    assert_eq!(
        (
            tol.key.as_deref(),
            tol.value.as_deref(),
            tol.effect.as_deref()
        ),
        (Some("os"), Some("windows"), Some("NoSchedule"))
    );
    let _svc: Service = typed(&docs[1]);

    let untainted = context(
        &inv,
        "controller-01",
        "kinit_validations",
        &json!({"windows_node_taint": false}),
    );
    let docs = documents(&render(
        "roles/kinit_validations/templates/validation-windows.yaml.j2",
        &untainted,
    ));
    let deploy: Deployment = typed(&docs[0]);
    assert!(deploy.spec.template.spec.unwrap().tolerations.is_none());
}

/// The strategic merge patch applied to the flannel and kube-proxy DaemonSets.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct DaemonSetPatch {
    spec: PatchSpec,
}
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct PatchSpec {
    template: PatchTemplate,
}
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct PatchTemplate {
    spec: PatchPodSpec,
}
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct PatchPodSpec {
    #[serde(rename = "nodeSelector")]
    node_selector: BTreeMap<String, String>,
}

#[test]
fn kube_proxy_and_flannel_get_the_linux_node_selector() {
    let inv = inventory(Compute::Windows);
    let vars = context(&inv, "controller-01", "kinit_network", &json!({}));
    let text = render(
        "roles/kinit_network/templates/nodeselector-os-linux-patch.yaml.j2",
        &vars,
    );
    let patch: DaemonSetPatch = serde_yaml::from_str(&text).unwrap();
    assert_eq!(
        patch.spec.template.spec.node_selector,
        BTreeMap::from([("kubernetes.io/os".to_string(), "linux".to_string())])
    );
    for (name, target) in [
        (
            "flannel restricted to Linux nodes",
            "daemonset kube-flannel-ds",
        ),
        (
            "kube-proxy restricted to Linux nodes",
            "daemonset kube-proxy",
        ),
    ] {
        let cmd = task("roles/kinit_network/tasks/main.yml", name)["command"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            cmd.contains(target) && cmd.contains("nodeselector-os-linux-patch.yaml"),
            "{cmd}"
        );
    }
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct Kubeconfig {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    clusters: Vec<Named<ClusterEntry>>,
    users: Vec<Named<UserEntry>>,
    contexts: Vec<Named<ContextEntry>>,
    current_context: String,
}
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    body: T,
}
#[derive(Deserialize, Debug)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct ClusterEntry {
    server: String,
    certificate_authority_data: String,
}
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct UserEntry {
    token: String,
}
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ContextEntry {
    cluster: String,
    user: String,
}

#[test]
fn windows_service_kubeconfig_points_at_the_api_endpoint() {
    let inv = inventory(Compute::Windows);
    let mut vars = context(&inv, "compute-01", "kinit_windows_node", &json!({}));
    vars.insert("kubeconfig_user".into(), json!("kube-proxy"));
    vars.insert("kubeconfig_token".into(), json!("token-value"));
    vars.insert("kubeconfig_ca_data".into(), json!("Q0E="));
    let cfg: Kubeconfig = serde_yaml::from_str(&render(
        "roles/kinit_windows_node/templates/kubeconfig.j2",
        &vars,
    ))
    .unwrap();
    assert_eq!(
        (cfg.api_version.as_str(), cfg.kind.as_str()),
        ("v1", "Config")
    );
    assert_eq!(
        cfg.clusters[0].body.server,
        "https://api.k8scluster.kubeinit.local:6443"
    );
    assert_eq!(cfg.clusters[0].body.certificate_authority_data, "Q0E=");
    assert_eq!(cfg.users[0].body.token, "token-value");
    assert_eq!(cfg.contexts[0].name, cfg.current_context);
    assert_eq!(cfg.contexts[0].body.cluster, cfg.clusters[0].name);
    assert_eq!(cfg.contexts[0].body.user, cfg.users[0].name);
}
