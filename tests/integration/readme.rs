//! The README's `kinit plan` examples run as written: each line of a `sh` block that starts
//! with `kinit plan` is run by `sh` with the built binary first on `PATH`. The quick start's
//! two commands are the scripts `.ci/run` runs (`ci/test.sh` runs `ci/quickstart.sh` first). A line ending in `# error: TEXT` must fail with TEXT on
//! stderr; every other line must succeed and print something.

use std::path::Path;
use std::process::Command;

fn readme_examples() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let mut in_sh = false;
    let mut out = Vec::new();
    for line in readme.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = !in_sh && t == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        if t.starts_with("kinit plan ") {
            out.push(t.to_string());
        }
    }
    out
}

/// The quick start is exactly the two commands CI runs: `.ci/run` runs `ci/test.sh`, which
/// runs `ci/quickstart.sh` as written before anything else is installed, so a fresh machine
/// proves both.
#[test]
fn quick_start_is_what_ci_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let quick = readme
        .split("## Quick start")
        .nth(1)
        .and_then(|s| s.split("```sh\n").nth(1))
        .and_then(|s| s.split("```").next())
        .unwrap();
    assert_eq!(quick, "ci/quickstart.sh\nci/test.sh\n");
    let ci_run = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(
        ci_run.lines().any(|l| l.trim() == "exec ci/test.sh"),
        "{ci_run}"
    );
    let test_sh = std::fs::read_to_string(root.join("ci/test.sh")).unwrap();
    let steps: Vec<&str> = test_sh
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    let first_work = steps
        .iter()
        .position(|l| l.starts_with("ci/"))
        .expect("ci/test.sh runs scripts");
    assert!(
        steps[first_work].starts_with("ci/quickstart.sh"),
        "ci/test.sh must run the README's first command before installing anything: {}",
        steps[first_work]
    );
}

#[test]
fn readme_plan_examples_run_as_written() {
    let examples = readme_examples();
    assert!(examples.len() >= 10, "too few examples found: {examples:?}");
    let bin = Path::new(env!("CARGO_BIN_EXE_kinit")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let scratch = tempfile::tempdir().unwrap();
    for example in &examples {
        let (command, expected_error) = match example.split_once("# error: ") {
            Some((cmd, err)) => (cmd.trim(), Some(err.trim())),
            None => (example.as_str(), None),
        };
        let out = Command::new("sh")
            .args(["-c", command])
            .env("PATH", &path)
            .env("XDG_STATE_HOME", scratch.path())
            .current_dir(scratch.path())
            .output()
            .expect("run sh");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match expected_error {
            None => {
                assert!(out.status.success(), "{command}\nfailed: {stderr}");
                assert!(!out.stdout.is_empty(), "{command}\nprinted nothing");
            }
            Some(text) => {
                assert_eq!(
                    out.status.code(),
                    Some(1),
                    "{command}\nshould fail: {stderr}"
                );
                assert!(
                    stderr.contains(text),
                    "{command}\nstderr lacks {text:?}: {stderr}"
                );
            }
        }
    }
}

/// The README's local `kinit ci run` example, its continuation lines joined, run by `sh` in
/// an empty folder (so the shipped job matrix is found without a checkout): it deploys the
/// shipped k8s-libvirt-1-1-1-h job up to create-network on this machine's libvirt test
/// driver, tears it down and writes the reports. `kinit ci list` works there too.
#[test]
fn readme_local_ci_run_example_runs_as_written() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("kinit ci run k8s-libvirt-1-1-1-h --hypervisor-hosts localhost")
        .expect("the local example");
    let mut command = String::new();
    for line in readme[start..].lines() {
        match line.strip_suffix('\\') {
            Some(head) => command.push_str(head),
            None => {
                command.push_str(line);
                break;
            }
        }
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_kinit")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let scratch = tempfile::tempdir().unwrap();
    let sh = |command: &str| {
        Command::new("sh")
            .args(["-c", command])
            .env("PATH", &path)
            .env("XDG_STATE_HOME", scratch.path().join("state"))
            .env("NO_COLOR", "1")
            .env_remove("KINIT_PLAYBOOK_DIR")
            .current_dir(scratch.path())
            .output()
            .expect("run sh")
    };
    let out = sh(&command);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{command}\n{text}");
    let runs: Vec<String> = std::fs::read_dir(scratch.path().join("reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(
        runs[0].starts_with("k8s-libvirt-1-1-1-h-periodic-"),
        "{runs:?}"
    );
    assert!(runs[0].ends_with("-0"), "the run passed: {runs:?}\n{text}");
    let summary = std::fs::read_to_string(
        scratch
            .path()
            .join("reports")
            .join(&runs[0])
            .join("summary.json"),
    )
    .unwrap();
    assert!(summary.contains("create-network"), "{summary}");

    let list = sh("kinit ci list");
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(String::from_utf8_lossy(&list.stdout).contains("k8s-libvirt-1-1-1-h-win"));
}

/// The Deploying section's commands for a machine without KVM or Windows, run as written and
/// in order by `sh` (the deployment up to create-network on libvirt's test driver, its
/// teardown, then the state folder shown): each succeeds and prints something.
#[test]
fn readme_deploy_without_kvm_examples_run_as_written() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme
        .split("**Without KVM or Windows.**")
        .nth(1)
        .expect("the section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    let commands: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        commands.len() >= 3 && commands[0].starts_with("kinit run "),
        "{commands:?}"
    );
    let bin = Path::new(env!("CARGO_BIN_EXE_kinit")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let scratch = tempfile::tempdir().unwrap();
    for command in commands {
        let out = Command::new("sh")
            .args(["-c", command])
            .env("PATH", &path)
            .env("XDG_STATE_HOME", scratch.path())
            .env("NO_COLOR", "1")
            .env_remove("KINIT_PLAYBOOK_DIR")
            .current_dir(scratch.path())
            .output()
            .expect("run sh");
        assert!(
            out.status.success(),
            "{command}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty(), "{command}\nprinted nothing");
    }
}
