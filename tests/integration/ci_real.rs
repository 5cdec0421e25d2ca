//! `kinit ci run` driving the real `kinit run` (no stand-in): the job's phases run on this
//! machine against libvirt's test driver (`test:///default`, whose objects live inside each
//! kinit process), with the local machine as the hypervisor, its preparation switched off and
//! the capacity checks relaxed, all passed as `kinit ci run -e`. Guests cannot run here, so
//! the passing job deploys up to create-network (`--stop-after`). Covered: the three reports
//! of a passing run and of a dry run (`--check`), a failure injected in create-network (the
//! middle of the eleven phases) that still tears down, Ctrl-C forwarded to the deploy with
//! the teardown still run, and a failing teardown reported next to the failed deploy.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::junit_schema::xmllint_schema;

const SECRET: &str = "Registry-Pa55-Real-Run";
const LABEL: &str = "k8s-libvirt-1-1-1-h";

const DEPLOYED: [&str; 6] = [
    "gather-facts",
    "prepare-hypervisors",
    "prepare-environment",
    "cleanup-hypervisors",
    "run-validations",
    "create-network",
];

/// The phases of a teardown (`--stop-after cleanup-hypervisors`): no preparation.
const TEARDOWN: [&str; 3] = ["gather-facts", "prepare-environment", "cleanup-hypervisors"];

/// A scratch folder with the job matrix, its own `XDG_STATE_HOME` (the cluster's state
/// folder) and the reports folder.
struct Job {
    dir: tempfile::TempDir,
}

impl Job {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let jobs = format!(
            "jobs:\n  - label: {LABEL}\n    schedule: nightly\n    runner: kinit-hypervisor-1\n\
             \x20   extra_vars:\n      registry_password: {SECRET}\n    validate:\n\
             \x20     - {{name: nodes ready, node: controller-01, command: kubectl get nodes}}\n"
        );
        std::fs::write(dir.path().join("jobs.yml"), jobs).unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn out(&self) -> PathBuf {
        self.path().join("reports")
    }

    /// `kinit ci run LABEL` with the variables that keep the cluster on the test driver;
    /// `args` come last (a later `-e` wins).
    fn ci(&self, args: &[&str]) -> Command {
        let pool = self.path().join("pool");
        let mut c = Command::new(env!("CARGO_BIN_EXE_kinit"));
        c.args(["ci", "run", LABEL, "--jobs", "jobs.yml", "--out", "reports"])
            .args(["--pipeline-id", "77"])
            .args(["-e", "libvirt_uri=test:///default"])
            .args(["-e", "kinit_hypervisor_prepared=true"])
            .args(["-e", "kinit_hosted_deployment=true"])
            .args(["-e", r#"{"capacity_headroom": 0, "vcpus_per_core": 64}"#])
            .args(["-e", &format!("libvirt_pool_path={}", pool.display())])
            .args(args)
            .current_dir(self.path())
            .env("XDG_STATE_HOME", self.path().join("state"))
            .env("NO_COLOR", "1")
            .env_remove("KINIT_PLAYBOOK_DIR")
            .env_remove("CI_PIPELINE_ID")
            .env_remove("GITHUB_RUN_ID");
        c
    }

    /// A guest disk left behind by an earlier run, in the pool folder: cleanup-hypervisors
    /// removes it, a dry run must not.
    fn leftover_disk(&self) -> PathBuf {
        let pool = self.path().join("pool");
        std::fs::create_dir_all(&pool).unwrap();
        let disk = pool.join("k8scluster-controller-01.qcow2");
        std::fs::write(&disk, "old disk").unwrap();
        disk
    }

    fn state(&self) -> PathBuf {
        self.path().join("state/kinit/k8scluster")
    }

    /// The one finished run folder.
    fn run_dir(&self) -> PathBuf {
        let runs: Vec<PathBuf> = std::fs::read_dir(self.out())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("summary.json").exists())
            .collect();
        assert_eq!(runs.len(), 1, "{runs:?}");
        runs[0].clone()
    }

    /// Every report file of the run holds none of the job's secrets: the registry password
    /// from the matrix, the Windows password (only made for a cluster with Windows nodes) and
    /// private key kinit generated for the cluster.
    fn assert_no_secret(&self, dir: &Path) {
        let password = std::fs::read_to_string(self.state().join("windows-admin-password")).ok();
        let key = std::fs::read_to_string(self.state().join("id_ed25519")).unwrap();
        let key_body = key.lines().nth(1).expect("a key body line");
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let f = e.file_name();
            assert!(!text.contains(SECRET), "{f:?} shows the registry password");
            if let Some(password) = &password {
                assert!(!text.contains(password.trim()), "{f:?} shows the password");
            }
            assert!(!text.contains(key_body), "{f:?} shows the private key");
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    )
}

fn read(dir: &Path, f: &str) -> String {
    std::fs::read_to_string(dir.join(f)).unwrap()
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&read(dir, "summary.json")).unwrap()
}

/// (step, phase, status) of every phase row of the run page.
fn page_phases(html: &str) -> Vec<(String, String, String)> {
    let attr = |l: &str, a: &str| {
        let start = l.find(&format!("{a}=\"")).unwrap() + a.len() + 2;
        l[start..start + l[start..].find('"').unwrap()].to_string()
    };
    html.lines()
        .filter(|l| l.starts_with("<tr class=\"phase\""))
        .map(|l| {
            let status = l.split("<td class=\"").nth(1).unwrap();
            (
                attr(l, "data-step"),
                attr(l, "data-phase"),
                status[..status.find('"').unwrap()].to_string(),
            )
        })
        .collect()
}

fn phases_of(rows: &[(String, String, String)], step: &str) -> Vec<(String, String)> {
    rows.iter()
        .filter(|r| r.0 == step)
        .map(|r| (r.1.clone(), r.2.clone()))
        .collect()
}

fn ok_phases(names: &[&str]) -> Vec<(String, String)> {
    names
        .iter()
        .map(|p| (p.to_string(), "ok".to_string()))
        .collect()
}

fn step_status(s: &Value, name: &str) -> String {
    s["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {s}"))["status"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Every line of the run's event log is JSON; the phase ends per step, in order.
fn logged_phases(events: &str) -> Vec<(String, String, String)> {
    let mut step = String::new();
    let mut v = Vec::new();
    for line in events.lines() {
        let ev: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        match ev["event"].as_str() {
            Some("ci_step") => step = ev["step"].as_str().unwrap().to_string(),
            Some("phase_end") => v.push((
                step.clone(),
                ev["phase"].as_str().unwrap().to_string(),
                ev["status"].as_str().unwrap().to_string(),
            )),
            _ => {}
        }
    }
    v
}

#[test]
fn real_deploy_to_create_network_writes_the_three_reports() {
    let job = Job::new();
    let disk = job.leftover_disk();
    let ran = job
        .ci(&["--stop-after", "create-network"])
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", show(&ran));
    assert!(
        !disk.exists(),
        "cleanup-hypervisors removed the old guest disk"
    );
    let dir = job.run_dir();
    let name = dir.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("k8s-libvirt-1-1-1-h-periodic-77-"),
        "{name}"
    );
    assert!(name.ends_with("-0"), "{name}");
    assert!(text(&ran.stdout).contains(name));

    // Run page: every phase the deploy ran and every phase of the teardown, each ok.
    let html = read(&dir, "index.html");
    assert!(html.contains("data-result=\"passed\""));
    let rows = page_phases(&html);
    assert_eq!(phases_of(&rows, "deploy"), ok_phases(&DEPLOYED));
    assert_eq!(phases_of(&rows, "teardown"), ok_phases(&TEARDOWN));
    assert!(html.contains("--stop-after create-network"));
    assert!(html.contains("--stop-after cleanup-hypervisors"));
    assert!(html.contains("the deployment stopped after create-network"));
    assert!(html.contains("class=\"timing-chart\""));
    assert!(html.contains("hypervisor-01"), "hosts listed");

    // Event log: the real children's events, the network created on the test driver.
    let events = read(&dir, "events.jsonl");
    let logged = logged_phases(&events);
    let want: Vec<(String, String, String)> = DEPLOYED
        .iter()
        .map(|p| ("deploy", *p))
        .chain(TEARDOWN.iter().map(|p| ("teardown", *p)))
        .map(|(s, p)| (s.to_string(), p.to_string(), "ok".to_string()))
        .collect();
    assert_eq!(logged, want);
    assert!(
        events.lines().any(
            |l| l.contains("\"task\":\"kinit_libvirt : Cluster network\"")
                && l.contains("\"status\":\"changed\"")
        ),
        "the deploy created the network"
    );

    // JUnit: valid, a case per phase under its step, nothing failed.
    let junit = read(&dir, "junit.xml");
    for p in DEPLOYED {
        assert!(
            junit.contains(&format!("classname=\"{LABEL}.deploy\" name=\"{p}\" time=")),
            "junit lacks deploy phase {p}"
        );
    }
    assert!(junit.contains(&format!(
        "classname=\"{LABEL}.teardown\" name=\"cleanup-hypervisors\""
    )));
    assert!(!junit.contains("<failure") && !junit.contains("<error"));
    xmllint_schema(&dir.join("junit.xml"));

    let s = summary(&dir);
    assert_eq!(s["passed"], true);
    assert_eq!(step_status(&s, "deploy"), "ok");
    assert_eq!(step_status(&s, "validate: nodes ready"), "skipped");
    assert_eq!(step_status(&s, "teardown"), "ok");
    job.assert_no_secret(&dir);
    // The job's variables went through a private temp file, removed at the end.
    assert!(!html.contains(SECRET) && !text(&ran.stderr).contains(SECRET));
    assert!(!job.state().join("lock").exists());
    // The children's own JUnit files (kinit run's writer) are valid too.
    let runs: Vec<PathBuf> = std::fs::read_dir(job.state().join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("junit.xml"))
        .collect();
    assert_eq!(runs.len(), 2, "deploy and teardown: {runs:?}");
    for j in &runs {
        xmllint_schema(j);
    }
}

#[test]
fn real_failure_in_create_network_still_tears_down() {
    let job = Job::new();
    // The injected failure: virt_pool refuses a relative pool path, so create-network (the
    // sixth of the eleven phases) fails; the teardown does not create a pool and passes.
    let ran = job
        .ci(&["-e", "libvirt_pool_path=relative/pool"])
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(2), "{}", show(&ran));
    let dir = job.run_dir();
    assert!(dir.to_str().unwrap().ends_with("-1"), "{}", dir.display());

    let html = read(&dir, "index.html");
    assert!(html.contains("data-result=\"failed\""));
    let rows = page_phases(&html);
    let mut want = ok_phases(&DEPLOYED[..5]);
    want.push(("create-network".into(), "failed".into()));
    assert_eq!(
        phases_of(&rows, "deploy"),
        want,
        "no phase after the failure"
    );
    assert_eq!(phases_of(&rows, "teardown"), ok_phases(&TEARDOWN));
    // The failed task with the module's own words, and the teardown's result.
    assert!(html.contains("class=\"failed-task\""));
    assert!(html.contains("Cluster storage pool"));
    assert!(html.contains("expected an absolute path"), "{html}");
    assert!(html.contains("the deployment did not finish"));
    let teardown_row = html
        .lines()
        .find(|l| l.contains("<td>teardown</td>") && l.starts_with("<tr class=\"step\""))
        .unwrap();
    assert!(teardown_row.contains("class=\"ok\""), "{teardown_row}");

    let junit = read(&dir, "junit.xml");
    assert!(junit.contains("<failure message=\"phase create-network ended failed\""));
    assert!(
        junit.contains("create-network: kinit_libvirt : Cluster storage pool on hypervisor-01")
    );
    let teardown_suite = junit
        .lines()
        .find(|l| l.contains(&format!("<testsuite name=\"{LABEL}.teardown\"")))
        .unwrap();
    assert!(
        teardown_suite.contains("tests=\"4\" failures=\"0\" errors=\"0\""),
        "{teardown_suite}"
    );
    xmllint_schema(&dir.join("junit.xml"));

    let s = summary(&dir);
    assert_eq!(s["passed"], false);
    assert_eq!(step_status(&s, "deploy"), "failed");
    assert_eq!(step_status(&s, "validate: nodes ready"), "skipped");
    assert_eq!(step_status(&s, "teardown"), "ok");
    assert_eq!(s["teardown_errors"], serde_json::json!([]));
    job.assert_no_secret(&dir);
}

/// Poll until `f` holds or the deadline passes.
fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGINT to the child's whole process group, as a Ctrl-C at a terminal sends it.
fn ctrl_c(child: &Child) -> bool {
    Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .unwrap()
        .success()
}

/// The deploy's own event log in the cluster state folder, written while it runs.
fn live_log(state: &Path) -> String {
    let Ok(rd) = std::fs::read_dir(state.join("runs")) else {
        return String::new();
    };
    rd.flatten()
        .map(|e| std::fs::read_to_string(e.path().join("events.jsonl")).unwrap_or_default())
        .collect()
}

#[test]
fn ctrl_c_is_forwarded_to_the_deploy_and_the_teardown_still_runs() {
    let job = Job::new();
    // The whole deployment: after create-network it goes on to phases that cannot finish
    // here, so the deploy is still running whenever the signal lands.
    let child = job
        .ci(&[])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let state = job.state();
    // The second phase: kinit run has long caught SIGINT by then, and five more phases
    // (then create-services, which cannot finish here) leave the signal time to land.
    wait_for(
        "the deploy to reach prepare-hypervisors",
        Duration::from_secs(120),
        || live_log(&state).contains("\"event\":\"phase_start\",\"phase\":\"prepare-hypervisors\""),
    );
    assert!(ctrl_c(&child));
    // A second Ctrl-C once the teardown runs: it must not stop the teardown (it may have
    // finished already, then there is no one left to signal).
    wait_for("the teardown to start", Duration::from_secs(120), || {
        live_log(&state)
            .matches("\"phase_start\",\"phase\":\"gather-facts\"")
            .count()
            >= 2
    });
    ctrl_c(&child);
    let ran = child.wait_with_output().unwrap();
    assert_eq!(ran.status.code(), Some(130), "{}", show(&ran));
    assert!(text(&ran.stderr).contains("interrupted; stopping the deployment, then tearing down"));

    let dir = job.run_dir();
    let s = summary(&dir);
    assert_eq!(s["interrupted"], true);
    assert_eq!(s["passed"], false);
    // The deploy got the SIGINT (it ended interrupted, not killed: its log says so).
    assert_eq!(step_status(&s, "deploy"), "interrupted");
    let html = read(&dir, "index.html");
    assert!(html.contains("data-result=\"interrupted\""));
    // kinit run itself caught the signal: exit 130, its phases in order, each ok but the
    // last, which ended interrupted (or ok, when the signal fell between two phases).
    let deploy_step = s["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "deploy")
        .unwrap();
    assert_eq!(deploy_step["exit_code"], 130, "{deploy_step}");
    let deploy = phases_of(&page_phases(&html), "deploy");
    assert!(
        (2..=6).contains(&deploy.len()),
        "stopped early in the deploy: {deploy:?}"
    );
    let names: Vec<&str> = deploy.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names, DEPLOYED[..deploy.len()], "{deploy:?}");
    let (last, before) = deploy.split_last().unwrap();
    assert!(before.iter().all(|p| p.1 == "ok"), "{deploy:?}");
    assert!(last.1 == "interrupted" || last.1 == "ok", "{deploy:?}");
    // The teardown ran to its end after the interruption.
    assert_eq!(step_status(&s, "teardown"), "ok");
    assert_eq!(
        phases_of(&page_phases(&html), "teardown"),
        ok_phases(&TEARDOWN)
    );
    let junit = read(&dir, "junit.xml");
    assert!(junit.contains("<error message=\"interrupted (kinit run"));
    xmllint_schema(&dir.join("junit.xml"));
    job.assert_no_secret(&dir);
    assert!(!state.join("lock").exists(), "the deploy released its lock");
}

#[test]
fn real_dry_run_checks_every_phase_and_changes_nothing() {
    let job = Job::new();
    let disk = job.leftover_disk();
    let ran = job
        .ci(&["--dry-run", "--stop-after", "create-network"])
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", show(&ran));
    let dir = job.run_dir();
    let html = read(&dir, "index.html");
    let rows = page_phases(&html);
    assert_eq!(phases_of(&rows, "deploy"), ok_phases(&DEPLOYED));
    assert_eq!(phases_of(&rows, "teardown"), ok_phases(&TEARDOWN));
    let s = summary(&dir);
    assert_eq!(s["dry_run"], true);
    assert_eq!(s["passed"], true);
    for t in s["steps"].as_array().unwrap() {
        let cmd = t["command"].as_str().unwrap();
        assert!(cmd.is_empty() || cmd.contains("--check"), "{cmd}");
    }
    // Check mode: cleanup-hypervisors only said what it would remove.
    assert!(disk.exists(), "a dry run removed the old guest disk");
    xmllint_schema(&dir.join("junit.xml"));
    assert!(!read(&dir, "events.jsonl").is_empty());
    job.assert_no_secret(&dir);
}

#[test]
fn a_failing_teardown_is_reported_and_the_reports_are_still_written() {
    let job = Job::new();
    // A libvirt URI no libvirt driver opens: the deploy stops at cleanup-hypervisors, and so
    // does the teardown, which is not hidden behind the deploy's failure. The teardown tries
    // every cleanup step before it fails, and its last task names the ones that failed.
    let ran = job
        .ci(&["-e", "libvirt_uri=test:///nonexistent.xml"])
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(2), "{}", show(&ran));
    let dir = job.run_dir();
    let s = summary(&dir);
    assert_eq!(step_status(&s, "deploy"), "failed");
    assert_eq!(step_status(&s, "teardown"), "failed");
    let errors = s["teardown_errors"].as_array().unwrap();
    let complete = errors
        .iter()
        .filter_map(|e| e.as_str())
        .find(|e| e.starts_with("kinit_cleanup : Cleanup complete on hypervisor-01"))
        .unwrap_or_else(|| panic!("{errors:?}"));
    for step in ["guests", "storage pool", "network"] {
        assert!(complete.contains(step), "{complete}");
    }
    let html = read(&dir, "index.html");
    assert!(html.contains("<h2>Teardown errors</h2>"));
    assert!(html.contains("kinit_cleanup : Cleanup complete on hypervisor-01"));
    // The steps after the first failed one were tried (their failures are in the log).
    let events = read(&dir, "events.jsonl");
    for task in [
        "Storage pool of this cluster removed",
        "Network of this cluster removed",
    ] {
        assert!(events.contains(task), "{task} not tried");
    }
    let mut want = ok_phases(&TEARDOWN[..2]);
    want.push(("cleanup-hypervisors".into(), "failed".into()));
    assert_eq!(phases_of(&page_phases(&html), "teardown"), want);
    let junit = read(&dir, "junit.xml");
    let teardown_suite = junit
        .lines()
        .find(|l| l.contains(&format!("<testsuite name=\"{LABEL}.teardown\"")))
        .unwrap();
    assert!(
        !teardown_suite.contains("failures=\"0\""),
        "{teardown_suite}"
    );
    xmllint_schema(&dir.join("junit.xml"));
    assert!(!read(&dir, "events.jsonl").is_empty());
    job.assert_no_secret(&dir);
}
