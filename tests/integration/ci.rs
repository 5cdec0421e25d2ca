//! `kinit ci`: a job run in dry-run mode writes the three reports (JUnit valid against the
//! committed XSD, the JSON event log, the run page with every phase and no secret); a
//! failure injected in the middle phase still runs the teardown and the reports say both;
//! the index and a run page render in headless Chromium.
//!
//! The steps run `tests/fixtures/ci/fake-kinit.sh` (through `--kinit`) instead of `kinit run`:
//! a cluster deployment needs hypervisors, which this machine does not have.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::Test;

const SECRET: &str = "Hunter2-Registry-Secret";

fn jobs() -> String {
    format!(
        "jobs:\n  - label: k8s-libvirt-1-1-1-h\n    schedule: nightly\n    runner: kinit-hypervisor-1\n\
         \x20   extra_vars:\n      registry_password: {SECRET}\n    validate:\n\
         \x20     - {{name: nodes ready, node: controller-01, command: kubectl get nodes}}\n"
    )
}

fn fake() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ci/fake-kinit.sh")
        .display()
        .to_string()
}

fn run_dir(out: &Path) -> PathBuf {
    std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("summary.json").exists())
        .expect("a run folder")
}

const PHASES: [&str; 11] = [
    "gather-facts",
    "prepare-hypervisors",
    "prepare-environment",
    "cleanup-hypervisors",
    "run-validations",
    "create-network",
    "create-services",
    "prepare-cluster",
    "download-images",
    "deploy-cluster",
    "post-deployment",
];

fn xmllint_schema(file: &Path) {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ci/junit.xsd");
    let out = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(file)
        .output()
        .expect("xmllint (apt libxml2-utils) is installed by ci/test.sh");
    assert!(
        out.status.success(),
        "junit.xml does not validate:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn dry_run_writes_junit_event_log_and_page() {
    let t = Test::new().write("jobs.yml", &jobs());
    let out = t.path().join("reports");
    let ran = t
        .args([
            "ci",
            "run",
            "k8s-libvirt-1-1-1-h",
            "--jobs",
            "jobs.yml",
            "--out",
            "reports",
        ])
        .args(["--dry-run", "--pipeline-id", "4711", "--kinit", &fake()])
        .succeeds();
    let dir = run_dir(&out);
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with("k8s-libvirt-1-1-1-h-periodic-4711-"),
        "{name}"
    );
    assert!(name.ends_with("-0"), "{name}");
    assert!(ran.stdout().contains(&name));

    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    for p in PHASES {
        assert!(
            html.contains(&format!("data-phase=\"{p}\"")),
            "page lacks phase {p}"
        );
        assert!(
            junit.contains(&format!("name=\"{p}\"")),
            "junit lacks phase {p}"
        );
        assert!(
            events.contains(&format!("\"phase\":\"{p}\"")),
            "log lacks phase {p}"
        );
    }
    // Every child ran in check mode, the teardown only up to cleanup-hypervisors.
    assert!(html.contains("--check"));
    assert!(html.contains("--stop-after cleanup-hypervisors"));
    assert!(html.contains("class=\"timing-chart\""));
    for f in ["index.html", "junit.xml", "events.jsonl", "summary.json"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(!text.contains(SECRET), "{f} shows the secret");
    }
    xmllint_schema(&dir.join("junit.xml"));
}

#[test]
fn failure_in_the_middle_phase_still_tears_down() {
    let t = Test::new().write("jobs.yml", &jobs());
    let out = t.path().join("reports");
    t.args([
        "ci",
        "run",
        "k8s-libvirt-1-1-1-h",
        "--jobs",
        "jobs.yml",
        "--out",
        "reports",
    ])
    .args(["--kinit", &fake()])
    .env("FAKE_FAIL_PHASE", "create-network")
    .fails_with(2);
    let dir = run_dir(&out);
    assert!(dir.to_str().unwrap().ends_with("-1"));
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(html.contains("data-result=\"failed\""));
    // The deploy failed at create-network; the validation was skipped; the teardown ran.
    assert!(
        html.contains("create &lt;the&gt; bridge"),
        "failed task shown escaped"
    );
    assert!(html.contains("bridge busy"));
    assert!(!html.contains(SECRET) && !junit.contains(SECRET));
    let teardown_row = html
        .lines()
        .find(|l| l.contains("<td>teardown</td>"))
        .unwrap();
    assert!(teardown_row.contains("class=\"ok\""), "{teardown_row}");
    assert!(
        junit.contains("classname=\"k8s-libvirt-1-1-1-h.teardown\" name=\"cleanup-hypervisors\"")
    );
    assert!(junit.contains("<failure message=\"phase create-network ended failed\""));
    assert!(
        !html.contains("data-phase=\"deploy-cluster\""),
        "no phase after the failure"
    );
    xmllint_schema(&dir.join("junit.xml"));
}
