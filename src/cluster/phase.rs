//! The deployment phases, in order (KubeInit's `task-*` names without the prefix), parsing of
//! the names given to `--stop-after`, `--stop-before` and `--start-at`, and the window of
//! phases those options select.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    GatherFacts,
    PrepareHypervisors,
    PrepareEnvironment,
    CleanupHypervisors,
    RunValidations,
    CreateNetwork,
    CreateServices,
    PrepareCluster,
    DownloadImages,
    DeployCluster,
    PostDeployment,
}

impl Phase {
    pub const ALL: [Phase; 11] = [
        Phase::GatherFacts,
        Phase::PrepareHypervisors,
        Phase::PrepareEnvironment,
        Phase::CleanupHypervisors,
        Phase::RunValidations,
        Phase::CreateNetwork,
        Phase::CreateServices,
        Phase::PrepareCluster,
        Phase::DownloadImages,
        Phase::DeployCluster,
        Phase::PostDeployment,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::GatherFacts => "gather-facts",
            Phase::PrepareHypervisors => "prepare-hypervisors",
            Phase::PrepareEnvironment => "prepare-environment",
            Phase::CleanupHypervisors => "cleanup-hypervisors",
            Phase::RunValidations => "run-validations",
            Phase::CreateNetwork => "create-network",
            Phase::CreateServices => "create-services",
            Phase::PrepareCluster => "prepare-cluster",
            Phase::DownloadImages => "download-images",
            Phase::DeployCluster => "deploy-cluster",
            Phase::PostDeployment => "post-deployment",
        }
    }

    /// 0-based position in the run.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhaseError {
    #[error("`{option}`: unknown phase `{name}`; valid phases: {valid}")]
    Unknown {
        option: &'static str,
        name: String,
        valid: String,
    },
    #[error("{reason}: no phase would run")]
    Empty { reason: String },
}

/// Accepts `cleanup-hypervisors`, `task-cleanup-hypervisors` and KubeInit's tag spelling
/// `task_cleanup_hypervisors`.
impl FromStr for Phase {
    type Err = PhaseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_phase(s, "phase")
    }
}

/// Parse a phase name given to `option` (used in the error).
pub fn parse_phase(s: &str, option: &'static str) -> Result<Phase, PhaseError> {
    let norm = s.trim().replace('_', "-");
    let bare = norm.strip_prefix("task-").unwrap_or(&norm);
    Phase::ALL
        .into_iter()
        .find(|p| p.name() == bare)
        .ok_or_else(|| PhaseError::Unknown {
            option,
            name: s.to_string(),
            valid: Phase::ALL.map(Phase::name).join(", "),
        })
}

/// The phases a run executes: from `--start-at` (default the first) through `--stop-after`
/// or up to `--stop-before` (default the last).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseWindow {
    pub first: Phase,
    pub last: Phase,
}

impl PhaseWindow {
    pub fn new(
        start_at: Option<&str>,
        stop_after: Option<&str>,
        stop_before: Option<&str>,
    ) -> Result<Self, PhaseError> {
        let start = start_at.map(|s| parse_phase(s, "--start-at")).transpose()?;
        let after = stop_after
            .map(|s| parse_phase(s, "--stop-after"))
            .transpose()?;
        let before = stop_before
            .map(|s| parse_phase(s, "--stop-before"))
            .transpose()?;
        let first = start.unwrap_or(Phase::GatherFacts);
        let mut last = after.unwrap_or(Phase::PostDeployment);
        if let Some(b) = before {
            if b == Phase::GatherFacts {
                return Err(PhaseError::Empty {
                    reason: "`--stop-before gather-facts`".into(),
                });
            }
            last = last.min(Phase::ALL[b.index() - 1]);
        }
        if last < first {
            return Err(PhaseError::Empty {
                reason: format!("the window starts at `{first}` but ends at `{last}`"),
            });
        }
        Ok(Self { first, last })
    }

    /// The phases in order. `gather-facts` always comes first, whatever `--start-at` says: it
    /// only reads the hypervisors, and every later phase uses its facts (as KubeInit's
    /// playbook gathers facts on every run, whichever tasks its tags select). A window that
    /// ends at `cleanup-hypervisors` is a teardown and leaves out `prepare-hypervisors`:
    /// removing a cluster must not install packages or start daemons, and must work on a
    /// machine where preparing failed (cleanup treats a libvirt that is not installed as
    /// nothing to remove).
    pub fn phases(self) -> impl Iterator<Item = Phase> {
        let teardown = self.is_teardown();
        let facts = (self.first != Phase::GatherFacts).then_some(Phase::GatherFacts);
        facts.into_iter().chain(
            Phase::ALL[self.first.index()..=self.last.index()]
                .iter()
                .copied()
                .filter(move |p| !(teardown && *p == Phase::PrepareHypervisors)),
        )
    }

    /// `--stop-after cleanup-hypervisors` (or `--stop-before run-validations`).
    pub fn is_teardown(self) -> bool {
        self.last == Phase::CleanupHypervisors
    }
}

impl Default for PhaseWindow {
    fn default() -> Self {
        Self {
            first: Phase::GatherFacts,
            last: Phase::PostDeployment,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_and_without_prefix() {
        assert_eq!(
            "cleanup-hypervisors".parse::<Phase>(),
            Ok(Phase::CleanupHypervisors)
        );
        assert_eq!(
            "task-cleanup-hypervisors".parse::<Phase>(),
            Ok(Phase::CleanupHypervisors)
        );
        assert_eq!(
            "task_deploy_cluster".parse::<Phase>(),
            Ok(Phase::DeployCluster)
        );
        for p in Phase::ALL {
            assert_eq!(p.name().parse::<Phase>(), Ok(p));
        }
    }

    #[test]
    fn teardown_window_leaves_out_preparation() {
        let w = PhaseWindow::new(None, Some("cleanup-hypervisors"), None).unwrap();
        assert!(w.is_teardown());
        assert_eq!(
            w.phases().collect::<Vec<_>>(),
            [
                Phase::GatherFacts,
                Phase::PrepareEnvironment,
                Phase::CleanupHypervisors
            ]
        );
        let full = PhaseWindow::default();
        assert!(!full.is_teardown());
        assert!(full.phases().any(|p| p == Phase::PrepareHypervisors));
    }

    #[test]
    fn unknown_phase_lists_valid_ones() {
        let err = parse_phase("cleanup", "--stop-after")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "`--stop-after`: unknown phase `cleanup`; valid phases: gather-facts, prepare-hypervisors, prepare-environment, cleanup-hypervisors, run-validations, create-network, create-services, prepare-cluster, download-images, deploy-cluster, post-deployment"
        );
    }

    #[test]
    fn windows() {
        let w = PhaseWindow::new(None, Some("task-cleanup-hypervisors"), None).unwrap();
        assert_eq!(
            w.phases().count(),
            3,
            "a teardown leaves out prepare-hypervisors"
        );
        let w = PhaseWindow::new(Some("create-network"), None, Some("deploy-cluster")).unwrap();
        let names: Vec<_> = w.phases().map(Phase::name).collect();
        assert_eq!(
            names,
            [
                "gather-facts",
                "create-network",
                "create-services",
                "prepare-cluster",
                "download-images"
            ]
        );
        assert!(PhaseWindow::new(Some("deploy-cluster"), Some("gather-facts"), None).is_err());
        assert!(PhaseWindow::new(None, None, Some("gather-facts")).is_err());
    }
}
