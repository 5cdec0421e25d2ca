//! The README's `kinit plan` examples run as written: each line of a `sh` block that starts
//! with `kinit plan` (or the quick start's `cargo run --release -- plan`) is run by `sh` with
//! the built binary first on `PATH`. A line ending in `# error: TEXT` must fail with TEXT on
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
        if let Some(rest) = t.strip_prefix("cargo run --release -- plan ") {
            out.push(format!("kinit plan {rest}"));
        } else if t.starts_with("kinit plan ") {
            out.push(t.to_string());
        }
    }
    out
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
