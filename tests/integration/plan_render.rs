//! `kinit plan --render DIR` through the real binary: every file of a deployment rendered for
//! `k8s-libvirt-1-1-1` with a Windows worker and `k8s-libvirt-3-2-2` (OVN, a Linux and a
//! Windows worker), each checked by tools kinit did not write (`tests/render_check/check.py`:
//! libvirt's `virt-xml-validate`, `xmllint`, the tree-sitter-pwsh grammar, kubernetes-validate's
//! API schemas, the upstream kubeadm/kubeconfig field lists, `named-checkconf`, `haproxy -c`);
//! the checker shown to reject a broken file of each kind; nothing touched besides DIR; DIR
//! refused unless new, empty or an earlier render.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Ran, Test, cannot_run};

const WINDOWS_WORKER: &str = "[[when_group=compute_nodes,os=windows]]";
const WINDOWS_COMPUTE_02: &str = "[[when_name=compute-02,os=windows]]";

/// The venv's Python with the checker's packages (`ci/requirements.txt`), or why not.
fn checker_python() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = std::env::var_os("KINIT_VENV")
        .map(|v| PathBuf::from(v).join("bin/python"))
        .into_iter()
        .chain([root.join("target/venv/bin/python")]);
    for py in candidates {
        let ok = Command::new(&py)
            .args([
                "-c",
                "import kubernetes_validate, tree_sitter, tree_sitter_pwsh, yaml, jsonschema",
            ])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Ok(py);
        }
    }
    Err(
        "no Python with kubernetes-validate and tree-sitter-pwsh (ci/requirements.txt; \
         run ci/test.sh or set KINIT_VENV)"
            .into(),
    )
}

/// Python, `virt-xml-validate` and `xmllint`, or why the checks cannot run.
fn tools() -> Option<PathBuf> {
    let py = match checker_python() {
        Ok(p) => p,
        Err(why) => {
            cannot_run(why);
            return None;
        }
    };
    for (tool, package) in [
        ("virt-xml-validate", "libvirt-clients"),
        ("xmllint", "libxml2-utils"),
        ("named-checkconf", "bind9-utils"),
        ("haproxy", "haproxy"),
    ] {
        if Command::new(tool).arg("-v").output().is_err() {
            cannot_run(format!(
                "no `{tool}` (Debian package {package}; ci/deps.sh test)"
            ));
            return None;
        }
    }
    Some(py)
}

/// `check.py DIR`: its exit code and JSON report.
fn check(py: &Path, dir: &Path) -> (i32, Value) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/render_check/check.py");
    let out = Command::new(py)
        .arg(&script)
        .arg(dir)
        .output()
        .expect("run check.py");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check.py printed no report ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}

fn render(spec: &str, nodes: Option<&str>) -> (Ran, PathBuf) {
    render_with(spec, nodes, &[])
}

/// Digests for the downloads that publish none, as a careful deployment pins them (any 64
/// hex digits do for a render, which downloads nothing).
const DIGESTS: [&str; 6] = [
    "-e",
    "flannel_manifest_checksum=sha256:1111111111111111111111111111111111111111111111111111111111111111",
    "-e",
    "windows_flanneld_sha256=2222222222222222222222222222222222222222222222222222222222222222",
    "-e",
    "flannel_cni_plugin_sha256=3333333333333333333333333333333333333333333333333333333333333333",
];

fn render_with(spec: &str, nodes: Option<&str>, extra: &[&str]) -> (Ran, PathBuf) {
    let mut t = Test::new()
        .args(["plan", "--spec", spec, "--render", "out"])
        .args(DIGESTS);
    if let Some(n) = nodes {
        t = t.args(["--cluster-nodes-spec", n]);
    }
    t = t.args(extra.iter().copied());
    let ran = t.succeeds().snapshot();
    let out = ran.dir.join("out");
    // Nothing else was touched: no state folder (keys, passwords, inventory) was made.
    assert!(
        !ran.dir.join(".state").exists(),
        "a render created the state folder"
    );
    (ran, out)
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn count(report: &Value, kind: &str) -> u64 {
    report["checked"][kind].as_u64().unwrap_or(0)
}

/// Every file valid, and each kind checked as often as the layout has such files.
fn assert_valid(
    py: &Path,
    out: &Path,
    domains: u64,
    networks: u64,
    windows: u64,
    load_balancer: bool,
) {
    let (code, report) = check(py, out);
    assert_eq!(report["failures"], Value::Array(vec![]), "{report:#}");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(count(&report, "domain"), domains, "{report:#}");
    assert_eq!(count(&report, "network"), networks, "{report:#}");
    assert_eq!(count(&report, "unattend"), windows, "{report:#}");
    // The service node's named.conf.options and named.conf.local (with its zones).
    assert_eq!(count(&report, "bind"), 2, "{report:#}");
    assert_eq!(
        count(&report, "haproxy"),
        u64::from(load_balancer),
        "{report:#}"
    );
    assert_eq!(
        count(&report, "cloud-init"),
        3 * (domains - windows),
        "{report:#}"
    );
    // start.ps1, its invocation and the two first-logon scripts per Windows guest.
    assert!(count(&report, "powershell") >= 4 * windows, "{report:#}");
    // kubeadm init + one join per further node, kubelet and kubeconfig documents.
    assert!(count(&report, "config-fields") >= 3, "{report:#}");
    // Validation workloads, flannel patches.
    assert!(count(&report, "kubernetes-schema") >= 8, "{report:#}");
}

#[test]
fn render_one_one_one_with_a_windows_worker_validates() {
    let Some(py) = tools() else { return };
    let (ran, out) = render("k8s-libvirt-1-1-1", Some(WINDOWS_WORKER));
    let index = read(&out, "INDEX");
    assert!(!read(&out, "compute-01/domain.xml").contains("firmware=\"efi\""));
    for f in [
        "controller-01/domain.xml",
        "controller-01/seed/user-data",
        "controller-01/seed/meta-data",
        "controller-01/seed/network-config",
        "controller-01/files/etc/kubernetes/kinit/kubeadm-init.yaml",
        "controller-01/files/etc/kubernetes/kinit/net-conf.json",
        "controller-01/files/etc/kubernetes/kinit/kube-flannel-cfg-patch.json",
        "controller-01/files/etc/kubernetes/kinit/nodeselector-os-linux-patch.yaml",
        "controller-01/files/etc/kubernetes/kinit/validation-windows.yaml",
        "compute-01/domain.xml",
        "compute-01/config-iso/autounattend.xml",
        "compute-01/config-iso/kinit-winrm.ps1",
        "compute-01/config-iso/kinit-winrm.pfx",
        "compute-01/files/C/k/start.ps1",
        "compute-01/files/C/k/kubeadm-join.yaml",
        "compute-01/files/C/etc/cni/net.d/10-flannel.conf",
        "hypervisor-01/network-kimgtnet0.xml",
    ] {
        assert!(out.join(f).is_file(), "{f} not rendered; INDEX:\n{index}");
        assert!(index.contains(f), "{f} not in INDEX:\n{index}");
    }
    // A task that reads a file an earlier task wrote (`cat net-conf.json`) gets that file, as
    // on the host: the flannel ConfigMap patch carries the rendered net-conf.json.
    let kinit = "controller-01/files/etc/kubernetes/kinit";
    let patch: Value =
        serde_json::from_str(&read(&out, &format!("{kinit}/kube-flannel-cfg-patch.json"))).unwrap();
    assert_eq!(
        patch["data"]["net-conf.json"].as_str().unwrap(),
        read(&out, &format!("{kinit}/net-conf.json")).trim_end()
    );
    // prepare-cluster renders the first controller's kubeadm configuration on the machine
    // running kinit with that node's variables: the same file as on the node.
    assert_eq!(
        read(&out, "localhost/state/config/kubeadm-init.yaml"),
        read(&out, &format!("{kinit}/kubeadm-init.yaml"))
    );
    // The exact start.ps1 invocation, with the node's own values (in the script of whichever
    // `win_shell` task runs it; the file is named after the task).
    let scripts: Vec<String> = std::fs::read_dir(out.join("compute-01/win_shell"))
        .expect("win_shell scripts rendered")
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(
        scripts.iter().any(|s| s.contains("start.ps1")
            && s.contains("-ManagementIP 10.0.0.2")
            && s.contains("-NodeName compute-01.")),
        "{scripts:#?}"
    );
    // Values only a running cluster knows are visible placeholders, listed in INDEX; the
    // Windows password is never read from a state folder.
    assert!(
        read(&out, "compute-01/files/C/k/kubeadm-join.yaml")
            .contains("[deploy-time value: Bootstrap token]")
    );
    assert!(
        index.contains("[deploy-time value: Bootstrap token]"),
        "{index}"
    );
    // The WinRM certificate comes from the cluster CA at deploy time: the first-logon script
    // imports it (as deployed), its PKCS#12 is a placeholder, no CA was made.
    assert!(read(&out, "compute-01/config-iso/kinit-winrm.ps1").contains("Import-PfxCertificate"));
    assert!(index.contains("WinRM certificate (PKCS#12)"), "{index}");
    // Downloads are listed with their source and checksum (or its absence).
    assert!(
        index.lines().any(|l| l.contains("kube-flannel-v")
            && l.contains("https://github.com/flannel-io/flannel/releases/download/")),
        "{index}"
    );
    assert!(
        read(&out, "compute-01/config-iso/autounattend.xml").contains("Kinit-Render-Placeholder-1")
    );
    assert!(
        ran.stdout().contains("files rendered for cluster"),
        "{}",
        ran.stdout()
    );
    assert_valid(&py, &out, 2, 1, 1, false);
}

#[test]
fn render_three_two_two_validates() {
    let Some(py) = tools() else { return };
    // With UEFI firmware for the Windows guest (1-1-1 renders the BIOS default).
    let (_ran, out) = render_with(
        "k8s-libvirt-3-2-2",
        Some(WINDOWS_COMPUTE_02),
        &["-e", "windows_firmware=uefi"],
    );
    let domain = read(&out, "compute-02/domain.xml");
    assert!(domain.contains("firmware=\"efi\""), "{domain}");
    assert!(!read(&out, "compute-01/domain.xml").contains("firmware=\"efi\""));
    // Two hypervisors: OVN, so the network is defined on each, and flannel runs vxlan.
    for h in ["hypervisor-01", "hypervisor-02"] {
        assert!(out.join(h).join("network-kimgtnet0.xml").is_file(), "{h}");
    }
    assert!(
        read(
            &out,
            "controller-01/files/etc/kubernetes/kinit/net-conf.json"
        )
        .contains("vxlan")
    );
    assert!(read(&out, "service/files/etc/haproxy/haproxy.cfg").contains("10.0.0.3"));
    for c in ["controller-02", "controller-03"] {
        let join = read(
            &out,
            &format!("{c}/files/etc/kubernetes/kinit/kubeadm-join.yaml"),
        );
        assert!(join.contains("controlPlane:"), "{c}: {join}");
    }
    assert!(out.join("compute-01/seed/user-data").is_file());
    assert!(out.join("compute-02/config-iso/autounattend.xml").is_file());
    assert_valid(&py, &out, 5, 2, 1, true);
}

/// The checker is not a rubber stamp: one broken file of each kind is reported, by name.
#[test]
fn render_checker_rejects_broken_files() {
    let Some(py) = tools() else { return };
    let (_ran, out) = render("k8s-libvirt-1-1-1", Some(WINDOWS_WORKER));
    let edit = |rel: &str, from: &str, to: &str| {
        let text = read(&out, rel);
        assert!(text.contains(from), "{rel} has no `{from}`");
        std::fs::write(out.join(rel), text.replacen(from, to, 1)).unwrap();
    };
    let broken = [
        ("controller-01/domain.xml", "<vcpu", "<vcpus"),
        ("hypervisor-01/network-kimgtnet0.xml", "<ip ", "<ipv4 "),
        (
            "compute-01/config-iso/autounattend.xml",
            "</unattend>",
            "</unattended>",
        ),
        ("compute-01/files/C/k/start.ps1", "param(", "param(("),
        (
            "compute-01/files/C/k/kubeadm-join.yaml",
            "bootstrapToken:",
            "bootstrapTokens:",
        ),
        (
            "controller-01/files/etc/kubernetes/kinit/validation-linux.yaml",
            "replicas:",
            "replica:",
        ),
        (
            "service/files/etc/bind/named.conf.local",
            "type master;",
            "type mastr;",
        ),
        (
            "controller-01/files/etc/kubernetes/kinit/nodeselector-os-linux-patch.yaml",
            "nodeSelector:",
            "nodeSelecter:",
        ),
    ];
    for (rel, from, to) in broken {
        edit(rel, from, to);
    }
    let (code, report) = check(&py, &out);
    assert_eq!(code, 1, "{report:#}");
    let failures: Vec<String> = report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    for (rel, ..) in broken {
        assert!(
            failures.iter().any(|f| f.contains(rel)),
            "{rel} was not reported: {failures:#?}"
        );
    }
    assert_eq!(failures.len(), broken.len(), "{failures:#?}");
}

#[test]
fn render_refuses_a_folder_that_is_not_a_render() {
    let ran = Test::new()
        .write("out/notes.txt", "mine")
        .args(["plan", "--spec", "k8s-libvirt-1-1-1", "--render", "out"])
        .fails_with(1)
        .snapshot()
        .stderr_has("exists and is not empty, and is not an earlier `kinit plan --render`");
    assert_eq!(
        std::fs::read_to_string(ran.dir.join("out/notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn render_replaces_an_earlier_render() {
    let (ran, out) = render("k8s-libvirt-1-1-1", Some(WINDOWS_WORKER));
    assert!(out.join("compute-01/config-iso/autounattend.xml").is_file());
    // The same folder again, now without the Windows worker: the old files are gone.
    Test::new()
        .args(["plan", "--spec", "k8s-libvirt-1-1-1", "--render"])
        .args([out.display().to_string()])
        .args(DIGESTS)
        .succeeds()
        .redact(out.display().to_string(), "[OUT]")
        .snapshot();
    assert!(out.join("compute-01/seed/user-data").is_file());
    assert!(!out.join("compute-01/config-iso").exists());
    assert!(!ran.dir.join(".state").exists());
}

/// A render stops where `kinit run` would, with the same message: here at the digest check of
/// a download that publishes none, when unpinned downloads are refused. A `fail` that judges a
/// stood-in answer does not (the OVN address checks of the 3-2-2 render above).
#[test]
fn render_stops_where_run_would() {
    Test::new()
        .args(["plan", "--spec", "k8s-libvirt-1-1-1", "--render", "out"])
        .args(["-e", "kinit_require_pinned_downloads=true"])
        .fails_with(1)
        .snapshot()
        .stderr_has("controller-01: task `kinit_network : The flannel manifest's checksum is set`")
        .stderr_has("flannel_manifest_checksum is not set");
}
