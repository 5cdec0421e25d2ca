//! `kinit ci`: a job run in dry-run mode writes the three reports (JUnit valid against the
//! committed XSD, the JSON event log, the run page with every phase and no secret); a
//! failure injected in the middle phase still runs the teardown and the reports say both;
//! the index and a run page render in headless Chromium.
//!
//! The steps run `tests/fixtures/ci/fake-kinit.sh` (through `--kinit`) instead of `kinit run`:
//! it goes through all eleven phases, which a real deployment cannot do without hypervisors,
//! and feeds the reports task output to escape and a secret to redact. The real `kinit run`
//! behind `kinit ci run` is covered in `ci_real` (phases up to create-network on libvirt's
//! test driver).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::junit_schema::xmllint_schema;
use crate::support::{Ran, Test};

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
    let ran = ci_run_output(ran, "reports", "4711", None, true);
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
        .args(["--kinit", &fake()])
        .env("FAKE_FAIL_PHASE", "create-network")
        .fails_with(2);
    // Kept to the end: the reports live in its scratch folder.
    let _ran = ci_run_output(ran, "reports", "pid", Some("create-network"), false);
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

/// `kinit ci run`'s whole output for the 1-1-1 job with the fake kinit: on stdout the fake's
/// line per phase (the deployment up to the `failed` one, then the teardown up to
/// cleanup-hypervisors) and the run's page under `reports`; on stderr each command launched
/// (and the fake's complaint about the failed phase). `[..]` stands for what changes from run
/// to run: the second the run folder is named after and the process id in the extra-vars
/// file's name.
fn ci_run_output(
    ran: Ran,
    reports: &str,
    pipeline: &str,
    failed: Option<&str>,
    check: bool,
) -> Ran {
    let mut out = String::new();
    for p in PHASES {
        let bad = failed == Some(p);
        out += &format!("fake kinit: {p} {}\n", if bad { "failed" } else { "ok" });
        if bad {
            break;
        }
    }
    for p in &PHASES[..4] {
        out += &format!("fake kinit: {p} ok\n");
    }
    let folder = format!("{reports}/k8s-libvirt-1-1-1-h-periodic-{pipeline}-[..]");
    out += &format!("{folder}-{}/index.html\n", u8::from(failed.is_some()));
    let check = if check { " --check" } else { "" };
    let launched = |step: &str, extra: &str| {
        format!(
            "kinit ci: {step}: kinit run --spec k8s-libvirt-1-1-1 \
             -e @/tmp/kinit-ci-[..]-k8s-libvirt-1-1-1-h.json{extra} \
             --log-json {folder}-u/events-{step}.jsonl{check}\n"
        )
    };
    let mut err = launched("deploy", "");
    if let Some(p) = failed {
        err += &format!("fake kinit: phase {p} failed\n");
    }
    err += &launched("teardown", " --stop-after cleanup-hypervisors");
    ran.stdout_is(&out).stderr_is(&err)
}

/// Two runs of one job (a pass, then a failure) plus `kinit ci index`: the index has the job
/// row with a failing badge, when it last passed, and both runs.
/// The first run's `Ran` keeps the scratch folder (and the reports in it) alive.
fn two_runs_and_index(t: Test) -> (crate::support::Ran, PathBuf) {
    let root = t.path().to_path_buf();
    let t = t.write("jobs.yml", &jobs());
    let first = t
        .args([
            "ci",
            "run",
            "k8s-libvirt-1-1-1-h",
            "--jobs",
            "jobs.yml",
            "--out",
            "reports",
        ])
        .args(["--dry-run", "--kinit", &fake()])
        .succeeds();
    let first = ci_run_output(first, "reports", "pid", None, true);
    // Run names carry a one-second timestamp; keep the two runs apart.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let t2 = Test::new();
    let jobs_file = root.join("jobs.yml");
    let out = root.join("reports");
    let second = t2
        .args(["ci", "run", "k8s-libvirt-1-1-1-h", "--jobs"])
        .args([jobs_file.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .args(["--kinit", &fake()])
        .env("FAKE_FAIL_PHASE", "create-network")
        .fails_with(2);
    let reports = out.display().to_string();
    ci_run_output(second, &reports, "pid", Some("create-network"), false);
    Test::new()
        .args(["ci", "index", &reports, "--history", "5"])
        .succeeds()
        .stdout_is(&format!("{reports}/index.html\n"))
        .stderr_is("");
    (first, out)
}

#[test]
fn index_shows_badges_last_pass_and_history() {
    let (_first, out) = two_runs_and_index(Test::new());
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("data-label=\"k8s-libvirt-1-1-1-h\""));
    assert_eq!(index.matches("class=\"run passed\"").count(), 1);
    assert_eq!(index.matches("class=\"run failed\"").count(), 1);
    assert!(!index.contains("<td class=\"last-passed\">never</td>"));
    let badge = std::fs::read_to_string(out.join("badges/k8s-libvirt-1-1-1-h.svg")).unwrap();
    assert!(badge.contains("failing"), "the last run failed: {badge}");
    assert!(!index.contains(SECRET));
}

/// Headless Chromium: `--dump-dom` of a page, and a screenshot kept under `target/`.
fn chromium(page: &Path, shot: &str) -> Option<String> {
    let Some(bin) = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok())
    else {
        crate::support::cannot_run(
            "no `chromium` binary for the browser checks (apt install chromium)",
        );
        return None;
    };
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.display());
    let base = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ];
    let user = format!("--user-data-dir={}", profile.path().display());
    let run = |extra: &[String]| {
        let out = Command::new(bin)
            .args(base)
            .arg(&user)
            .args(extra)
            .arg(&url)
            .output()
            .expect("run chromium");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let png = artifacts.join(shot);
    let _ = std::fs::remove_file(&png);
    run(&[
        format!("--screenshot={}", png.display()),
        "--window-size=1280,900".into(),
    ]);
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG"), "screenshot is a PNG");
    Some(run(&["--dump-dom".into()]))
}

#[test]
fn index_and_run_page_render_in_chromium() {
    let (_first, out) = two_runs_and_index(Test::new());
    let Some(dom) = chromium(&out.join("index.html"), "ci-index.png") else {
        return;
    };
    assert!(dom.contains("<table id=\"jobs\">"), "{dom}");
    assert!(dom.contains("data-label=\"k8s-libvirt-1-1-1-h\""));
    assert!(dom.contains("<img class=\"badge\" src=\"badges/k8s-libvirt-1-1-1-h.svg\""));
    assert!(dom.contains("class=\"sparkline\""));
    let failed = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_str().unwrap().ends_with("-1"))
        .unwrap();
    let dom = chromium(&failed.join("index.html"), "ci-run.png").unwrap();
    assert!(dom.contains("data-result=\"failed\""));
    for p in ["create-network", "cleanup-hypervisors", "gather-facts"] {
        assert!(
            dom.contains(&format!("data-phase=\"{p}\"")),
            "rendered page lacks {p}"
        );
    }
    assert!(dom.contains("class=\"timing-chart\""));
    assert!(dom.contains("class=\"failed-task\""));
    assert!(!dom.contains(SECRET));
}

/// Every job of the shipped matrix describes a cluster `kinit plan` accepts: the same
/// arguments the launcher gives `kinit run` (extra vars through a file, as it does).
#[test]
fn every_shipped_job_plans() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let m = kinit::ci::Matrix::load(&root.join("ci/jobs.yml")).unwrap();
    assert!(m.jobs.len() >= 4);
    for job in &m.jobs {
        let t = Test::new().write(
            "vars.json",
            &serde_json::to_string(&job.extra_vars).unwrap(),
        );
        let vars = t.path().join("vars.json");
        let args = kinit::ci::launch::cluster_args(job, Some(&vars));
        let ran = t
            .args(["plan".to_string()])
            .args(args)
            .succeeds()
            .snapshot();
        assert!(ran.stdout().contains(&job.shape.spec()), "{}", job.label);
    }
}

/// The GitHub workflow lives where GitHub reads it, and its job-selection step, run by `sh`
/// with the built kinit in a folder that is not a checkout, picks the weekly class on the
/// Saturday schedule and a PR label's job on a pull request.
#[test]
fn github_workflow_selects_jobs_from_any_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(".github/workflows/periodic.yml")).unwrap();
    let wf: serde_json::Value = serde_yaml::from_str(&text).unwrap();
    let steps = wf["jobs"]["matrix"]["steps"].as_array().unwrap();
    let select = steps
        .iter()
        .find(|s| s["id"] == "select")
        .and_then(|s| s["run"].as_str())
        .expect("the select step");
    let script = select.replace(
        "k=target/release/kinit",
        &format!("k={}", env!("CARGO_BIN_EXE_kinit")),
    );
    assert_ne!(script, select, "the step names target/release/kinit");
    let scratch = tempfile::tempdir().unwrap();
    let run = |env: &[(&str, &str)]| {
        let output = scratch.path().join("github_output");
        std::fs::write(&output, "").unwrap();
        let out = Command::new("sh")
            .args(["-c", &script])
            .envs(env.iter().copied())
            .env("GITHUB_OUTPUT", &output)
            .current_dir(scratch.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(&output).unwrap()
    };
    let weekly = run(&[("EVENT", "schedule"), ("SCHEDULE", "0 3 * * 6")]);
    assert!(
        weekly.contains("\"label\":\"k8s-libvirt-3-0-2-h\""),
        "{weekly}"
    );
    assert!(
        !weekly.contains("\"label\":\"k8s-libvirt-1-1-1-h\""),
        "{weekly}"
    );
    assert!(weekly.contains("job_type=periodic"), "{weekly}");
    let pr = run(&[
        ("EVENT", "pull_request"),
        ("PR_LABEL", "k8s-libvirt-1-1-1-h-win"),
    ]);
    assert!(pr.contains("\"label\":\"k8s-libvirt-1-1-1-h-win\""), "{pr}");
    assert!(pr.contains("job_type=pr"), "{pr}");
}
