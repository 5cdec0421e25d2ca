//! The command line (clap derive). Only shape and help text live here; `config.rs` turns a
//! parsed `Cli` into validated settings and each subcommand's module does the work.
//!
//! One file on purpose: the subcommands share argument groups (`ClusterArgs`, `ExecArgs`,
//! `ConnectArgs`), and `--help` texts read consistently when written side by side.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::transport::HostKeyChecking;

/// kinit: Ansible-style playbooks over SSH and WinRM, and one-command Kubernetes clusters with
/// Windows workers on libvirt guests.
#[derive(Debug, Parser)]
#[command(name = "kinit", version, about, long_about = None, propagate_version = true)]
#[command(after_help = "Examples:
  kinit plan --spec k8s-libvirt-1-1-1
  kinit run --spec k8s-libvirt-1-1-1 --cluster-nodes-spec '[[when_group=compute_nodes,os=windows]]'
  kinit run --spec k8s-libvirt-1-1-1 --stop-after cleanup-hypervisors
  kinit playbook site.yml -i hosts.ini --forks 20")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Deploy (or tear down) a cluster described by a spec, phase by phase.
    #[command(after_help = "Examples:
  kinit run --spec k8s-libvirt-1-1-1
  kinit run --spec k8s-libvirt-3-2-2 --hypervisor-hosts nyctea,tyto \\
            --cluster-nodes-spec '[{\"when_name\":\"compute-02\",\"os\":\"windows\"}]'
  kinit run --spec k8s-libvirt-1-1-1 --stop-after cleanup-hypervisors")]
    Run(RunArgs),
    /// Print the expanded inventory and the ordered phases of a cluster, or (`--render`) write
    /// every file its deployment would produce; touches nothing else.
    #[command(after_help = "Examples:
  kinit plan --spec k8s-libvirt-1-1-1
  kinit plan --spec k8s-libvirt-3-2-2 --cluster-nodes-spec '[[when_group=compute_nodes,os=windows]]'
  kinit plan --spec k8s-libvirt-1-1-1 --format json | jq '.nodes[].ip'
  kinit plan --spec k8s-libvirt-1-1-1 --cluster-nodes-spec '[[when_group=compute_nodes,os=windows]]' --render rendered")]
    Plan(PlanArgs),
    /// Run an Ansible-style playbook against an inventory.
    #[command(after_help = "Examples:
  kinit playbook site.yml -i hosts.ini
  kinit playbook site.yml -i inventory.yml --limit 'web*' --tags deploy --check --diff
  kinit playbook site.yml -i hosts.ini -e version=1.31 -e @vars.yml --forks 100")]
    Playbook(PlaybookArgs),
    /// Open a shell on a cluster node, through its hypervisor.
    #[command(after_help = "Examples:
  kinit ssh controller-01 --spec k8s-libvirt-1-1-1
  kinit ssh compute-01 --spec k8s-libvirt-1-1-1 -- uptime")]
    Ssh(SshArgs),
    /// Show a cluster's state folder (keys, password, inventory, run logs) without secrets.
    #[command(after_help = "Examples:
  kinit state show --spec k8s-libvirt-1-1-1
  kinit state path --spec k8s-libvirt-1-1-1")]
    State(StateArgs),
    /// Periodic CI jobs: run a job from ci/jobs.yml and render its reports.
    #[command(after_help = "Examples:
  kinit ci list
  kinit ci run k8s-libvirt-1-1-1-h --out reports/
  kinit ci index reports/")]
    Ci(CiArgs),
}

/// Everything that describes a cluster: shared by `run`, `plan` and `ssh`.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Cluster shape: `<distro>-<driver>-<controllers>-<computes>-<hypervisors>[-suffix]`,
    /// e.g. `k8s-libvirt-1-1-1`.
    #[arg(long, value_name = "SPEC")]
    pub spec: String,
    /// Ordered node rules (JSON, YAML or `[[k=v,..]]`); the last matching rule wins.
    /// Selectors: when_group, when_distro, when_type, when_name. Settings: os, vcpus, maxvcpus,
    /// ram, disk, target_order.
    // Hyphen values allowed so a YAML block list (`- os: windows`) can be passed as is.
    #[arg(long, value_name = "RULES", allow_hyphen_values = true)]
    pub cluster_nodes_spec: Option<String>,
    /// Hypervisors as SSH names, in order: `--hypervisor-hosts nyctea,tyto`.
    #[arg(long, value_name = "HOSTS", conflicts_with = "hypervisor_hosts_spec")]
    pub hypervisor_hosts: Option<String>,
    /// Hypervisors in detail (JSON, YAML or `[[k=v,..]]`): host, ansible_host, ssh_hostname,
    /// ssh_user, ssh_port.
    #[arg(long, value_name = "HOSTS", allow_hyphen_values = true)]
    pub hypervisor_hosts_spec: Option<String>,
    /// Cluster network (JSON, YAML or `[k=v,..]`): network_name, network (CIDR), dns_public.
    #[arg(long, value_name = "NETWORK")]
    pub network_spec: Option<String>,
    /// Cluster identity (JSON, YAML or `[k=v,..]`): cluster_name, cluster_domain.
    #[arg(long, value_name = "CLUSTER")]
    pub cluster_spec: Option<String>,
    /// Extra variables, `key=value` (JSON values allowed) or `@file.yml`; repeatable.
    #[arg(short = 'e', long = "extra-vars", value_name = "VARS")]
    pub extra_vars: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Stop after this phase (e.g. `cleanup-hypervisors`; the `task-` prefix is accepted).
    #[arg(long, value_name = "PHASE")]
    pub stop_after: Option<String>,
    /// Stop before this phase.
    #[arg(long, value_name = "PHASE")]
    pub stop_before: Option<String>,
    /// Skip the phases before this one.
    #[arg(long, value_name = "PHASE")]
    pub start_at: Option<String>,
    /// Skip plays and tasks with these tags inside the phases that run (comma-separated,
    /// repeatable), e.g. `kubernetes` to create the guests of `deploy-cluster` only.
    #[arg(long, value_name = "TAGS")]
    pub skip_tags: Vec<String>,
    /// Wait for another `kinit run` on the same cluster to finish instead of refusing.
    #[arg(long)]
    pub wait_lock: bool,
    /// With `cleanup-hypervisors`: also remove the base images and ISOs `download-images`
    /// cached for the cluster's guests (kept by default, they serve the next deployment).
    #[arg(long)]
    pub purge_cache: bool,
    /// Folder holding the cluster playbooks (`site.yml`); default: KINIT_PLAYBOOK_DIR, then
    /// `../share/kinit/playbooks` beside the executable, then the source tree.
    #[arg(long, value_name = "DIR")]
    pub playbook_dir: Option<PathBuf>,
    #[command(flatten)]
    pub exec: ExecArgs,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Table)]
    pub format: PlanFormat,
    /// Folder holding the cluster playbooks whose phases and tasks the plan lists (as for
    /// `kinit run`).
    #[arg(long, value_name = "DIR")]
    pub playbook_dir: Option<PathBuf>,
    /// Instead of the listing, write every file a deployment of the spec would produce into
    /// DIR, named by machine: each guest's `domain.xml`, its cloud-init `seed/` or Windows
    /// `config-iso/` (autounattend.xml and first-logon scripts), the network XML on the
    /// hypervisor, and under `files/` every configuration file and manifest the playbooks
    /// write (kubeadm init/join configurations, flannel net-conf and patches, validation
    /// workloads, the Windows CNI config, start.ps1), with the exact PowerShell the Windows
    /// join runs under `win_shell/`. Made by the same templates and builders as `kinit run`,
    /// touching nothing else; values only a running cluster knows (join tokens, the cluster
    /// CA, the generated password) are visible placeholders. `DIR/INDEX` lists every file
    /// and the task writing it. DIR must be new, empty, or an earlier render (replaced).
    #[arg(long, value_name = "DIR", conflicts_with = "format")]
    pub render: Option<PathBuf>,
}

/// `kinit ci run --job-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CiJobType {
    /// A scheduled run.
    Periodic,
    /// A run triggered by a pull request label.
    Pr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Table,
    Json,
}

/// Execution knobs shared by `run` and `playbook`, named as in ansible-playbook.
#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    /// Report what would change without changing anything.
    #[arg(short = 'C', long)]
    pub check: bool,
    /// Show the differences in files that change.
    #[arg(short = 'D', long)]
    pub diff: bool,
    /// How many hosts run at once (default 50; for `kinit playbook`, ansible.cfg's `forks`
    /// or ANSIBLE_FORKS when set).
    #[arg(short = 'f', long, value_name = "N")]
    pub forks: Option<usize>,
    /// More output: -v each result as ansible-playbook prints it (JSON), -vv transport
    /// details, -vvv results indented with their invocation.
    #[arg(short = 'v', long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Write one JSON event per line to FILE.
    #[arg(long, value_name = "FILE")]
    pub log_json: Option<PathBuf>,
    /// Write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// SSH host key checking (default strict; for `kinit playbook`, `host_key_checking =
    /// False` in ansible.cfg or ANSIBLE_HOST_KEY_CHECKING=False means off).
    #[arg(long, value_parser = host_key_checking())]
    pub host_key_checking: Option<HostKeyChecking>,
    /// CA bundle (PEM) that WinRM HTTPS certificates are checked against.
    #[arg(long, value_name = "FILE")]
    pub winrm_ca_file: Option<PathBuf>,
}

/// `--host-key-checking`'s values, with their help, parsed into the transport's type (the
/// transport layer knows nothing of clap).
fn host_key_checking() -> impl clap::builder::TypedValueParser<Value = HostKeyChecking> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new([
        PossibleValue::new("strict").help("Refuse hosts whose key is unknown or changed"),
        PossibleValue::new("accept-new").help("Record unknown hosts, refuse changed keys"),
        PossibleValue::new("off").help("Accept any key (not recommended)"),
    ])
    .map(|s| s.parse().expect("clap checked the value"))
}

#[derive(Debug, Args)]
pub struct PlaybookArgs {
    /// Playbook file(s).
    #[arg(required = true, value_name = "PLAYBOOK")]
    pub playbooks: Vec<PathBuf>,
    /// Inventory file (INI or YAML) or a comma-separated host list (`a,b,`); repeatable.
    #[arg(short = 'i', long = "inventory", value_name = "INVENTORY")]
    pub inventory: Vec<String>,
    /// Extra variables, `key=value` (JSON values allowed) or `@file.yml`; repeatable.
    #[arg(short = 'e', long = "extra-vars", value_name = "VARS")]
    pub extra_vars: Vec<String>,
    /// Limit to hosts matching this pattern (`web*:!web3`, `group`, `@file`); given twice,
    /// the last wins (as in ansible-playbook).
    #[arg(short = 'l', long, value_name = "PATTERN", overrides_with = "limit")]
    pub limit: Option<String>,
    /// Only run tasks and plays with these tags (comma-separated, repeatable).
    #[arg(short = 't', long, value_name = "TAGS")]
    pub tags: Vec<String>,
    /// Skip tasks and plays with these tags.
    #[arg(long, value_name = "TAGS")]
    pub skip_tags: Vec<String>,
    /// Start at the task with this name.
    #[arg(long, value_name = "TASK")]
    pub start_at_task: Option<String>,
    /// Parse the playbook and exit.
    #[arg(long)]
    pub syntax_check: bool,
    /// List the tasks that would run and exit.
    #[arg(long)]
    pub list_tasks: bool,
    /// List the hosts each play targets and exit.
    #[arg(long)]
    pub list_hosts: bool,
    /// List each play's task tags and exit.
    #[arg(long)]
    pub list_tags: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(flatten)]
    pub vault: VaultArgs,
    /// Start without cached facts: remove the inventory's hosts from the fact cache
    /// (ansible.cfg's `fact_caching = jsonfile`) before the first play.
    #[arg(long)]
    pub flush_cache: bool,
    /// Run notified handlers on hosts that failed too (a play's `force_handlers` keyword,
    /// ansible.cfg's `force_handlers`, ANSIBLE_FORCE_HANDLERS).
    #[arg(long)]
    pub force_handlers: bool,
    #[command(flatten)]
    pub exec: ExecArgs,
}

/// How hosts are reached when neither the inventory nor the play says, named as in
/// ansible-playbook. These are the lowest-precedence settings: play and task keywords
/// (`remote_user`, `connection`, `become`...) and host variables (`ansible_user`...) win.
#[derive(Debug, Clone, Default, Args)]
pub struct ConnectArgs {
    /// Connect as this user.
    #[arg(short = 'u', long = "user", value_name = "REMOTE_USER")]
    pub remote_user: Option<String>,
    /// Connection type: `ssh`, `local` or `winrm`.
    #[arg(short = 'c', long, value_name = "CONNECTION")]
    pub connection: Option<String>,
    /// SSH private key file.
    #[arg(long = "private-key", visible_alias = "key-file", value_name = "FILE")]
    pub private_key: Option<PathBuf>,
    /// Connection timeout in seconds.
    #[arg(short = 'T', long = "timeout", value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Run tasks with become (sudo).
    #[arg(short = 'b', long = "become")]
    pub become_: bool,
    /// The user to become.
    #[arg(long, value_name = "USER")]
    pub become_user: Option<String>,
    /// The become method: `sudo` (the default) or `su`.
    #[arg(long, value_name = "METHOD", value_parser = ["sudo", "su"])]
    pub become_method: Option<String>,
    /// Ask for the SSH password on the terminal (for hosts whose variables set none).
    #[arg(
        short = 'k',
        long = "ask-pass",
        conflicts_with = "connection_password_file"
    )]
    pub ask_pass: bool,
    /// The SSH password from a file (`-` for stdin; an executable is run for it).
    #[arg(long, visible_alias = "conn-pass-file", value_name = "FILE")]
    pub connection_password_file: Option<String>,
    /// Ask for the become (sudo) password on the terminal; with `-k`, an empty answer means
    /// the SSH password.
    #[arg(
        short = 'K',
        long = "ask-become-pass",
        conflicts_with = "become_password_file"
    )]
    pub ask_become_pass: bool,
    /// The become password from a file (`-` for stdin; an executable is run for it).
    #[arg(long, visible_alias = "become-pass-file", value_name = "FILE")]
    pub become_password_file: Option<String>,
}

/// Ansible Vault secrets, named as in ansible-playbook. Each is tried on every vaulted file
/// and `!vault` value, those whose label matches the vault's first.
#[derive(Debug, Clone, Default, Args)]
pub struct VaultArgs {
    /// A vault secret, `[label@]source`: source is a password file, an executable printing
    /// the password, or `prompt`; repeatable.
    #[arg(long = "vault-id", value_name = "VAULT_IDS")]
    pub vault_ids: Vec<String>,
    /// Ask for the vault password on the terminal.
    #[arg(
        short = 'J',
        long = "ask-vault-password",
        visible_alias = "ask-vault-pass"
    )]
    pub ask_vault_pass: bool,
    /// Vault password file (an executable is run and its output used); repeatable.
    #[arg(
        long = "vault-password-file",
        visible_alias = "vault-pass-file",
        value_name = "VAULT_PASSWORD_FILES"
    )]
    pub vault_password_files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SshArgs {
    /// Node name (`controller-01`, `compute-02`, `service`, `hypervisor-01`).
    pub node: String,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Command to run instead of an interactive shell.
    #[arg(last = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StateArgs {
    #[command(subcommand)]
    pub command: StateCommand,
}

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// List the files of the state folder with sizes and modes; secrets are never printed.
    Show {
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Print the state folder's path.
    Path {
        #[command(flatten)]
        cluster: ClusterArgs,
    },
}

#[derive(Debug, Args)]
pub struct CiArgs {
    #[command(subcommand)]
    pub command: CiCommand,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CiListFormat {
    Table,
    Json,
    Labels,
}

#[derive(Debug, Subcommand)]
pub enum CiCommand {
    /// List the jobs of the matrix.
    List {
        /// Job matrix file (default: `ci/jobs.yml` of the current folder when it has one,
        /// else the one kinit ships).
        #[arg(long)]
        jobs: Option<PathBuf>,
        /// Only jobs of this schedule class (`nightly`, `weekly`).
        #[arg(long, value_name = "CLASS")]
        schedule: Option<String>,
        /// Only jobs that run on this runner pool (`kinit-hypervisor-1`).
        #[arg(long, value_name = "RUNNER")]
        runner: Option<String>,
        /// Only these job labels (comma-separated; others are ignored, e.g. a PR's labels).
        #[arg(long, value_name = "LABELS")]
        labels: Option<String>,
        /// `table`, `json` (a scheduler's matrix) or `labels` (one per line).
        #[arg(long, value_enum, default_value_t = CiListFormat::Table)]
        format: CiListFormat,
    },
    /// Deploy a job's cluster, validate it, always tear it down, write reports.
    Run {
        /// Job label, e.g. `k8s-libvirt-1-1-1-h`.
        label: String,
        /// Job matrix file (default: `ci/jobs.yml` of the current folder when it has one,
        /// else the one kinit ships).
        #[arg(long)]
        jobs: Option<PathBuf>,
        /// Hypervisors to deploy on instead of the job's `hypervisor_hosts` (comma-separated,
        /// as many as the job has; `localhost` is this machine).
        #[arg(long, value_name = "HOSTS")]
        hypervisor_hosts: Option<String>,
        /// Folder the run's reports go into.
        #[arg(long, default_value = "ci-reports")]
        out: PathBuf,
        /// Run every step in check mode (`kinit run --check`), validations skipped.
        #[arg(long)]
        dry_run: bool,
        /// `periodic` (scheduled) or `pr` (triggered by a pull request label).
        #[arg(long, value_enum, default_value = "periodic")]
        job_type: CiJobType,
        /// Pipeline id for the run name (default: CI_PIPELINE_ID, GITHUB_RUN_ID, then `pid`).
        #[arg(long, value_name = "ID")]
        pipeline_id: Option<String>,
        /// The kinit binary the steps run (default: this one).
        #[arg(long, value_name = "PATH")]
        kinit: Option<PathBuf>,
        /// Extra variables on top of the job's `extra_vars` (same forms as `kinit run -e`;
        /// later wins), e.g. another `libvirt_uri`; given to every step through a private file.
        #[arg(short = 'e', long = "extra-vars", value_name = "VARS")]
        extra_vars: Vec<String>,
        /// Deploy only up to this phase (e.g. `create-network` where guests cannot run); the
        /// validations are then skipped, the teardown runs as always.
        #[arg(long, value_name = "PHASE")]
        stop_after: Option<String>,
    },
    /// Render the index page and badges over all runs in a reports folder.
    Index {
        /// Reports folder.
        out: PathBuf,
        /// Runs per job shown in the history.
        #[arg(long, default_value_t = 10, value_name = "N")]
        history: usize,
    },
}
