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
//!
//! start.ps1 runs detached, in a scheduled task the role starts and then polls. The stand-in
//! plays the Hyper-V switch's network blip (the server closes every connection and refuses new
//! ones for a while) when the first HNS network is made and when flanneld starts; the join
//! must ride it out, with start.ps1 run once and the task's result (exit code, changed) read
//! from the result file. The service account tokens are JWT-shaped by the kubectl stand-in
//! (kubectl against a real API server cannot run here), with an `exp` claim the role reads to
//! renew a token that is about to expire.

use std::path::PathBuf;

use base64::Engine as _;
use serde_json::{Value, json};

use super::hosts::Lab;
use super::{ca_hash, lab_inventory_with, plays_named, run_unchecked, run_with, serve, workspace};
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

/// The control plane's namespace host, the fake Windows host and a workspace whose deploy.yml
/// has the control plane, pod network and Windows workers plays.
struct Cluster {
    lab: Lab,
    win: Windows,
    _test: Test,
    dir: PathBuf,
    manifest: String,
}

impl Cluster {
    fn start(windows_state: Option<Value>) -> Option<Cluster> {
        let Some(lab) = Lab::start(&["controller-01"]) else {
            crate::support::cannot_run("namespace hosts need root (mount namespaces and overlays)");
            return None;
        };
        let test = Test::new();
        let (dir, state) = workspace(&test, Some(&lab.known_hosts));
        let win = Windows::start(windows_state, &state);
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
        let real = kinit::deploy::cluster_inventory(
            &cluster(Compute::Windows),
            &StateDir::new(state.clone()),
        );
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
        Some(Cluster {
            lab,
            win,
            _test: test,
            dir,
            manifest,
        })
    }

    /// `kinit playbook` with `extra` and the digests the role requires.
    fn run(&self, extra: &[&str]) -> (String, String) {
        run_with(&self.lab, &self.dir, &self.manifest, &with_digests(extra))
    }
}

fn with_digests<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = extra.to_vec();
    all.extend(["-e", PINNED_DIGESTS]);
    all
}

/// The `exp` claim of a JWT-shaped token, in seconds since the epoch.
fn token_exp(token: &str) -> i64 {
    let payload = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    claims["exp"].as_i64().unwrap()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The service account token in a kubeconfig on the fake drive.
fn kubeconfig_token(win: &Windows, file: &str) -> String {
    let kc: Value = serde_yaml::from_str(&win.file(&format!(r"C:\k\{file}.kubeconfig"))).unwrap();
    kc["users"][0]["user"]["token"]
        .as_str()
        .unwrap()
        .to_string()
}

fn start_ps1_line(network_mode: &str) -> String {
    let k = r"C:\k";
    format!(
        "start.ps1 -ManagementIP 10.0.0.2 -ClusterCIDR 10.244.0.0/16 -ServiceCIDR 10.96.0.0/12 \
         -KubeDnsServiceIP 10.96.0.10 -NetworkMode {network_mode} -KubernetesVersion 1.37.2 \
         -NodeName {FQDN} -ContainerdVersion 2.1.4 -FlannelVersion v0.27.4 \
         -FlannelCniVersion v1.7.1-flannel2 -WindowsCniVersion v0.3.1 -CniPluginsVersion v1.6.2 \
         -PauseImage registry.k8s.io/pause:3.10 \
         -NssmUrl https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip \
         -NssmSha256 727d1e42275c605e0f04aba98095c38a8e1e46def453cdffce42869428aa6743 \
         -WindowsCniSha256 4f36ee6905ada238ca2a9e1bfb8a1fb2912c2d88c4b6e5af4c41a42db70d7d68 \
         -FlanneldSha256 {FLANNELD} -FlannelCniSha256 {FLANNEL_CNI} \
         -Mtu 0 -KubeDir {k}"
    )
}

fn join_windows_worker_from(
    containers: Containers,
    backend: &str,
    network_mode: &str,
    cni_delegate: &str,
) {
    let state = match containers {
        Containers::Absent => None,
        Containers::InstallPending => Some(json!({
            "features": ["Containers"],
            "boots": 1,
            "reboot_pending": true,
            "services": {},
            "firewall": [],
        })),
    };
    let Some(cluster) = Cluster::start(state) else {
        return;
    };
    let Cluster {
        lab, win, dir: _, ..
    } = &cluster;
    let backend_var = format!("flannel_backend={backend}");
    let extra = [
        "-e",
        backend_var.as_str(),
        "-e",
        "windows_start_poll_delay=1",
    ];

    // First run: the Windows worker joins.
    let (stdout, stderr) = cluster.run(&extra);
    let k = r"C:\k";
    let start_ps1 = start_ps1_line(network_mode);
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
    // for kubelet's API, UDP 4789 for VXLAN; the External HNS network (the Hyper-V switch) is
    // made once, before kubelet runs.
    let overlay_rule: &[&str] = match network_mode {
        "overlay" => &["firewall OverlayTraffic4789UDP UDP 4789"],
        _ => &[],
    };
    let expected: Vec<String> = [
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
        "schedule kinit-start".into(),
        start_ps1.clone(),
        "containerd --register-service".into(),
        "start containerd".into(),
        "firewall kubelet TCP 10250".into(),
        "service kubelet".into(),
    ]
    .into_iter()
    .chain(overlay_rule.iter().map(|s| s.to_string()))
    .chain([
        "hns network External".to_string(),
        format!(r"kubeadm join --config {k}\kubeadm-join.yaml"),
        "service flanneld".into(),
        "start flanneld".into(),
        "service kube-proxy".into(),
        "start kube-proxy".into(),
        format!(r"remove {k}\kubeadm-join.yaml"),
    ])
    .collect();
    assert_eq!(
        calls[install.len()..],
        expected,
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
        let token = kubeconfig_token(win, file);
        assert!(
            token.ends_with(&format!(".sa-token-of-{account}")),
            "{token}"
        );
        // --duration=8760h: valid for a year.
        assert!((token_exp(&token) - now() - 8760 * 3600).abs() < 600);
        assert!(
            !stdout.contains(&format!("sa-token-of-{account}")),
            "{stdout}"
        );
    }
    assert!(!stdout.contains("abcdef.0123456789abcdef"), "{stdout}");
    assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));

    // Second run: nothing changes; start.ps1 runs and finds everything in place, and the
    // tokens, a year from expiry, are kept.
    win.clear_calls();
    let controller_calls = controller.calls().len();
    let (stdout, _) = cluster.run(&extra);
    assert_eq!(win.calls(), ["schedule kinit-start".to_string(), start_ps1]);
    assert!(
        !controller.calls()[controller_calls..]
            .iter()
            .any(|c| c.contains("create token")),
        "{:?}",
        controller.calls()
    );
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

/// Issue 18, point 4: the first HNS network creates the Hyper-V switch, which takes the
/// management NIC away for seconds; flanneld's start may do it again. The stand-in plays both
/// (3 s each: every connection closed, new ones refused) while start.ps1 runs. The join must
/// succeed, with start.ps1 run once and the task's outcome read from the result file.
/// Before, start.ps1 ran inside the WinRM command, whose connection the blip cut.
#[test]
fn windows_worker_join_rides_out_the_network_blips_of_the_hyper_v_switch() {
    let Some(cluster) = Cluster::start(Some(json!({
        "features": [],
        "boots": 1,
        "reboot_pending": false,
        "services": {},
        "firewall": [],
        "blip_ms": 3000,
        "blip_at_flanneld": true,
    }))) else {
        return;
    };
    let win = &cluster.win;
    let (stdout, stderr) = cluster.run(&["-e", "windows_start_poll_delay=1"]);
    let calls = win.calls();
    assert_eq!(
        calls.iter().filter(|c| c.starts_with("start.ps1 ")).count(),
        1,
        "start.ps1 ran once: {calls:?}"
    );
    assert!(
        calls.contains(&"hns network External".to_string()),
        "{calls:?}"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stats = rt.block_on(win.server.stats());
    assert_eq!(stats["blips"], 2, "{stats}");
    assert!(
        stats["blip_closed_connections"].as_i64().unwrap() >= 1,
        "kinit's connection was cut: {stats}"
    );
    // The outcome is the result file's: exit code 0 and a change, reported on the polling task.
    assert_eq!(
        win.file(r"C:\k\start.result"),
        "KINIT_RC=0\nKINIT_CHANGED=True\n"
    );
    assert!(
        win.file(r"C:\k\logs\start.log")
            .contains("kinit: kubeadm join as compute-01.k8scluster.kubeinit.local"),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let polled = stdout
        .split("TASK [")
        .find(|t| t.contains("Node components and kubeadm join (start.ps1 result)]"))
        .unwrap_or_else(|| panic!("no polling task:\n{stdout}"));
    assert!(polled.contains("changed: [compute-01]"), "{polled}");
}

/// The scheduled task's exit code is the polling task's: a start.ps1 that fails (here
/// `kubeadm join`) fails the play, with the log's last lines in the task's output.
#[test]
fn a_failing_start_ps1_fails_the_play_with_its_log() {
    let Some(cluster) = Cluster::start(Some(json!({
        "features": ["Containers"],
        "boots": 1,
        "reboot_pending": false,
        "services": {},
        "firewall": [],
        "join_fails": "error execution phase preflight: stand-in join failure",
    }))) else {
        return;
    };
    let (code, stdout, stderr) = run_unchecked(
        &cluster.dir,
        &cluster.manifest,
        &with_digests(&["-e", "windows_start_poll_delay=1"]),
    );
    assert_ne!(code, Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let all = format!("{stdout}\n{stderr}");
    assert!(all.contains("KINIT_RC=1"), "{all}");
    assert!(
        all.contains("stand-in join failure"),
        "the log tail is shown: {all}"
    );
    assert_eq!(
        cluster
            .win
            .calls()
            .iter()
            .filter(|c| c.starts_with("start.ps1 "))
            .count(),
        1
    );
}

/// Issue 18, point 5(d): the service account tokens expire (`--duration=8760h`) and nothing
/// renews them. A run that finds one with fewer than 30 days left makes a new token for that
/// account only, rewrites its kubeconfig and restarts its running service.
#[test]
fn a_service_account_token_near_its_expiry_is_renewed() {
    let Some(cluster) = Cluster::start(None) else {
        return;
    };
    let win = &cluster.win;
    let extra = ["-e", "windows_start_poll_delay=1"];
    cluster.run(&extra);
    let proxy_token = kubeconfig_token(win, "kube-proxy");

    // flanneld's token now expires in 10 days.
    let kc_path = win.root.path().join("fs/C/k/flanneld.kubeconfig");
    let kc = std::fs::read_to_string(&kc_path).unwrap();
    let old = kubeconfig_token(win, "flanneld");
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let near = format!(
        "{}.{}.sa-token-of-flannel-old",
        b64.encode(br#"{"alg":"RS256"}"#),
        b64.encode(format!(r#"{{"exp":{}}}"#, now() + 10 * 86400))
    );
    std::fs::write(&kc_path, kc.replace(&old, &near)).unwrap();

    win.clear_calls();
    let controller = cluster.lab.host("controller-01");
    let before = controller.calls().len();
    let (stdout, _) = cluster.run(&extra);
    let made: Vec<String> = controller.calls()[before..]
        .iter()
        .filter(|c| c.contains("create token"))
        .cloned()
        .collect();
    assert_eq!(
        made,
        [
            "kubectl --kubeconfig /etc/kubernetes/admin.conf -n kube-flannel create token flannel --duration=8760h"
        ]
    );
    let renewed = kubeconfig_token(win, "flanneld");
    assert!(renewed.ends_with(".sa-token-of-flannel"), "{renewed}");
    assert!(token_exp(&renewed) > now() + 364 * 86400);
    assert_eq!(kubeconfig_token(win, "kube-proxy"), proxy_token);
    let calls = win.calls();
    assert_eq!(
        calls[..2],
        [r"put C:\k\flanneld.kubeconfig", "restart flanneld"],
        "{calls:?}"
    );
    assert!(!stdout.contains("sa-token-of-flannel"), "{stdout}");
}
