//! `virt_config_iso` on the local host with the real `genisoimage`: the seed and the
//! Windows config ISO are built, read back with `isoinfo`, and rebuilt only on change.

use std::process::Command;

use serde_json::{Value, json};

use super::{ok, run_module};

fn isoinfo(args: &[&str]) -> String {
    let out = Command::new("isoinfo")
        .args(args)
        .output()
        .expect("isoinfo (genisoimage) is installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn seed(path: &str, hostname: &str) -> Value {
    json!({
        "path": path,
        "cloud_init": {
            "hostname": hostname, "fqdn": format!("{hostname}.k8scluster.kubeinit.local"),
            "mac": "52:54:00:30:00:01", "address": "10.0.0.1/24", "gateway": "10.0.0.254",
            "nameservers": ["10.0.0.253"],
            "root_authorized_keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKinitTestKey t@k"]
        }
    })
}

#[tokio::test]
async fn cloud_init_seed_iso_is_built_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/seed.iso");
    let path = path.to_str().unwrap();
    let r = run_module("virt_config_iso", seed(path, "controller-01"), true)
        .await
        .unwrap();
    assert!(r.changed);
    assert!(
        !std::path::Path::new(path).exists(),
        "check mode built nothing"
    );

    assert!(
        ok("virt_config_iso", seed(path, "controller-01"))
            .await
            .changed
    );
    let pvd = isoinfo(&["-d", "-i", path]);
    assert!(pvd.contains("Volume id: cidata"), "{pvd}");
    let files = isoinfo(&["-J", "-f", "-i", path]);
    for f in ["/meta-data", "/user-data", "/network-config"] {
        assert!(files.lines().any(|l| l == f), "{f} missing from {files}");
    }
    let user_data = isoinfo(&["-J", "-i", path, "-x", "/user-data"]);
    assert!(user_data.starts_with("#cloud-config\n"), "{user_data}");
    assert!(user_data.contains("fqdn: controller-01.k8scluster.kubeinit.local"));

    let r = ok("virt_config_iso", seed(path, "controller-01")).await;
    assert!(!r.changed, "same contents: nothing to do");
    let r = ok("virt_config_iso", seed(path, "controller-02")).await;
    assert!(r.changed, "other contents: rebuilt");
    let meta = isoinfo(&["-J", "-i", path, "-x", "/meta-data"]);
    assert!(meta.contains("local-hostname: controller-02"), "{meta}");

    let absent = json!({"path": path, "state": "absent"});
    assert!(ok("virt_config_iso", absent.clone()).await.changed);
    assert!(!ok("virt_config_iso", absent).await.changed);
}

#[tokio::test]
async fn windows_config_iso_carries_the_answer_file_and_hides_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.iso");
    let path = path.to_str().unwrap();
    let args = json!({
        "path": path,
        "windows": {
            "computer_name": "compute-01", "admin_password": "Pa55-w0rd-Xy!",
            "mac": "52:54:00:30:00:02", "address": "10.0.0.2/24", "gateway": "10.0.0.254"
        }
    });
    let r = ok("virt_config_iso", args.clone()).await;
    assert!(r.changed);
    assert!(
        !format!("{r:?}").contains("Pa55-w0rd"),
        "the result never holds the password"
    );
    let pvd = isoinfo(&["-d", "-i", path]);
    assert!(pvd.contains("Volume id: KINITCFG"), "{pvd}");
    let files = isoinfo(&["-J", "-f", "-i", path]);
    assert!(files.lines().any(|l| l == "/autounattend.xml"), "{files}");
    let unattend = isoinfo(&["-J", "-i", path, "-x", "/autounattend.xml"]);
    assert!(unattend.contains("<ComputerName>compute-01</ComputerName>"));
    assert!(unattend.contains("<Value>Pa55-w0rd-Xy!</Value>"));
    assert!(!ok("virt_config_iso", args).await.changed);
}

/// With `winrm_ca_dir` the ISO carries the guest's certificate from the cluster CA as
/// PKCS#12 (opened with the administrator password, the one stored in the state folder), the
/// script imports it, and a second run reuses the certificate: the ISO is not rebuilt.
#[tokio::test]
async fn windows_config_iso_carries_the_certificate_from_the_cluster_ca() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("k8scluster");
    std::fs::create_dir(&state).unwrap();
    let path = dir.path().join("config.iso");
    let path = path.to_str().unwrap();
    let args = json!({
        "path": path,
        "windows": {
            "computer_name": "compute-01", "admin_password": "Pa55-w0rd-Xy!",
            "fqdn": "compute-01.k8scluster.kubeinit.local",
            "mac": "52:54:00:30:00:02", "address": "10.0.0.2/24", "gateway": "10.0.0.254",
            "winrm_ca_dir": state.to_str().unwrap()
        }
    });
    // Check mode: nothing is made, not even the CA.
    let r = run_module("virt_config_iso", args.clone(), true)
        .await
        .unwrap();
    assert!(r.changed);
    assert!(!state.join("winrm-ca.pem").exists());

    assert!(ok("virt_config_iso", args.clone()).await.changed);
    let files = isoinfo(&["-J", "-f", "-i", path]);
    assert!(files.lines().any(|l| l == "/kinit-winrm.pfx"), "{files}");
    let script = isoinfo(&["-J", "-i", path, "-x", "/kinit-winrm.ps1"]);
    assert!(script.contains("Import-PfxCertificate"), "{script}");
    assert!(!script.contains("New-SelfSignedCertificate"), "{script}");
    let out = Command::new("isoinfo")
        .args(["-J", "-i", path, "-x", "/kinit-winrm.pfx"])
        .output()
        .unwrap();
    let stored = std::fs::read(state.join("winrm/compute-01.pfx")).unwrap();
    assert_eq!(out.stdout, stored, "the ISO carries the stored certificate");
    let store = p12_keystore::KeyStore::from_pkcs12(
        &stored,
        "Pa55-w0rd-Xy!",
        p12_keystore::Pkcs12ImportPolicy::Strict,
    )
    .expect("opens with the administrator password");
    assert!(store.private_key_chain().is_some());
    let leaf = std::fs::read_to_string(state.join("winrm/compute-01.json")).unwrap();
    assert!(leaf.contains("\"ip\": \"10.0.0.2\""), "{leaf}");

    assert!(
        !ok("virt_config_iso", args).await.changed,
        "certificate reused: same ISO"
    );
}

#[tokio::test]
async fn config_iso_needs_exactly_one_kind() {
    let err = run_module("virt_config_iso", json!({"path": "/tmp/x.iso"}), false)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`cloud_init`") && err.contains("`windows`"),
        "{err}"
    );
    let err = run_module(
        "virt_config_iso",
        json!({"path": "rel.iso", "state": "absent"}),
        false,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("rel.iso"), "{err}");
}
