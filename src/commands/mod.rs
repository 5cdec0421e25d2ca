//! Subcommand handlers, one file each: they turn the parsed command line into validated
//! settings (`config`: `PlaybookConfig`, `RunConfig`, `PlanConfig`, `ClusterConfig`) and call
//! down into the layers below (`ci` for `kinit ci`). Handlers sit above every other layer.

pub mod ci;
pub mod plan;
pub mod playbook;
pub mod run;
pub mod ssh;
pub mod state;
