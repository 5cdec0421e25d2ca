//! `kinit state show|path`: what kinit keeps for a cluster, and where.

use crate::cli::{StateArgs, StateCommand};
use crate::config::ClusterConfig;
use crate::deploy::{cwd, state_of};
use crate::{Error, Outcome};

/// `kinit state show|path`.
pub fn state(args: StateArgs) -> Result<Outcome, Error> {
    let (cluster, show) = match &args.command {
        StateCommand::Show { cluster } => (cluster, true),
        StateCommand::Path { cluster } => (cluster, false),
    };
    let cfg = ClusterConfig::from_args(cluster, &cwd())?;
    let state = state_of(&cfg.cluster)?;
    if show {
        print!("{}", state.describe());
    } else {
        println!("{}", state.root.display());
    }
    Ok(Outcome::Success)
}
