//! Running a module on a host: render its arguments, open (or reuse) the connection of the
//! host or its `delegate_to` target, build the `ModuleCtx` (become, environment, timeout,
//! file search paths, template rendering) and turn the outcome into a registered result.
//!
//! Over 300 lines because rendering, connecting (with `delegate_to`) and the result are one
//! sequence per module call, in the order Ansible's task executor runs them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::Executor;
use super::host_task::{Attempt, OnHost};
use super::inherit::Inherit;
use crate::inventory::{ConnectionDefaults, ResolvedHost, resolve_target};
use crate::modules::{ModuleCtx, ModuleError, ModuleResult, ProgressSink, Render};
use crate::playbook::{Keywords, Task};
use crate::report::{Event, EventSender, TaskResult};
use crate::template::{Templar, TemplateError};
use crate::transport::{BecomeMethod, BecomeOptions, TransportError};
use crate::vars::VarMap;

/// Template rendering for modules (`template`), with the task's variables.
pub struct TaskRender<'a> {
    pub templar: &'a Templar,
    pub vars: &'a VarMap,
}

impl Render for TaskRender<'_> {
    fn render(&self, source: &str) -> Result<String, TemplateError> {
        self.templar.render_str(source, self.vars)
    }

    fn render_with(&self, source: &str, extra: &VarMap) -> Result<String, TemplateError> {
        let mut vars = self.vars.clone();
        crate::vars::overlay(&mut vars, extra);
        self.templar.render_str(source, &vars)
    }

    fn render_file(
        &self,
        source: &str,
        extra: &VarMap,
        search: &[std::path::PathBuf],
        opts: &crate::template::FileOptions,
    ) -> Result<String, TemplateError> {
        let mut vars = self.vars.clone();
        crate::vars::overlay(&mut vars, extra);
        self.templar.render_file(source, &vars, search, opts)
    }
}

/// A module's progress reports as events of the task on its (inventory) host.
struct TaskProgress<'a> {
    events: &'a EventSender,
    host: &'a str,
    task: String,
}

impl ProgressSink for TaskProgress<'_> {
    fn progress(&self, status: &str, elapsed: Duration, detail: Value) {
        self.events.send(Event::Progress {
            host: self.host.to_string(),
            task: self.task.clone(),
            status: status.to_string(),
            elapsed,
            detail,
        });
    }
}

/// A module's result as the task's.
pub fn task_result(r: ModuleResult) -> TaskResult {
    TaskResult {
        changed: r.changed,
        failed: Some(r.failed),
        skipped: r.skipped.then_some(true),
        unreachable: false,
        msg: r.msg.map(Value::String),
        origin: None,
        included: None,
        verbose_always: false,
        fields: {
            let mut fields = r.data;
            if let Some(d) = r.diff {
                fields.insert(
                    "diff".into(),
                    serde_json::to_value(d).unwrap_or(Value::Null),
                );
            }
            fields
        },
    }
}

impl Executor {
    /// The connection target for `name` (the host itself or a `delegate_to` target).
    pub(crate) fn target_for(
        &self,
        name: &str,
        host: &str,
        kw: &Keywords,
        ctx: &VarMap,
    ) -> Result<ResolvedHost, crate::inventory::InventoryError> {
        let vars = if name == host {
            // Connection variables may be templates; the resolver wants their values.
            let mut v = ctx.clone();
            let scope = self.templar.scope(std::sync::Arc::new(ctx.clone()));
            for (k, val) in v.iter_mut() {
                if k.starts_with("ansible_") && crate::playbook::task_contains_template(val) {
                    match scope.get(k) {
                        Ok(Some(r)) => *val = r,
                        // ansible-core fails the task on the keyword the variable sets.
                        Err(e) if k == "ansible_become_user" => {
                            return Err(crate::inventory::InventoryError::Keyword {
                                keyword: "become_user",
                                reason: e.to_string(),
                            });
                        }
                        _ => {}
                    }
                }
            }
            v
        } else {
            // Connection variables come from the delegated host, rendered with the original
            // host's variables (Ansible's delegation rule).
            let raw = {
                let inv = self.inventory.read().unwrap();
                inv.host_vars(name)
            };
            match self.templar.render_value(&Value::Object(raw.clone()), ctx) {
                Ok(Value::Object(m)) => m,
                _ => raw,
            }
        };
        let mut vars = vars;
        // The `remote_user`/`connection`/`port` keywords fill in what the host's variables
        // leave open (Ansible's precedence: variables, then keywords).
        let cli = &self.opts.connect;
        for (value, names) in [
            (&kw.remote_user, ["ansible_user", "ansible_ssh_user"]),
            (&kw.connection, ["ansible_connection", "ansible_connection"]),
            (&kw.port, ["ansible_port", "ansible_ssh_port"]),
            // `-c`, below the keywords; ansible.cfg's `ssh_args`, below the variable.
            (
                &cli.connection,
                ["ansible_connection", "ansible_connection"],
            ),
            (&cli.ssh_args, ["ansible_ssh_args", "ansible_ssh_args"]),
        ] {
            if let Some(v) = value
                && !names.iter().any(|n| vars.contains_key(*n))
            {
                let v = self
                    .templar
                    .render_str(v, ctx)
                    .unwrap_or_else(|_| v.clone());
                let v = match names[0] {
                    "ansible_port" => v.parse::<u64>().map(Value::from).unwrap_or(Value::from(v)),
                    _ => Value::from(v),
                };
                vars.insert(names[0].to_string(), v);
            }
        }
        let defaults = ConnectionDefaults {
            host_key_checking: self.opts.host_key_checking,
            winrm_ca_file: self.opts.winrm_ca_file.clone(),
            user: cli.remote_user.clone(),
            private_key_files: cli.private_key.iter().cloned().collect(),
            connect_timeout: cli.timeout,
            password: cli.password.clone(),
            become_password: cli.become_password.clone(),
            ..ConnectionDefaults::default()
        };
        let resolved = resolve_target(name, &vars, &defaults)?;
        if !resolved.ignored_ssh_options.is_empty() {
            // Said once per run for the same options, however many hosts they are set for.
            self.warn_once(format!(
                "kinit's SSH client ignores these options of ansible_ssh_args/\
                 ansible_ssh_common_args/ansible_ssh_extra_args: {}",
                resolved.ignored_ssh_options.join(", ")
            ));
        }
        Ok(resolved)
    }

    pub(crate) async fn run_module(
        &self,
        t: OnHost<'_>,
        name: &str,
        args: &Value,
        ctx: &VarMap,
    ) -> Attempt {
        let Some(module) = crate::modules::lookup(name) else {
            return Attempt::failed(format!("module `{name}` is not available in this build"));
        };
        self.run_module_as(t, name, module, args, ctx).await
    }

    /// `run_module` with the implementation given (a built-in one, or a custom module).
    pub(crate) async fn run_module_as(
        &self,
        t: OnHost<'_>,
        name: &str,
        module: &dyn crate::modules::Module,
        args: &Value,
        ctx: &VarMap,
    ) -> Attempt {
        let OnHost {
            task,
            kw,
            inh,
            host,
            ..
        } = t;
        let with_defaults;
        let args = if inh.module_defaults.is_empty() && kw.module_defaults.is_none() {
            args
        } else {
            with_defaults = module_defaults(name, inh, kw, args);
            &with_defaults
        };
        let args = match self.templar.render_value(args, ctx) {
            Ok(mut a) => {
                crate::template::strip_omit(&mut a);
                a
            }
            Err(e) => {
                let reason = self.args_failed(name, args, ctx, e);
                return Attempt::of(self.error_result(task, reason));
            }
        };
        if kw.no_log == Some(true) {
            self.events.redactor.add_task_data(&args);
        }
        let delegate = match &kw.delegate_to {
            Some(d) => match self.templar.render_str(d, ctx) {
                Ok(d) => d,
                Err(e) => return Attempt::of(self.error_result(task, e.to_string())),
            },
            None => host.to_string(),
        };
        if let Some(sink) = &self.opts.render {
            return self.render_module(sink.as_ref(), &t, &delegate, name, &args, ctx);
        }
        let resolved = match self.target_for(&delegate, host, kw, ctx) {
            Ok(r) => r,
            Err(e) => return Attempt::of(self.error_result(task, e.to_string())),
        };
        let conn = tokio::select! {
            c = self.conns_get(&resolved.target) => c,
            _ = self.cancel.cancelled() => return Attempt::failed("interrupted"),
        };
        let conn = match conn {
            Ok(c) => c,
            Err(e) => return unreachable(e),
        };
        let env = match self.environment(inh, kw, ctx) {
            Ok(e) => e,
            Err(msg) => return Attempt::of(self.error_result(task, msg)),
        };
        let become_ = match self.become_options(kw, &resolved, ctx) {
            Ok(b) => b,
            Err(msg) => return Attempt::of(self.error_result(task, msg)),
        };
        // ansible-core's alarm takes 0 (no limit) to 100000000 seconds.
        if let Some(t) = kw.timeout.filter(|t| !(0..=100_000_000).contains(t)) {
            return Attempt::failed(format!(
                "Task failed: Timeout {t} is invalid, it must be between 0 and 100000000."
            ));
        }
        let search = self.search_paths(task, inh);
        let host_env = self.conns.host_env(&resolved.target);
        let render = TaskRender {
            templar: &self.templar,
            vars: ctx,
        };
        let progress = TaskProgress {
            events: &self.events,
            host,
            task: t.title.to_string(),
        };
        let detach = super::host_task::DETACH.try_with(Arc::clone).ok();
        let mctx = ModuleCtx {
            host: &delegate,
            conn: &conn,
            check_mode: kw.check_mode.unwrap_or(self.opts.check),
            diff: kw.diff.unwrap_or(self.opts.diff),
            become_,
            env,
            timeout: kw
                .timeout
                .and_then(|t| u64::try_from(t).ok())
                .filter(|t| *t > 0)
                .map(Duration::from_secs),
            search_paths: &search,
            vars: ctx,
            render: &render,
            // A `no_log` task shows nothing of how it is getting on either.
            progress: (kw.no_log != Some(true)).then_some(&progress as &dyn ProgressSink),
            host_env: &host_env,
            detach: detach.as_deref(),
        };
        let outcome = tokio::select! {
            r = module.run(&mctx, args) => r,
            _ = self.cancel.cancelled() => return Attempt::failed("interrupted"),
        };
        match outcome {
            Ok(r)
                if matches!(crate::modules::short_name(name), "win_reboot" | "reboot")
                    && r.data.get("reboot_requested") == Some(&json!(true)) =>
            {
                let module = crate::modules::short_name(name);
                Attempt::of(task_result(
                    self.await_reboot(module, &resolved.target, conn, r).await,
                ))
            }
            // A diff registers only where the task asked for one, except from a module whose
            // upstream counterpart always returns it; it shows only under `--diff`.
            Ok(mut r) => {
                if !mctx.diff && !crate::modules::returns_diff_always(name) {
                    r.diff = None;
                }
                Attempt::of(task_result(r))
            }
            // Only the task's own `timeout` is reported as the task timing out; a transport's
            // timeout (a WinRM HTTP read, say) keeps its own words.
            Err(ModuleError::Transport(TransportError::Timeout { after, .. }))
                if mctx.timeout == Some(after) =>
            {
                // ansible-core's TaskTimeoutError and what it adds to the result.
                let secs = after.as_secs();
                let mut r =
                    TaskResult::failed(format!("Task failed: Timed out after {secs} second(s)."));
                r.set(
                    "timedout",
                    json!({
                        "frame": "Configure `DISPLAY_TRACEBACK` to see a traceback on timeout errors.",
                        "period": secs,
                    }),
                );
                Attempt::of(r)
            }
            Err(ModuleError::Transport(e @ TransportError::Timeout { .. })) => {
                Attempt::failed(crate::provider::error::chain(&e))
            }
            Err(ModuleError::Transport(e)) => transport_failure(&conn, e).await,
            Err(e) => Attempt::failed(e.run_time_text()),
        }
    }

    async fn conns_get(
        &self,
        target: &crate::transport::HostTarget,
    ) -> Result<std::sync::Arc<crate::transport::Connection>, TransportError> {
        self.conns.get(target).await
    }

    /// The host's `ansible_become*` variables over the task/play `become` keywords, as
    /// ansible-core's `PlayContext.set_task_and_variable_override` lets connection variables
    /// override keywords. A `become_user` that cannot be rendered is an error in
    /// ansible-core's words.
    pub(crate) fn become_options(
        &self,
        kw: &Keywords,
        host: &ResolvedHost,
        ctx: &VarMap,
    ) -> Result<Option<BecomeOptions>, String> {
        if !host
            .become_
            .enabled
            .or(kw.become_)
            .unwrap_or(self.opts.connect.become_)
        {
            return Ok(None);
        }
        let keyword = |name: &str, v: &Option<String>| -> Result<Option<String>, String> {
            v.as_ref()
                .map(|v| {
                    self.templar
                        .render_str(v, ctx)
                        .map_err(|e| format!("Error processing keyword '{name}': {e}"))
                })
                .transpose()
        };
        let user = match &host.become_.user {
            Some(u) => Some(u.clone()),
            None => keyword("become_user", &kw.become_user)?,
        }
        .or_else(|| self.opts.connect.become_user.clone());
        let name = match &host.become_.method {
            Some(m) => m.clone(),
            None => keyword("become_method", &kw.become_method)?
                .or_else(|| self.opts.connect.become_method.clone())
                .unwrap_or_else(|| "sudo".into()),
        };
        let method = BecomeMethod::parse(&name).ok_or_else(|| {
            format!(
                "become_method `{name}` is not available in kinit: it becomes with `sudo` or `su`"
            )
        })?;
        Ok(Some(BecomeOptions {
            user,
            password: host.become_.password.clone(),
            method,
            flags: match &host.become_.flags {
                Some(f) => Some(f.clone()),
                None => keyword("become_flags", &kw.become_flags)?,
            },
        }))
    }

    /// `environment:` of the play, blocks and task, rendered and merged (inner wins), as
    /// ansible-core's `Task._post_validate_environment`: each is a mapping or a list of them
    /// (merged in order); a mapping's values are rendered one by one, an `omit` value is left
    /// out, and so is one that reads an undefined `ansible_env` (facts not gathered yet); an
    /// entry that renders to no mapping is skipped with a warning.
    pub(crate) fn environment(
        &self,
        inh: &Inherit,
        kw: &Keywords,
        ctx: &VarMap,
    ) -> Result<Vec<(String, String)>, String> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut set = |k: String, v: Value| {
            let v = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            out.retain(|(x, _)| *x != k);
            out.push((k, v));
        };
        let omitted = |v: &Value| v.as_str() == Some(crate::template::OMIT);
        let own = kw.environment.iter();
        for e in inh.environment.iter().chain(own) {
            let items = match e {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            for item in items {
                match item {
                    Value::Object(m) => {
                        for (k, v) in m {
                            match self.templar.render_value(&v, ctx) {
                                Ok(v) if omitted(&v) => {}
                                Ok(v) => set(k, v),
                                Err(e) if e.to_string().contains("ansible_env") => {}
                                Err(e) => {
                                    return Err(format!(
                                        "Error processing keyword 'environment': {e}"
                                    ));
                                }
                            }
                        }
                    }
                    Value::Null => {}
                    other => match self.templar.render_value(&other, ctx) {
                        Ok(Value::Object(m)) => {
                            for (k, v) in m {
                                if !omitted(&v) {
                                    set(k, v);
                                }
                            }
                        }
                        Ok(v) if omitted(&v) => {}
                        // The value itself is not shown: it may hold a secret.
                        Ok(v) => self.warn_once(format!(
                            "could not parse environment value (a {}, not a mapping), skipping it",
                            match v {
                                Value::Array(_) => "list",
                                Value::String(_) => "string",
                                Value::Number(_) => "number",
                                Value::Bool(_) => "boolean",
                                _ => "value",
                            }
                        )),
                        Err(e) => {
                            return Err(format!("Error processing keyword 'environment': {e}"));
                        }
                    },
                }
            }
        }
        Ok(out)
    }

    /// Where relative `src` files are found: roles' `files/`/`templates/`, the task file's
    /// folder, then the playbook's.
    pub(crate) fn search_paths(&self, task: &Task, inh: &Inherit) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for r in inh.roles.iter().rev() {
            out.push(r.path.join("files"));
            out.push(r.path.join("templates"));
            out.push(r.path.join("tasks"));
            out.push(r.path.clone());
        }
        if let Some(dir) = task.loc.file.parent() {
            out.push(dir.join("files"));
            out.push(dir.join("templates"));
            out.push(dir.to_path_buf());
        }
        out.push(self.playbook_dir().join("files"));
        out.push(self.playbook_dir().join("templates"));
        out.push(self.playbook_dir());
        out.dedup();
        out
    }
}

/// `args` over the `module_defaults` for module `name` (play, blocks, then the task; the
/// task's own arguments win over all). As ansible-core's `get_action_args_with_defaults`
/// combines them, an inner entry for a module name replaces the outer one for that name
/// whole (`debug: {}` drops inherited `debug` defaults). A defaults entry names a module
/// short or by FQCN; `group/...` entries (action groups) are not expanded. A list of mappings
/// is read in order, as Ansible reads one.
pub(crate) fn module_defaults(name: &str, inh: &Inherit, kw: &Keywords, args: &Value) -> Value {
    let short = crate::modules::short_name(name);
    let mut by_name = serde_json::Map::new();
    for entry in inh.module_defaults.iter().chain(kw.module_defaults.iter()) {
        let maps: Vec<&serde_json::Map<String, Value>> = match entry {
            Value::Object(m) => vec![m],
            Value::Array(items) => items.iter().filter_map(Value::as_object).collect(),
            _ => Vec::new(),
        };
        for m in maps {
            by_name.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    let mut merged = serde_json::Map::new();
    for (module, defaults) in &by_name {
        if crate::modules::short_name(module) == short
            && let Value::Object(d) = defaults
        {
            merged.extend(d.clone());
        }
    }
    match args {
        Value::Object(own) => merged.extend(own.clone()),
        Value::Null => {}
        other => return other.clone(),
    }
    Value::Object(merged)
}

/// A module's transport error: the host is unreachable only when its connection is gone.
/// File errors travel as transport errors too (an upload into a missing folder, a missing
/// file over SFTP), so on a connection that still answers they fail the task instead.
async fn transport_failure(conn: &crate::transport::Connection, e: TransportError) -> Attempt {
    use crate::transport::Connection;
    let may_be_gone = match &e {
        TransportError::Connect { .. }
        | TransportError::Auth { .. }
        | TransportError::HostKey { .. } => return unreachable(e),
        TransportError::Io { .. } | TransportError::Cancelled { .. } => {
            !matches!(conn, Connection::Local(_))
        }
        _ => false,
    };
    if may_be_gone {
        let mut probe = crate::transport::ExecRequest::new("echo kinit-alive");
        probe.timeout = Some(Duration::from_secs(10));
        if conn.exec(&probe).await.is_err() {
            return unreachable(e);
        }
    }
    Attempt::failed(crate::provider::error::chain(&e))
}

/// The host is unreachable; the message carries every cause (`connection refused`, the DNS
/// or TLS error), not only "cannot connect".
fn unreachable(e: TransportError) -> Attempt {
    Attempt::of(TaskResult::unreachable(crate::provider::error::chain(&e)))
}
