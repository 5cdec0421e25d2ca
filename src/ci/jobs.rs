//! The job matrix (`ci/jobs.yml`): one entry per job label with the inputs of its cluster, the
//! runner pool it needs and its schedule class. Loading checks every field and names the file
//! and line of a bad one.
//!
//! One file: the matrix types and their loader go together, since loading is where every
//! field is checked.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum JobsError {
    #[error("cannot read the job matrix `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("no job `{label}` in `{}` (jobs: {known})", path.display())]
    UnknownJob {
        label: String,
        path: PathBuf,
        known: String,
    },
    #[error(
        "`--hypervisor-hosts {given}` names {count} host(s), job `{label}` deploys on {needed}"
    )]
    HypervisorHosts {
        given: String,
        count: usize,
        label: String,
        needed: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    Nightly,
    Weekly,
}

impl Schedule {
    pub fn word(self) -> &'static str {
        match self {
            Schedule::Nightly => "nightly",
            Schedule::Weekly => "weekly",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    jobs: Vec<RawJob>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    label: String,
    schedule: Schedule,
    runner: String,
    #[serde(default)]
    hypervisor_hosts: Vec<String>,
    #[serde(default)]
    cluster_nodes_spec: Option<serde_json::Value>,
    #[serde(default)]
    extra_vars: IndexMap<String, serde_json::Value>,
    #[serde(default)]
    validate: Vec<Validation>,
}

/// A post-deployment check: a command run on one cluster node through `kinit ssh`.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    pub name: String,
    pub node: String,
    pub command: String,
}

/// The fields of a job label
/// `<distro>-<driver>-<controllers>-<computes>-<hypervisors>-<launch>[-<variant>]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    pub distro: String,
    pub driver: String,
    pub controllers: u32,
    pub computes: u32,
    pub hypervisors: u32,
    /// `h`: launched from the host; `c`: from a container.
    pub launch: String,
    /// Optional seventh field telling jobs of one shape apart (`k8s-libvirt-1-1-1-h-win`).
    pub variant: Option<String>,
}

impl Shape {
    /// The `--spec` value for `kinit run` (the label without the launch place).
    pub fn spec(&self) -> String {
        format!(
            "{}-{}-{}-{}-{}",
            self.distro, self.driver, self.controllers, self.computes, self.hypervisors
        )
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Job {
    pub label: String,
    pub shape: Shape,
    pub schedule: Schedule,
    /// Runner label (`kinit-hypervisor-1`, `kinit-hypervisors-2`).
    pub runner: String,
    pub hypervisor_hosts: Vec<String>,
    pub cluster_nodes_spec: Option<serde_json::Value>,
    pub extra_vars: IndexMap<String, serde_json::Value>,
    pub validate: Vec<Validation>,
}

impl Job {
    /// `kinit ci run --hypervisor-hosts`: other hypervisors for this run, as many as the job
    /// deploys on.
    pub fn set_hypervisor_hosts(&mut self, list: &str) -> Result<(), JobsError> {
        let hosts: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .collect();
        if hosts.len() != self.shape.hypervisors as usize {
            return Err(JobsError::HypervisorHosts {
                given: list.to_string(),
                count: hosts.len(),
                label: self.label.clone(),
                needed: self.shape.hypervisors,
            });
        }
        self.hypervisor_hosts = hosts;
        Ok(())
    }
}

/// The job matrix a `kinit ci` command reads: the one given, else `ci/jobs.yml` of the current
/// folder when there is one (a checkout), else the one shipped with kinit (installed beside
/// the binary, or the source tree it was built from), so `kinit ci list` works anywhere.
pub fn locate(given: Option<&Path>) -> PathBuf {
    if let Some(p) = given {
        return p.to_path_buf();
    }
    let here = PathBuf::from("ci/jobs.yml");
    if here.is_file() {
        return here;
    }
    let installed = std::env::current_exe().ok().and_then(|e| {
        e.parent()
            .and_then(Path::parent)
            .map(|p| p.join("share/kinit/ci/jobs.yml"))
    });
    if let Some(p) = installed.filter(|p| p.is_file()) {
        return p;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/jobs.yml")
}

#[derive(Debug, Clone)]
pub struct Matrix {
    pub path: PathBuf,
    pub jobs: Vec<Job>,
}

impl Matrix {
    pub fn load(path: &Path) -> Result<Self, JobsError> {
        let text = std::fs::read_to_string(path).map_err(|source| JobsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Self, JobsError> {
        let invalid = |line: usize, message: String| JobsError::Invalid {
            path: path.to_path_buf(),
            line,
            message,
        };
        let raw: RawFile = serde_yaml::from_str(text)
            .map_err(|e| invalid(e.location().map_or(1, |l| l.line()), e.to_string()))?;
        let mut jobs: Vec<Job> = Vec::new();
        for r in raw.jobs {
            let line = label_line(text, &r.label);
            let shape = parse_label(&r.label).map_err(|m| invalid(line, m))?;
            if jobs.iter().any(|j| j.label == r.label) {
                return Err(invalid(line, format!("job `{}` is listed twice", r.label)));
            }
            let pool = runner_pool_size(&r.runner).ok_or_else(|| {
                invalid(
                    line,
                    format!(
                        "runner `{}`: expected `kinit-hypervisor-1` or `kinit-hypervisors-N`",
                        r.runner
                    ),
                )
            })?;
            if pool != shape.hypervisors {
                return Err(invalid(
                    line,
                    format!(
                        "runner `{}` has {pool} hypervisor(s) but job `{}` needs {}",
                        r.runner, r.label, shape.hypervisors
                    ),
                ));
            }
            if !r.hypervisor_hosts.is_empty() && r.hypervisor_hosts.len() != pool as usize {
                return Err(invalid(
                    line,
                    format!(
                        "hypervisor_hosts lists {} host(s), job `{}` needs {}",
                        r.hypervisor_hosts.len(),
                        r.label,
                        shape.hypervisors
                    ),
                ));
            }
            jobs.push(Job {
                label: r.label,
                shape,
                schedule: r.schedule,
                runner: r.runner,
                hypervisor_hosts: r.hypervisor_hosts,
                cluster_nodes_spec: r.cluster_nodes_spec,
                extra_vars: r.extra_vars,
                validate: r.validate,
            });
        }
        Ok(Matrix {
            path: path.to_path_buf(),
            jobs,
        })
    }

    pub fn get(&self, label: &str) -> Result<&Job, JobsError> {
        self.jobs
            .iter()
            .find(|j| j.label == label)
            .ok_or_else(|| JobsError::UnknownJob {
                label: label.to_string(),
                path: self.path.clone(),
                known: self
                    .jobs
                    .iter()
                    .map(|j| j.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// `kinit-hypervisor-1` → 1, `kinit-hypervisors-3` → 3.
fn runner_pool_size(runner: &str) -> Option<u32> {
    if runner == "kinit-hypervisor-1" {
        return Some(1);
    }
    let n: u32 = runner.strip_prefix("kinit-hypervisors-")?.parse().ok()?;
    (n >= 2).then_some(n)
}

pub fn parse_label(label: &str) -> Result<Shape, String> {
    let expected = "expected `<distro>-<driver>-<controllers>-<computes>-<hypervisors>-<h|c>[-variant]`, \
                    e.g. `k8s-libvirt-1-1-1-h`";
    let f: Vec<&str> = label.split('-').collect();
    if f.len() != 6 && f.len() != 7 {
        return Err(format!("job label `{label}`: {expected}"));
    }
    let num = |i: usize, what: &str| {
        f[i].parse::<u32>()
            .map_err(|_| format!("job label `{label}`: {what} `{}` is not a number", f[i]))
    };
    let ok_word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric());
    if !ok_word(f[0]) || !ok_word(f[1]) {
        return Err(format!("job label `{label}`: {expected}"));
    }
    let shape = Shape {
        distro: f[0].into(),
        driver: f[1].into(),
        controllers: num(2, "controllers")?,
        computes: num(3, "computes")?,
        hypervisors: num(4, "hypervisors")?,
        launch: f[5].into(),
        variant: f.get(6).map(|v| v.to_string()),
    };
    if shape.variant.as_deref().is_some_and(|v| !ok_word(v)) {
        return Err(format!("job label `{label}`: {expected}"));
    }
    if shape.launch != "h" && shape.launch != "c" {
        return Err(format!(
            "job label `{label}`: launch place `{}`, expected `h` (host) or `c` (container)",
            shape.launch
        ));
    }
    if shape.controllers == 0 || shape.hypervisors == 0 {
        return Err(format!(
            "job label `{label}`: needs at least one controller and one hypervisor"
        ));
    }
    Ok(shape)
}

/// Line of `label: <label>` in the source (1 when not found), for errors found after parsing.
fn label_line(text: &str, label: &str) -> usize {
    text.lines()
        .position(|l| {
            l.trim_start_matches([' ', '-'])
                .strip_prefix("label:")
                .is_some_and(|v| v.trim().trim_matches(['"', '\'']) == label)
        })
        .map_or(1, |i| i + 1)
}
