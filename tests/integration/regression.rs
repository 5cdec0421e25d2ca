//! Regression tests, each named after the defect it pins down, through the real binary on
//! the local transport.

use crate::support::Test;

const INV: &str = "[web]\na ansible_connection=local\nb ansible_connection=local\n";
const SITE: &str = "- hosts: web\n  gather_facts: false\n  tasks:\n    - debug: msg=hi\n";

/// `--list-hosts`, `--list-tasks` and `--syntax-check` print only their listing, like
/// ansible-playbook: no play recap or task timing after it.
#[test]
fn list_hosts_prints_no_recap() {
    let run = |flag: &str| {
        Test::new()
            .write("hosts.ini", INV)
            .write("site.yml", SITE)
            .args(["playbook", "-i", "hosts.ini", "site.yml", flag])
            .succeeds()
            .stdout()
    };
    assert_eq!(
        run("--list-hosts"),
        "\nplaybook: site.yml\n\n  play #1 (web): web\tTAGS: []\n    pattern: ['web']\n    \
         hosts (2):\n      a\n      b\n"
    );
    assert_eq!(
        run("--list-tasks"),
        "\nplaybook: site.yml\n\n  play #1 (web): web\tTAGS: []\n    tasks:\n      debug\tTAGS: []\n"
    );
    assert_eq!(run("--syntax-check"), "\nplaybook: site.yml\n");
}

/// `kinit run` with the capacity margins as `-e key=value` (strings, as Ansible passes them):
/// the validation role treats them as numbers, and a value that is not a number is refused
/// up front, naming the variable, the value and what was expected. The phases run against
/// libvirt's test driver with the local machine as the hypervisor, as in `deploy.rs`.
#[test]
fn capacity_margins_as_key_value_strings() {
    let dir = tempfile::tempdir().unwrap();
    let run = |margins: [&str; 2]| {
        let mut args = vec![
            "run".to_string(),
            "--spec".into(),
            "k8s-libvirt-1-1-1".into(),
            "--stop-after".into(),
            "run-validations".into(),
        ];
        let pool = format!("libvirt_pool_path={}", dir.path().join("pool").display());
        for var in [
            "libvirt_uri=test:///default",
            "kinit_hypervisor_prepared=true",
            "kinit_hosted_deployment=true",
            margins[0],
            margins[1],
            &pool,
        ] {
            args.push("-e".into());
            args.push(var.into());
        }
        std::process::Command::new(env!("CARGO_BIN_EXE_kinit"))
            .args(&args)
            .current_dir(dir.path())
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .env("NO_COLOR", "1")
            .env_remove("KINIT_PLAYBOOK_DIR")
            .output()
            .unwrap()
    };
    let ok = run(["capacity_headroom=0", "vcpus_per_core=64"]);
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("run-validations") && l.contains(" ok ")),
        "{out}"
    );
    let bad = run(["capacity_headroom=lots", "vcpus_per_core=64"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(
        err.contains("extra vars: `capacity_headroom` is `lots`; expected a number >= 0"),
        "{err}"
    );
}

/// `set_fact` in a loop builds up a list: each item sees the facts the items before it set
/// (it used to see only the value from before the loop, keeping just the last item).
#[test]
fn set_fact_in_a_loop_accumulates() {
    let site = "- hosts: a\n  gather_facts: false\n  tasks:\n\
                \x20   - set_fact: {seen: []}\n\
                \x20   - set_fact:\n        seen: \"{{ seen + [item] }}\"\n      loop: [x, y, z]\n\
                \x20   - debug: {msg: \"seen={{ seen | join(',') }}\"}\n";
    let out = Test::new()
        .write("hosts.ini", INV)
        .write("site.yml", site)
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .succeeds()
        .stdout();
    assert!(out.contains("seen=x,y,z"), "{out}");
}

/// prepare-hypervisors on a hypervisor that is not marked prepared asks `virsh` on the
/// hypervisor whether libvirt answers; that task read `libvirt_uri`, which only the
/// kinit_libvirt and kinit_cleanup roles define, so every real `kinit run` stopped there
/// with "`libvirt_uri` is undefined" unless `-e libvirt_uri=...` was given. Run in check
/// mode on the local machine (nothing installed or started), with guests small enough for
/// any machine. Also pins what check mode and the checks before any package step say:
/// where KVM is not usable the phase refuses without `kinit_hosted_deployment`, names the
/// fix and touches no package; with it, it warns about software emulation, then lists the
/// packages it would install (or, with all of them installed, finds libvirt).
#[test]
fn prepare_hypervisors_needs_no_libvirt_uri() {
    let kvm = std::path::Path::new("/dev/kvm").exists()
        && std::fs::read_to_string("/proc/cpuinfo")
            .unwrap_or_default()
            .split_whitespace()
            .any(|flag| flag == "vmx" || flag == "svm");
    let run = |hosted: bool| {
        Test::new()
            .args(["run", "--spec", "k8s-libvirt-1-1-1", "--check"])
            .args(["--stop-after", "prepare-hypervisors"])
            .args([
                "--cluster-nodes-spec",
                "[[vcpus=1,maxvcpus=1,ram=1GiB,disk=4GiB]]",
            ])
            .args(["-e", &format!("kinit_hosted_deployment={hosted}")])
            .run()
    };
    let defaults: serde_json::Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("roles/kinit_hypervisor/defaults/main.yml"),
        )
        .unwrap(),
    )
    .unwrap();
    let missing: Vec<String> = defaults["hypervisor_packages"]["Debian"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .filter(|p| {
            let q = std::process::Command::new("dpkg-query")
                .args(["-W", "-f", "${db:Status-Abbrev}", p])
                .output();
            !q.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with("ii"))
        })
        .collect();
    let hosted = run(true);
    let out = hosted.stdout();
    assert!(!out.contains("is undefined"), "{out}");
    if missing.is_empty() {
        assert!(
            out.contains("TASK [libvirt daemons found]\nok: [hypervisor-01]"),
            "{out}"
        );
    } else {
        let line = out
            .lines()
            .find(|l| l.contains("hypervisor-01 would install:"))
            .unwrap_or_else(|| panic!("no package list in check mode:\n{out}"));
        for p in &missing {
            assert!(line.contains(p.as_str()), "`{p}` missing from: {line}");
        }
        assert!(
            out.contains("TASK [libvirt daemons found]\nskipping: [hypervisor-01]"),
            "{out}"
        );
    }
    let hosted = hosted.code(0);
    if kvm {
        println!("this machine has KVM: the software emulation refusal is not exercised");
        return;
    }
    assert!(
        hosted.stdout().contains(
            "WARNING: hypervisor-01 runs guests with QEMU software emulation (TCG), not KVM"
        ),
        "{}",
        hosted.stdout()
    );
    let refused = run(false).code(2);
    let out = refused.stdout();
    assert!(
        out.contains("hypervisor-01 cannot use KVM")
            && out.contains("-e kinit_hosted_deployment=true"),
        "{out}"
    );
    assert!(
        !out.contains("Virtualization packages"),
        "the KVM check comes before any package step:\n{out}"
    );
}
