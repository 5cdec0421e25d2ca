//! Parsed command line → validated settings for `playbook`, `run` and `plan`. Everything a
//! later step needs is checked here (spec, `*_spec` options, extra vars, layout, phase names,
//! forks; for `playbook` the command line merged over `ansible.cfg`), so a command either
//! starts with a complete, consistent config or fails before touching anything.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Error;
use crate::ansible_cfg::AnsibleSettings;
use crate::cli::{ClusterArgs, ExecArgs, PlanArgs, PlanFormat, PlaybookArgs, RunArgs, VaultArgs};
use crate::cluster::{Cluster, Phase, PhaseWindow, expand};
use crate::exec::session::ReportFiles;
use crate::exec::{ConnectDefaults, RunOptions, TagFilter};
use crate::extra_vars::parse_extra_vars;
use crate::playbook::LoaderOptions;
use crate::spec::{ClusterSpec, SpecInputs};
use crate::transport::HostKeyChecking;
use crate::vars::VarMap;
use crate::vault::SecretSources;

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

/// Where `kinit playbook`'s vault secrets come from: ansible.cfg's `vault_identity_list`
/// before `--vault-id`, its `vault_password_file` after `--vault-password-file`, as
/// ansible-playbook orders them (`CLI.build_vault_ids`).
pub fn vault_sources(args: &VaultArgs, cfg: &AnsibleSettings) -> SecretSources {
    SecretSources {
        identity_list: cfg.vault_identity_list.clone(),
        vault_ids: args.vault_ids.clone(),
        password_files: args.vault_password_files.clone(),
        configured_password_file: cfg.vault_password_file.clone(),
        ask: args.ask_vault_pass,
        id_match: cfg.vault_id_match,
    }
}

/// What `kinit playbook` does once its playbooks load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaybookMode {
    Run,
    SyntaxCheck,
    ListTags,
    ListTasks,
    ListHosts,
}

/// Ansible's `DEFAULT_HOST_LIST`: the inventory read when neither `-i`, ansible.cfg's
/// `inventory` nor `ANSIBLE_INVENTORY` names one.
pub const DEFAULT_HOST_LIST: &str = "/etc/ansible/hosts";

/// The default host list as the only source when it exists; else none (ansible-core does not
/// warn that a missing default cannot be parsed, only that no inventory was).
fn default_inventory(path: &Path) -> Vec<String> {
    match path.exists() {
        true => vec![path.display().to_string()],
        false => Vec::new(),
    }
}

/// ansible-playbook's handling of inventory sources it cannot read and of an inventory
/// without hosts (ansible-core's `InventoryManager.parse_sources`/`parse_source`).
#[derive(Debug, Clone, Copy)]
pub struct InventoryPolicy {
    /// `[inventory] unparsed_warning`: warn when no source was read.
    pub unparsed_warning: bool,
    /// `localhost_warning`: warn when the inventory has no hosts.
    pub localhost_warning: bool,
    /// `[inventory] unparsed_is_failed`: no source read ends the run.
    pub unparsed_is_failed: bool,
    /// `[inventory] any_unparsed_is_failed`: any source not read ends the run.
    pub any_unparsed_is_failed: bool,
}

/// `kinit playbook`: the command line over `ANSIBLE_*` variables over `ansible.cfg`, as
/// ansible-playbook merges them.
#[derive(Debug, Clone)]
pub struct PlaybookConfig {
    pub playbooks: Vec<PathBuf>,
    pub mode: PlaybookMode,
    pub loader: LoaderOptions,
    /// Inventory sources (`-i`, else ansible.cfg's `inventory`).
    pub inventory: Vec<String>,
    /// What an unreadable or empty inventory warns of or ends.
    pub inventory_policy: InventoryPolicy,
    pub run: RunOptions,
    pub reports: ReportFiles,
}

impl PlaybookConfig {
    /// `roles_path`: role folders from the environment (`KINIT_ROLES_PATH`), searched before
    /// ansible.cfg's.
    pub fn from_args(
        args: &PlaybookArgs,
        cfg: &AnsibleSettings,
        base_dir: &Path,
        mut roles_path: Vec<PathBuf>,
    ) -> Result<Self, Error> {
        let forks = args
            .exec
            .forks
            .or(cfg.forks)
            .unwrap_or(crate::exec::DEFAULT_FORKS);
        if forks == 0 {
            return Err(Error::Forks);
        }
        let mode = if args.syntax_check {
            PlaybookMode::SyntaxCheck
        } else if args.list_tags {
            PlaybookMode::ListTags
        } else if args.list_tasks {
            PlaybookMode::ListTasks
        } else if args.list_hosts {
            PlaybookMode::ListHosts
        } else {
            PlaybookMode::Run
        };
        roles_path.extend(cfg.roles_path.iter().cloned());
        let extra_vars = crate::extra_vars::parse_playbook_extra_vars(&args.extra_vars, base_dir)?;
        // `-i` wins over ansible.cfg's `inventory` (and ANSIBLE_INVENTORY), as in Ansible;
        // without either, Ansible's default host list when it exists.
        let inventory = if !args.inventory.is_empty() {
            args.inventory.clone()
        } else if !cfg.inventory.is_empty() {
            cfg.inventory.clone()
        } else {
            default_inventory(Path::new(DEFAULT_HOST_LIST))
        };
        let c = &args.connect;
        let run = RunOptions {
            forks,
            check: args.exec.check,
            diff: args.exec.diff,
            verbose: args.exec.verbose,
            tags: TagFilter::new(&args.tags, &args.skip_tags),
            start_at_task: args.start_at_task.clone(),
            extra_vars: extra_vars.clone(),
            limit: args.limit.clone(),
            connect: ConnectDefaults {
                remote_user: c.remote_user.clone().or(cfg.remote_user.clone()),
                connection: c.connection.clone(),
                private_key: c.private_key.clone().or(cfg.private_key_file.clone()),
                timeout: c.timeout.or(cfg.timeout).map(Duration::from_secs),
                become_: c.become_ || cfg.become_ == Some(true),
                become_user: c.become_user.clone().or(cfg.become_user.clone()),
                become_method: c.become_method.clone().or(cfg.become_method.clone()),
                ssh_args: cfg.ssh_args.clone(),
                gathering: cfg.gathering,
                // Asked on the terminal by the `kinit playbook` handler (`-k`, `-K`).
                password: None,
                become_password: None,
            },
            host_key_checking: args
                .exec
                .host_key_checking
                .unwrap_or(match cfg.host_key_checking {
                    Some(false) => HostKeyChecking::Off,
                    _ => HostKeyChecking::Strict,
                }),
            winrm_ca_file: args.exec.winrm_ca_file.clone(),
            render: None,
            force_handlers: args.force_handlers || cfg.force_handlers,
            error_on_missing_handler: cfg.error_on_missing_handler.unwrap_or(true),
            allow_broken_conditionals: cfg.allow_broken_conditionals,
            fact_caching: cfg.fact_caching.clone(),
            flush_cache: args.flush_cache,
        };
        Ok(Self {
            playbooks: args.playbooks.clone(),
            mode,
            loader: LoaderOptions {
                roles_path,
                library_path: cfg.library.clone(),
                filter_plugins: cfg.filter_plugins.clone(),
                test_plugins: cfg.test_plugins.clone(),
                lookup_plugins: cfg.lookup_plugins.clone(),
                collections_path: cfg.collections_path.clone(),
                extra_vars,
            },
            inventory,
            inventory_policy: InventoryPolicy {
                unparsed_warning: cfg.inventory_unparsed_warning.unwrap_or(true),
                localhost_warning: cfg.localhost_warning.unwrap_or(true),
                unparsed_is_failed: cfg.inventory_unparsed_is_failed,
                any_unparsed_is_failed: cfg.inventory_any_unparsed_is_failed,
            },
            run,
            reports: ReportFiles {
                log_json: args.exec.log_json.clone(),
                junit: args.exec.junit.clone(),
                display: crate::report::Display {
                    ok: cfg.display_ok_hosts.unwrap_or(true),
                    skipped: cfg.display_skipped_hosts.unwrap_or(true),
                    custom_stats: cfg.show_custom_stats,
                },
            },
        })
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
