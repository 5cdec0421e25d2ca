//! The Linux cluster roles (`kinit_control_plane`, `kinit_network`, `kinit_linux_join`) run by
//! the real `kinit playbook` over SSH against namespace hosts, with recording stand-ins for
//! kubeadm and kubectl (see `hosts`): the order and arguments of every call, the files the
//! roles write, and that a second run changes nothing and creates no token.

mod hosts;
mod hypervisor_packages;
mod images;
mod libvirt;
mod libvirt_ssh;
mod node;
mod node_standins;
mod ovn;
mod ovn_real;
mod services;
mod windows;

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::cluster_content::fixture::{Compute, inventory, repo, yaml};
use crate::support::Test;
use hosts::Lab;

/// A test folder laid out like the repository's `playbooks/` (the roles and `vars/` beside the
/// playbook, where kinit resolves `vars_files`) with an empty `state/`, and, given the lab's
/// host keys, `home/.ssh/known_hosts` for the SSH runs. Returns the folder and `state/`.
fn workspace(test: &Test, known_hosts: Option<&std::path::Path>) -> (PathBuf, PathBuf) {
    let dir = test.path().to_path_buf();
    std::os::unix::fs::symlink(repo().join("roles"), dir.join("roles")).unwrap();
    std::os::unix::fs::symlink(repo().join("playbooks/vars"), dir.join("vars")).unwrap();
    if let Some(k) = known_hosts {
        std::fs::create_dir_all(dir.join("home/.ssh")).unwrap();
        std::fs::copy(k, dir.join("home/.ssh/known_hosts")).unwrap();
    }
    let state = dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    (dir, state)
}

/// The deploy-cluster plays these roles belong to, taken from the repository's playbook.
fn plays() -> String {
    plays_named(&[
        "deploy-cluster (control plane)",
        "deploy-cluster (pod network)",
        "deploy-cluster (Linux workers)",
    ])
}

/// The plays of the repository's deploy-cluster playbook with these names, in its order.
pub(super) fn plays_named(wanted: &[&str]) -> String {
    plays_from("playbooks/deploy-cluster.yml", wanted)
}

/// The plays of a repository playbook with these names, in its order.
pub(super) fn plays_from(playbook: &str, wanted: &[&str]) -> String {
    let plays: Vec<Value> = yaml(playbook)
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| wanted.contains(&p["name"].as_str().unwrap()))
        .cloned()
        .collect();
    assert_eq!(plays.len(), wanted.len());
    serde_yaml::to_string(&plays).unwrap()
}

/// kinit's own k8s-libvirt-1-1-1 inventory, with the two cluster nodes pointed at the lab.
fn lab_inventory(lab: &Lab, state: &std::path::Path) -> String {
    lab_inventory_with(Compute::Linux, lab, state, |_, _| {})
}

/// kinit's own k8s-libvirt-1-1-1 inventory (with a Linux or Windows compute), with
/// controller-01, compute-01 and any other node the lab runs pointed at the lab's SSH hosts; `adjust` changes a host's
/// variables after that (a Windows compute gets its WinRM server there).
pub(super) fn lab_inventory_with(
    compute: Compute,
    lab: &Lab,
    state: &std::path::Path,
    adjust: impl Fn(&str, &mut serde_json::Map<String, Value>),
) -> String {
    let inv = inventory(compute);
    let mut all_vars = inv.groups["all"].vars.clone();
    all_vars.insert("kinit_state_dir".into(), json!(state.display().to_string()));
    let mut children = serde_json::Map::new();
    for (name, group) in &inv.groups {
        if name == "all" || name == "ungrouped" {
            continue;
        }
        let mut hosts = serde_json::Map::new();
        for h in group.hosts.iter().filter(|h| {
            *h == "controller-01" || *h == "compute-01" || lab.hosts.iter().any(|x| x.name == **h)
        }) {
            let mut vars = inv.hosts[h].vars.clone();
            vars.remove("kinit_jump_host");
            if vars["ansible_connection"] == "ssh" && lab.hosts.iter().any(|x| x.name == *h) {
                vars.insert("ansible_host".into(), json!("127.0.0.1"));
                vars.insert("ansible_port".into(), json!(lab.host(h).port));
                vars.insert("ansible_user".into(), json!("root"));
                vars.insert(
                    "ansible_ssh_private_key_file".into(),
                    json!(lab.client_key.display().to_string()),
                );
            }
            adjust(h, &mut vars);
            hosts.insert(h.clone(), Value::Object(vars));
        }
        children.insert(name.clone(), json!({ "hosts": hosts }));
    }
    let doc = json!({
        "all": {
            "vars": all_vars,
            "hosts": { "localhost": { "ansible_connection": "local" } },
            "children": children,
        }
    });
    serde_yaml::to_string(&doc).unwrap()
}

/// The SHA-256 of what `serve` serves at each URL, which `run_with` pins as
/// `flannel_manifest_checksum` (the role requires one).
static SERVED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// A one-file HTTP server on 127.0.0.1 standing in for the flannel release download (the
/// namespace hosts share the machine's network). Returns the URL.
pub(super) fn serve(body: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/kube-flannel.yml", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let digest: String = sha2::Digest::finalize(sha2::Digest::chain_update(
        <sha2::Sha256 as sha2::Digest>::new(),
        body.as_bytes(),
    ))
    .iter()
    .map(|b| format!("{b:02x}"))
    .collect();
    SERVED.lock().unwrap().push((url.clone(), digest));
    url
}

fn run(lab: &Lab, test_dir: &std::path::Path, manifest: &str) -> (String, String) {
    run_with(lab, test_dir, manifest, &[])
}

/// `kinit playbook deploy.yml -i inventory.yml` in `test_dir` with `extra` arguments; fails
/// the test (with the stand-ins' calls) unless it exits 0.
/// `-e flannel_manifest_checksum=sha256:<digest>` for a URL `serve` serves.
fn served_checksum(url: &str) -> Vec<String> {
    let served = SERVED.lock().unwrap();
    served
        .iter()
        .find(|(u, _)| u == url)
        .map(|(_, d)| vec!["-e".into(), format!("flannel_manifest_checksum=sha256:{d}")])
        .unwrap_or_default()
}

pub(super) fn run_with(
    lab: &Lab,
    test_dir: &std::path::Path,
    manifest: &str,
    extra: &[&str],
) -> (String, String) {
    let (code, stdout, stderr) = run_unchecked(test_dir, manifest, extra);
    assert_eq!(
        code,
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}\ncalls: {:?}",
        lab.hosts.iter().map(|h| h.calls()).collect::<Vec<_>>()
    );
    (stdout, stderr)
}

/// `kinit playbook deploy.yml` whatever its outcome: exit code, stdout, stderr.
pub(super) fn run_unchecked(
    test_dir: &std::path::Path,
    manifest: &str,
    extra: &[&str],
) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kinit"))
        .current_dir(test_dir)
        .args(["playbook", "deploy.yml", "-i", "inventory.yml"])
        .args(["-e", &format!("flannel_manifest_url={manifest}")])
        .args(served_checksum(manifest))
        .args(extra)
        .env("HOME", test_dir.join("home"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn linux_roles_drive_kubeadm_and_kubectl_in_order_and_rerun_without_changes() {
    let Some(lab) = Lab::start(&["controller-01", "compute-01"]) else {
        crate::support::cannot_run("namespace hosts need root (mount namespaces and overlays)");
        return;
    };
    let test = Test::new();
    let (dir, state) = workspace(&test, Some(&lab.known_hosts));
    std::fs::write(dir.join("deploy.yml"), plays()).unwrap();
    std::fs::write(dir.join("inventory.yml"), lab_inventory(&lab, &state)).unwrap();
    let manifest = serve("# stand-in for the upstream flannel release manifest\n");

    // First run: a fresh cluster.
    let (stdout, _) = run(&lab, &dir, &manifest);
    let controller = lab.host("controller-01");
    let compute = lab.host("compute-01");
    let k = "kubectl --kubeconfig /etc/kubernetes/admin.conf";
    let cfg = "/etc/kubernetes/kinit";
    assert_eq!(
        controller.calls(),
        [
            format!("kubeadm config images pull --config {cfg}/kubeadm-init.yaml"),
            format!("kubeadm init --config {cfg}/kubeadm-init.yaml --upload-certs"),
            format!("{k} apply -f {cfg}/kube-flannel-v0.27.4.yml"),
            format!(
                "{k} -n kube-flannel patch configmap kube-flannel-cfg --type merge --patch-file {cfg}/kube-flannel-cfg-patch.json"
            ),
            format!(
                "{k} -n kube-flannel patch daemonset kube-flannel-ds --patch-file {cfg}/nodeselector-os-linux-patch.yaml"
            ),
            format!(
                "{k} -n kube-system patch daemonset kube-proxy --patch-file {cfg}/nodeselector-os-linux-patch.yaml"
            ),
            format!("{k} -n kube-flannel rollout status daemonset kube-flannel-ds --timeout=300s"),
            "kubeadm token create --ttl 30m --description kinit join of compute-01".to_string(),
            format!(
                "{k} label node compute-01.k8scluster.kubeinit.local node-role.kubernetes.io/worker= --overwrite"
            ),
        ]
    );
    assert_eq!(
        compute.calls(),
        [format!("kubeadm join --config {cfg}/kubeadm-join.yaml")]
    );

    // What the roles wrote on the controller: the typed kubeadm configuration, the flannel
    // patches, root's kubeconfig; and the admin kubeconfig in the state folder (0600).
    let init = std::fs::read_to_string(controller.etc().join("kubernetes/kinit/kubeadm-init.yaml"))
        .unwrap();
    assert!(
        init.contains("controlPlaneEndpoint: \"api.k8scluster.kubeinit.local:6443\""),
        "{init}"
    );
    let patch: Value = serde_json::from_str(
        &std::fs::read_to_string(
            controller
                .etc()
                .join("kubernetes/kinit/kube-flannel-cfg-patch.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let net_conf: Value =
        serde_json::from_str(patch["data"]["net-conf.json"].as_str().unwrap()).unwrap();
    assert_eq!(net_conf["Backend"], json!({"Type": "host-gw"}));
    let admin = std::fs::read_to_string(controller.etc().join("kubernetes/admin.conf")).unwrap();
    assert_eq!(
        std::fs::read_to_string(controller.root().join(".kube/config")).unwrap(),
        admin
    );
    let saved = state.join("kubeconfig");
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap().trim_end(),
        admin.trim_end()
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&saved).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // The worker joined with the token and the CA hash of the controller's CA, and the join
    // configuration (it holds the token) is gone afterwards.
    let joined = std::fs::read_to_string(compute.dir.join("joined-with.yaml")).unwrap();
    let join: Value = serde_yaml::from_str(&joined).unwrap();
    let bt = &join["discovery"]["bootstrapToken"];
    assert_eq!(bt["token"], "abcdef.0123456789abcdef");
    assert_eq!(
        bt["apiServerEndpoint"],
        "api.k8scluster.kubeinit.local:6443"
    );
    let expected_hash = ca_hash(&controller.etc().join("kubernetes/pki/ca.crt"));
    assert_eq!(
        bt["caCertHashes"],
        json!([format!("sha256:{expected_hash}")])
    );
    assert!(
        !compute
            .etc()
            .join("kubernetes/kinit/kubeadm-join.yaml")
            .exists()
    );
    assert!(
        !stdout.contains("abcdef.0123456789abcdef"),
        "the token must not be printed:\n{stdout}"
    );

    // Second run: nothing changes, no token is created, nobody joins again.
    for h in &lab.hosts {
        h.clear_calls();
    }
    let (stdout, _) = run(&lab, &dir, &manifest);
    for host in ["controller-01", "compute-01"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(host) && l.contains("changed="))
            .unwrap_or_else(|| panic!("no recap line for {host}:\n{stdout}"));
        assert!(
            line.contains("changed=0 "),
            "second run changed something on {host}:\n{stdout}"
        );
    }
    assert_eq!(
        controller.calls(),
        [
            format!("{k} apply -f {cfg}/kube-flannel-v0.27.4.yml"),
            format!(
                "{k} -n kube-flannel patch configmap kube-flannel-cfg --type merge --patch-file {cfg}/kube-flannel-cfg-patch.json"
            ),
            format!(
                "{k} -n kube-flannel patch daemonset kube-flannel-ds --patch-file {cfg}/nodeselector-os-linux-patch.yaml"
            ),
            format!(
                "{k} -n kube-system patch daemonset kube-proxy --patch-file {cfg}/nodeselector-os-linux-patch.yaml"
            ),
            format!("{k} -n kube-flannel rollout status daemonset kube-flannel-ds --timeout=300s"),
            format!(
                "{k} label node compute-01.k8scluster.kubeinit.local node-role.kubernetes.io/worker= --overwrite"
            ),
        ]
    );
    assert_eq!(compute.calls(), Vec::<String>::new());
}

/// The kubeadm discovery hash of a CA certificate, computed as the kubeadm documentation
/// shows (independently of the role's own pipeline text).
pub(super) fn ca_hash(cert: &std::path::Path) -> String {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl x509 -pubkey -noout -in {} | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1",
            cert.display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The names of the tasks that reported `changed` on some host (without their role).
fn changed_tasks(stdout: &str) -> Vec<String> {
    let mut task = String::new();
    let mut out = Vec::new();
    for l in stdout.lines() {
        if let Some(t) = l.strip_prefix("TASK [").and_then(|t| t.strip_suffix(']')) {
            task = t.split_once(" : ").map_or(t, |(_, name)| name).to_string();
        } else if l.starts_with("changed:") && !out.contains(&task) {
            out.push(task.clone());
        }
    }
    out
}
