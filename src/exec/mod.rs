//! The executor: runs loaded plays against an inventory on tokio.
//!
//! Fan-out is bounded by a `Semaphore` of `forks` permits; shutdown is a `CancellationToken`
//! (Ctrl-C) that cancels in-flight commands. The `linear` strategy runs each task on every
//! host of the batch before the next task starts; `free` lets every host walk the play on its
//! own. Both share one tree walker (`walk`): `free` simply walks with one host at a time.
//! Workers never print: they send `report::Event`s.
//!
//! Variable precedence (lowest first), as in Ansible: role defaults < inventory group vars
//! (`all` first, deeper groups later) < inventory host vars < facts < play `vars` <
//! `vars_files` < role vars < block vars < task vars < `include_vars` < `set_fact`/`register`
//! < role and include params < extra vars (`-e`).

pub mod actions;
mod argspec;
mod argspec_check;
mod argspec_types;
mod conn;
pub mod fact_cache;
mod host_task;
mod hostvars;
mod include;
mod inherit;
mod loops;
mod notify;
mod play;
mod prompt;
mod reboot;
mod remote;
pub mod render;
mod retry;
pub mod session;
mod state;
mod state_actions;
mod vars;
mod walk;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::inventory::Inventory;
use crate::playbook::{Loader, Play, Task};
use crate::report::{Event, EventSender};
use crate::template::Templar;
use crate::transport::HostKeyChecking;
use crate::vars::VarMap;

pub use crate::playbook::TagFilter;
pub use state::HostState;

/// Stack of the runtime's worker threads. Nested includes and templates that reach variables
/// through variables recurse; their depth is capped ([`include::MAX_INCLUDE_DEPTH`],
/// `template::scope::MAX_VAR_DEPTH`), and this leaves room for the cap in debug builds too.
/// Only touched pages are committed, so the size costs address space, not memory.
pub const WORKER_STACK: usize = 32 * 1024 * 1024;

/// Hosts that run at once when nothing says otherwise (ansible-playbook's default is 5;
/// kinit's connections are cheap).
pub const DEFAULT_FORKS: usize = 50;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub forks: usize,
    pub check: bool,
    pub diff: bool,
    pub verbose: u8,
    pub tags: TagFilter,
    pub start_at_task: Option<String>,
    pub extra_vars: VarMap,
    pub limit: Option<String>,
    pub host_key_checking: HostKeyChecking,
    /// `--winrm-ca-file`: the CA bundle WinRM HTTPS certificates are checked against.
    pub winrm_ca_file: Option<std::path::PathBuf>,
    /// `-u`, `-c`, `--private-key`, `-T`, `-b`, `--become-user`: the lowest-precedence way
    /// to reach hosts.
    pub connect: ConnectDefaults,
    /// Render mode (`kinit plan --render`): no task reaches a host; see `render`.
    pub render: Option<Arc<dyn render::RenderSink>>,
    /// `--force-handlers`: notified handlers run on failed hosts (a play's `force_handlers`
    /// decides for its own hosts).
    pub force_handlers: bool,
    /// ansible.cfg's `error_on_missing_handler` (on unless turned off): a notification no
    /// handler answers ends the run with an error, as in ansible-core; off, a warning.
    pub error_on_missing_handler: bool,
    /// ansible.cfg's `allow_broken_conditionals` (off unless turned on): a conditional that
    /// gives no boolean counts by its truth, with a deprecation warning, instead of failing
    /// the task as ansible-core 2.19 does.
    pub allow_broken_conditionals: bool,
    /// ansible.cfg's `fact_caching` and friends: where facts outlive the run.
    pub fact_caching: crate::ansible_cfg::FactCaching,
    /// `--flush-cache`: the inventory's hosts start without cached facts (their cache
    /// entries are removed).
    pub flush_cache: bool,
}

/// ansible-playbook's connection and become options, below keywords and host variables.
#[derive(Debug, Clone, Default)]
pub struct ConnectDefaults {
    pub remote_user: Option<String>,
    pub connection: Option<String>,
    pub private_key: Option<std::path::PathBuf>,
    pub timeout: Option<std::time::Duration>,
    pub become_: bool,
    pub become_user: Option<String>,
    /// `--become-method` or ansible.cfg's `become_method` (`sudo` when unset).
    pub become_method: Option<String>,
    /// ansible.cfg's `[ssh_connection] ssh_args` (or ANSIBLE_SSH_ARGS), for hosts without
    /// `ansible_ssh_args`.
    pub ssh_args: Option<String>,
    /// ansible.cfg's `gathering`: whether a play that does not say `gather_facts` gathers.
    pub gathering: crate::ansible_cfg::Gathering,
    /// The passwords asked for with `-k` and `-K`, below the hosts' own variables.
    pub password: Option<crate::secret::Secret>,
    pub become_password: Option<crate::secret::Secret>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            forks: DEFAULT_FORKS,
            check: false,
            diff: false,
            verbose: 0,
            tags: TagFilter::default(),
            start_at_task: None,
            extra_vars: VarMap::new(),
            limit: None,
            host_key_checking: HostKeyChecking::Strict,
            winrm_ca_file: None,
            connect: ConnectDefaults::default(),
            render: None,
            force_handlers: false,
            error_on_missing_handler: true,
            allow_broken_conditionals: false,
            fact_caching: Default::default(),
            flush_cache: false,
        }
    }
}

pub struct Executor {
    pub(crate) templar: Templar,
    pub(crate) loader: Arc<Loader>,
    pub(crate) inventory: Arc<RwLock<Inventory>>,
    pub(crate) hosts: Arc<Mutex<HashMap<String, HostState>>>,
    conns: conn::ConnPool,
    pub(crate) events: EventSender,
    pub(crate) opts: RunOptions,
    pub(crate) cancel: CancellationToken,
    /// An error that ends the whole run (ansible-core raises it out of its strategy: a
    /// notification no handler answers): no task starts after it, and the run exits 1.
    run_error: Mutex<Option<String>>,
    /// The error that ended the run is one of the playbook's (exit 4, as ansible-playbook's
    /// parser errors), not of a task.
    run_error_in_playbook: AtomicBool,
    forks: Semaphore,
    task_ids: AtomicUsize,
    /// `--start-at-task` was reached (or not given).
    started: AtomicBool,
    /// Folder of the playbook being run (relative files resolve against it).
    playbook_dir: Mutex<PathBuf>,
    /// The tag selection of the plays being run: `--tags`/`--skip-tags`, or one phase's tag
    /// when `kinit run` runs the phases one after another through the same executor.
    tags: RwLock<TagFilter>,
    /// Results of `async` tasks by job id, for `async_status`.
    pub(crate) jobs: Mutex<HashMap<String, Job>>,
    /// Warnings already given (`warn_once`).
    warned: Mutex<std::collections::HashSet<String>>,
    /// The `jsonfile` fact cache, when ansible.cfg asks for one.
    fact_cache: Option<fact_cache::FactCache>,
    /// The run's options as every task sees them (`ansible_version`, `ansible_forks`, ...):
    /// made once.
    pub(crate) options_vars: VarMap,
}

/// One play's run over one batch of hosts.
/// An `async` task's job, by id, for `async_status`.
#[derive(Debug, Clone)]
pub(crate) enum Job {
    /// Run to its end (`poll` > 0, or a module that cannot be left running): its result.
    Done(crate::report::TaskResult),
    /// Started in the background on the host (`poll: 0`); its result once `async_status` has
    /// seen it end.
    Started {
        launched: crate::modules::async_job::Launched,
        ended: Option<crate::report::TaskResult>,
    },
}

pub(crate) struct PlayRun<'a> {
    pub play: &'a Play,
    /// Every host the play targets (`ansible_play_hosts_all`).
    pub all_hosts: Vec<String>,
    /// This `serial` batch's hosts that run (`ansible_play_batch`): not those that failed or
    /// were unreachable in an earlier play.
    pub batch: Vec<String>,
    /// The batch's size with those hosts counted, `max_fail_percentage`'s denominator.
    pub batch_size: usize,
    /// Play handlers plus those of roles included at run time.
    pub handlers: Mutex<Vec<Task>>,
    /// Roles `include_role` loaded while the play runs: Ansible adds them to the play's
    /// roles, so `ansible_play_role_names` and friends list them from then on.
    pub included_roles: Mutex<crate::playbook::RoleNames>,
    /// Roles (`RoleCtx::dedup`) that have run on a host in this play, by host.
    pub roles_done: Mutex<std::collections::HashSet<(String, String)>>,
    /// `meta: end_play`, `any_errors_fatal` or `max_fail_percentage` stopped the play.
    pub ended: AtomicBool,
    /// `any_errors_fatal` stopped it: a block with `rescue` or `always` around the failed
    /// task still runs them (ansible-core's linear strategy does not break the play for a
    /// host whose next task is in a rescue or always section).
    pub fatal: AtomicBool,
    /// `meta: end_play` ended it: the later `serial` batches do not run either
    /// (ansible-core's `AnsibleEndPlay` leaves the batch loop), where `end_batch` ends this
    /// one only.
    pub end_play: AtomicBool,
    /// `throttle`: one bound per task (by location and limit), shared by every host that
    /// runs it, whichever strategy walks them.
    pub throttles: Mutex<std::collections::HashMap<(String, u64), Arc<tokio::sync::Semaphore>>>,
    /// The play's `max_fail_percentage`, rendered when it is a template.
    pub max_fail_percentage: Option<f64>,
    /// `max_fail_percentage` was exceeded in this batch: no later play runs.
    pub max_fail_exceeded: AtomicBool,
}

impl PlayRun<'_> {
    pub fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }
    pub fn is_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }
    pub fn end_fatal(&self) {
        self.fatal.store(true, Ordering::SeqCst);
        self.end();
    }
    /// Undo an `any_errors_fatal` stop, for the rescue and always sections around the task
    /// that failed; whether it had stopped the play.
    pub fn take_fatal(&self) -> bool {
        let fatal = self.fatal.swap(false, Ordering::SeqCst);
        if fatal {
            self.ended.store(false, Ordering::SeqCst);
        }
        fatal
    }
}

impl Executor {
    pub fn new(
        loader: Arc<Loader>,
        inventory: Inventory,
        opts: RunOptions,
        events: EventSender,
        cancel: CancellationToken,
    ) -> Self {
        // Inventory passwords never reach output, whatever a task does with them.
        for h in inventory.hosts.keys() {
            hide_host_secrets(&events, &inventory, h);
        }
        for (k, v) in &opts.extra_vars {
            if is_secret_name(k) {
                events.redactor.add_value(v);
            }
        }
        let playbook_dir = Mutex::new(loader.base_dir());
        let inventory = Arc::new(RwLock::new(inventory));
        let hosts = Arc::new(Mutex::new(HashMap::new()));
        let source = hostvars::ExecHostVars {
            inventory: inventory.clone(),
            hosts: hosts.clone(),
            extra_vars: opts.extra_vars.clone(),
        };
        let tags = RwLock::new(opts.tags.clone());
        let mut templar = Templar::new().with_hostvars(Arc::new(source));
        let mut warnings = Vec::new();
        let filter_files = crate::template::pyfilters::plugin_files(&loader.filter_plugin_dirs());
        let test_files = crate::template::pyfilters::plugin_files(&loader.test_plugin_dirs());
        let lookup_files = crate::template::pyfilters::plugin_files(&loader.lookup_plugin_dirs());
        if !filter_files.is_empty() || !test_files.is_empty() || !lookup_files.is_empty() {
            // The controller's own Python, as ansible-core runs plugins in its process.
            let python = std::path::Path::new("python3");
            let started = crate::template::pyfilters::PythonFilters::start(
                python,
                &filter_files,
                &test_files,
                &lookup_files,
            );
            match started {
                Ok(host) => {
                    warnings.extend(
                        host.errors.iter().map(|e| {
                            format!("plugin not loaded (what it defines is unknown): {e}")
                        }),
                    );
                    templar = templar.with_python_filters(Arc::new(host));
                }
                Err(e) => warnings.push(format!("filter and test plugins not loaded: {e}")),
            }
        }
        let fact_cache = fact_cache::FactCache::open(&opts.fact_caching).unwrap_or_else(|w| {
            warnings.push(w);
            None
        });
        let options_vars = vars::options_vars(&opts, &inventory.read().unwrap().sources.sources);
        let exec = Self {
            options_vars,
            fact_cache,
            templar,
            forks: Semaphore::new(opts.forks.max(1)),
            started: AtomicBool::new(opts.start_at_task.is_none()),
            loader,
            inventory,
            hosts,
            conns: conn::ConnPool::default(),
            events,
            opts,
            cancel,
            run_error: Mutex::default(),
            run_error_in_playbook: AtomicBool::new(false),
            task_ids: AtomicUsize::new(0),
            playbook_dir,
            tags,
            warned: Mutex::default(),
            jobs: Mutex::default(),
        };
        for w in warnings {
            exec.warn_once(w);
        }
        exec.open_fact_cache();
        exec
    }

    /// With `--flush-cache`, remove the inventory's hosts from the fact cache
    /// (ansible-playbook flushes those only); then read theirs, so `hostvars` has them from
    /// the start. Any other host's (the implicit `localhost`, an `add_host` one) is read
    /// when the run first meets it (`with_state`).
    fn open_fact_cache(&self) {
        let Some(cache) = &self.fact_cache else {
            return;
        };
        let hosts: Vec<String> = self
            .inventory
            .read()
            .unwrap()
            .hosts
            .keys()
            .cloned()
            .collect();
        for h in hosts {
            if self.opts.flush_cache
                && let Err(w) = cache.delete(&h)
            {
                self.warn_once(w);
            }
            self.with_state(&h, |_| ());
        }
    }

    /// A host's state as the run first meets it: its cached facts, if any.
    fn new_host_state(&self, host: &str) -> HostState {
        let mut s = HostState::default();
        if let Some(cache) = &self.fact_cache {
            match cache.load(host) {
                Ok(cached) => s.add_named_facts(cached.unwrap_or_default()),
                Err(w) => self.warn_once(w),
            }
        }
        s
    }

    /// Write `host`'s facts to the fact cache, if there is one (after they changed).
    pub(crate) fn cache_facts(&self, host: &str) {
        let Some(cache) = &self.fact_cache else {
            return;
        };
        let facts = self.with_state(host, |s| s.cached_form());
        let result = if facts.is_empty() {
            cache.delete(host)
        } else {
            cache.store(host, &facts)
        };
        if let Err(w) = result {
            self.warn_once(w);
        }
    }

    /// Report `message` as a warning unless it was reported already in this run.
    /// Show what the loader noticed in files read while running (`include_tasks`,
    /// `include_vars`, `vars_files`): a YAML key given twice, an action kinit lacks.
    pub(crate) fn loader_warnings(&self) {
        for message in self.loader.take_warnings() {
            self.warn_once(message);
        }
    }

    pub(crate) fn warn_once(&self, message: String) {
        if self.warned.lock().unwrap().insert(message.clone()) {
            self.emit(Event::Warning { message });
        }
    }

    pub(crate) fn playbook_dir(&self) -> PathBuf {
        self.playbook_dir.lock().unwrap().clone()
    }

    pub(crate) fn emit(&self, ev: Event) {
        self.events.send(ev);
    }

    /// Whether a host ends the run failed (not rescued, not cleared by
    /// `meta: clear_host_errors`): ansible-playbook's exit code 2 asks this of its play
    /// iterator (`get_failed_hosts`), not of the recap's counts.
    pub fn any_host_ends_failed(&self) -> bool {
        self.hosts.lock().unwrap().values().any(|s| s.failed)
    }

    /// End the whole run with `message` (the first such error wins): tasks running finish,
    /// none starts after, and the run exits 1 saying why.
    pub(crate) fn end_run_with_error(&self, message: String) {
        let mut e = self.run_error.lock().unwrap();
        if e.is_none() {
            self.emit(Event::Error {
                message: message.clone(),
            });
            *e = Some(message);
        }
    }

    /// End the whole run with an error of the playbook (a play keyword that cannot be
    /// templated): as `end_run_with_error`, but the run exits 4.
    pub(crate) fn end_run_with_playbook_error(&self, message: String) {
        self.run_error_in_playbook.store(true, Ordering::SeqCst);
        self.end_run_with_error(message);
    }

    /// Whether the error that ended the run is the playbook's (exit 4).
    pub fn run_error_in_playbook(&self) -> bool {
        self.run_error_in_playbook.load(Ordering::SeqCst)
    }

    /// The error that ended the run, if one did (`end_run_with_error`).
    pub fn run_error(&self) -> Option<String> {
        self.run_error.lock().unwrap().clone()
    }

    /// Whether no more task should start: Ctrl-C, or an error that ends the run.
    pub(crate) fn stopping(&self) -> bool {
        self.cancel.is_cancelled() || self.run_error.lock().unwrap().is_some()
    }

    pub(crate) fn with_state<R>(&self, host: &str, f: impl FnOnce(&mut HostState) -> R) -> R {
        let mut map = self.hosts.lock().unwrap();
        f(map
            .entry(host.to_string())
            .or_insert_with(|| self.new_host_state(host)))
    }

    /// Select the tasks of the next `run`s by `tags` (the initial selection is
    /// `RunOptions::tags`).
    pub fn set_tags(&self, tags: TagFilter) {
        *self.tags.write().unwrap() = tags;
    }

    pub(crate) fn tags(&self) -> std::sync::RwLockReadGuard<'_, TagFilter> {
        self.tags.read().unwrap()
    }

    /// Whether some host failed or became unreachable so far in this run.
    pub fn any_host_failed(&self) -> bool {
        self.hosts
            .lock()
            .unwrap()
            .values()
            .any(|s| s.failed || s.unreachable)
    }

    /// Mark `host` failed outside a task (a play-level error) and report it.
    pub(crate) fn fail_host(&self, host: &str, what: &str, location: &str, msg: String) {
        self.with_state(host, |s| s.failed = true);
        self.emit(Event::TaskResult {
            host: host.to_string(),
            task_id: self.task_ids.fetch_add(1, Ordering::SeqCst),
            task: what.to_string(),
            location: location.to_string(),
            status: crate::report::Status::Failed,
            module: None,
            delegated_to: None,
            looped: false,
            duration: std::time::Duration::ZERO,
            result: crate::report::TaskResult {
                failed: Some(true),
                msg: Some(msg.into()),
                ..Default::default()
            },
        });
    }

    /// Mask `host`'s secret-named variables of `inventory` (one read while running).
    pub(crate) fn hide_host_secrets(&self, inventory: &Inventory, host: &str) {
        hide_host_secrets(&self.events, inventory, host);
    }

    pub(crate) fn next_task_id(&self) -> usize {
        self.task_ids.fetch_add(1, Ordering::SeqCst)
    }
}

/// Mask `host`'s secret-named inventory variables in every output.
fn hide_host_secrets(events: &EventSender, inventory: &Inventory, host: &str) {
    for (k, v) in inventory.host_vars(host) {
        if is_secret_name(&k) {
            events.redactor.add_value(&v);
        }
    }
}

use crate::report::redact::is_secret_name;
