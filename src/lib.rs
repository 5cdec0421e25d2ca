//! kinit: an Ansible-style playbook runner over SSH and WinRM, and a one-command Kubernetes
//! cluster deployer with Windows workers on libvirt guests.
//!
//! # Layout
//!
//! - `cli`: the command line (clap); `config`: validated settings built from it;
//!   `commands/`: one handler per subcommand (`playbook`, `run`, `plan`, `ssh`, `state`).
//! - `spec/`: cluster spec string and the `*_spec` inputs → `ClusterSpec`.
//! - `deploy/`: what `run`, `plan`, `ssh` and `state` work with: the cluster lock, the state
//!   folder, the phases, and `render` (the executor in render mode writing a deployment's files).
//! - `cluster/`: pure expansion of a `ClusterSpec` into nodes, addresses and phases; `kinit plan`.
//! - `inventory/`: Ansible INI/YAML inventories, host patterns, host variables.
//! - `playbook/`: loading plays, roles and tasks (the only YAML parse site besides the loaders).
//! - `template/`: minijinja environment with the Ansible filters, tests and lookups.
//! - `exec/`: the executor (forks, strategies, handlers, cancellation).
//! - `modules/`: one file per module, typed params, check then apply.
//! - `transport/`: local, SSH (russh) and WinRM connections behind one enum.
//! - `provider/`: libvirt (the `virt` crate): XML generation and the `virt_*` operations.
//! - `report/`: events, the one reporter that renders them, recap, JSON and JUnit sinks.
//! - `ci/`: periodic job launcher and HTML reports.
//! - `extra_vars`: `-e key=value|@file.yml|{json}` with ansible-playbook's semantics;
//!   `ansible_cfg`: `ansible.cfg` and the `ANSIBLE_*` variables for `kinit playbook`.
//! - `secret`: a string that never prints itself; `vault`: Ansible Vault secrets and decryption.
//! - `pyre`: Python `re` patterns and replacement templates (backed by `regex`, and
//!   `fancy-regex` for back-references and look-around).
//! - `yaml`: YAML as Ansible (PyYAML, YAML 1.1) reads it, with the line of every node.
//! - `atomic`: file writes that leave the old file or the new one, never half of one.
//! - `interrupt`: Ctrl-C caught from the first line of `main`, turned into cancellation.

pub mod ansible_cfg;
pub mod atomic;
pub mod ci;
pub mod cli;
pub mod cluster;
pub mod codec;
pub mod commands;
pub mod config;
pub mod configparser;
pub mod deploy;
pub mod error;
pub mod exec;
pub mod extra_vars;
pub mod interrupt;
pub mod inventory;
pub mod modules;
pub mod playbook;
pub mod provider;
pub mod pyre;
pub mod report;
pub mod secret;
pub mod spec;
pub mod template;
pub mod transport;
pub mod vars;
pub mod vault;
pub mod yaml;

pub use error::Error;

use std::process::ExitCode;

/// How a command ended, mapped onto the exit codes ansible-playbook uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything ran (0).
    Success,
    /// Bad input or an internal error (1).
    Error,
    /// At least one host failed (2).
    HostFailed,
    /// At least one host was unreachable and none failed (4).
    HostUnreachable,
    /// A subcommand that is not implemented yet (2, like a usage problem).
    NotImplemented,
    /// A playbook did not load: YAML, keyword, module or role error (4, as ansible-playbook's
    /// parser errors).
    ParseError,
    /// Interrupted by Ctrl-C (130).
    Interrupted,
}

impl Outcome {
    pub fn from_error(err: &Error) -> Self {
        match err {
            Error::NotImplemented { .. } => Outcome::NotImplemented,
            Error::Playbook(_) => Outcome::ParseError,
            Error::Deploy(deploy::DeployError::Lock(deploy::LockError::Interrupted { .. })) => {
                Outcome::Interrupted
            }
            _ => Outcome::Error,
        }
    }

    pub fn code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::Error => 1,
            Outcome::HostFailed | Outcome::NotImplemented => 2,
            Outcome::HostUnreachable | Outcome::ParseError => 4,
            Outcome::Interrupted => 130,
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(o: Outcome) -> Self {
        ExitCode::from(o.code())
    }
}

/// Run one parsed command line.
pub fn run(cli: cli::Cli) -> Result<Outcome, Error> {
    use cli::Command;
    match cli.command {
        Command::Run(args) => commands::run::run(args),
        Command::Plan(args) => commands::plan::plan(args),
        Command::Playbook(args) => commands::playbook::playbook(args),
        Command::Ssh(args) => commands::ssh::ssh(args),
        Command::State(args) => commands::state::state(args),
        Command::Ci(args) => commands::ci::command(args),
    }
}
