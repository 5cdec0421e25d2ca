//! Subcommand handlers, one file each: they turn the parsed command line into validated
//! settings (`config`: `PlaybookConfig`, `RunConfig`, `PlanConfig`, `ClusterConfig`) and call
//! down into the layers below. `kinit ci` is `ci::command`'s (its own domain). Handlers sit
//! above every other layer.

pub mod plan;
pub mod playbook;
pub mod run;
pub mod ssh;
pub mod state;
