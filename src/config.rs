//! Parsed command line → validated settings for `run` and `plan`. Everything a later step needs
//! is checked here (spec, `*_spec` options, extra vars, layout, phase names), so a command
//! either starts with a complete, consistent `Config` or fails before touching anything.

use std::path::Path;

use crate::Error;
use crate::cli::{ClusterArgs, ExecArgs, PlanArgs, PlanFormat, RunArgs};
use crate::cluster::{Cluster, Phase, PhaseWindow, expand};
use crate::extra_vars::parse_extra_vars;
use crate::spec::{ClusterSpec, SpecInputs};
use crate::vars::VarMap;

/// A cluster description, validated and expanded.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    pub spec: ClusterSpec,
    pub cluster: Cluster,
    pub extra_vars: VarMap,
}

impl ClusterConfig {
    /// Relative `-e @file` paths are resolved against `base_dir` (the working directory).
    pub fn from_args(args: &ClusterArgs, base_dir: &Path) -> Result<Self, Error> {
        let extra_vars = parse_extra_vars(&args.extra_vars, base_dir)?;
        let inputs = SpecInputs {
            spec: &args.spec,
            cluster_nodes_spec: args.cluster_nodes_spec.as_deref(),
            hypervisor_hosts: args.hypervisor_hosts.as_deref(),
            hypervisor_hosts_spec: args.hypervisor_hosts_spec.as_deref(),
            network_spec: args.network_spec.as_deref(),
            cluster_spec: args.cluster_spec.as_deref(),
        };
        let spec = ClusterSpec::from_inputs(&inputs, &extra_vars)?;
        let cluster = expand(&spec)?;
        Ok(Self {
            spec,
            cluster,
            extra_vars,
        })
    }
}

/// `kinit plan`.
#[derive(Debug, Clone)]
pub struct PlanConfig {
    pub cluster: ClusterConfig,
    pub format: PlanFormat,
}

impl PlanConfig {
    pub fn from_args(args: &PlanArgs, base_dir: &Path) -> Result<Self, Error> {
        Ok(Self {
            cluster: ClusterConfig::from_args(&args.cluster, base_dir)?,
            format: args.format,
        })
    }
}

/// `kinit run`.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub cluster: ClusterConfig,
    pub window: PhaseWindow,
    /// `--skip-tags`: plays and tasks left out of every phase.
    pub skip_tags: Vec<String>,
    /// `--purge-cache`: cleanup-hypervisors also removes the cached base images.
    pub purge_cache: bool,
    pub exec: ExecArgs,
}

impl RunConfig {
    pub fn from_args(args: &RunArgs, base_dir: &Path) -> Result<Self, Error> {
        // Phase names first: a typo there is cheaper to report than a spec problem.
        let window = PhaseWindow::new(
            args.start_at.as_deref(),
            args.stop_after.as_deref(),
            args.stop_before.as_deref(),
        )?;
        if args.exec.forks == Some(0) {
            return Err(Error::Forks);
        }
        if args.purge_cache && !window.phases().any(|p| p == Phase::CleanupHypervisors) {
            return Err(Error::PurgeWithoutCleanup {
                first: window.first,
                last: window.last,
            });
        }
        Ok(Self {
            cluster: ClusterConfig::from_args(&args.cluster, base_dir)?,
            window,
            skip_tags: args.skip_tags.clone(),
            purge_cache: args.purge_cache,
            exec: args.exec.clone(),
        })
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
