//! Modules: the closed set of things a task can do on a host, and the one registry that maps a
//! task's module name (short or FQCN) to its implementation.
//!
//! Each module lives in its own file, takes typed params (`serde` with `deny_unknown_fields`,
//! a `///` line per field: that doc is the module reference), and works in two halves: it
//! first works out whether anything must change without touching the host, then applies the
//! change unless `ctx.check_mode` is set.
//!
//! Free-form arguments (`command: ls -l`) arrive as `{"_raw_params": "ls -l"}`.
//!
//! Modules that act on the executor's own state (`set_fact`, `add_host`, `meta`, includes...)
//! are handled by the executor, not here.
//!
//! Over 300 lines because the module interface (context, result, error, params) and the one
//! registry table are read together by every module file.
//!
//! Longer than most files: the registry, the context every module gets and the result type
//! are the module interface, kept together.

pub mod args;
pub mod async_job;
pub mod filewrite;
pub mod host_path;
pub mod http;
pub mod local_tree;
pub mod mode;
pub mod path_info;
pub mod pkg;
pub mod posix;
pub mod pwsh;
pub mod pybundle;
pub mod pymodule;
pub mod render;
pub mod svc;
pub mod sync_plan;
pub mod textedit;
pub mod wincmd;

pub mod apt;
pub mod apt_answer;
pub mod apt_key;
pub mod apt_keyring;
pub mod apt_repository;
pub mod apt_sources;
pub mod archive;
pub mod archive_plan;
pub mod assemble;
pub mod authorized_key;
pub mod blockinfile;
pub mod command;
pub mod copy;
pub mod copy_remote;
pub mod cron;
pub mod cron_store;
pub mod cron_tab;
pub mod deb822_repository;
pub mod dnf;
pub mod dpkg_selections;
pub mod fetch;
pub mod file;
pub mod file_times;
pub mod find;
pub mod fnmatch;
pub mod fragments;
pub mod get_url;
mod get_url_fetch;
pub mod getent;
pub mod git;
mod git_ops;
mod git_sync;
pub mod group;
pub mod hostname;
pub mod ini_file;
pub mod key_lines;
pub mod known_hosts;
pub mod known_hosts_file;
pub mod lineinfile;
pub mod local_facts;
pub mod modprobe;
pub mod mount;
pub mod mount_table;
pub mod package;
pub mod package_facts;
pub mod ping;
pub mod pip;
pub mod pip_req;
pub mod raw;
pub mod reboot;
pub mod replace;
pub mod repo_ini;
pub mod rpm_key;
pub mod script;
pub mod script_module;
pub mod service;
pub mod service_facts;
pub mod setup;
mod setup_system;
pub mod shell;
pub mod slurp;
pub mod stat;
pub mod synchronize;
pub mod sysctl;
pub mod systemd;
pub mod tempfile;
pub mod template;
pub mod unarchive;
pub mod uri;
pub mod user;
pub mod virt;
pub mod virt_config_iso;
pub mod virt_guest;
pub mod virt_install_wait;
pub mod virt_network;
pub mod virt_pool;
pub mod virt_volume;
pub mod wait_for;
pub mod win_command;
pub mod win_copy;
pub mod win_feature;
pub mod win_file;
pub mod win_get_url;
pub mod win_ping;
pub mod win_powershell;
pub mod win_reboot;
pub mod win_service;
pub mod win_shell;
pub mod win_stat;
pub mod yum_repository;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::transport::{BecomeOptions, Connection, ExecOutput, ExecRequest, TransportError};
use crate::vars::VarMap;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Renders template text for modules that need it (`template`, `win_template`).
pub trait Render: Sync {
    fn render(&self, source: &str) -> Result<String, crate::template::TemplateError>;
    /// `render` with `extra` variables over the task's (the `template` module's
    /// `ansible_managed` and `template_*`).
    fn render_with(
        &self,
        source: &str,
        extra: &crate::vars::VarMap,
    ) -> Result<String, crate::template::TemplateError>;
    /// `render_with` for a template file whose includes are found in `search` (a renderer
    /// without files to include renders the text alone).
    fn render_file(
        &self,
        source: &str,
        extra: &crate::vars::VarMap,
        search: &[std::path::PathBuf],
        opts: &crate::template::FileOptions,
    ) -> Result<String, crate::template::TemplateError> {
        let _ = (search, opts);
        self.render_with(source, extra)
    }
}

/// Where a long-running module reports how it is getting on while it runs; the one reporter
/// renders it as the host's live line (`Event::Progress`).
pub trait ProgressSink: Sync {
    fn progress(&self, status: &str, elapsed: Duration, detail: Value);
}

/// What a module may use while it runs on one host.
pub struct ModuleCtx<'a> {
    pub host: &'a str,
    pub conn: &'a Connection,
    pub check_mode: bool,
    pub diff: bool,
    pub become_: Option<BecomeOptions>,
    pub env: Vec<(String, String)>,
    pub timeout: Option<Duration>,
    /// Where relative `src` paths are looked up, most specific first (role `files/` or
    /// `templates/`, then the playbook's folder).
    pub search_paths: &'a [PathBuf],
    /// The task's variables (for modules that read facts, e.g. `package` picking apt or dnf).
    pub vars: &'a VarMap,
    pub render: &'a dyn Render,
    /// Progress reports of long waits; none where nobody renders them.
    pub progress: Option<&'a dyn ProgressSink>,
    /// What is known of this connection's environment, for path arguments (`~`, `$VAR`).
    pub host_env: &'a host_path::HostEnv,
    /// `async` with `poll: 0`: `command` and `shell` start the job in the background on a
    /// POSIX host and return at once; every other module runs to its end.
    pub detach: Option<&'a async_job::AsyncJob>,
}

impl<'a> ModuleCtx<'a> {
    /// The same context with check mode switched on or off (to reuse a module's prediction).
    pub fn with_check_mode(&self, check_mode: bool) -> ModuleCtx<'a> {
        ModuleCtx {
            check_mode,
            become_: self.become_.clone(),
            env: self.env.clone(),
            ..*self
        }
    }

    /// Report how the task is getting on (a no-op without a sink).
    pub fn progress(&self, status: &str, elapsed: Duration, detail: Value) {
        if let Some(sink) = self.progress {
            sink.progress(status, elapsed, detail);
        }
    }

    /// Run `script` with the task's become, environment and timeout.
    pub async fn run(&self, script: impl Into<String>) -> Result<ExecOutput, ModuleError> {
        self.run_with_stdin(script, None).await
    }

    pub async fn run_with_stdin(
        &self,
        script: impl Into<String>,
        stdin: Option<Vec<u8>>,
    ) -> Result<ExecOutput, ModuleError> {
        let req = ExecRequest {
            script: script.into(),
            stdin,
            env: self.env.clone(),
            cwd: None,
            become_: self.become_.clone(),
            timeout: self.timeout,
        };
        Ok(self.conn.exec(&req).await?)
    }

    /// Find a local file by the search paths (absolute paths are taken as they are).
    pub fn find_local(&self, path: &str) -> Result<PathBuf, ModuleError> {
        find_local(self.search_paths, path)
    }
}

/// Find a local file by `search_paths` (absolute paths are taken as they are).
pub fn find_local(search_paths: &[PathBuf], path: &str) -> Result<PathBuf, ModuleError> {
    let p = PathBuf::from(path);
    if p.is_absolute() {
        return Ok(p);
    }
    search_paths
        .iter()
        .map(|dir| dir.join(&p))
        .find(|c| c.exists())
        .ok_or_else(|| ModuleError::Failed {
            msg: format!(
                "could not find `{path}` in {}",
                search_paths
                    .iter()
                    .map(|d| format!("`{}`", d.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}

/// Whether module `name` returns its diff outside diff mode too, as its ansible-core
/// counterpart does (`known_hosts` computes it on every run): registered, not shown.
pub fn returns_diff_always(name: &str) -> bool {
    matches!(short_name(name), "known_hosts")
}

/// The before/after of a change, for `--diff`: texts, or (as ansible-core's `file` module
/// reports a path's state) mappings, which `--diff` shows as sorted indented JSON.
/// Registered as ansible-core registers a diff: `before`, `after`, and the path as
/// `before_header`/`after_header` when there is one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    pub path: Option<String>,
    pub before: Value,
    pub after: Value,
}

impl serde::Serialize for Diff {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("before", &self.before)?;
        m.serialize_entry("after", &self.after)?;
        if let Some(p) = &self.path {
            m.serialize_entry("before_header", p)?;
            m.serialize_entry("after_header", p)?;
        }
        m.end()
    }
}

/// What a module reports. `data` holds the module's own return values (`rc`, `stdout`,
/// `stat`, ...), merged into the registered result next to `changed`/`failed`/`msg`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleResult {
    pub changed: bool,
    pub failed: bool,
    pub skipped: bool,
    pub msg: Option<String>,
    pub diff: Option<Diff>,
    pub data: serde_json::Map<String, Value>,
}

impl ModuleResult {
    pub fn ok() -> Self {
        Self::default()
    }

    /// A result a module printed as a JSON object (a custom Python module, a PowerShell
    /// module): `changed`, `failed` and `skipped` (true when truthy, as Python reads them) and
    /// `msg` (text; another value as its JSON) become the result's own fields, every other
    /// key its data.
    pub fn from_map(mut data: serde_json::Map<String, Value>) -> Self {
        let mut flag = |key: &str| {
            data.remove(key).is_some_and(|v| match v {
                Value::Bool(b) => b,
                Value::Null => false,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                Value::Array(a) => !a.is_empty(),
                Value::Object(o) => !o.is_empty(),
            })
        };
        let (changed, failed, skipped) = (flag("changed"), flag("failed"), flag("skipped"));
        let msg = data.remove("msg").map(|m| match m {
            Value::String(s) => s,
            other => other.to_string(),
        });
        Self {
            changed,
            failed,
            skipped,
            msg,
            diff: None,
            data,
        }
    }
    pub fn changed() -> Self {
        Self {
            changed: true,
            ..Self::default()
        }
    }
    pub fn failed(msg: impl Into<String>) -> Self {
        Self {
            failed: true,
            msg: Some(msg.into()),
            ..Self::default()
        }
    }
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.data.insert(key.to_string(), value.into());
        self
    }
    /// `stdout` and `stderr` as they are, with the `_lines` ansible-playbook adds to every
    /// result that has them.
    pub fn with_streams(self, stdout: String, stderr: String) -> Self {
        let lines = |s: &str| -> Vec<Value> { s.lines().map(Value::from).collect() };
        let (so, se) = (lines(&stdout), lines(&stderr));
        self.with("stdout", stdout)
            .with("stderr", stderr)
            .with("stdout_lines", so)
            .with("stderr_lines", se)
    }
    /// `rc`, `stdout`, `stderr` and their `_lines`, as command-like modules return them.
    pub fn with_output(self, out: &ExecOutput) -> Self {
        let stdout = out.stdout_str();
        let stderr = out.stderr_str();
        let stdout = stdout.strip_suffix('\n').unwrap_or(&stdout).to_string();
        let stderr = stderr.strip_suffix('\n').unwrap_or(&stderr).to_string();
        let lines = |s: &str| -> Vec<Value> { s.lines().map(Value::from).collect() };
        let (so, se) = (lines(&stdout), lines(&stderr));
        self.with("rc", out.rc)
            .with("stdout", stdout)
            .with("stderr", stderr)
            .with("stdout_lines", so)
            .with("stderr_lines", se)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    #[error("module `{module}`: {detail}")]
    BadArgs {
        module: &'static str,
        detail: String,
    },
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("{msg}")]
    Failed { msg: String },
}

impl ModuleError {
    /// The failure text a task registers. Argument errors read as ansible-core's argument
    /// spec validator words them (`missing required arguments: path`, `Unsupported parameters
    /// for (file) module: pth. Supported parameters include: ...`), since playbooks test
    /// registered messages; kinit's suggestion of the nearest name follows.
    pub fn run_time_text(&self) -> String {
        match self {
            ModuleError::BadArgs { module, detail } => args::ansible_text(module, detail),
            other => other.to_string(),
        }
    }
}

/// One module implementation.
pub trait Module: Sync {
    /// Check `args` without running anything (load-time validation).
    fn validate(&self, args: &Value) -> Result<(), ModuleError>;
    /// Run on one host.
    fn run<'a>(
        &'a self,
        ctx: &'a ModuleCtx<'a>,
        args: Value,
    ) -> BoxFuture<'a, Result<ModuleResult, ModuleError>>;
}

/// Deserialize a module's typed params, turning serde's message into a `BadArgs` that names
/// the argument (with a "did you mean").
pub fn params<T: DeserializeOwned>(module: &'static str, args: &Value) -> Result<T, ModuleError> {
    args::parse(module, args)
}

/// Declare a module: a unit struct whose `validate` parses `$params` and whose `run` parses
/// them and calls `$run(ctx, params)`. POSIX modules (the default) refuse a PowerShell host
/// with a clear message; `windows` modules run anywhere PowerShell can be started.
macro_rules! typed_module {
    ($ty:ident, $name:literal, $params:ty, $run:path) => {
        $crate::modules::typed_module!(@impl $ty, $name, $params, $run, true);
    };
    ($ty:ident, $name:literal, $params:ty, $run:path, windows) => {
        $crate::modules::typed_module!(@impl $ty, $name, $params, $run, false);
    };
    (@impl $ty:ident, $name:literal, $params:ty, $run:path, $posix:expr) => {
        pub struct $ty;
        impl $crate::modules::Module for $ty {
            fn validate(
                &self,
                args: &serde_json::Value,
            ) -> Result<(), $crate::modules::ModuleError> {
                $crate::modules::args::validate::<$params>($name, args)
            }
            fn run<'a>(
                &'a self,
                ctx: &'a $crate::modules::ModuleCtx<'a>,
                args: serde_json::Value,
            ) -> $crate::modules::BoxFuture<
                'a,
                Result<$crate::modules::ModuleResult, $crate::modules::ModuleError>,
            > {
                Box::pin(async move {
                    let p: $params = if $posix {
                        $crate::modules::host_path::parse($name, &args, ctx).await?
                    } else {
                        $crate::modules::args::parse($name, &args)?
                    };
                    if $posix {
                        if let Some(refusal) = $crate::modules::posix_only($name, ctx) {
                            return Ok(refusal);
                        }
                    }
                    $run(ctx, p).await
                })
            }
        }
    };
}
pub(crate) use typed_module;

/// The refusal a POSIX module gives on a PowerShell (WinRM) host, naming the Windows module
/// to use instead when there is one.
pub fn posix_only(module: &str, ctx: &ModuleCtx<'_>) -> Option<ModuleResult> {
    if ctx.conn.shell() != crate::transport::ShellKind::PowerShell {
        return None;
    }
    let win = format!("win_{module}");
    let hint = if lookup(&win).is_some() {
        format!(", use `{win}`")
    } else {
        String::new()
    };
    Some(ModuleResult::failed(format!(
        "module `{module}` runs POSIX shell commands, but `{}` is a Windows (PowerShell) host{hint}",
        ctx.host
    )))
}

/// The registry: every module kinit has, by short name. One line per module.
static MODULES: &[(&str, &dyn Module)] = &[
    ("apt", &apt::Apt),
    ("apt_key", &apt_key::AptKey),
    ("apt_repository", &apt_repository::AptRepository),
    ("archive", &archive::Archive),
    ("assemble", &assemble::Assemble),
    ("authorized_key", &authorized_key::AuthorizedKey),
    ("blockinfile", &blockinfile::BlockInFile),
    ("command", &command::Command),
    ("copy", &copy::Copy),
    ("cron", &cron::Cron),
    ("deb822_repository", &deb822_repository::Deb822Repository),
    ("dnf", &dnf::Dnf),
    ("dpkg_selections", &dpkg_selections::DpkgSelections),
    ("fetch", &fetch::Fetch),
    ("file", &file::File),
    ("find", &find::Find),
    ("get_url", &get_url::GetUrl),
    ("getent", &getent::Getent),
    ("git", &git::GitModule),
    ("group", &group::Group),
    ("hostname", &hostname::Hostname),
    ("ini_file", &ini_file::IniFile),
    ("known_hosts", &known_hosts::KnownHosts),
    ("lineinfile", &lineinfile::LineInFile),
    ("modprobe", &modprobe::Modprobe),
    ("mount", &mount::Mount),
    ("package", &package::Package),
    ("package_facts", &package_facts::PackageFacts),
    ("ping", &ping::Ping),
    ("pip", &pip::Pip),
    ("raw", &raw::Raw),
    ("reboot", &reboot::Reboot),
    ("replace", &replace::Replace),
    ("rpm_key", &rpm_key::RpmKey),
    ("script", &script::Script),
    ("service", &service::Service),
    ("service_facts", &service_facts::ServiceFacts),
    ("setup", &setup::Setup),
    ("gather_facts", &setup::GatherFacts),
    ("shell", &shell::Shell),
    ("slurp", &slurp::Slurp),
    ("stat", &stat::Stat),
    ("synchronize", &synchronize::Synchronize),
    ("sysctl", &sysctl::Sysctl),
    ("systemd", &systemd::Systemd),
    ("systemd_service", &systemd::Systemd),
    ("tempfile", &tempfile::Tempfile),
    ("template", &template::Template),
    ("unarchive", &unarchive::Unarchive),
    ("uri", &uri::Uri),
    ("user", &user::User),
    ("virt_config_iso", &virt_config_iso::VirtConfigIso),
    ("virt_guest", &virt_guest::VirtGuest),
    ("virt_install_wait", &virt_install_wait::VirtInstallWait),
    ("virt_network", &virt_network::VirtNetwork),
    ("virt_pool", &virt_pool::VirtPool),
    ("virt_volume", &virt_volume::VirtVolume),
    ("wait_for", &wait_for::WaitFor),
    ("win_command", &win_command::WinCommand),
    ("win_copy", &win_copy::WinCopy),
    ("win_feature", &win_feature::WinFeature),
    ("win_file", &win_file::WinFile),
    ("win_get_url", &win_get_url::WinGetUrl),
    ("win_ping", &win_ping::WinPing),
    ("win_powershell", &win_powershell::WinPowershell),
    ("win_reboot", &win_reboot::WinReboot),
    ("win_service", &win_service::WinService),
    ("win_shell", &win_shell::WinShell),
    ("win_stat", &win_stat::WinStat),
    // ansible-core 2.19 redirects `yum` to `dnf` (config/ansible_builtin_runtime.yml).
    ("yum", &dnf::Dnf),
    ("yum_repository", &yum_repository::YumRepository),
];

/// Collection prefixes accepted in front of a short name (`ansible.builtin.copy`).
const COLLECTIONS: &[&str] = &[
    "ansible.builtin.",
    "ansible.legacy.",
    "ansible.windows.",
    "ansible.posix.",
    "community.general.",
    "community.windows.",
    "community.libvirt.",
    "kinit.",
];

/// The short name of `name` (FQCN prefixes stripped).
pub fn short_name(name: &str) -> &str {
    COLLECTIONS
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name)
}

pub fn lookup(name: &str) -> Option<&'static dyn Module> {
    let short = short_name(name);
    MODULES.iter().find(|(n, _)| *n == short).map(|(_, m)| *m)
}

/// `kinit plan --render`: the files the task would write with these (rendered) `args`, built
/// by the module's own code, or `None` for a module that writes no file of its own.
pub fn render_files(
    module: &str,
    args: &Value,
    ctx: &render::RenderCtx<'_>,
) -> Result<Option<render::Rendered>, ModuleError> {
    Ok(Some(match short_name(module) {
        "template" => template::render(ctx, args)?,
        "copy" => match copy::render(ctx, args)? {
            Some(r) => r,
            None => return Ok(None),
        },
        "win_copy" => match win_copy::render(ctx, args)? {
            Some(r) => r,
            None => return Ok(None),
        },
        "win_shell" => win_shell::render(ctx, args)?,
        "virt_guest" => match virt_guest::render(args)? {
            Some(r) => r,
            None => return Ok(None),
        },
        "virt_network" => match virt_network::render(args)? {
            Some(r) => r,
            None => return Ok(None),
        },
        "virt_config_iso" => match virt_config_iso::render(args)? {
            Some(r) => r,
            None => return Ok(None),
        },
        _ => return Ok(None),
    }))
}

/// Every registered module name, for "did you mean" suggestions.
pub fn names() -> impl Iterator<Item = &'static str> {
    MODULES.iter().map(|(n, _)| *n)
}
