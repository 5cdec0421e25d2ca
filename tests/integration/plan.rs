//! `kinit plan` through the real binary: the layouts KubeInit documents, the bracket and JSON
//! notations agreeing, reproducible MACs, refusals, and snapshots of the table and JSON output.

use crate::support::Test;

fn plan_json(args: &[&str]) -> serde_json::Value {
    let ran = Test::new()
        .args(["plan", "--format", "json"])
        .args(args.iter().copied())
        .succeeds()
        .snapshot();
    serde_json::from_str(&ran.stdout()).expect("plan --format json prints JSON")
}

fn node<'a>(plan: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no node {name} in {plan:#}"))
}

#[test]
fn one_one_one_matches_kubeinit_addresses_on_one_hypervisor() {
    let ran = Test::new()
        .args(["plan", "--spec", "k8s-libvirt-1-1-1"])
        .succeeds()
        .snapshot();
    let out = ran.stdout();
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    let c = line("controller-01");
    assert_eq!(
        (c[1], c[3], c[5]),
        ("controller", "10.0.0.1", "hypervisor-01")
    );
    let c = line("compute-01");
    assert_eq!((c[1], c[3], c[5]), ("compute", "10.0.0.2", "hypervisor-01"));
    let s = line("service");
    assert_eq!(
        (s[1], s[3], s[5]),
        ("service", "10.0.0.253", "hypervisor-01")
    );
    assert!(out.contains("gateway 10.0.0.254"), "{out}");
}

#[test]
fn windows_computes_go_to_the_second_hypervisor() {
    let plan = plan_json(&[
        "--spec",
        "k8s-libvirt-3-2-2",
        "--cluster-nodes-spec",
        "[[when_group=compute_nodes,os=windows]]",
    ]);
    for c in ["controller-01", "controller-02", "controller-03"] {
        assert_eq!(node(&plan, c)["hypervisor"], "hypervisor-01");
        assert_eq!(node(&plan, c)["os"], "debian");
    }
    for c in ["compute-01", "compute-02"] {
        assert_eq!(node(&plan, c)["hypervisor"], "hypervisor-02");
        assert_eq!(node(&plan, c)["os"], "windows");
        assert!(
            node(&plan, c)["groups"]
                .as_array()
                .unwrap()
                .contains(&"windows_nodes".into())
        );
    }
    assert_eq!(node(&plan, "service")["hypervisor"], "hypervisor-01");
    assert_eq!(node(&plan, "compute-02")["ip"], "10.0.0.5");
}

#[test]
fn bracket_json_and_yaml_forms_give_identical_plans() {
    let base = [
        "plan",
        "--spec",
        "k8s-libvirt-1-3-2",
        "--cluster-nodes-spec",
    ];
    let forms = [
        "[[when_group=compute_nodes,os=windows],[when_name=compute-02,os=debian,ram=8GiB,target_order=[hypervisor-01]]]",
        r#"[{"when_group":"compute_nodes","os":"windows"},{"when_name":"compute-02","os":"debian","ram":8388608,"target_order":["hypervisor-01"]}]"#,
        "- {when_group: compute_nodes, os: windows}\n- when_name: compute-02\n  os: debian\n  ram: 8G\n  target_order: hypervisor-01\n",
    ];
    let plans: Vec<String> = forms
        .iter()
        .map(|f| {
            Test::new()
                .args(base)
                .args([
                    *f,
                    "--hypervisor-hosts-spec",
                    "[[ansible_host=nyctea],[ansible_host=tyto,ssh_port=2222]]",
                ])
                .succeeds()
                .snapshot()
                .stdout()
        })
        .collect();
    assert_eq!(plans[0], plans[1]);
    assert_eq!(plans[0], plans[2]);
    // And the rules did something: compute-02 is the Linux exception on hypervisor-01.
    let row: Vec<&str> = plans[0]
        .lines()
        .find(|l| l.starts_with("compute-02 "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!((row[2], row[5]), ("debian", "hypervisor-01"));
    assert!(plans[0].contains("root@tyto:2222"), "{}", plans[0]);
}

#[test]
fn two_runs_give_identical_macs() {
    let args = ["--spec", "k8s-libvirt-3-4-2"];
    let macs = |plan: serde_json::Value| -> Vec<String> {
        plan["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["mac"].as_str().unwrap().to_string())
            .collect()
    };
    let first = macs(plan_json(&args));
    let second = macs(plan_json(&args));
    assert_eq!(first, second);
    let mut unique = first.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        first.len(),
        "MACs must be distinct: {first:?}"
    );
    // Another cluster name gives other MACs.
    let other = macs(plan_json(&[
        "--spec",
        "k8s-libvirt-3-4-2",
        "--cluster-spec",
        "[cluster_name=other]",
    ]));
    assert_ne!(first, other);
}

#[test]
fn okd_is_refused_by_name() {
    Test::new()
        .args(["plan", "--spec", "okd-libvirt-3-1-1"])
        .fails_with(1)
        .snapshot()
        .stderr_has("distro `okd` is not supported yet");
}

#[test]
fn windows_with_too_little_ram_is_refused_unless_validations_are_ignored() {
    let rules = "[[when_name=compute-01,os=windows]]";
    let args = [
        "plan",
        "--spec",
        "k8s-libvirt-1-1-1",
        "--cluster-nodes-spec",
        rules,
    ];
    Test::new()
        .args(args)
        .args(["-e", "compute_node_ram_size=8388608"])
        .fails_with(1)
        .snapshot()
        .stderr_has("node `compute-01`: Windows needs at least 16 GiB of RAM, it has 8 GiB");
    Test::new()
        .args(args)
        .args([
            "-e",
            "compute_node_ram_size=8388608",
            "-e",
            "kinit_ignore_validations=true",
        ])
        .succeeds()
        .snapshot()
        .stdout_has("8 GiB");
}

#[test]
fn extra_vars_file_sets_node_defaults() {
    Test::new()
        .write(
            "sizes.yml",
            "compute_node_ram_size: 32GiB\ncluster_node_vcpus: 4\n",
        )
        .args(["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "@sizes.yml"])
        .succeeds()
        .snapshot()
        .stdout_has("4/16  32 GiB");
}

#[test]
fn run_validates_phase_names_before_running() {
    Test::new()
        .args([
            "run",
            "--spec",
            "k8s-libvirt-1-1-1",
            "--stop-after",
            "cleanup",
        ])
        .fails_with(1)
        .snapshot()
        .stderr_has("`--stop-after`: unknown phase `cleanup`; valid phases: gather-facts,");
    Test::new()
        .args([
            "run",
            "--spec",
            "k8s-libvirt-1-1-1",
            "--start-at",
            "deploy-cluster",
            "--stop-after",
            "task-cleanup-hypervisors",
        ])
        .fails_with(1)
        .snapshot()
        .stderr_has("no phase would run");
}

#[test]
fn snapshot_plans() {
    let cases: &[(&str, &[&str])] = &[
        ("1-1-1", &["--spec", "k8s-libvirt-1-1-1"]),
        (
            "3-2-2-windows",
            &[
                "--spec",
                "k8s-libvirt-3-2-2",
                "--cluster-nodes-spec",
                "[[when_group=compute_nodes,os=windows]]",
            ],
        ),
        (
            "1-3-3-custom",
            &[
                "--spec",
                "k8s-libvirt-1-3-3-h",
                "--hypervisor-hosts",
                "nyctea,tyto,strix",
                "--network-spec",
                r#"{"network_name":"lab0","network":"192.168.50.0/26","dns_public":["9.9.9.9","1.1.1.1"]}"#,
                "--cluster-spec",
                "[cluster_name=lab,cluster_domain=example.test]",
                "--cluster-nodes-spec",
                r#"[{"when_name":"compute-03","os":"windows","ram":"20GiB","target_order":["hypervisor-03"]},{"when_group":"controller_nodes","vcpus":4,"maxvcpus":8}]"#,
            ],
        ),
        ("5-0-1", &["--spec", "k8s-libvirt-5-0-1"]),
    ];
    for (name, args) in cases {
        Test::new()
            .args(["plan"])
            .args(args.iter().copied())
            .succeeds()
            .snapshot_as(&format!("plan_table_{name}"));
        let json = plan_json(args);
        insta::assert_json_snapshot!(format!("plan_json_{name}"), json);
    }
}

/// `kinit plan` lists each phase's plays and tasks as the bundled playbooks define them: every
/// phase of the run has a play, and its tasks are exactly what `kinit playbook --list-tasks
/// --tags <phase>` finds in `site.yml`, so the plan cannot drift from what `kinit run` runs.
#[test]
fn plan_lists_each_phases_tasks_from_the_playbooks() {
    let plan = plan_json(&["--spec", "k8s-libvirt-1-1-1"]);
    let phases = plan["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, kinit::cluster::Phase::ALL.map(|p| p.name()));
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/playbooks/site.yml");
    for phase in phases {
        let name = phase["name"].as_str().unwrap();
        let plays = phase["plays"].as_array().unwrap();
        assert!(!plays.is_empty(), "phase `{name}` has no play");
        let planned: Vec<&str> = plays
            .iter()
            .flat_map(|p| p["tasks"].as_array().unwrap())
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(!planned.is_empty(), "phase `{name}` has no task");
        let listed = Test::new()
            .args(["playbook", "--list-tasks", "--tags", name, site])
            .env(
                "KINIT_ROLES_PATH",
                concat!(env!("CARGO_MANIFEST_DIR"), "/roles"),
            )
            .succeeds()
            .snapshot()
            .stdout();
        let listed: Vec<&str> = listed
            .lines()
            .filter(|l| l.starts_with("      "))
            .map(|l| l.trim_start().split('\t').next().unwrap())
            .collect();
        assert_eq!(planned, listed, "phase `{name}`");
    }
    let table = Test::new()
        .args(["plan", "--spec", "k8s-libvirt-1-1-1"])
        .succeeds()
        .snapshot()
        .stdout();
    assert!(
        table.contains("  1  gather-facts\n       play: gather-facts (hypervisors)\n"),
        "{table}"
    );
}

/// A play of the cluster playbooks that belongs to no phase would never run: `kinit plan` and
/// `kinit run` refuse it, naming the file and line.
#[test]
fn a_play_without_a_phase_is_refused() {
    let site = "- name: gather-facts\n  hosts: all\n  tags: [gather-facts]\n  tasks: []\n\
                - name: stray\n  hosts: all\n  tasks: []\n";
    for sub in ["plan", "run"] {
        let t = Test::new().write("pb/site.yml", site);
        let dir = t.path().join("pb").display().to_string();
        let ran = t
            .args([sub, "--spec", "k8s-libvirt-1-1-1", "--playbook-dir", &dir])
            .fails_with(1)
            .snapshot();
        assert!(
            ran.stderr()
                .contains("site.yml:5: play `stray` has no phase tag, so no phase would run it"),
            "{sub}: {}",
            ran.stderr()
        );
    }
}
