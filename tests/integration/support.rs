//! `Test`: run the real `kinit` binary in a scratch folder and assert on its outcome.
//!
//! ```ignore
//! Test::new().args(["plan", "--spec", "k8s-libvirt-1-1-1"]).succeeds().stdout_has("10.0.0.1");
//! ```
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Test {
    dir: tempfile::TempDir,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

pub struct Ran {
    pub output: Output,
    pub dir: PathBuf,
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

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }

    pub fn run(self) -> Ran {
        let output = Command::new(env!("CARGO_BIN_EXE_kinit"))
            .args(&self.args)
            .current_dir(self.dir.path())
            .env("XDG_STATE_HOME", self.dir.path().join(".state"))
            .env("NO_COLOR", "1")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run kinit");
        let dir = self.dir.keep();
        Ran { output, dir }
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
