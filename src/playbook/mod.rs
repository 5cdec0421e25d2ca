//! Playbooks: plays, roles, blocks and tasks as loaded from YAML, validated at load time.
//!
//! Loading is the only place playbook YAML is parsed. Everything a typo can break is checked
//! here, before any host is touched: unknown keywords and modules (with a "did you mean"),
//! malformed blocks, missing roles and statically imported files, each reported with its
//! file and line. What only the executor can know (templated values, dynamic includes) stays
//! in the task as raw JSON and is rendered per host.
//!
//! The include model: `import_tasks`, `import_role`, `roles:` and `import_playbook` are static
//! (expanded here into blocks that carry the import's keywords, so `when`/`tags` apply to every
//! imported task); `include_tasks` and `include_role` are dynamic (loaded by the executor when a
//! host reaches them, with `when`/`loop` applying to the include itself), as in Ansible.

pub mod actions;
mod ansible_modules;
mod args;
mod error;
mod installed;
mod keywords;
pub mod list;
mod load;
mod play;
mod prompt;
pub mod reserved;
mod role;
mod role_argspec;
mod tags;
mod task;
pub mod yaml;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

pub use args::VARIABLE_PARAMS;
pub use args::contains_template as task_contains_template;
pub use error::{LoadError, did_you_mean};
pub use keywords::set_templated;
pub use load::{Loader, LoaderOptions, RoleNames, lexical, unfrack};
pub use play::{percent_from_text, serial_from_text};
pub use tags::TagFilter;
pub use task::{resolve_action, role_flag, rolespec_validate};

use crate::vars::VarMap;

/// Where a play, task or role came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    pub file: Arc<PathBuf>,
    pub line: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

#[derive(Debug, Clone)]
pub struct Playbook {
    pub path: PathBuf,
    pub plays: Vec<Play>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    #[default]
    Linear,
    Free,
}

impl Strategy {
    pub const WORDS: &'static str = "`linear`, `free`, `host_pinned` or `debug`";

    /// A strategy plugin's name, short or `ansible.builtin.` FQCN. `host_pinned` runs as
    /// `free` (each host through its tasks on its own; kinit keeps a host on its one
    /// connection anyway), `debug` as `linear` (kinit has no task debugger).
    pub fn from_word(word: &str) -> Option<Strategy> {
        match word.strip_prefix("ansible.builtin.").unwrap_or(word) {
            "linear" | "debug" => Some(Strategy::Linear),
            "free" | "host_pinned" => Some(Strategy::Free),
            _ => None,
        }
    }
}

/// One `vars_prompt` entry. `prompt` and `default` may be templates over the play's vars.
#[derive(Debug, Clone, PartialEq)]
pub struct VarPrompt {
    pub name: String,
    pub prompt: Option<String>,
    pub default: Option<Value>,
    pub private: bool,
    pub confirm: bool,
    /// A `password_hash` type (`sha512_crypt`, `sha256_crypt`) the answer is hashed with.
    pub encrypt: Option<String>,
    pub salt: Option<String>,
    pub salt_size: Option<usize>,
    pub loc: Location,
}

/// A play's `order`: the order its hosts run in (batches, `run_once`, `ansible_play_batch`).
/// `ansible_play_hosts` and `ansible_play_hosts_all` keep the inventory's order, as in Ansible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostOrder {
    #[default]
    Inventory,
    ReverseInventory,
    Sorted,
    ReverseSorted,
    Shuffle,
}

impl HostOrder {
    pub const WORDS: &'static [&'static str] = &[
        "inventory",
        "reverse_inventory",
        "sorted",
        "reverse_sorted",
        "shuffle",
    ];

    pub fn from_word(word: &str) -> Option<HostOrder> {
        Some(match word {
            "inventory" => HostOrder::Inventory,
            "reverse_inventory" => HostOrder::ReverseInventory,
            "sorted" => HostOrder::Sorted,
            "reverse_sorted" => HostOrder::ReverseSorted,
            "shuffle" => HostOrder::Shuffle,
            _ => return None,
        })
    }

    /// The message for an `order` that is none of [`HostOrder::WORDS`].
    pub fn invalid(word: &str) -> String {
        format!(
            "invalid `order` `{word}` (expected one of: {})",
            HostOrder::WORDS.join(", ")
        )
    }

    /// `hosts` (in inventory order) in this order.
    pub fn arrange(self, hosts: &[String]) -> Vec<String> {
        let mut out = hosts.to_vec();
        match self {
            HostOrder::Inventory => {}
            HostOrder::ReverseInventory => out.reverse(),
            HostOrder::Sorted => out.sort(),
            HostOrder::ReverseSorted => out.sort_by(|a, b| b.cmp(a)),
            HostOrder::Shuffle => {
                // Fisher-Yates over the OS's randomness; without it, inventory order.
                for i in (1..out.len()).rev() {
                    let mut b = [0u8; 8];
                    if getrandom::fill(&mut b).is_err() {
                        break;
                    }
                    let j = (u64::from_le_bytes(b) % (i as u64 + 1)) as usize;
                    out.swap(i, j);
                }
            }
        }
        out
    }
}

/// One entry of `serial`: a host count or a percentage of the play's hosts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Serial {
    Count(usize),
    Percent(f64),
}

#[derive(Debug, Clone)]
pub struct Play {
    pub name: String,
    pub hosts: String,
    /// `hosts` as written: the items of a list, or the one string (the listings show them
    /// joined with `,`, as ansible-playbook joins the field's list).
    pub hosts_items: Vec<String>,
    pub loc: Location,
    /// `serial` given as a template, rendered when the play starts (`serial_from_text`).
    pub serial_template: Option<String>,
    /// `strategy` and `order` given as templates, rendered when the play starts.
    pub strategy_template: Option<String>,
    pub order_template: Option<String>,
    /// `max_fail_percentage` given as a template, rendered when the play starts.
    pub max_fail_percentage_template: Option<String>,
    pub vars: VarMap,
    /// Templated file names, loaded per host at play start.
    /// Each entry: one file name, or candidates of which the first found is loaded.
    pub vars_files: Vec<Vec<String>>,
    /// `gather_facts` as the play says it; unset, ansible.cfg's `gathering` decides.
    pub gather_facts: Option<bool>,
    /// The play's `gather_subset`, `gather_timeout` and `fact_path`, as written: the
    /// arguments of its implicit fact gathering (ansible-core's `PlayIterator` passes them).
    pub gather_args: serde_json::Map<String, Value>,
    pub serial: Vec<Serial>,
    pub strategy: Strategy,
    pub order: HostOrder,
    pub vars_prompt: Vec<VarPrompt>,
    pub any_errors_fatal: bool,
    /// `force_handlers`: notified handlers run on the play's hosts that failed too.
    pub force_handlers: Option<bool>,
    pub max_fail_percentage: Option<f64>,
    /// Keywords every task of the play inherits (`become`, `tags`, `environment`, ...).
    pub kw: Keywords,
    pub pre_tasks: Vec<Task>,
    /// `roles:` followed by `tasks:`, one section as in Ansible.
    pub tasks: Vec<Task>,
    pub post_tasks: Vec<Task>,
    pub handlers: Vec<Task>,
    /// The roles the play names and their dependencies, for the role-name magic variables.
    pub role_names: load::RoleNames,
    /// What every task of the play sees of its roles (ansible-core's `VariableManager`, with
    /// roles public as they are by default): their defaults, lowest of all, and their
    /// `vars/`, above the play's `vars_files`. Combined once when the play loads.
    pub role_defaults: VarMap,
    pub role_exports: VarMap,
}

/// A role as loaded: its variables and where its files are.
#[derive(Debug, Clone)]
pub struct RoleCtx {
    /// The role's own name (`role_name`): as the play writes it, or its folder's name for a
    /// collection's role.
    pub name: String,
    /// The collection a role comes from (`ns.coll`), when it is one's.
    pub collection: Option<String>,
    pub path: PathBuf,
    pub defaults: VarMap,
    pub vars: VarMap,
    /// Parameters given where the role is used (`roles: [{role: x, foo: 1}]`).
    pub params: VarMap,
    /// Entered by `import_role`/`include_role` (not `roles:` or a dependency): the role
    /// around it is its parent (`ansible_parent_role_names`).
    pub included: bool,
    /// For a role from `roles:` or `dependencies:` without `allow_duplicates: true`: what makes
    /// two uses the same (path, tasks file, parameters). Such a role runs once per host and
    /// play, as ansible-core runs a role it has cached once (`Play.role_cache`).
    pub dedup: Option<String>,
    /// The keywords of the `roles:`/`dependencies:` entry: the role's handlers inherit them
    /// too (they run outside the role's block).
    pub keywords: Keywords,
}

impl RoleCtx {
    /// The name output and notifications use (ansible-core's `Role.get_name()`): a
    /// collection's role by its full name (`ns.coll.role`).
    pub fn full_name(&self) -> String {
        match &self.collection {
            Some(c) => format!("{c}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// How a role is used: what `roles:`, `dependencies:`, `import_role` or `include_role` give it.
#[derive(Debug, Clone, Default)]
pub struct RoleUse {
    pub name: String,
    /// Variables the role's tasks see from the use: its parameters and its `vars:`.
    pub params: VarMap,
    /// The role parameters proper (`roles: [{role: x, foo: 1}]`; not `vars:`, and none for
    /// `include_role`/`import_role`), which argument-spec validation checks as
    /// `provided_arguments` (Ansible's `Role._role_params`).
    pub role_params: VarMap,
    pub tasks_from: Option<String>,
    /// Used by `import_role`/`include_role`.
    pub included: bool,
    /// `rolespec_validate: false` on `import_role`/`include_role` skips the validation task.
    pub skip_validation: bool,
    /// `allow_duplicates: false` on `import_role`/`include_role` (it overrides the role's
    /// `meta/main.yml`, as ansible-core's `IncludeRole` sets the role's metadata): the role
    /// does not run again on a host it ran on with the same parameters.
    pub once: bool,
    /// The keywords of a `roles:` or `dependencies:` entry (`become_user: root`).
    pub keywords: Keywords,
    /// `vars_from`, `defaults_from`, `handlers_from` of `import_role`/`include_role`.
    pub from: RoleFrom,
}

/// Which files of a role's `vars/`, `defaults/` and `handlers/` an `import_role` or
/// `include_role` loads instead of `main` (`vars_from: debian`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoleFrom {
    pub vars: Option<String>,
    pub defaults: Option<String>,
    pub handlers: Option<String>,
}

impl RoleFrom {
    /// From an `import_role`/`include_role` task's arguments.
    pub fn from_args(args: &Value) -> Self {
        let get = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
        Self {
            vars: get("vars_from"),
            defaults: get("defaults_from"),
            handlers: get("handlers_from"),
        }
    }
}

/// A loop: `loop:` or one of the `with_*` forms (which differ in how they flatten).
#[derive(Debug, Clone, PartialEq)]
pub enum LoopKind {
    Loop,
    Items,
    List,
    Dict,
    IndexedItems,
    Sequence,
    /// `with_<lookup>`: the items `query('<lookup>', *terms)` returns.
    Lookup(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoopSpec {
    pub kind: LoopKind,
    pub value: Value,
    /// The task's action as written, when it differs from the one kinit runs (an action
    /// plugin that re-exports `debug`): `with_first_found` picks its folder by it.
    pub action: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoopControl {
    pub loop_var: Option<String>,
    pub index_var: Option<String>,
    pub label: Option<String>,
    pub pause: Option<f64>,
    pub extended: bool,
    /// `extended_allitems: false` leaves `ansible_loop.allitems` out (large loops).
    pub without_allitems: bool,
    /// `break_when`: conditions checked after each item (with its result registered); when
    /// all hold, the items after it are not run.
    pub break_when: Vec<String>,
}

/// Task keywords (also used for the inheritable keywords of blocks, roles and plays).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Keywords {
    pub when: Vec<String>,
    pub loop_: Option<LoopSpec>,
    pub loop_control: LoopControl,
    pub register: Option<String>,
    pub until: Option<String>,
    pub retries: Option<Value>,
    pub delay: Option<Value>,
    pub changed_when: Option<Vec<String>>,
    pub failed_when: Option<Vec<String>>,
    pub ignore_errors: Option<bool>,
    pub ignore_unreachable: Option<bool>,
    pub notify: Vec<String>,
    pub listen: Vec<String>,
    pub tags: Vec<String>,
    pub delegate_to: Option<String>,
    pub delegate_facts: Option<bool>,
    /// `remote_user`, `connection`, `port`: the connection of the play, block or task, used
    /// where the host's variables (`ansible_user`, `ansible_connection`, `ansible_port`) do
    /// not say otherwise (Ansible: variables beat keywords). May be templates.
    pub remote_user: Option<String>,
    pub connection: Option<String>,
    pub port: Option<String>,
    /// `async: N`: the task may take N seconds. kinit waits for it (as with `poll` > 0, and
    /// also with `poll: 0`, saying so once); `async_status` finds its result by job id.
    pub async_: Option<u64>,
    pub poll: Option<u64>,
    pub run_once: Option<bool>,
    pub become_: Option<bool>,
    pub become_user: Option<String>,
    /// `become_method` (`sudo`, `su`; another fails the task where it becomes) and
    /// `become_flags`, as written (templates are rendered where the task runs).
    pub become_method: Option<String>,
    pub become_flags: Option<String>,
    pub environment: Option<Value>,
    /// `module_defaults`: per module, arguments a task of it gets unless it sets them.
    pub module_defaults: Option<Value>,
    pub no_log: Option<bool>,
    pub vars: VarMap,
    pub check_mode: Option<bool>,
    pub diff: Option<bool>,
    /// Seconds the task may take (`0`: no limit; outside 0..=100000000 the task fails when
    /// it runs, as ansible-core's alarm refuses it).
    pub timeout: Option<i64>,
    pub any_errors_fatal: Option<bool>,
    /// At most this many hosts run the task at once (`0`: only `forks` limits them).
    pub throttle: Option<u64>,
    /// Keywords given as templates (`ignore_errors: "{{ x }}"`), by name: rendered when the
    /// task runs, with its first host's variables (`keywords::set_templated`).
    pub templated: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub enum Action {
    /// A module (`modules::lookup`), by short name.
    Module { name: String, args: Value },
    /// One of the executor's own actions (`debug`, `set_fact`, `meta`...).
    Exec(Box<actions::ExecAction>),
    Block {
        block: Vec<Task>,
        rescue: Vec<Task>,
        always: Vec<Task>,
    },
    /// `include_tasks` (dynamic): the file name may be templated.
    /// `apply`: keywords for the block the included tasks (or role) run in.
    IncludeTasks {
        file: Value,
        args: Value,
        apply: Option<Arc<Keywords>>,
    },
    /// `include_role` (dynamic).
    IncludeRole {
        args: Value,
        apply: Option<Arc<Keywords>>,
    },
    /// A module file kinit does not implement (in a `library/` folder or in an installed
    /// collection): Python, run by the host's Python (`modules::pymodule`), or another
    /// language, run by its `#!` interpreter with an arguments file
    /// (`modules::script_module`). `collections` are the folders holding
    /// `ansible_collections` a Python module's imports are looked up in.
    Custom {
        module: String,
        path: std::path::PathBuf,
        args: Value,
        collections: Vec<std::path::PathBuf>,
        python: bool,
    },
    /// A module Ansible knows and kinit does not implement: loads with a warning, fails on a
    /// host that reaches it.
    Unimplemented { module: String },
    /// An executor action whose arguments are wrong: loads with a warning (`detail`), fails on
    /// a host that reaches it, as Ansible checks arguments only when a task runs.
    Invalid { module: String, detail: String },
    /// `action: "{{ ansible_pkg_mgr }}"`: the module's name is a template, rendered where the
    /// task runs (a module or executor action of kinit's).
    Dynamic { template: String, args: Value },
}

#[derive(Debug, Clone)]
pub struct Task {
    pub name: Option<String>,
    pub action: Action,
    pub kw: Keywords,
    pub loc: Location,
    /// Set on the block that wraps a role's tasks: everything inside runs in that role.
    pub role: Option<Arc<RoleCtx>>,
    /// The action's name as the task writes it, where that is not kinit's short name
    /// (`ansible.builtin.debug`): an unnamed task is titled by it, as ansible-core's
    /// `Task.get_name` shows `self.action`.
    pub written: Option<String>,
}

impl Task {
    /// The name shown in output: the task's `name`, else `module` (or `block`).
    pub fn display_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        if let Some(w) = &self.written {
            return w.clone();
        }
        self.action_name()
    }

    /// The action's own name: kinit's short name for a module or action, `block`.
    fn action_name(&self) -> String {
        match &self.action {
            Action::Module { name, .. } => name.clone(),
            Action::Exec(a) => a.name().into(),
            Action::Block { .. } => match &self.role {
                Some(r) => format!("role {}", r.name),
                None => "block".into(),
            },
            Action::IncludeTasks { .. } => "include_tasks".into(),
            Action::IncludeRole { .. } => "include_role".into(),
            Action::Custom { module, .. }
            | Action::Unimplemented { module }
            | Action::Invalid { module, .. } => module.clone(),
            Action::Dynamic { template, .. } => template.clone(),
        }
    }

    /// The title output shows, as Ansible's `Task.get_name`: `role : name` inside role
    /// `role`. An `include_role` is titled by its own name, or `include_role : <role>` when
    /// unnamed, never with the enclosing role (`IncludeRole.get_name`).
    pub fn title(&self, role: Option<&str>) -> String {
        match &self.name {
            Some(n) => self.title_named(role, n),
            None => self.title_of(role, None),
        }
    }

    /// `title` with `name` for the task's own name (its name as rendered for output).
    pub fn title_named(&self, role: Option<&str>, name: &str) -> String {
        self.title_of(role, Some(name))
    }

    fn title_of(&self, role: Option<&str>, name: Option<&str>) -> String {
        if let Action::IncludeRole { args, .. } = &self.action {
            return match name {
                Some(n) => n.to_string(),
                None => {
                    let included = args
                        .get("name")
                        .or_else(|| args.get("role"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let action = self.written.as_deref().unwrap_or("include_role");
                    format!("{action} : {included}")
                }
            };
        }
        let name = name.map_or_else(|| self.display_name(), str::to_string);
        match role {
            Some(r) => format!("{r} : {name}"),
            None => name,
        }
    }

    /// The task with the action's name as the task wrote it, kept where it is not the
    /// action's short name (an unnamed task's title).
    pub fn written_as(mut self, written: &str) -> Self {
        if !matches!(self.action, Action::Block { .. }) && self.action_name() != written {
            self.written = Some(written.to_string());
        }
        self
    }

    pub fn module_name(&self) -> Option<&str> {
        match &self.action {
            Action::Module { name, .. } => Some(name),
            Action::Exec(a) => Some(a.name()),
            Action::Custom { module, .. } => Some(module),
            _ => None,
        }
    }
}

/// In a `handlers:` section, the tasks an unnamed block without `listen` (what
/// `import_tasks` leaves there) stands for: each is a handler of its own. `None` for a
/// handler proper.
pub fn handler_group(t: &Task) -> Option<&[Task]> {
    match &t.action {
        Action::Block {
            block,
            rescue,
            always,
        } if t.name.is_none()
            && t.kw.listen.is_empty()
            && rescue.is_empty()
            && always.is_empty() =>
        {
            Some(block)
        }
        _ => None,
    }
}

/// Whether one of `handlers` answers to notification `n`: by its name (or `role : name`) or a
/// `listen` topic (the tasks of a [`handler_group`] each for itself).
pub fn handler_answers(handlers: &[Task], n: &str) -> bool {
    handlers.iter().any(|t| match handler_group(t) {
        Some(inner) => handler_answers(inner, n),
        None => {
            let role = t.role.as_deref();
            t.name
                .as_deref()
                .is_some_and(|name| handler_named(name, role, n))
                || t.kw.listen.iter().any(|l| handler_named(l, role, n))
        }
    })
}

/// Whether a handler called `name` (or listening to topic `name`) in `role` answers to
/// notification `n`: the name itself, or `role : name` with the role's own name or, for a
/// collection's role, its full name (ansible-core's `Handler.get_name` with and without the
/// collection).
pub fn handler_named(name: &str, role: Option<&RoleCtx>, n: &str) -> bool {
    if name == n {
        return true;
    }
    let Some(role) = role else { return false };
    let Some(named) = n.strip_suffix(name).and_then(|r| r.strip_suffix(" : ")) else {
        return false;
    };
    named == role.name || (role.collection.is_some() && named == role.full_name())
}
