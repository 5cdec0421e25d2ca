//! Resume of `kinit run`: after a failure or a Ctrl-C in a phase, a plain re-run converges;
//! `--start-at PHASE` runs only from that phase on.
//!
//! The phases run against libvirt's test driver (`test:///default`), whose state lives in
//! each kinit process, so these runs show the phase machinery (failure recorded, lock
//! released, nothing half-written in the state folder, the re-run ending `ok`); guest
//! creation interrupted across processes is `real_libvirtd_resume` below, against a real
//! libvirtd, and in-process on the test driver in `libvirt/resume.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state/kinit/k8scluster")
    }

    /// `kinit run --spec k8s-libvirt-1-1-1` on this machine, with `uri` as libvirt.
    fn cmd(&self, uri: &str, args: &[&str]) -> Command {
        let p = self.dir.path();
        let mut c = Command::new(env!("CARGO_BIN_EXE_kinit"));
        c.args(["run", "--spec", "k8s-libvirt-1-1-1", "-e"])
            .arg(format!("libvirt_uri={uri}"))
            .args(["-e", "kinit_hypervisor_prepared=true"])
            .args(["-e", "kinit_hosted_deployment=true"])
            .args([
                "-e",
                r#"{"capacity_headroom": 0, "vcpus_per_core": 64}"#,
                "-e",
            ])
            .arg(format!("libvirt_pool_path={}", p.join("pool").display()))
            .args(args)
            .current_dir(p)
            .env("XDG_STATE_HOME", p.join("state"))
            .env("NO_COLOR", "1")
            .env_remove("KINIT_PLAYBOOK_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Phase ends (name, status) of the newest run folder's event log.
    fn last_phases(&self) -> Vec<(String, String)> {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(self.state().join("runs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        runs.sort_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap());
        phases(runs.last().unwrap())
    }
}

fn phases(run: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(run.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "phase_end")
        .map(|e| {
            (
                e["phase"].as_str().unwrap().to_string(),
                e["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn show(o: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const TO_NETWORK: [&str; 6] = [
    "gather-facts",
    "prepare-hypervisors",
    "prepare-environment",
    "cleanup-hypervisors",
    "run-validations",
    "create-network",
];

fn names(p: &[(String, String)]) -> Vec<&str> {
    p.iter().map(|x| x.0.as_str()).collect()
}

#[test]
fn a_failed_phase_then_a_plain_rerun_converges_and_start_at_skips_done_phases() {
    let s = Scratch::new();
    let stop = ["--stop-after", "create-network"];
    // A libvirt that cannot be opened: the first phase that needs it fails, the run ends there.
    let broken = s
        .cmd("test:///nonexistent-kinit-resume.xml", &stop)
        .output()
        .unwrap();
    assert_eq!(broken.status.code(), Some(2), "{}", show(&broken));
    let ran = s.last_phases();
    let (last, status) = ran.last().unwrap().clone();
    assert_eq!(status, "failed", "{ran:?}");
    assert!(ran[..ran.len() - 1].iter().all(|p| p.1 == "ok"), "{ran:?}");
    assert_eq!(names(&ran), TO_NETWORK[..ran.len()], "stopped at `{last}`");
    assert!(!s.state().join("lock").exists(), "the lock is released");

    // The same command, fixed: every phase ends ok.
    let again = s.cmd("test:///default", &stop).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", show(&again));
    let ran = s.last_phases();
    assert_eq!(names(&ran), TO_NETWORK);
    assert!(ran.iter().all(|p| p.1 == "ok"), "{ran:?}");

    // Picking up at the failed phase runs gather-facts (read-only; every phase uses its
    // facts), then that phase and the window after it, nothing else.
    let resumed = s
        .cmd(
            "test:///default",
            &["--start-at", &last, "--stop-after", "create-network"],
        )
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", show(&resumed));
    let at = TO_NETWORK.iter().position(|p| *p == last).unwrap();
    let mut want = vec!["gather-facts"];
    want.extend(TO_NETWORK[at..].iter().filter(|p| **p != "gather-facts"));
    assert_eq!(names(&s.last_phases()), want);
}

#[test]
fn ctrl_c_in_a_phase_then_a_plain_rerun_converges() {
    let s = Scratch::new();
    let stop = ["--stop-after", "create-network"];
    let reference = s.cmd("test:///default", &stop).output().unwrap();
    assert_eq!(reference.status.code(), Some(0), "{}", show(&reference));
    let state_files = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = state_files(&s.state());
    for delay in [150u64, 400, 900, 1500] {
        let child = s.cmd("test:///default", &stop).spawn().unwrap();
        crate::support::wait_catching_sigint(child.id());
        std::thread::sleep(Duration::from_millis(delay));
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let out = child.wait_with_output().unwrap();
        assert!(
            matches!(out.status.code(), Some(0) | Some(130)),
            "SIGINT after {delay} ms: {}",
            show(&out)
        );
        assert!(!s.state().join("lock").exists(), "lock left after Ctrl-C");
        // Keys, password, inventory: the same files, none half-written beside them.
        assert_eq!(state_files(&s.state()), before);
        if out.status.code() == Some(130) {
            // Interrupted in a phase, or (on a loaded machine) after the last one ended, while
            // the run was closing: then every phase of the window is complete.
            let ran = s.last_phases();
            let complete = names(&ran) == TO_NETWORK && ran.iter().all(|p| p.1 == "ok");
            assert!(
                ran.is_empty() || ran.last().unwrap().1 == "interrupted" || complete,
                "{ran:?}"
            );
        }
        let again = s.cmd("test:///default", &stop).output().unwrap();
        assert_eq!(
            again.status.code(),
            Some(0),
            "after {delay} ms: {}",
            show(&again)
        );
        let ran = s.last_phases();
        assert_eq!(names(&ran), TO_NETWORK);
        assert!(ran.iter().all(|p| p.1 == "ok"), "{ran:?}");
    }
}
