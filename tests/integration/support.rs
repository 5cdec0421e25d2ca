//! `Test`: run the real `kinit` binary in a scratch folder and assert on its outcome.
//!
//! Every run gets a verdict on its *whole* output, so that new noise, a stray warning or a
//! duplicated line fails a test instead of slipping through a `stdout_has`. Either compare
//! both streams whole (after light normalisation, below):
//!
//! ```ignore
//! Test::new().write("site.yml", BOOK).args(["playbook", "site.yml"]).succeeds()
//!     .stdout_is("\nPLAY [demo]\n\nTASK [hello]\nok: [localhost] => {\n[..]\n}\n...\n")
//!     .stderr_is("");
//! Test::new().args(["plan", "--spec", "k8s-libvirt-1-1-1"]).succeeds().snapshot();
//! ```
//!
//! or say, in words, why the whole output is not compared (`stdout_has` and `stderr_has`
//! alone are no verdict):
//!
//! ```ignore
//! Test::new().args(["playbook", "-i", "lab.ini", "site.yml"]).succeeds()
//!     .partial_output("three hosts report in parallel: the order of their lines varies")
//!     .stdout_has("ok=3");
//! ```
//!
//! A `Ran` dropped without a verdict fails its test, saying what to call.
//!
//! Normalisation before any comparison: the scratch folder's path becomes `[DIR]`, the
//! repository's `[ROOT]`, a `kinit run`'s log folder `runs/[STAMP]`, the replacements a test
//! names with `Ran::redact` (ports, addresses, other folders) are made, and trailing spaces
//! are dropped.
//! In an expected text, `[..]` inside a line matches any part of that line and a line of just
//! `...` matches any run of lines (none included), as in cargo's test support.
//! `Ran::snapshot` stores the exit code and both normalised streams as an insta snapshot in
//! `tests/integration/snapshots/` (new or changed ones are reviewed and accepted with
//! `cargo insta review`, or `INSTA_UPDATE=always` then reading the diff; a `.snap.new` is
//! never committed).
//!
//! `Test` sets `KINIT_FROZEN_TIME=1` (every reported duration is 0.00s, so whole outputs are
//! stable) unless the test calls `Test::real_time` because it measures durations.
//!
//! ```ignore
//! Test::new().write("site.yml", BOOK).args(["playbook", "site.yml"]).spawn().interrupt_after(d);
//! ```
//!
//! The scratch folder lives as long as the `Ran` (tests read what kinit wrote there) and is
//! removed then, unless the test is failing: then it is kept and its path printed.
#![allow(dead_code)]

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub struct Test {
    dir: tempfile::TempDir,
    args: Vec<String>,
    env: Vec<(String, String)>,
    frozen_time: bool,
}

pub struct Ran {
    pub output: Output,
    /// The scratch folder kinit ran in.
    pub dir: PathBuf,
    scratch: Option<tempfile::TempDir>,
    /// `(what, placeholder)` replacements made before any comparison, after the scratch path.
    redactions: Vec<(String, String)>,
    stdout_verdict: bool,
    stderr_verdict: bool,
}

/// What a test without a verdict on kinit's output is told.
const NO_VERDICT: &str = "kinit's whole output got no verdict";

impl Drop for Ran {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(t) = self.scratch.take() {
                eprintln!("test folder kept: {}", t.keep().display());
            }
            return;
        }
        if !(self.stdout_verdict && self.stderr_verdict) {
            let unchecked = match (self.stdout_verdict, self.stderr_verdict) {
                (false, false) => "stdout and stderr",
                (false, true) => "stdout",
                _ => "stderr",
            };
            panic!(
                "{NO_VERDICT} ({unchecked} unchecked). Compare it whole: `.stdout_is(..)` and \
                 `.stderr_is(..)` (`[..]` and `...` as wildcards, `.redact(..)` for unstable \
                 bits; `.stderr_is(\"\")` for an empty stream) or `.snapshot()`; or opt out \
                 with `.partial_output(\"<why this output cannot be compared whole>\")`. \
                 The project checks whole outputs so that new noise, warnings or duplicated \
                 lines fail a test; `stdout_has`/`stderr_has` alone do not.\n\
                 --- stdout\n{}\n--- stderr\n{}",
                self.normalized(&self.output.stdout),
                self.normalized(&self.output.stderr)
            );
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
        Ran::new(output, self.dir, self.scratch)
    }

    /// Ctrl-C kinit `delay` after it began catching the signal, and wait for it to end.
    pub fn interrupt_after(self, delay: Duration) -> Ran {
        let output = interrupt_after(self.child, delay);
        Ran::new(output, self.dir, self.scratch)
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
            frozen_time: true,
        }
    }

    /// Real durations in kinit's reports, for a test that measures them (by default
    /// `KINIT_FROZEN_TIME=1` reports every one as zero).
    pub fn real_time(mut self) -> Self {
        self.frozen_time = false;
        self
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
            .env("NO_COLOR", "1");
        if self.frozen_time {
            c.env("KINIT_FROZEN_TIME", "1");
        } else {
            c.env_remove("KINIT_FROZEN_TIME");
        }
        // Most tests run a playbook on the implicit localhost alone; the warnings about that
        // (ansible-playbook's too) are tested on their own with these set back to `true`.
        c.env("ANSIBLE_LOCALHOST_WARNING", "false")
            .env("ANSIBLE_INVENTORY_UNPARSED_WARNING", "false");
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    pub fn run(self) -> Ran {
        let output = self.command().output().expect("run kinit");
        Ran::new(output, self.dir.path().to_path_buf(), self.dir)
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
    fn new(output: Output, dir: PathBuf, scratch: tempfile::TempDir) -> Self {
        Self {
            output,
            dir,
            scratch: Some(scratch),
            redactions: Vec::new(),
            stdout_verdict: false,
            stderr_verdict: false,
        }
    }

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

    /// A check on part of stdout; not a verdict on the whole output by itself.
    pub fn stdout_has(self, needle: &str) -> Self {
        assert!(
            self.stdout().contains(needle),
            "stdout lacks {needle:?}:\n{}",
            self.stdout()
        );
        self
    }

    /// A check on part of stderr; not a verdict on the whole output by itself.
    pub fn stderr_has(self, needle: &str) -> Self {
        assert!(
            self.stderr().contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr()
        );
        self
    }

    /// Replace `what` (a port, an address, a path outside the scratch folder) with
    /// `placeholder` (`[PORT]`, ...) in both streams before they are compared whole.
    pub fn redact(mut self, what: impl Into<String>, placeholder: &str) -> Self {
        let what = what.into();
        assert!(!what.is_empty(), "redact: nothing to replace");
        self.redactions.push((what, placeholder.to_string()));
        self
    }

    /// A stream after normalisation: the scratch folder is `[DIR]`, the test's redactions are
    /// made, trailing spaces go.
    fn normalized(&self, stream: &[u8]) -> String {
        let mut text = String::from_utf8_lossy(stream).into_owned();
        let dir = self.dir.display().to_string();
        if let Ok(real) = self.dir.canonicalize() {
            let real = real.display().to_string();
            if real != dir {
                text = text.replace(&real, "[DIR]");
            }
        }
        text = text.replace(&dir, "[DIR]");
        text = text.replace(env!("CARGO_MANIFEST_DIR"), "[ROOT]");
        text = stamped_runs(&text);
        for (what, placeholder) in &self.redactions {
            text = text.replace(what, placeholder);
        }
        let mut out: String =
            unpadded_timing_with_paths(text.lines().map(str::trim_end)).join("\n");
        if text.ends_with('\n') {
            out.push('\n');
        }
        out
    }

    /// Stdout, normalised, is `expected` as a whole (`[..]` and `...` wildcards).
    #[track_caller]
    pub fn stdout_is(mut self, expected: &str) -> Self {
        let actual = self.normalized(&self.output.stdout);
        assert_matches("stdout", expected, &actual, &self.stderr());
        self.stdout_verdict = true;
        self
    }

    /// Stderr, normalised, is `expected` as a whole (`[..]` and `...` wildcards); `""` for
    /// a run that must write nothing there.
    #[track_caller]
    pub fn stderr_is(mut self, expected: &str) -> Self {
        let actual = self.normalized(&self.output.stderr);
        assert_matches("stderr", expected, &actual, &self.stdout());
        self.stderr_verdict = true;
        self
    }

    /// The exit code and both normalised streams, compared whole with the insta snapshot
    /// named after the test (`<module>__<test>`, then `-2`, `-3` for a test's later runs).
    #[track_caller]
    pub fn snapshot(self) -> Self {
        let name = snapshot_name(None);
        self.snapshot_named(name)
    }

    /// `snapshot`, for a test that runs kinit in a loop: the snapshot is `<module>__<name>`.
    #[track_caller]
    pub fn snapshot_as(self, name: &str) -> Self {
        let name = snapshot_name(Some(name));
        self.snapshot_named(name)
    }

    #[track_caller]
    fn snapshot_named(mut self, name: String) -> Self {
        let text = format!(
            "exit code: {}\n--- stdout\n{}--- stderr\n{}",
            self.output
                .status
                .code()
                .map_or("none (a signal)".to_string(), |c| c.to_string()),
            with_final_newline(self.normalized(&self.output.stdout)),
            with_final_newline(self.normalized(&self.output.stderr)),
        );
        let mut settings = insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        settings.set_snapshot_path(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/integration/snapshots"
        ));
        settings.set_input_file(std::panic::Location::caller().file());
        settings.set_omit_expression(true);
        settings.bind(|| insta::assert_snapshot!(name, text));
        self.stdout_verdict = true;
        self.stderr_verdict = true;
        self
    }

    /// Opt out of comparing the whole output, saying why (specifically: what in it varies or
    /// why only part of it matters). The test's other checks remain its verdict.
    #[track_caller]
    pub fn partial_output(mut self, why: &str) -> Self {
        let words = why.split_whitespace().count();
        assert!(
            words >= 4 && !why.trim().eq_ignore_ascii_case("partial"),
            "partial_output needs a specific reason (what varies or why only part matters), \
             in at least four words; got {why:?}"
        );
        self.stdout_verdict = true;
        self.stderr_verdict = true;
        self
    }
}

/// `.../runs/2026-11-26T014456Z` (the folder of a `kinit run`'s logs, named after the moment it
/// began) as `.../runs/[STAMP]`.
fn stamped_runs(text: &str) -> String {
    const SHAPE: &[u8] = b"dddd-dd-ddTddddddZ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("/runs/") {
        let (before, after) = rest.split_at(at + "/runs/".len());
        out.push_str(before);
        let stamp = after.as_bytes().get(..SHAPE.len()).is_some_and(|b| {
            b.iter().zip(SHAPE).all(|(c, s)| {
                if *s == b'd' {
                    c.is_ascii_digit()
                } else {
                    c == s
                }
            })
        });
        rest = if stamp {
            out.push_str("[STAMP]");
            &after[SHAPE.len()..]
        } else {
            after
        };
    }
    out.push_str(rest);
    out
}

fn with_final_newline(mut s: String) -> String {
    if !s.is_empty() && !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

thread_local! {
    /// Snapshots taken so far by the test running on this thread.
    static SNAPSHOTS: Cell<usize> = const { Cell::new(0) };
}

/// `<module>__<test>` from the test thread's name (`fidelity::some_test`), with `-<n>` for
/// the n-th snapshot of one test after the first; or `<module>__<name>` for a name the test
/// gives.
fn snapshot_name(given: Option<&str>) -> String {
    let thread = std::thread::current();
    let test = thread
        .name()
        .filter(|n| *n != "main")
        .expect("Ran::snapshot runs on a test's own thread (its name names the snapshot)");
    if let Some(name) = given {
        let module = test.rsplit_once("::").map_or("", |(m, _)| m);
        return format!("{module}__{name}").replace("::", "__");
    }
    let n = SNAPSHOTS.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let base = test.replace("::", "__");
    if n == 1 { base } else { format!("{base}-{n}") }
}

/// Fail, showing both texts and the first line that differs, unless `actual` matches
/// `expected` (see `text_matches`).
#[track_caller]
fn assert_matches(stream: &str, expected: &str, actual: &str, other: &str) {
    if text_matches(expected, actual) {
        return;
    }
    let first = expected
        .lines()
        .zip(actual.lines())
        .position(|(e, a)| !line_matches(e, a) || e == "...")
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    panic!(
        "{stream} differs from the expected text (first at line {}, or later after a `...`)\n\
         --- expected\n{expected}\n--- actual {stream} (normalised)\n{actual}\n\
         --- the other stream\n{other}",
        first + 1
    );
}

/// Whether `actual` is `expected` line by line, where `[..]` in an expected line matches any
/// part of the actual line and an expected line of just `...` matches any run of lines. A
/// missing final newline on either side is no difference.
pub fn text_matches(expected: &str, actual: &str) -> bool {
    let exp: Vec<&str> = expected.lines().map(str::trim_end).collect();
    let act: Vec<&str> = actual.lines().map(str::trim_end).collect();
    // fits[i][j]: exp[i..] matches act[j..].
    let mut fits = vec![vec![false; act.len() + 1]; exp.len() + 1];
    fits[exp.len()][act.len()] = true;
    for i in (0..exp.len()).rev() {
        for j in (0..=act.len()).rev() {
            fits[i][j] = if exp[i] == "..." {
                fits[i + 1][j] || (j < act.len() && fits[i][j + 1])
            } else {
                j < act.len() && line_matches(exp[i], act[j]) && fits[i + 1][j + 1]
            };
        }
    }
    fits[0][0]
}

/// One line: literal text, where each `[..]` matches any (possibly empty) part.
pub fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if actual.len() < first.len() + last.len()
        || !actual.starts_with(first)
        || !actual.ends_with(last)
    {
        return false;
    }
    // The middle parts, leftmost first, between the fixed start and end.
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// This machine's host name as Ansible's `ansible_facts.hostname` gives it (up to the first
/// dot), for a test to redact where kinit gathered facts about this machine.
pub fn this_host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("host name");
    name.trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The TASK TIMING table pads its names to the longest, so a table naming a file under the
/// scratch folder or the checkout is aligned by that folder's length: in such a table the
/// padding before each duration becomes one space, so the snapshot holds wherever the
/// repository is cloned.
fn unpadded_timing_with_paths<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    let lines: Vec<&str> = lines.collect();
    let mut out = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        out.push(lines[i].to_string());
        if lines[i] != "TASK TIMING" {
            i += 1;
            continue;
        }
        let end = lines[i + 1..]
            .iter()
            .position(|l| l.is_empty())
            .map_or(lines.len(), |n| i + 1 + n);
        let table = &lines[i + 1..end];
        let with_paths = table
            .iter()
            .any(|l| l.contains("[ROOT]") || l.contains("[DIR]"));
        for l in table {
            match l.rsplit_once(' ') {
                Some((name, secs)) if with_paths => out.push(format!("{} {secs}", name.trim_end())),
                _ => out.push(l.to_string()),
            }
        }
        i = end;
    }
    out
}

/// Run `kinit <args>` in `dir` on a real pseudo-terminal (util-linux `script`) and answer its
/// questions: each answer is typed once its prompt text has appeared (a terminal discards what
/// was typed before the question, as getpass does). Returns whether every prompt came, the
/// exit status and everything the terminal showed. `None` (after `cannot_run`) without
/// `script`.
pub fn on_terminal(
    dir: &Path,
    args: &str,
    answers: &[(&str, &str)],
) -> Option<(bool, std::process::ExitStatus, String)> {
    use std::io::{Read, Write};
    if !Path::new("/usr/bin/script").is_file() {
        cannot_run("util-linux `script` is not installed");
        return None;
    }
    let kinit = env!("CARGO_BIN_EXE_kinit");
    let mut child = Command::new("/usr/bin/script")
        .args(["-qec", &format!("{kinit} {args}"), "/dev/null"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", dir.join(".state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start script");
    let mut stdout = child.stdout.take().unwrap();
    let (seen_tx, seen_rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stdout.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
            let _ = seen_tx.send(String::from_utf8_lossy(&seen).into_owned());
        }
        seen
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut all_prompted = true;
    let mut shown = String::new();
    for (i, (prompt, answer)) in answers.iter().enumerate() {
        // The i-th answer waits for the i-th prompt counted over all prompts so far.
        let wanted = answers[..=i].iter().filter(|(p, _)| p == prompt).count();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while shown.matches(prompt).count() < wanted {
            match seen_rx
                .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
            {
                Ok(text) => shown = text,
                Err(_) => break,
            }
        }
        if shown.matches(prompt).count() < wanted {
            all_prompted = false;
            break;
        }
        // The prompt is written just before echo is switched off and the line read.
        std::thread::sleep(Duration::from_millis(300));
        let _ = stdin.write_all(format!("{answer}\n").as_bytes());
    }
    let status = wait_bounded(child, Duration::from_secs(60), "script").status;
    drop(stdin);
    let out = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    Some((all_prompted, status, out))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_tables_naming_folders_lose_their_padding_others_keep_it() {
        let text = "TASK TIMING\na ([ROOT]/x.yml:1)     0.00s\nlonger ([ROOT]/x.yml:2)  0.00s\n\n\
                    TASK TIMING\na (x.yml:1)       0.00s\nlonger (x.yml:2)  0.00s";
        assert_eq!(
            unpadded_timing_with_paths(text.lines()),
            [
                "TASK TIMING",
                "a ([ROOT]/x.yml:1) 0.00s",
                "longer ([ROOT]/x.yml:2) 0.00s",
                "",
                "TASK TIMING",
                "a (x.yml:1)       0.00s",
                "longer (x.yml:2)  0.00s",
            ]
        );
    }

    #[test]
    fn wildcards_match_and_mismatches_are_rejected() {
        assert!(line_matches("ok: [..] => [..]", "ok: [h1] => hi"));
        assert!(line_matches("a[..]b[..]c", "a b b c"));
        assert!(!line_matches("a[..]b[..]c", "a c"));
        assert!(!line_matches("ok: [h1][..]", "ok: [h2] => hi"));
        assert!(!line_matches("abc[..]bcd", "abcd"));
        assert!(text_matches("A\n...\nZ\n", "A\nB\nC\nZ\n"));
        assert!(!text_matches("\nA\n", "A\n"));
        assert!(text_matches("A\n...\nZ", "A\nZ"));
        assert!(text_matches("...\n", "anything\nat all"));
        assert!(text_matches("", ""));
        // A new line, a lost line, a changed line: each fails.
        assert!(!text_matches("A\nZ\n", "A\nwarning: noise\nZ\n"));
        assert!(!text_matches("A\nA\nZ\n", "A\nZ\n"));
        assert!(!text_matches("A\n...\nZ\n", "A\nB\n"));
        assert!(!text_matches("", "warning: noise\n"));
    }

    #[test]
    fn normalisation_names_the_scratch_folder_and_the_redactions() {
        Test::new()
            .args(["--version"])
            .succeeds()
            .redact(env!("CARGO_PKG_VERSION"), "[VERSION]")
            .stdout_is("kinit [VERSION]\n")
            .stderr_is("");
    }

    #[test]
    fn run_log_folders_lose_their_time_stamp() {
        assert_eq!(
            stamped_runs("logs: /s/runs/2026-11-26T014456Z/x, /runs/latest, /runs/2026-1"),
            "logs: /s/runs/[STAMP]/x, /runs/latest, /runs/2026-1"
        );
    }

    #[test]
    #[should_panic(expected = "stdout differs from the expected text")]
    fn a_different_whole_output_fails() {
        Test::new()
            .args(["--version"])
            .succeeds()
            .stdout_is("kinit\n")
            .stderr_is("");
    }

    #[test]
    #[should_panic(expected = "kinit's whole output got no verdict (stderr unchecked)")]
    fn a_run_without_a_verdict_fails() {
        let _ = Test::new()
            .args(["--version"])
            .succeeds()
            .stdout_is("kinit [..]\n");
    }

    #[test]
    #[should_panic(expected = "kinit's whole output got no verdict (stdout and stderr")]
    fn a_stream_checked_in_part_is_no_verdict() {
        let _ = Test::new()
            .args(["--version"])
            .succeeds()
            .stdout_has("kinit")
            .stderr_has("");
    }

    #[test]
    #[should_panic(expected = "partial_output needs a specific reason")]
    fn opting_out_needs_a_reason() {
        let _ = Test::new()
            .args(["--version"])
            .succeeds()
            .partial_output("partial");
    }
}
