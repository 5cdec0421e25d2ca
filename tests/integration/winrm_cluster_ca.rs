//! The cluster's WinRM CA end to end: kinit's state folder makes the CA, kinit issues a
//! guest's certificate as the PKCS#12 it puts on the config ISO, the WinRM test server
//! presents that certificate (read from the PKCS#12 by Python's `cryptography`, an independent
//! implementation), and kinit's WinRM client connects with the trust the inventory `kinit run`
//! generates names (`ansible_winrm_ca_trust_path`, the cluster CA and nothing else).
//!
//! No Windows host can run here; the test server stands in for the guest's HTTP.sys listener.
//! The guest's address is 127.0.0.1 in these tests (the server's), so the certificate is
//! issued for that address, as `virt_config_iso` issues it for the guest's `kinit_ip`.

use std::path::Path;

use kinit::deploy::state::{StateDir, WINRM_CA};
use kinit::provider::winrm_cert::{self, LeafRequest};
use kinit::secret::Secret;
use kinit::transport::target::{WinRmAuth, WinRmScheme};
use kinit::transport::{Connection, ConnectionKind, HostTarget};
use serde_json::{Value, json};

use crate::cluster_content::fixture::{Compute, cluster};
use crate::support::Test;
use crate::winrm_server::{PASSWORD, USER, WinRmServer, python};

/// The PKCS#12 password: the Windows administrator password in a real cluster.
const PFX_PASSWORD: &str = "Kn1t-Admin-Pa55";

/// A cluster state folder as `kinit run` prepares it (Windows nodes: password and CA).
fn prepared_state(root: &Path) -> StateDir {
    let state = StateDir::new(root.join("k8scluster"));
    state.create().unwrap();
    let prepared = state.prepare(true).unwrap();
    assert!(
        prepared.created.contains(&WINRM_CA),
        "{:?}",
        prepared.created
    );
    state
}

/// compute-01's certificate for `ip`, issued by the CA in `ca_dir` as `virt_config_iso`
/// issues it, stored there; returns the PKCS#12 file.
fn guest_pfx(ca_dir: &Path, ip: &str) -> std::path::PathBuf {
    winrm_cert::ensure_ca(ca_dir).unwrap();
    let req = LeafRequest {
        name: "compute-01".into(),
        ip: ip.parse().unwrap(),
        dns: vec![
            "compute-01".into(),
            "compute-01.k8scluster.kubeinit.local".into(),
        ],
    };
    winrm_cert::guest_pkcs12(ca_dir, &req, &Secret::new(PFX_PASSWORD), true).unwrap();
    ca_dir.join("winrm/compute-01.pfx")
}

/// The test server presenting the certificate in `pfx`.
fn server_with(pfx: &Path) -> WinRmServer {
    WinRmServer::start_env(
        true,
        &["--pfx", pfx.to_str().unwrap()],
        &[("KINIT_WINRM_PFX_PASSWORD", PFX_PASSWORD)],
    )
}

/// compute-01's variables in the inventory `kinit run` generates for this state folder.
fn compute_vars(state: &StateDir) -> serde_json::Map<String, Value> {
    let inv = kinit::deploy::cluster_inventory(&cluster(Compute::Windows), state);
    // The Linux controller gets no WinRM trust; the Windows node only the cluster CA.
    assert!(
        !inv.hosts["controller-01"]
            .vars
            .contains_key("ansible_winrm_ca_trust_path")
    );
    inv.hosts["compute-01"].vars.clone()
}

/// A WinRM target built from the generated inventory's TLS settings, pointed at `srv`.
fn target(vars: &serde_json::Map<String, Value>, srv: &WinRmServer) -> HostTarget {
    let mut t = HostTarget::new("compute-01", ConnectionKind::WinRm);
    t.address = "127.0.0.1".into();
    t.port = Some(srv.port);
    t.user = Some(USER.into());
    t.password = Some(Secret::new(PASSWORD));
    t.connect_attempts = 1;
    assert_eq!(vars["ansible_winrm_scheme"], "https");
    t.winrm.scheme = WinRmScheme::Https;
    t.winrm.auth = WinRmAuth::Ntlm;
    t.winrm.ca_file = Some(vars["ansible_winrm_ca_trust_path"].as_str().unwrap().into());
    t
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

/// (A) `kinit playbook` with the generated inventory (host and port pointed at the test
/// server) runs a command on the "guest" presenting the certificate from the cluster CA; no
/// `--winrm-ca-file`, no validation switched off. pywinrm (what Ansible uses) accepts it too
/// with the same CA file.
#[tokio::test]
async fn cluster_ca_certificate_is_trusted_through_the_generated_inventory() {
    let dir = tempfile::tempdir().unwrap();
    let state = prepared_state(dir.path());
    let srv = server_with(&guest_pfx(&state.root, "127.0.0.1"));
    let mut vars = compute_vars(&state);
    assert_eq!(
        vars["ansible_winrm_ca_trust_path"],
        json!(state.path(WINRM_CA).display().to_string())
    );
    vars.remove("kinit_jump_host");
    vars.insert("ansible_host".into(), json!("127.0.0.1"));
    vars.insert("ansible_port".into(), json!(srv.port));
    vars.insert("ansible_user".into(), json!(USER));
    vars.insert("ansible_password".into(), json!(PASSWORD));
    let inventory = json!({"all": {"hosts": {"compute-01": vars}}});
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n\
        \x20   - win_shell: echo hello-over-cluster-tls; exit 0\n      register: out\n\
        \x20   - assert:\n        that: \"'hello-over-cluster-tls' in out.stdout\"\n";
    let ran = Test::new()
        .write("hosts.yml", &serde_yaml::to_string(&inventory).unwrap())
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.yml"])
        .run()
        .snapshot();
    let (out, err) = (ran.stdout(), ran.stderr());
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.contains("ok=2") && out.contains("failed=0"), "{out}");
    assert!(srv.stat("tls_requests").await > 0);
    assert!(!out.contains(PFX_PASSWORD) && !err.contains(PFX_PASSWORD));

    let script = format!(
        "import winrm\n\
         p = winrm.Protocol('https://127.0.0.1:{port}/wsman', transport='ntlm', \
         username='vagrant', password={pw:?}, server_cert_validation='validate', \
         ca_trust_path={ca:?})\n\
         s = p.open_shell()\n\
         c = p.run_command(s, 'echo', ['pywinrm-ok'])\n\
         out, _, code = p.get_command_output(s, c)\n\
         p.close_shell(s)\n\
         print(code, out.decode().strip())\n",
        port = srv.port,
        pw = PASSWORD,
        ca = state.path(WINRM_CA).display().to_string(),
    );
    let py = std::process::Command::new(python())
        .args(["-c", &script])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&py.stdout);
    assert!(
        py.status.success() && stdout.trim() == "0 pywinrm-ok",
        "pywinrm:\n{stdout}\n{}",
        String::from_utf8_lossy(&py.stderr)
    );
}

/// (B) A certificate from another CA (another cluster's, say) is refused: the issuer is
/// unknown to the cluster's trust, and no shell is opened. The server presents it from PEM
/// files (`--cert-chain/--key`), as issued by kinit's `issue`.
#[tokio::test]
async fn certificate_from_another_ca_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = prepared_state(dir.path());
    let other = dir.path().join("other-cluster");
    std::fs::create_dir(&other).unwrap();
    winrm_cert::ensure_ca(&other).unwrap();
    let req = LeafRequest {
        name: "compute-01".into(),
        ip: "127.0.0.1".parse().unwrap(),
        dns: vec!["compute-01".into()],
    };
    let issued = winrm_cert::issue(&other, &req).unwrap();
    let (chain, key) = (other.join("chain.pem"), other.join("key.pem"));
    std::fs::write(&chain, &issued.cert_pem).unwrap();
    std::fs::write(&key, issued.key_pem.expose()).unwrap();
    let srv = WinRmServer::start(
        true,
        &[
            "--cert-chain",
            chain.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ],
    );
    let err = Connection::open(&target(&compute_vars(&state), &srv))
        .await
        .err()
        .expect("a certificate from another CA was accepted");
    let chain = error_chain(&err);
    let ca = state.path(WINRM_CA).display().to_string();
    assert!(
        chain.contains(&format!(
            "the server's certificate was not issued by a CA in `{ca}` (UnknownIssuer)"
        )),
        "{chain}"
    );
    assert_eq!(srv.stat("shells_created").await, 0);
}

/// (C) The cluster CA's certificate for another address (the guest's real one, 10.0.0.2) is
/// refused when the server answers at 127.0.0.1: the IP subjectAltName is checked.
#[tokio::test]
async fn cluster_certificate_for_another_address_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = prepared_state(dir.path());
    let srv = server_with(&guest_pfx(&state.root, "10.0.0.2"));
    let err = Connection::open(&target(&compute_vars(&state), &srv))
        .await
        .err()
        .expect("a certificate for another address was accepted");
    let chain = error_chain(&err);
    assert!(
        chain.contains("not valid for name") && chain.contains("127.0.0.1"),
        "{chain}"
    );
    assert_eq!(srv.stat("shells_created").await, 0);
}
