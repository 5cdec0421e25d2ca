//! The phases as the bundled playbooks define them. The names and order of the phases are the
//! `Phase` table (the command line parses them before any YAML is read); which plays and tasks
//! make up each phase is read from `site.yml`, where every play carries its phase's name as a
//! tag. `kinit run` runs exactly these plays and `kinit plan` lists them (as
//! `--list-tasks` would), so the plan cannot drift from the run.

use std::fmt::Write as _;

use serde::Serialize;

use crate::cluster::Phase;
use crate::playbook::{Play, Playbook, TagFilter, list};

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error(
        "{location}: play `{play}` has no phase tag, so no phase would run it; tag it with one \
         of: {valid}"
    )]
    NoPhase {
        location: String,
        play: String,
        valid: String,
    },
    #[error(
        "{location}: play `{play}` is tagged with two phases, `{first}` and `{second}`; a play \
         belongs to one phase"
    )]
    TwoPhases {
        location: String,
        play: String,
        first: Phase,
        second: Phase,
    },
}

/// The phase a play belongs to: the one phase name among its tags.
pub fn phase_of(play: &Play) -> Result<Phase, CatalogError> {
    let mut found: Option<Phase> = None;
    for tag in &play.kw.tags {
        let Some(p) = Phase::ALL.into_iter().find(|p| p.name() == tag) else {
            continue;
        };
        match found {
            Some(first) if first != p => {
                return Err(CatalogError::TwoPhases {
                    location: play.loc.to_string(),
                    play: play.name.clone(),
                    first,
                    second: p,
                });
            }
            _ => found = Some(p),
        }
    }
    found.ok_or_else(|| CatalogError::NoPhase {
        location: play.loc.to_string(),
        play: play.name.clone(),
        valid: Phase::ALL.map(Phase::name).join(", "),
    })
}

/// Every play of `book` with its phase, in order; an error names the first play that belongs
/// to no phase or to two.
pub fn check(book: &Playbook) -> Result<(), CatalogError> {
    book.plays.iter().try_for_each(|p| phase_of(p).map(drop))
}

/// The plays of `book` that belong to `phase`, in order (`check` has passed).
pub fn plays_of(book: &Playbook, phase: Phase) -> Vec<Play> {
    book.plays
        .iter()
        .filter(|p| phase_of(p).is_ok_and(|q| q == phase))
        .cloned()
        .collect()
}

/// One phase as `kinit plan` shows it.
#[derive(Debug, Serialize)]
pub struct PhaseListing {
    pub name: &'static str,
    pub plays: Vec<PlayListing>,
}

#[derive(Debug, Serialize)]
pub struct PlayListing {
    pub name: String,
    pub hosts: String,
    /// `role : task` names, as `--list-tasks` prints them.
    pub tasks: Vec<String>,
}

/// Every phase with its plays and tasks, read from `book`.
pub fn listing(book: &Playbook) -> Result<Vec<PhaseListing>, CatalogError> {
    check(book)?;
    let all = TagFilter::default();
    Ok(Phase::ALL
        .into_iter()
        .map(|phase| PhaseListing {
            name: phase.name(),
            plays: plays_of(book, phase)
                .iter()
                .map(|play| PlayListing {
                    name: play.name.clone(),
                    hosts: play.hosts.clone(),
                    tasks: list::play_tasks(play, &all)
                        .into_iter()
                        .map(|t| t.name)
                        .collect(),
                })
                .collect(),
        })
        .collect())
}

/// The listing as the `PHASES` section of `kinit plan`.
pub fn render(phases: &[PhaseListing]) -> String {
    let mut out = String::from("PHASES\n");
    for (i, phase) in phases.iter().enumerate() {
        let _ = writeln!(out, "{:>3}  {}", i + 1, phase.name);
        for play in &phase.plays {
            let _ = writeln!(out, "       play: {} ({})", play.name, play.hosts);
            for task in &play.tasks {
                let _ = writeln!(out, "         {task}");
            }
        }
    }
    out
}
