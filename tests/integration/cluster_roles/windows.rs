//! The Windows worker join (`kinit_windows_node`, the "Windows workers" play of
//! deploy-cluster.yml) run by the real `kinit playbook` over WinRM, after the control plane and
//! pod network plays ran on a namespace SSH host with the kubeadm/kubectl stand-ins.
//!
//! **Stand-in**: no Windows host and no PowerShell can exist on the build machine (a real
//! Windows Server cannot run here), so the Windows host is a stand-in. The WinRM test server
//! runs in recording mode (`--windows-root`, tests/winrm_server/windows_standin.py): it speaks
//! real WinRM to kinit, and acts out kinit's Windows module scripts and the uploaded start.ps1
//! on a fake `C:` drive, recording each action in order. It presents the WinRM certificate
//! kinit's cluster CA (made in the test's state folder) issued for it, and the inventory
//! trusts that CA exactly as `kinit run`'s does. What is asserted: the order and
//! arguments of those actions (Containers feature, the reboot with a reconnection, folders,
//! uploads, start.ps1 parameters, the kubelet firewall rule, the services start.ps1 registers
//! and starts, kubelet registered but not started before `kubeadm join`), the files written
//! (CNI configuration for the backend, net-conf.json, service account kubeconfigs, the
//! JoinConfiguration with the token and CA hash the control plane made), that a second run
//! changes nothing, and that a Containers feature left `InstallPending` by first logon gets
//! its reboot before start.ps1 runs.

use serde_json::{Value, json};

use super::hosts::Lab;
use super::{ca_hash, lab_inventory_with, plays_named, run_with, serve, workspace};
use kinit::deploy::state::StateDir;
use kinit::provider::winrm_cert::{self, LeafRequest};

use crate::cluster_content::fixture::{Compute, cluster};
use crate::support::Test;
use crate::winrm_server::{PASSWORD, WinRmServer};

const FQDN: &str = "compute-01.k8scluster.kubeinit.local";
/// The digests the role requires for the downloads that publish none (stand-in values: the
/// stand-in downloads nothing; what start.ps1 receives is asserted).
const FLANNELD: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const FLANNEL_CNI: &str = "2222222222222222222222222222222222222222222222222222222222222222";
const PINNED_DIGESTS: &str = "{\"windows_flanneld_sha256\": \"1111111111111111111111111111111111111111111111111111111111111111\", \"flannel_cni_plugin_sha256\": \"2222222222222222222222222222222222222222222222222222222222222222\"}";

/// The fake Windows host: a WinRM test server in recording mode and its fake drive.
struct Windows {
    server: WinRmServer,
    root: tempfile::TempDir,
}

impl Windows {
    /// A host whose `state.json` (features, pending reboot, services) is `state` at start,
    /// presenting the WinRM certificate the cluster CA in `cluster_state` issued for it, as
    /// the config ISO delivers it (the PKCS#12 opened with the administrator password).
    fn start(state: Option<Value>, cluster_state: &std::path::Path) -> Windows {
        let root = tempfile::tempdir().unwrap();
        if let Some(state) = state {
            std::fs::write(root.path().join("state.json"), state.to_string()).unwrap();
        }
        let password = kinit::secret::Secret::new(PASSWORD);
        winrm_cert::ensure_ca(cluster_state).unwrap();
        // The stand-in answers at 127.0.0.1: its certificate is issued for that address.
        let req = LeafRequest {
            name: "compute-01".into(),
            ip: "127.0.0.1".parse().unwrap(),
            dns: vec!["compute-01".into(), FQDN.into()],
        };
        winrm_cert::guest_pkcs12(cluster_state, &req, &password, true).unwrap();
        let pfx = cluster_state.join("winrm/compute-01.pfx");
        let user = format!("Administrator:{PASSWORD}");
        let server = WinRmServer::start_env(
            true,
            &[
                "--windows-root",
                root.path().to_str().unwrap(),
                "--user",
                &user,
                "--pfx",
                pfx.to_str().unwrap(),
            ],
            &[("KINIT_WINRM_PFX_PASSWORD", PASSWORD)],
        );
        Windows { server, root }
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.root.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn clear_calls(&self) {
        std::fs::write(self.root.path().join("calls.log"), "").unwrap();
    }

    /// A file on the fake drive, by its Windows path.
    fn file(&self, path: &str) -> String {
        let rel = path.trim_start_matches("C:\\").replace('\\', "/");
        let local = self.root.path().join("fs/C").join(rel);
        std::fs::read_to_string(&local).unwrap_or_else(|e| panic!("{path}: {e}"))
    }
}

/// How the Windows host is found when the play starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Containers {
    /// Not installed: the play installs it, and reboots because the install asks for it.
    Absent,
    /// Installed by first logon without its reboot (`InstallPending`, `Installed` true).
    InstallPending,
}

fn join_windows_worker(backend: &str, network_mode: &str, cni_delegate: &str) {
    join_windows_worker_from(Containers::Absent, backend, network_mode, cni_delegate);
}

fn join_windows_worker_from(
    containers: Containers,
    backend: &str,
    network_mode: &str,
    cni_delegate: &str,
) {
    let Some(lab) = Lab::start(&["controller-01"]) else {
        crate::support::cannot_run("namespace hosts need root (mount namespaces and overlays)");
        return;
    };
    let test = Test::new();
    let (dir, state) = workspace(&test, Some(&lab.known_hosts));
    let win = match containers {
        Containers::Absent => Windows::start(None, &state),
        Containers::InstallPending => Windows::start(
            Some(json!({
                "features": ["Containers"],
                "boots": 1,
                "reboot_pending": true,
                "services": {},
                "firewall": [],
            })),
            &state,
        ),
    };
    // What prepare-environment leaves in the state folder: the cluster key and the password
    // Windows Setup was given (here: the WinRM test server's).
    std::fs::write(state.join("id_ed25519.pub"), "ssh-ed25519 AAAA kinit\n").unwrap();
    std::fs::write(
        state.join("windows-admin-password"),
        format!("{PASSWORD}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("deploy.yml"),
        plays_named(&[
            "deploy-cluster (control plane)",
            "deploy-cluster (pod network)",
            "deploy-cluster (Windows workers)",
        ]),
    )
    .unwrap();
    // The trust `kinit run`'s inventory gives the cluster's Windows nodes: the cluster CA.
    let real =
        kinit::deploy::cluster_inventory(&cluster(Compute::Windows), &StateDir::new(state.clone()));
    let trust = real.hosts["compute-01"].vars["ansible_winrm_ca_trust_path"].clone();
    assert_eq!(
        trust,
        json!(state.join("winrm-ca.pem").display().to_string())
    );
    let inventory = lab_inventory_with(Compute::Windows, &lab, &state, |h, vars| {
        if h == "compute-01" {
            vars.insert("ansible_host".into(), json!("127.0.0.1"));
            vars.insert("ansible_port".into(), json!(win.server.port));
            vars.insert("ansible_winrm_ca_trust_path".into(), trust.clone());
        }
    });
    std::fs::write(dir.join("inventory.yml"), inventory).unwrap();
    let manifest = serve("# stand-in for the upstream flannel release manifest\n");
    let backend_var = format!("flannel_backend={backend}");
    let extra = ["-e", backend_var.as_str(), "-e", PINNED_DIGESTS];

    // First run: the Windows worker joins.
    let (stdout, stderr) = run_with(&lab, &dir, &manifest, &extra);
    let k = r"C:\k";
    let start_ps1 = format!(
        "start.ps1 -ManagementIP 10.0.0.2 -ClusterCIDR 10.244.0.0/16 -ServiceCIDR 10.96.0.0/12 \
         -KubeDnsServiceIP 10.96.0.10 -NetworkMode {network_mode} -KubernetesVersion 1.37.2 \
         -NodeName {FQDN} -ContainerdVersion 2.1.4 -FlannelVersion v0.27.4 \
         -FlannelCniVersion v1.7.1-flannel2 -WindowsCniVersion v0.3.1 -CniPluginsVersion v1.6.2 \
         -PauseImage registry.k8s.io/pause:3.10 \
         -NssmUrl https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip \
         -NssmSha256 727d1e42275c605e0f04aba98095c38a8e1e46def453cdffce42869428aa6743 \
         -WindowsCniSha256 4f36ee6905ada238ca2a9e1bfb8a1fb2912c2d88c4b6e5af4c41a42db70d7d68 \
         -FlanneldSha256 {FLANNELD} -FlannelCniSha256 {FLANNEL_CNI} \
         -KubeDir {k}"
    );
    let install: &[&str] = match containers {
        Containers::Absent => &["Install-WindowsFeature Containers"],
        Containers::InstallPending => &[],
    };
    let calls = win.calls();
    assert_eq!(
        calls[..install.len()],
        *install,
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // kubelet is registered, not started, before `kubeadm join`: the join's kubelet-start
    // phase starts it (upstream PrepareNode.ps1 only registers it too). TCP 10250 is opened
    // for kubelet's API.
    assert_eq!(
        calls[install.len()..],
        [
            "shutdown.exe /r /t 2".to_string(),
            format!("mkdir {k}"),
            r"mkdir C:\etc\kube-flannel".into(),
            r"mkdir C:\etc\cni\net.d".into(),
            r"mkdir C:\opt\cni\bin".into(),
            format!(r"put {k}\start.ps1"),
            r"put C:\etc\kube-flannel\net-conf.json".into(),
            r"put C:\etc\cni\net.d\10-flannel.conf".into(),
            format!(r"put {k}\kube-proxy.kubeconfig"),
            format!(r"put {k}\flanneld.kubeconfig"),
            format!(r"put {k}\kubeadm-join.yaml"),
            start_ps1.clone(),
            "containerd --register-service".into(),
            "start containerd".into(),
            "firewall kubelet TCP 10250".into(),
            "service kubelet".into(),
            format!(r"kubeadm join --config {k}\kubeadm-join.yaml"),
            "service flanneld".into(),
            "start flanneld".into(),
            "service kube-proxy".into(),
            "start kube-proxy".into(),
            format!(r"remove {k}\kubeadm-join.yaml"),
        ],
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );

    // The controller made the join token, read the CA, made the service account tokens and
    // labelled the Windows node.
    let controller = lab.host("controller-01");
    let kube = "kubectl --kubeconfig /etc/kubernetes/admin.conf";
    let windows_calls: Vec<String> = controller
        .calls()
        .into_iter()
        .skip_while(|c| !c.contains("kinit join of compute-01"))
        .collect();
    assert_eq!(
        windows_calls,
        [
            "kubeadm token create --ttl 30m --description kinit join of compute-01".to_string(),
            format!(
                "{kube} config view --raw -o jsonpath={{.clusters[0].cluster.certificate-authority-data}}"
            ),
            format!("{kube} -n kube-system create token kube-proxy --duration=8760h"),
            format!("{kube} -n kube-flannel create token flannel --duration=8760h"),
            format!("{kube} label node {FQDN} node-role.kubernetes.io/worker= --overwrite"),
        ]
    );

    // The reboot: kinit dropped the connection and came back on a new shell.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stats = rt.block_on(win.server.stats());
    assert_eq!(
        stats["shells_created"], 2,
        "one reconnection after the reboot: {stats}"
    );
    assert_eq!(stats["shells_open"], 0, "{stats}");

    // kubeadm join ran with the token from the controller and its CA's hash, as the FQDN,
    // with the Windows CRI socket and the Windows taint.
    let join: Value = serde_yaml::from_str(
        &std::fs::read_to_string(win.root.path().join("joined-with.yaml")).unwrap(),
    )
    .unwrap();
    let bt = &join["discovery"]["bootstrapToken"];
    assert_eq!(bt["token"], "abcdef.0123456789abcdef");
    assert_eq!(
        bt["apiServerEndpoint"],
        "api.k8scluster.kubeinit.local:6443"
    );
    let hash = ca_hash(&controller.etc().join("kubernetes/pki/ca.crt"));
    assert_eq!(bt["caCertHashes"], json!([format!("sha256:{hash}")]));
    let reg = &join["nodeRegistration"];
    assert_eq!(reg["name"], FQDN);
    assert_eq!(reg["criSocket"], "npipe:////./pipe/containerd-containerd");
    assert_eq!(
        reg["taints"],
        json!([{"key": "os", "value": "windows", "effect": "NoSchedule"}])
    );

    // The CNI plugin and flannel backend agree; the service kubeconfigs hold the tokens.
    let cni: Value = serde_json::from_str(&win.file(r"C:\etc\cni\net.d\10-flannel.conf")).unwrap();
    assert_eq!(cni["delegate"]["type"], cni_delegate);
    let net_conf: Value =
        serde_json::from_str(&win.file(r"C:\etc\kube-flannel\net-conf.json")).unwrap();
    assert_eq!(net_conf["Backend"]["Type"], backend);
    for (file, account) in [("kube-proxy", "kube-proxy"), ("flanneld", "flannel")] {
        let kc: Value =
            serde_yaml::from_str(&win.file(&format!(r"C:\k\{file}.kubeconfig"))).unwrap();
        assert_eq!(
            kc["users"][0]["user"]["token"],
            format!("sa-token-of-{account}")
        );
        assert!(
            !stdout.contains(&format!("sa-token-of-{account}")),
            "{stdout}"
        );
    }
    assert!(!stdout.contains("abcdef.0123456789abcdef"), "{stdout}");
    assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));

    // Second run: nothing changes; start.ps1 runs and finds everything in place.
    win.clear_calls();
    let (stdout, _) = run_with(&lab, &dir, &manifest, &extra);
    assert_eq!(win.calls(), [start_ps1]);
    for host in ["controller-01", "compute-01"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(host) && l.contains("changed="))
            .unwrap_or_else(|| panic!("no recap line for {host}:\n{stdout}"));
        assert!(
            line.contains("changed=0 ") && line.contains("failed=0 "),
            "second run on {host}:\n{stdout}"
        );
    }
}

#[test]
fn windows_worker_joins_over_winrm_with_host_gw() {
    join_windows_worker("host-gw", "l2bridge", "sdnbridge");
}

#[test]
fn windows_worker_joins_over_winrm_with_vxlan() {
    join_windows_worker("vxlan", "overlay", "sdnoverlay");
}

/// Regression (issue 18): Windows Setup's first logon installs the Containers feature without
/// rebooting; Windows then reports it `InstallPending` with `Installed` already true, and
/// win_feature used to see nothing to do and no reboot, so start.ps1 found the feature not
/// installed. The play must reboot the host before start.ps1.
#[test]
fn windows_worker_reboots_for_a_pending_containers_feature() {
    join_windows_worker_from(
        Containers::InstallPending,
        "host-gw",
        "l2bridge",
        "sdnbridge",
    );
}
