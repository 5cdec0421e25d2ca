//! Subcommand handlers that are not a domain of their own: `kinit playbook`. (`kinit run`,
//! `plan`, `ssh` and `state` are `deploy`'s; `kinit ci` is `ci`'s.) Handlers sit above every
//! other layer: they turn the parsed command line into validated settings and call down.

pub mod playbook;
