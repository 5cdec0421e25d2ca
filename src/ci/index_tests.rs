//! The index over run folders: per job when it last passed (linked to that run), the last
//! duration with its change against the median of the earlier runs (flagged when much
//! slower), the duration sparkline and the run history cut to N.

use std::path::Path;

use super::index::write_index;
use super::name::human;
use super::summary::RunSummary;

fn run(dir: &Path, label: &str, started: u64, duration: f64, passed: bool) -> String {
    let name = format!(
        "{label}-periodic-pid-{started}-{}",
        if passed { 0 } else { 1 }
    );
    let s = RunSummary {
        name: name.clone(),
        label: label.into(),
        job_type: "periodic".into(),
        pipeline_id: "pid".into(),
        runner: "kinit-hypervisor-1".into(),
        started,
        duration,
        passed,
        interrupted: false,
        dry_run: false,
        steps: Vec::new(),
        phases: Vec::new(),
        hosts: Vec::new(),
        failed_tasks: Vec::new(),
        teardown_errors: Vec::new(),
    };
    std::fs::create_dir_all(dir.join(&name)).unwrap();
    std::fs::write(
        dir.join(&name).join("summary.json"),
        serde_json::to_string(&s).unwrap(),
    )
    .unwrap();
    name
}

/// The `<tr>` of one job.
fn row(index: &str, label: &str) -> String {
    index
        .lines()
        .find(|l| l.contains(&format!("data-label=\"{label}\"")))
        .unwrap_or_else(|| panic!("no row for {label}:\n{index}"))
        .to_string()
}

#[test]
fn last_pass_duration_change_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    // Slowed down and broke: passed twice (100 s, 110 s), then failed after 165 s.
    let a = "k8s-libvirt-1-1-1-h";
    run(out, a, 1_700_000_000, 100.0, true);
    let last_pass = run(out, a, 1_700_086_400, 110.0, true);
    run(out, a, 1_700_172_800, 165.0, false);
    // Never passed.
    let b = "k8s-libvirt-3-1-1-h";
    run(out, b, 1_700_000_100, 50.0, false);
    // Steady: 200 s then 210 s.
    let c = "k8s-libvirt-1-2-2-h";
    run(out, c, 1_700_000_200, 200.0, true);
    run(out, c, 1_700_086_600, 210.0, true);
    // A folder that is no finished run is left out.
    std::fs::create_dir_all(out.join("k8s-libvirt-9-9-9-h-periodic-pid-1-u")).unwrap();

    let page = write_index(out, 2).unwrap();
    let index = std::fs::read_to_string(page).unwrap();

    let ra = row(&index, a);
    assert!(
        ra.contains(&format!(
            "<td class=\"last-passed\"><a href=\"{last_pass}/index.html\">{}</a></td>",
            human(1_700_086_400)
        )),
        "{ra}"
    );
    assert_eq!(human(1_700_086_400), "2023-11-15 22:13:20 UTC");
    // 165 s against the median of 100 and 110 (the later one, 110): +50 %, flagged.
    assert!(
        ra.contains("165.0s <span class=\"regression failed\">+50%</span>"),
        "{ra}"
    );
    // History cut to the last two runs, newest first; the sparkline has one dot per run.
    assert_eq!(ra.matches("class=\"run ").count(), 2, "{ra}");
    assert!(ra.find("class=\"run failed\"") < ra.find("class=\"run passed\""));
    assert_eq!(ra.matches("<circle").count(), 2);

    let rb = row(&index, b);
    assert!(rb.contains("<td class=\"last-passed\">never</td>"), "{rb}");
    assert!(
        !rb.contains("span class"),
        "one run has nothing to compare: {rb}"
    );

    let rc = row(&index, c);
    assert!(
        rc.contains("210.0s <span class=\"trend\">+5%</span>"),
        "{rc}"
    );

    assert!(!index.contains("k8s-libvirt-9-9-9-h"));
    let badge = std::fs::read_to_string(out.join("badges").join(format!("{a}.svg"))).unwrap();
    assert!(badge.contains("failing"));
    let badge = std::fs::read_to_string(out.join("badges").join(format!("{c}.svg"))).unwrap();
    assert!(badge.contains("passing"));
}
