//! The slow end-to-end tier of the libvirt provider: `kinit run` against a real libvirtd
//! (`qemu:///system`, QEMU software emulation) with this machine as the only hypervisor.
//! Opt-in (`KINIT_E2E=1` and `--ignored`); `ci/e2e-libvirt.sh` prepares the machine (packages,
//! libvirtd, the Debian image) and runs it:
//!
//! ```sh
//! ci/e2e-libvirt.sh
//! ```
//!
//! The guest image is a debootstrapped Debian 12 with cloud-init (`ci/e2e-image.sh`), served
//! to `download-images` as a `file://` URL with a `SHA256SUMS` file, because no prebuilt cloud
//! image can be downloaded on the build machine. The service node's container
//! (`create-services`) and the Kubernetes part of `deploy-cluster` are skipped with
//! `--skip-tags`: they need a container registry and kubeadm, which this machine lacks.
//!
//! What it proves: the phases up to the guests of `deploy-cluster` succeed; both cluster guests
//! run, booted from overlays over the cached image, and answer `kinit ssh` with their own
//! hostname and address (cloud-init applied kinit's seed); `cleanup-hypervisors` succeeds twice
//! in a row and leaves no domain, volume, pool or network of the cluster behind, while a
//! domain that is not the cluster's survives.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const URI: &str = "qemu:///system";
const CLUSTER: &str = "kinite2e";
const NETWORK: &str = "kinite2e";
const NODES: [(&str, &str); 2] = [("controller-01", "10.77.0.1"), ("compute-01", "10.77.0.2")];
const BYSTANDER: &str = "kinit-e2e-bystander";

fn virsh(args: &[&str]) -> Output {
    Command::new("virsh")
        .arg("-c")
        .arg(URI)
        .args(args)
        .output()
        .expect("run virsh")
}

fn virsh_ok(args: &[&str]) -> String {
    let o = virsh(args);
    assert!(o.status.success(), "virsh {args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

struct E2e {
    dir: tempfile::TempDir,
    pool_path: PathBuf,
    image_url: String,
    sums_url: String,
}

impl E2e {
    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kinit"));
        c.args(args)
            .current_dir(self.dir.path())
            .env("XDG_STATE_HOME", self.state())
            .env("NO_COLOR", "1")
            .env_remove("KINIT_PLAYBOOK_DIR");
        c
    }

    /// `kinit run` with the e2e cluster's shape and variables, then `extra`.
    fn run(&self, extra: &[&str]) -> Output {
        let cloud_images = serde_json::json!({"cloud_images": {"debian": {
            "url": self.image_url, "checksum": format!("sha256:{}", self.sums_url)}}});
        let mut c = self.cmd(&["run", "--spec", "k8s-libvirt-1-1-1"]);
        c.args(shape())
            .args(["-e", "kinit_hosted_deployment=true"])
            .args(["-e", &format!("libvirt_uri={URI}")])
            .args([
                "-e",
                &format!("libvirt_pool_path={}", self.pool_path.display()),
            ])
            .args(["-e", &cloud_images.to_string()])
            .args(extra);
        let started = std::time::Instant::now();
        let out = c.output().expect("run kinit");
        eprintln!(
            "kinit run {extra:?}: {:?} in {:.0?}\n{}",
            out.status.code(),
            started.elapsed(),
            tail(&text(&out.stdout), 40)
        );
        out
    }

    fn ssh(&self, node: &str, command: &[&str]) -> Output {
        let mut c = self.cmd(&["ssh", node, "--spec", "k8s-libvirt-1-1-1"]);
        c.args(shape()).arg("--").args(command);
        c.output().expect("run kinit ssh")
    }
}

/// Cluster name, network and small guests: two 1-vCPU, 1 GiB guests fit a 2-core CI machine.
fn shape() -> [&'static str; 6] {
    [
        "--cluster-spec",
        "[cluster_name=kinite2e]",
        "--network-spec",
        "[network_name=kinite2e,network=10.77.0.0/24]",
        "--cluster-nodes-spec",
        "[[vcpus=1,maxvcpus=1,ram=1GiB,disk=4GiB]]",
    ]
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({:?})\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// A domain that is not the cluster's: defined (not started) before the run, it must survive
/// the cleanup.
fn define_bystander(dir: &Path) {
    let _ = virsh(&["undefine", BYSTANDER]);
    let xml = format!(
        "<domain type='qemu'><name>{BYSTANDER}</name><memory unit='MiB'>64</memory>\
         <os><type arch='x86_64'>hvm</type></os></domain>"
    );
    let f = dir.join("bystander.xml");
    std::fs::write(&f, xml).unwrap();
    virsh_ok(&["define", f.to_str().unwrap()]);
}

fn domains() -> String {
    virsh_ok(&["list", "--all", "--name"])
}

#[test]
#[ignore = "slow (minutes): needs root, a real libvirtd with QEMU and a guest image; run ci/e2e-libvirt.sh"]
fn libvirt_e2e_guests_reachable_then_cleaned_up_twice() {
    if std::env::var("KINIT_E2E").as_deref() != Ok("1") {
        eprintln!(
            "skipped: set KINIT_E2E=1 (ci/e2e-libvirt.sh does) to run the libvirt end-to-end test"
        );
        return;
    }
    let image =
        PathBuf::from(std::env::var("KINIT_E2E_IMAGE").expect("KINIT_E2E_IMAGE: the guest image"));
    let sums = image.with_file_name("SHA256SUMS");
    assert!(
        image.is_file() && sums.is_file(),
        "{} and its SHA256SUMS must exist (ci/e2e-image.sh)",
        image.display()
    );
    let dir = tempfile::tempdir().unwrap();
    // QEMU runs as its own user: the cluster's disks live under libvirt's images folder.
    let pool_path = PathBuf::from(format!(
        "/var/lib/libvirt/images/{CLUSTER}-{}",
        std::process::id()
    ));
    let e = E2e {
        dir,
        pool_path: pool_path.clone(),
        image_url: format!("file://{}", image.display()),
        sums_url: format!("file://{}", sums.display()),
    };
    define_bystander(e.dir.path());

    // Up to the guests of deploy-cluster.
    let out = e.run(&[
        "--stop-after",
        "deploy-cluster",
        "--skip-tags",
        "create-services,kubernetes",
    ]);
    assert_ok(&out, "kinit run --stop-after deploy-cluster");
    let listed = domains();
    for (node, _) in NODES {
        let name = format!("{CLUSTER}-{node}");
        assert!(
            listed.lines().any(|l| l.trim() == name),
            "domain {name} missing:\n{listed}"
        );
        let state = virsh_ok(&["domstate", &name]);
        assert_eq!(state.trim(), "running", "{name}");
    }
    let base = Path::new("/var/lib/libvirt/images").join(image.file_name().unwrap());
    assert!(base.is_file(), "download-images cached {}", base.display());

    // Each guest, through kinit's own SSH command line, is the node kinit configured.
    for (node, ip) in NODES {
        let out = e.ssh(
            node,
            &["hostname", "&&", "ip", "-4", "-o", "addr", "show", "eth0"],
        );
        assert_ok(&out, &format!("kinit ssh {node}"));
        let stdout = text(&out.stdout);
        eprintln!("kinit ssh {node}: {stdout}");
        let mut lines = stdout.lines();
        assert_eq!(lines.next(), Some(node), "hostname of {node}: {stdout}");
        assert!(
            stdout.contains(&format!("inet {ip}/24")),
            "address of {node}: {stdout}"
        );
    }

    // Teardown, twice: the second finds nothing to remove and still succeeds.
    for round in 1..=2 {
        let out = e.run(&["--stop-after", "cleanup-hypervisors"]);
        assert_ok(&out, &format!("cleanup round {round}"));
        let recap = text(&out.stdout);
        let hv = recap
            .lines()
            .find(|l| l.starts_with("hypervisor-01") && l.contains("changed="))
            .unwrap_or_default()
            .to_string();
        assert_eq!(
            hv.contains("changed=0 "),
            round == 2,
            "cleanup round {round}: {hv}"
        );
    }
    let listed = domains();
    assert!(!listed.contains(CLUSTER), "cluster domains left:\n{listed}");
    assert!(
        listed.lines().any(|l| l.trim() == BYSTANDER),
        "the bystander domain was removed:\n{listed}"
    );
    let nets = virsh_ok(&["net-list", "--all", "--name"]);
    assert!(
        !nets.lines().any(|l| l.trim() == NETWORK),
        "network left:\n{nets}"
    );
    let pools = virsh_ok(&["pool-list", "--all", "--name"]);
    assert!(
        !pools.lines().any(|l| l.trim() == CLUSTER),
        "pool left:\n{pools}"
    );
    let vols = virsh(&["vol-list", CLUSTER]);
    assert!(
        !vols.status.success(),
        "vol-list {CLUSTER} still answers: {}",
        text(&vols.stdout)
    );
    for (node, _) in NODES {
        for f in [
            format!("{CLUSTER}-{node}.qcow2"),
            format!("{CLUSTER}-{node}-seed.iso"),
        ] {
            assert!(
                !pool_path.join(&f).exists(),
                "{f} left in {}",
                pool_path.display()
            );
        }
    }
    assert!(base.is_file(), "the cached base image is kept");
    virsh_ok(&["undefine", BYSTANDER]);
    let _ = std::fs::remove_dir(&pool_path);
}
