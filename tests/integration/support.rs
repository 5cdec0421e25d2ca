//! `Test`: run the real `kinit` binary in a scratch folder and assert on its outcome.
//!
//! ```ignore
//! Test::new().args(["plan", "--spec", "k8s-libvirt-1-1-1"]).succeeds().stdout_has("10.0.0.1");
//! Test::new().write("site.yml", BOOK).args(["playbook", "site.yml"]).spawn().interrupt_after(d);
//! ```
//!
//! The scratch folder lives as long as the `Ran` (tests read what kinit wrote there) and is
//! removed then, unless the test is failing: then it is kept and its path printed.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub struct Test {
    dir: tempfile::TempDir,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

pub struct Ran {
    pub output: Output,
    /// The scratch folder kinit ran in.
    pub dir: PathBuf,
    scratch: Option<tempfile::TempDir>,
}

impl Drop for Ran {
    fn drop(&mut self) {
        if std::thread::panicking()
            && let Some(t) = self.scratch.take()
        {
            eprintln!("test folder kept: {}", t.keep().display());
        }
    }
}

/// A kinit started with `Test::spawn`, still running.
pub struct Running {
    pub child: Child,
    dir: PathBuf,
    scratch: tempfile::TempDir,
}

impl Running {
    /// Wait for kinit to end, failing the test (with its output) after `limit`.
    pub fn wait(self, limit: Duration) -> Ran {
        let output = wait_bounded(self.child, limit, "kinit");
        Ran {
            output,
            dir: self.dir,
            scratch: Some(self.scratch),
        }
    }

    /// Ctrl-C kinit `delay` after it began catching the signal, and wait for it to end.
    pub fn interrupt_after(self, delay: Duration) -> Ran {
        let output = interrupt_after(self.child, delay);
        Ran {
            output,
            dir: self.dir,
            scratch: Some(self.scratch),
        }
    }
}

impl Default for Test {
    fn default() -> Self {
        Self::new()
    }
}

impl Test {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// The scratch folder the command runs in.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write a file (parents created) relative to the scratch folder.
    pub fn write(self, rel: &str, contents: &str) -> Self {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// A `HOME` in the scratch folder (`.home`) whose `~/.ssh/known_hosts` is a copy of
    /// `known_hosts` (an SSH lab's), so SSH hosts are checked strictly against it.
    pub fn home_knowing(self, known_hosts: &Path) -> Self {
        let text = std::fs::read_to_string(known_hosts).expect("known_hosts");
        let home = self.dir.path().join(".home").display().to_string();
        self.write(".home/.ssh/known_hosts", &text)
            .env("HOME", &home)
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }

    fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kinit"));
        c.args(&self.args)
            .current_dir(self.dir.path())
            .env("XDG_STATE_HOME", self.dir.path().join(".state"))
            .env("NO_COLOR", "1")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    pub fn run(self) -> Ran {
        let output = self.command().output().expect("run kinit");
        Ran {
            output,
            dir: self.dir.path().to_path_buf(),
            scratch: Some(self.dir),
        }
    }

    /// Start kinit with its output captured, to interrupt it or wait for it.
    pub fn spawn(self) -> Running {
        let child = self
            .command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kinit");
        Running {
            child,
            dir: self.dir.path().to_path_buf(),
            scratch: self.dir,
        }
    }

    /// Run and assert exit code 0.
    pub fn succeeds(self) -> Ran {
        self.run().code(0)
    }

    /// Run and assert the given exit code.
    pub fn fails_with(self, code: i32) -> Ran {
        self.run().code(code)
    }
}

impl Ran {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    pub fn code(self, expected: i32) -> Self {
        assert_eq!(
            self.output.status.code(),
            Some(expected),
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout(),
            self.stderr()
        );
        self
    }

    pub fn stdout_has(self, needle: &str) -> Self {
        assert!(
            self.stdout().contains(needle),
            "stdout lacks {needle:?}:\n{}",
            self.stdout()
        );
        self
    }

    pub fn stderr_has(self, needle: &str) -> Self {
        assert!(
            self.stderr().contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr()
        );
        self
    }
}

/// Wait (bounded) until process `pid` catches SIGINT (its bit in `/proc/<pid>/status`
/// `SigCgt`), i.e. kinit reached the first line of `main`. A SIGINT before that ends any
/// process by default, before a line of kinit ran; tests that interrupt kinit on purpose
/// measure their delays from here.
pub fn wait_catching_sigint(pid: u32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|mask| mask & (1 << (2 - 1)) != 0);
        // An exited process has no status left to read: nothing to wait for.
        if caught || status.is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Wait for a child kinit started with piped output, killing it (and failing the test with
/// its output) when it runs longer than `limit`: a hang is a failure, not a stuck suite.
pub fn wait_bounded(
    mut child: std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> std::process::Output {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} hung for {limit:?}\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// SIGINT a child kinit `delay` after it started catching the signal, and wait for it.
pub fn interrupt_after(
    child: std::process::Child,
    delay: std::time::Duration,
) -> std::process::Output {
    wait_catching_sigint(child.id());
    std::thread::sleep(delay);
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    child.wait_with_output().unwrap()
}

/// `ovs-ctl` and `ovn-ctl` of Debian's openvswitch-switch and ovn packages.
pub const OVS_CTL: &str = "/usr/share/openvswitch/scripts/ovs-ctl";
pub const OVN_CTL: &str = "/usr/share/ovn/scripts/ovn-ctl";

/// Why this machine cannot run a test that starts its own Open vSwitch and OVN daemons, if it
/// cannot: not root, a package or one of `tools` missing, or an Open vSwitch already running
/// (which such a test must not touch).
pub fn ovn_unavailable(tools: &[&str]) -> Option<String> {
    let sh_ok = |script: &str| {
        Command::new("sh")
            .args(["-c", script])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !crate::fixtures::netns::is_root() {
        return Some("needs root (Open vSwitch, OVN, namespaces, iptables)".into());
    }
    for tool in [OVS_CTL, OVN_CTL] {
        if !Path::new(tool).exists() {
            return Some(format!(
                "{tool} missing (openvswitch-switch, ovn-central, ovn-host)"
            ));
        }
    }
    for tool in [
        "ovs-vsctl",
        "ovn-nbctl",
        "ovn-sbctl",
        "ovn-controller",
        "iptables",
    ]
    .iter()
    .chain(tools)
    {
        if !sh_ok(&format!("command -v {tool}")) {
            return Some(format!("`{tool}` missing"));
        }
    }
    if Path::new("/var/run/openvswitch/db.sock").exists() || sh_ok(&format!("{OVS_CTL} status")) {
        return Some("Open vSwitch already runs on this machine; not touching it".into());
    }
    None
}

/// Whether `KINIT_REQUIRE_ALL=1` is set (ci/test.sh sets it after installing everything):
/// then a test that cannot run on this machine fails instead of skipping.
pub fn require_all() -> bool {
    std::env::var("KINIT_REQUIRE_ALL").as_deref() == Ok("1")
}

/// Called by a test that cannot run here, just before it returns: fails the test under
/// `KINIT_REQUIRE_ALL=1`, otherwise prints `skipped: <why>` (the test then passes without
/// having checked anything, which only a machine without the tools may accept).
#[track_caller]
pub fn cannot_run(why: impl std::fmt::Display) {
    if require_all() {
        panic!("this test cannot run here but KINIT_REQUIRE_ALL=1 requires it: {why}");
    }
    eprintln!("skipped: {why}");
}
