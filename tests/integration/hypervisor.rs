//! The whole flow on a real KVM host: `kinit run --spec k8s-libvirt-1-1-1` against the
//! hypervisor named by `KINIT_TEST_HYPERVISOR` (an SSH name, as `--hypervisor-hosts` takes
//! it), then the cluster checked from outside (every node Ready, the kubeconfig saved in the
//! state folder, a re-run changes nothing), then the teardown (`--stop-after
//! cleanup-hypervisors`), which also runs when a step before it failed.
//!
//! Optional settings: `KINIT_TEST_CLUSTER_NODES_SPEC` (passed as `--cluster-nodes-spec`, e.g.
//! `[[when_group=compute_nodes,os=windows]]` for a Windows worker) and `KINIT_TEST_EXTRA_VARS`
//! (one `-e` value). The test is `#[ignore]`d: no build or CI machine has KVM and the tens of
//! GiB of RAM a cluster needs. Run it with `cargo test --test integration
//! full_flow_on_a_real_hypervisor -- --ignored`; without `KINIT_TEST_HYPERVISOR` it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SPEC: &str = "k8s-libvirt-1-1-1";

/// What the suite runs against, from the environment; `None` when no hypervisor is named.
struct Setup {
    hypervisor: String,
    nodes_spec: Option<String>,
    extra_vars: Option<String>,
}

impl Setup {
    fn from_env() -> Option<Setup> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Some(Setup {
            hypervisor: var("KINIT_TEST_HYPERVISOR")?,
            nodes_spec: var("KINIT_TEST_CLUSTER_NODES_SPEC"),
            extra_vars: var("KINIT_TEST_EXTRA_VARS"),
        })
    }

    /// `kinit <sub> --spec ... --hypervisor-hosts ...` with this setup's options, its state
    /// folder under `state_home`.
    fn kinit(&self, state_home: &Path, sub: &str, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kinit"));
        c.arg(sub)
            .args(args)
            .args(["--spec", SPEC, "--hypervisor-hosts", &self.hypervisor])
            .env("XDG_STATE_HOME", state_home)
            .env("NO_COLOR", "1");
        if let Some(n) = &self.nodes_spec {
            c.args(["--cluster-nodes-spec", n]);
        }
        if let Some(e) = &self.extra_vars
            && sub == "run"
        {
            c.args(["-e", e]);
        }
        c
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Tears the cluster down when dropped, so a failed assertion still leaves the hypervisor
/// clean.
struct Teardown<'a> {
    setup: &'a Setup,
    state_home: PathBuf,
}

impl Drop for Teardown<'_> {
    fn drop(&mut self) {
        let out = self
            .setup
            .kinit(
                &self.state_home,
                "run",
                &["--stop-after", "cleanup-hypervisors"],
            )
            .output()
            .expect("run kinit");
        eprintln!("teardown:\n{}", text(&out));
        if !std::thread::panicking() {
            assert!(out.status.success(), "teardown failed:\n{}", text(&out));
        }
    }
}

/// The recap lines (`host : ok=.. changed=..`) of a run's output.
fn recap(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.contains(" changed=") && l.contains(" ok="))
        .collect()
}

#[test]
#[ignore = "needs a real KVM hypervisor: set KINIT_TEST_HYPERVISOR and run with --ignored"]
fn full_flow_on_a_real_hypervisor() {
    let Some(setup) = Setup::from_env() else {
        panic!(
            "KINIT_TEST_HYPERVISOR is not set. Set it to the SSH name of a KVM host \
             (libvirt, about 40 GiB of free RAM) to deploy k8s-libvirt-1-1-1 there for real, \
             validate it and tear it down."
        );
    };
    let scratch = tempfile::tempdir().unwrap();
    let state_home = scratch.path().join("state");
    let teardown = Teardown {
        setup: &setup,
        state_home: state_home.clone(),
    };

    // Deploy: every phase, post-deployment's validations included.
    let run = setup.kinit(&state_home, "run", &[]).output().unwrap();
    assert!(run.status.success(), "deployment failed:\n{}", text(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(!recap(&stdout).is_empty(), "no recap:\n{stdout}");
    assert!(
        recap(&stdout).iter().all(|l| l.contains(" failed=0")),
        "{stdout}"
    );

    // The admin kubeconfig is in the state folder.
    let path = setup
        .kinit(&state_home, "state", &["path"])
        .output()
        .unwrap();
    assert!(path.status.success(), "{}", text(&path));
    let state = PathBuf::from(String::from_utf8_lossy(&path.stdout).trim());
    let kubeconfig = std::fs::read_to_string(state.join("kubeconfig")).unwrap();
    assert!(kubeconfig.contains("kind: Config"), "{kubeconfig}");

    // Every node registered and Ready, seen from the first controller.
    let nodes = setup
        .kinit(
            &state_home,
            "ssh",
            &[
                "controller-01",
                "--",
                "kubectl",
                "--kubeconfig",
                "/etc/kubernetes/admin.conf",
                "get",
                "nodes",
                "--no-headers",
            ],
        )
        .output()
        .unwrap();
    assert!(nodes.status.success(), "{}", text(&nodes));
    let listing = String::from_utf8_lossy(&nodes.stdout);
    let rows: Vec<&str> = listing.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(rows.len(), 2, "controller and compute expected:\n{listing}");
    for row in &rows {
        let status = row.split_whitespace().nth(1).unwrap_or_default();
        assert_eq!(status, "Ready", "{listing}");
    }

    // A second run of the finished cluster changes nothing.
    let again = setup.kinit(&state_home, "run", &[]).output().unwrap();
    assert!(again.status.success(), "re-run failed:\n{}", text(&again));
    let stdout = String::from_utf8_lossy(&again.stdout);
    for line in recap(&stdout) {
        assert!(
            line.contains(" changed=0"),
            "the re-run changed something:\n{stdout}"
        );
    }

    drop(teardown);
}
