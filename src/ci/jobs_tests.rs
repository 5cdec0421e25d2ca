//! Job matrix loader: good files load, bad ones are refused naming file, line and field.

use std::path::Path;

use super::jobs::{Matrix, Schedule};

fn load(text: &str) -> Result<Matrix, String> {
    Matrix::parse(Path::new("ci/jobs.yml"), text).map_err(|e| e.to_string())
}

const GOOD: &str = "jobs:
  - label: k8s-libvirt-1-2-2-h-win
    schedule: weekly
    runner: kinit-hypervisors-2
    hypervisor_hosts: [nyctea, tyto]
    cluster_nodes_spec: [{when_name: compute-02, os: windows}]
    extra_vars: {compute_node_ram_size: 16777216}
";

#[test]
fn a_good_job_loads_with_its_shape() {
    let m = load(GOOD).unwrap();
    let j = &m.jobs[0];
    assert_eq!(j.schedule, Schedule::Weekly);
    assert_eq!(j.shape.spec(), "k8s-libvirt-1-2-2");
    assert_eq!(j.shape.variant.as_deref(), Some("win"));
    assert_eq!(j.extra_vars["compute_node_ram_size"], 16777216);
}

#[test]
fn bad_input_names_file_line_and_what_was_expected() {
    let cases = [
        (GOOD.replace("weekly", "hourly"), "ci/jobs.yml:3:", "hourly"),
        (
            GOOD.replace("k8s-libvirt-1-2-2-h-win", "k8s-libvirt-1-x-2-h"),
            "ci/jobs.yml:2:",
            "computes `x` is not a number",
        ),
        (
            GOOD.replace("-h-win", "-q"),
            "ci/jobs.yml:2:",
            "launch place `q`",
        ),
        (
            GOOD.replace("kinit-hypervisors-2", "kinit-hypervisor-1"),
            "ci/jobs.yml:2:",
            "has 1 hypervisor(s) but job",
        ),
        (
            GOOD.replace("kinit-hypervisors-2", "big-box"),
            "ci/jobs.yml:2:",
            "runner `big-box`: expected",
        ),
        (
            GOOD.replace("[nyctea, tyto]", "[nyctea]"),
            "ci/jobs.yml:2:",
            "hypervisor_hosts lists 1 host(s)",
        ),
        (
            GOOD.replace("    extra_vars", "    extra_varz"),
            "ci/jobs.yml:7:",
            "extra_varz",
        ),
        (
            format!("{GOOD}{}", &GOOD[6..]),
            "ci/jobs.yml:2:",
            "listed twice",
        ),
    ];
    for (text, at, what) in cases {
        let err = load(&text).unwrap_err();
        assert!(
            err.starts_with(at) && err.contains(what),
            "{err:?} should be at {at} about {what}"
        );
    }
}

#[test]
fn unknown_label_lists_the_known_ones() {
    let m = load(GOOD).unwrap();
    let err = m.get("okd-libvirt-1-1-1-h").unwrap_err().to_string();
    assert!(err.contains("k8s-libvirt-1-2-2-h-win"), "{err}");
}
