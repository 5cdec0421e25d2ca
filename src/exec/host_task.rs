//! One task on one host: `when`, loops, `until`/`retries`, `changed_when`/`failed_when`,
//! `register`, `notify`, `ignore_errors`, `no_log` censoring, and the result event.
//!
//! Longer than most files: the steps above are one sequence whose order is Ansible's, easier
//! to check against it in one place (loops, retries and actions have files of their own).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::include::IncludeReq;
use super::inherit::Inherit;
use super::{Executor, PlayRun};
use crate::modules::async_job::{AsyncJob, UNDER_ASYNC};
use crate::playbook::actions::{ExecAction, Meta};
use crate::playbook::{Action, Keywords, Task};
use crate::report::{Event, Status, TaskResult};
use crate::vars::VarMap;

/// What the walker must do after a task, besides moving on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Flow {
    Continue,
    EndPlay,
    EndHost,
    EndBatch,
    FlushHandlers,
    ClearHostErrors,
    /// `meta: clear_facts`: the play's hosts lose their facts, cached ones too.
    ClearFacts,
    /// `meta: refresh_inventory`: the inventory read again (once, whichever hosts ran it).
    RefreshInventory,
    Include(Vec<IncludeReq>),
}

pub(crate) struct HostOutcome {
    pub status: Status,
    pub flow: Flow,
    pub result: TaskResult,
}

/// One execution of the action (one loop item, one `until` attempt).
pub(crate) struct Attempt {
    pub result: TaskResult,
    pub flow: Flow,
}

impl Attempt {
    pub fn failed(msg: impl Into<String>) -> Self {
        Self::of(TaskResult::failed(msg))
    }
    pub fn of(result: TaskResult) -> Self {
        Self {
            result,
            flow: Flow::Continue,
        }
    }
}

/// Why kinit could not run a task: the reason in ansible-core's words, and where in the task
/// (`when: x > 1`), which only the output's `origin:` line shows.
pub(crate) struct Failure {
    pub reason: String,
    pub at: Option<String>,
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Self { reason, at: None }
    }
}

/// ansible-core 2.19's `exception` on a failed result that carries no traceback (it keeps
/// tracebacks only with `ANSIBLE_DISPLAY_TRACEBACK`): `_transform.error_summary`.
pub(crate) const NO_TRACEBACK: &str = "(traceback unavailable)";

/// How ansible-core 2.19 begins the reason a condition (`when`, `until`, `changed_when`,
/// `failed_when`, `assert`) could not be evaluated.
pub(crate) const CONDITIONAL_ERROR: &str = "Error while evaluating conditional: ";

/// A conditional's error in ansible-core's words: an evaluation error after
/// `CONDITIONAL_ERROR`, a refused conditional (no boolean, untrusted) alone.
fn conditional_error(e: &crate::template::TemplateError) -> String {
    match e {
        crate::template::TemplateError::Conditional { detail } => detail.clone(),
        e => format!("{CONDITIONAL_ERROR}{e}"),
    }
}

const CENSORED: &str =
    "the output has been hidden due to the fact that 'no_log: true' was specified for this result";

tokio::task_local! {
    /// The job an `async` task with `poll: 0` starts, for the module that runs it
    /// (`run_module` hands it on in `ModuleCtx::detach`). Only set around such a task.
    pub(crate) static DETACH: Arc<AsyncJob>;
}

/// One task on one host: what every step of running it needs (its play run, the task, its
/// effective keywords, what enclosing blocks hand down, the host, the task's id in the run,
/// its title as the banner showed it).
#[derive(Clone, Copy)]
pub(crate) struct OnHost<'a> {
    pub pr: &'a PlayRun<'a>,
    pub task: &'a Task,
    pub title: &'a str,
    pub kw: &'a Keywords,
    pub inh: &'a Inherit,
    pub host: &'a str,
    pub task_id: usize,
}

impl Executor {
    pub(crate) async fn run_host_task(&self, t: OnHost<'_>) -> HostOutcome {
        let OnHost {
            pr,
            task,
            kw,
            inh,
            host,
            ..
        } = t;
        let started = Instant::now();
        self.emit(Event::HostTask {
            host: host.to_string(),
            task: t.title.to_string(),
        });
        let mut flow = Flow::Continue;
        let mut delegate_shown = None;
        // Templated keywords (`become: "{{ x }}"`) with this host's variables; a loop renders
        // them again per item, so here one that needs the item stays as written.
        let vars = self.task_vars(pr, host, inh, &kw.vars);
        let host_kw;
        let mut keyword_error = None;
        let kw = match &vars {
            Ok(ctx) if !kw.templated.is_empty() => match self.render_host_keywords(kw, ctx) {
                Ok(mut k) => {
                    if kw.loop_.is_some() {
                        k.templated = kw.templated.clone();
                    }
                    host_kw = k;
                    &host_kw
                }
                Err(_) if kw.loop_.is_some() => kw,
                Err(e) => {
                    keyword_error = Some(e);
                    kw
                }
            },
            _ => kw,
        };
        let t = OnHost { kw, ..t };
        let result = match vars {
            Err(e) => self.error_result(task, e.to_string()),
            Ok(_) if let Some(e) = keyword_error => self.error_result(task, e),
            Ok(mut ctx) => {
                self.add_task_dir_to_search_path(task, &mut ctx);
                // Shown (and used for `delegate_facts`) rendered; one that needs a loop
                // item cannot be rendered here and is shown as written.
                delegate_shown = kw
                    .delegate_to
                    .as_ref()
                    .and_then(|d| self.templar.render_str(d, &ctx).ok());
                if let Some(d) = &delegate_shown {
                    self.add_delegated_vars(pr, d, inh, &kw.vars, &mut ctx);
                }
                let conds: Vec<String> = inh.when.iter().chain(kw.when.iter()).cloned().collect();
                match &kw.loop_ {
                    None => match self.check_when(&conds, &ctx) {
                        Err(msg) => self.error_result(task, msg),
                        Ok(Some(_))
                            if let Action::Exec(a) = &task.action
                                && let ExecAction::Meta(m) = a.as_ref() =>
                        {
                            meta_skipped(*m, host)
                        }
                        Ok(Some(cond)) => skipped(&cond),
                        Ok(None) => {
                            // `async: 0` runs the task as usual, as in Ansible.
                            let a = match kw.async_ {
                                Some(secs) if secs > 0 => self.run_async(t, secs, &mut ctx).await,
                                _ => self.until_loop(t, &mut ctx).await,
                            };
                            flow = a.flow;
                            a.result
                        }
                    },
                    Some(spec) => {
                        match self.loop_items(spec, &ctx, task.module_name().unwrap_or_default()) {
                            // As in Ansible, a loop that cannot be evaluated fails the task only
                            // when its condition (evaluated without an item) does not skip it.
                            Err(msg) => match self.check_when(&conds, &ctx) {
                                Ok(Some(cond)) => skipped(&cond),
                                // A lookup's failure is registered in Ansible's words alone.
                                _ if crate::template::is_lookup_failure(&msg) => {
                                    TaskResult::failed(msg)
                                }
                                _ => self.error_result(task, msg),
                            },
                            Ok(items) => {
                                let (r, f) = self.run_items(t, &ctx, &conds, items).await;
                                flow = f;
                                r
                            }
                        }
                    }
                }
            }
        };
        let rendered_kw;
        let kw = match delegate_shown {
            Some(d) => {
                rendered_kw = Keywords {
                    delegate_to: Some(d),
                    ..kw.clone()
                };
                &rendered_kw
            }
            None => kw,
        };
        self.finish(OnHost { kw, ..t }, started, Attempt { result, flow })
    }

    /// `kw` with its per-host templated keywords rendered with `ctx` (a host's variables, or
    /// a loop item's), in ansible-core's words when one cannot be.
    pub(crate) fn render_host_keywords(
        &self,
        kw: &Keywords,
        ctx: &VarMap,
    ) -> Result<Keywords, String> {
        let mut out = kw.clone();
        out.templated.clear();
        for (key, template) in &kw.templated {
            let value = self
                .templar
                .render_str(template, ctx)
                .map_err(|e| format!("Error processing keyword '{key}': {e}"))?;
            // `omit` leaves the keyword as inherited.
            if value == crate::template::OMIT {
                continue;
            }
            crate::playbook::set_templated(&mut out, key, &value)
                .map_err(|e| format!("Error processing keyword '{key}': {e}"))?;
        }
        Ok(out)
    }

    /// The `warnings` and `deprecations` a module returned (a loop's items' too), each as a
    /// `[WARNING]` or `[DEPRECATION WARNING]` line, as ansible-playbook's callback shows them.
    fn show_warnings(&self, task: &Task, result: &TaskResult) {
        let items = result.fields.get("results").and_then(Value::as_array);
        let results = std::iter::once(&result.fields)
            .chain(items.into_iter().flatten().filter_map(Value::as_object));
        for r in results {
            let warnings = r.get("warnings").and_then(Value::as_array);
            for w in warnings.into_iter().flatten().filter_map(Value::as_str) {
                self.emit(Event::Warning {
                    message: w.to_string(),
                });
            }
            let deprecations = r.get("deprecations").and_then(Value::as_array);
            for d in deprecations.into_iter().flatten() {
                if let Some(message) = deprecation(task.module_name().unwrap_or_default(), d) {
                    self.emit(Event::Deprecation { message });
                }
            }
        }
    }

    /// Register, notify, update the host's standing and report.
    /// The task's result on one host when one of its keywords could not be rendered or
    /// converted (`msg`): failed there, reported and registered as any failure.
    pub(crate) fn keyword_failed(&self, t: OnHost<'_>, msg: &str) -> HostOutcome {
        self.emit(Event::HostTask {
            host: t.host.to_string(),
            task: t.title.to_string(),
        });
        let result = self.error_result(t.task, msg.to_string());
        self.finish(t, Instant::now(), Attempt::of(result))
    }

    fn finish(&self, t: OnHost<'_>, started: Instant, ended: Attempt) -> HostOutcome {
        let OnHost {
            pr,
            task,
            kw,
            host,
            task_id,
            ..
        } = t;
        let Attempt { result, flow } = ended;
        let no_log = kw.no_log == Some(true);
        if !no_log {
            self.show_warnings(task, &result);
        }
        // A loop whose items never ran (skipped, or its items could not be made) reports as
        // one task.
        let looped = kw.loop_.is_some() && result.fields.contains_key("results");
        let failed = result.is_failed();
        let changed = result.changed;
        let skipped = result.is_skipped();
        let ignore = kw.ignore_errors == Some(true);
        let status = if result.unreachable {
            if kw.ignore_unreachable == Some(true) {
                Status::Ignored
            } else {
                Status::Unreachable
            }
        } else if failed {
            if ignore {
                Status::Ignored
            } else {
                Status::Failed
            }
        } else if skipped {
            Status::Skipped
        } else if changed {
            Status::Changed
        } else {
            Status::Ok
        };
        let delegated = kw
            .delegate_to
            .as_ref()
            .filter(|d| d.as_str() != host)
            .cloned();
        let module = task.module_name();
        let returned_facts = match (status, module) {
            // `set_fact`/`include_vars` keep their own precedence layers (see `actions`).
            (_, Some("set_fact" | "include_vars")) => None,
            (Status::Ok | Status::Changed, _) => crate::modules::setup::host_facts(&result.fields),
            _ => None,
        };
        if let Some(facts) = returned_facts {
            let target = match (&kw.delegate_to, kw.delegate_facts) {
                (Some(d), Some(true)) => d.clone(),
                _ => host.to_string(),
            };
            // Only a gathering that returned the whole set (no `gather_subset` or `filter`
            // narrowing it) spares later plays their own.
            let gathered = matches!(module, Some("setup" | "gather_facts"))
                && ["distribution", "interfaces", "memtotal_mb"]
                    .iter()
                    .all(|k| facts.contains_key(*k));
            let returned: Vec<&String> = result
                .fields
                .get("ansible_facts")
                .and_then(serde_json::Value::as_object)
                .map(|f| f.keys().collect())
                .unwrap_or_default();
            let restricted: Vec<String> = returned
                .iter()
                .filter(|k| super::state::restricted_fact(k))
                .map(|k| k.to_string())
                .collect();
            for k in &restricted {
                self.warn_once(format!("Removed restricted key from module data: {k}"));
            }
            let plain: Vec<String> = returned
                .into_iter()
                .filter(|k| !k.starts_with("ansible_"))
                .cloned()
                .collect();
            self.with_state(&target, |s| {
                s.plain_facts.extend(plain);
                s.restricted_facts.extend(
                    restricted
                        .iter()
                        .map(|k| k.strip_prefix("ansible_").unwrap_or(k).to_string()),
                );
                crate::vars::overlay(&mut s.facts, &facts);
                s.facts_gathered |= gathered;
            });
            self.cache_facts(&target);
        }
        self.with_state(host, |s| {
            if let Some(r) = &kw.register {
                s.set_facts.insert(r.clone(), result.registered());
            }
            // An unreachable host has not run the task, `ignore_unreachable` or not.
            if !matches!(status, Status::Skipped | Status::Unreachable) && !result.unreachable {
                s.tasks_ran += 1;
            }
            match status {
                Status::Failed => {
                    s.failed = true;
                    s.failed_result = Some(result.to_value());
                    // `action` as the task wrote it and `name` as given (empty when none), as
                    // ansible-core's serialized task has them.
                    let action = task
                        .written
                        .clone()
                        .or_else(|| task.module_name().map(String::from))
                        .unwrap_or_else(|| task.display_name());
                    s.failed_task = Some(serde_json::json!({
                        "name": task.name.clone().unwrap_or_default(),
                        "action": action,
                    }));
                }
                Status::Unreachable => s.unreachable = true,
                _ => {}
            }
            if changed && !failed {
                s.notified.extend(kw.notify.iter().cloned());
            }
        });
        if changed && !failed {
            let handlers = pr.handlers.lock().unwrap();
            let mut leaves = None;
            for n in &kw.notify {
                // Templated handler names need rendering: only looked at when no handler
                // answers as written.
                let known = crate::playbook::handler_answers(&handlers, n)
                    || !super::notify::woken_by(
                        leaves.get_or_insert_with(|| {
                            self.handler_leaves(pr, &handlers, &Inherit::from_play(pr.play), false)
                        }),
                        n,
                    )
                    .is_empty();
                if !known {
                    // ansible-core's strategy raises this out of the run unless
                    // `error_on_missing_handler` is off (`_process_pending_results`).
                    let message = format!(
                        "{}: The requested handler '{n}' was not found in either the main \
                         handlers list nor in the listening handlers list",
                        task.loc
                    );
                    match self.opts.error_on_missing_handler {
                        true => self.end_run_with_error(message),
                        false => self.emit(Event::Warning { message }),
                    }
                }
            }
        }
        let mut shown = if no_log {
            self.events.redactor.add_task_data(&result.to_value());
            censor(&result)
        } else {
            result.clone()
        };
        // A module may return a diff outside diff mode (known_hosts always does); it is
        // registered, but shown only under `--diff`/`diff: true`, as in ansible-playbook.
        if !t.kw.diff.unwrap_or(self.opts.diff) {
            shown.fields.shift_remove("diff");
        }
        // Registered for `result.exception is defined`; ansible-playbook shows it only with
        // `-vvv`, and kinit's is never more than `NO_TRACEBACK` or a module's traceback.
        shown.fields.shift_remove("exception");
        self.emit(Event::TaskResult {
            host: host.to_string(),
            task_id,
            task: t.title.to_string(),
            location: task.loc.to_string(),
            status,
            module: task.module_name().map(str::to_string),
            delegated_to: delegated,
            looped,
            duration: started.elapsed(),
            result: shown,
        });
        HostOutcome {
            status,
            flow,
            result,
        }
    }

    /// Ansible's search path for a task ends with the folder of the task's own file (before
    /// the playbook's), so `lookup('first_found', ...)` in a role's included task file finds
    /// its siblings in `tasks/` (`Task.get_search_path`).
    fn add_task_dir_to_search_path(&self, task: &Task, ctx: &mut VarMap) {
        let dir = match task.loc.file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        let dir = std::path::absolute(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .display()
            .to_string();
        if let Some(serde_json::Value::Array(paths)) = ctx.get_mut("ansible_search_path")
            && !paths.iter().any(|p| p.as_str() == Some(dir.as_str()))
        {
            let at = paths.len().saturating_sub(1);
            paths.insert(at, serde_json::Value::String(dir));
        }
    }

    /// A task kinit could not run on a host (a template, a condition or a loop failed),
    /// registered as ansible-core 2.19 registers it: `msg` is `Task failed: ` and the chain of
    /// reasons (`reason` is that chain, e.g. `Error while evaluating conditional: 'x' is
    /// undefined`), with `exception` set. Where it happened is shown, not registered.
    pub(crate) fn error_result(&self, task: &Task, failure: impl Into<Failure>) -> TaskResult {
        let Failure { reason, at } = failure.into();
        let (reason, variable) = crate::template::variable_context(&reason);
        let mut r = TaskResult::failed(format!("Task failed: {reason}"));
        r.set("exception", json!(NO_TRACEBACK));
        let context: Vec<String> = at.into_iter().chain(variable).collect();
        r.origin = Some(match context.is_empty() {
            true => task.loc.to_string(),
            false => format!("{} ({})", task.loc, context.join(", ")),
        });
        r
    }

    /// ansible-core 2.19's reason for arguments of `module` that could not be templated,
    /// naming the argument (`_raw_params` for free-form text). Which one failed is found only
    /// here, after the fact, so templating the arguments costs nothing more when it works.
    pub(crate) fn args_failed(
        &self,
        module: &str,
        args: &Value,
        ctx: &VarMap,
        e: impl std::fmt::Display,
    ) -> String {
        let fqcn = if module.contains('.') {
            module.to_string()
        } else if module.starts_with("win_") {
            format!("ansible.windows.{module}")
        } else {
            format!("ansible.builtin.{module}")
        };
        let key = args.as_object().and_then(|m| {
            m.iter()
                .find(|(_, v)| self.templar.render_value(v, ctx).is_err())
                .map(|(k, _)| k)
        });
        match key {
            Some(k) => format!(
                "Finalization of task args for '{fqcn}' failed: Error while resolving value \
                 for '{k}': {e}"
            ),
            None => format!("Finalization of task args for '{fqcn}' failed: {e}"),
        }
    }

    /// `None` when every condition holds, else the first one that does not. An error names
    /// the condition in its `at`, shown in the output's `origin:` line.
    pub(crate) fn check_when(
        &self,
        conds: &[String],
        ctx: &VarMap,
    ) -> Result<Option<String>, Failure> {
        for c in conds {
            let rendered = self
                .embedded_templates_rendered(c, ctx)
                .map_err(|reason| Failure {
                    reason,
                    at: Some(format!("when: {}", crate::template::shown_condition(c))),
                })?;
            match self.eval_condition(&rendered, ctx) {
                Ok(true) => {}
                // ansible-core reports a conditional that is one template by its value.
                Ok(false) if crate::template::is_single_expression(&rendered) => {
                    return Ok(Some("False".into()));
                }
                Ok(false) => return Ok(Some(rendered.into_owned())),
                Err(e) => {
                    return Err(Failure {
                        reason: conditional_error(&e),
                        at: Some(format!("when: {}", crate::template::shown_condition(c))),
                    });
                }
            }
        }
        Ok(None)
    }

    /// One conditional (`that`, `until`, `changed_when`, `failed_when`) evaluated as
    /// ansible-core does: its constant strings' templates rendered first (see
    /// [`Self::embedded_templates_rendered`]). An error names the condition as `key: cond`.
    pub(crate) fn condition(&self, key: &str, cond: &str, ctx: &VarMap) -> Result<bool, Failure> {
        let at = || Some(format!("{key}: {}", crate::template::shown_condition(cond)));
        let rendered = self
            .embedded_templates_rendered(cond, ctx)
            .map_err(|reason| Failure { reason, at: at() })?;
        self.eval_condition(&rendered, ctx).map_err(|e| Failure {
            reason: conditional_error(&e),
            at: at(),
        })
    }

    /// `cond` evaluated to a boolean as ansible-core 2.19 requires (`Templar::eval_condition`);
    /// with `allow_broken_conditionals` a value's truth, and a deprecation warning.
    fn eval_condition(
        &self,
        cond: &str,
        ctx: &VarMap,
    ) -> Result<bool, crate::template::TemplateError> {
        let allow = self.opts.allow_broken_conditionals;
        let (holds, broken) = self.templar.eval_condition(cond, ctx, allow)?;
        if let Some(msg) = broken {
            self.emit(Event::Deprecation {
                message: format!(
                    "{msg} This feature will be removed from ansible-core version 2.23. Broken \
                     conditionals are currently allowed because the \
                     `ALLOW_BROKEN_CONDITIONALS` configuration option is enabled."
                ),
            });
        }
        Ok(holds)
    }

    /// `cond` with every string constant that holds a template (`x == '{{ y }}'`) replaced
    /// by the constant rendered, as ansible-core 2.19 still does with a warning ("Jinja
    /// constant strings should not contain embedded templates"; off by default from 2.23).
    /// The rendered text goes back in as a quoted constant, never as expression text.
    pub(crate) fn embedded_templates_rendered<'c>(
        &self,
        cond: &'c str,
        ctx: &VarMap,
    ) -> Result<std::borrow::Cow<'c, str>, String> {
        // The common case costs a scan and no allocation.
        if !cond.contains("{{") && !cond.contains("{%") || cond.trim_start().starts_with("{{") {
            return Ok(std::borrow::Cow::Borrowed(cond));
        }
        let mut out = String::with_capacity(cond.len());
        let mut rest = cond;
        let mut changed = false;
        while let Some(start) = rest.find(['\'', '"']) {
            let quote = rest.as_bytes()[start] as char;
            out.push_str(&rest[..start]);
            let body = &rest[start + 1..];
            // The closing quote: the first one not escaped by a backslash.
            let mut end = None;
            let mut escaped = false;
            for (i, ch) in body.char_indices() {
                match ch {
                    '\\' if !escaped => escaped = true,
                    c if c == quote && !escaped => {
                        end = Some(i);
                        break;
                    }
                    _ => escaped = false,
                }
            }
            let Some(end) = end else {
                out.push_str(&rest[start..]);
                rest = "";
                break;
            };
            let literal = &body[..end];
            if literal.contains("{{") || literal.contains("{%") {
                let rendered = self
                    .templar
                    .render_str(literal, ctx)
                    .map_err(|e| format!("{CONDITIONAL_ERROR}{e}"))?;
                out.push_str(&serde_json::to_string(&rendered).unwrap_or_default());
                changed = true;
            } else {
                out.push_str(&rest[start..start + 1 + end + 1]);
            }
            rest = &body[end + 1..];
        }
        out.push_str(rest);
        if changed {
            self.warn_once(format!(
                "condition `{cond}`: a string constant holds a template; kinit renders it \
                 first, as Ansible 2.19 does (which warns that this stops working in 2.23); \
                 write the expression without the braces"
            ));
        }
        Ok(std::borrow::Cow::Owned(out))
    }

    /// How long past a poll beat a job may take to end and still count as ended by it.
    const POLL_GRACE: Duration = Duration::from_millis(150);

    /// An `async: secs` task. With `poll: 0`, `command` and `shell` on a POSIX host start the
    /// job in the background and the task goes on at once (`modules::async_job`). Otherwise
    /// the task runs to its end within `secs` (a `timeout` of its own wins), its result kept
    /// under a job id for `async_status` and marked as Ansible marks a finished job; with
    /// `poll: 0` kinit says once that it waited.
    async fn run_async(&self, t: OnHost<'_>, secs: u64, ctx: &mut VarMap) -> Attempt {
        // ansible-core's action plugins without `_supports_async` refuse `async` in these words.
        const NO_ASYNC: &[&str] = &[
            "add_host",
            "assemble",
            "assert",
            "async_status",
            "copy",
            "debug",
            "fail",
            "fetch",
            "group_by",
            "include_vars",
            "pause",
            "raw",
            "reboot",
            "script",
            "set_fact",
            "set_stats",
            "template",
            "unarchive",
            "validate_argument_spec",
            "wait_for_connection",
        ];
        if let Some(m) = t.task.module_name()
            && NO_ASYNC.contains(&crate::modules::short_name(m))
        {
            return Attempt::failed(format!("This action ({m}) does not support async."));
        }
        if t.kw.poll == Some(0) {
            let dir = self.async_dir(ctx);
            let job = Arc::new(AsyncJob::new(dir.clone(), secs));
            let kw = Keywords {
                timeout: t.kw.timeout.or(Some(secs as i64)),
                ..t.kw.clone()
            };
            let a = DETACH
                .scope(
                    job.clone(),
                    UNDER_ASYNC.scope((), self.until_loop(OnHost { kw: &kw, ..t }, ctx)),
                )
                .await;
            if let Some(launched) = job.launched.get() {
                self.jobs.lock().unwrap().insert(
                    job.jid.clone(),
                    super::Job::Started {
                        launched: launched.clone(),
                        ended: None,
                    },
                );
                return a;
            }
            self.warn_once(
                "`poll: 0`: kinit runs async tasks to their end before the next task (the \
                 results are the same; fire-and-forget is not parallel)"
                    .into(),
            );
        }
        let kw = Keywords {
            timeout: t.kw.timeout.or(Some(secs as i64)),
            ..t.kw.clone()
        };
        let jid = crate::modules::async_job::new_jid();
        let run = UNDER_ASYNC.scope((), self.until_loop(OnHost { kw: &kw, ..t }, ctx));
        // ansible-core's default `poll` is 15 seconds.
        let poll = t.kw.poll.unwrap_or(15);
        let mut a = match Some(poll).filter(|p| *p > 0) {
            // ansible-playbook checks on the job every `poll` seconds and says so each time
            // it is still running; kinit waits for it and says the same on the same beat.
            Some(poll) => {
                tokio::pin!(run);
                let mut beat = tokio::time::interval(Duration::from_secs(poll));
                beat.tick().await;
                loop {
                    tokio::select! {
                        a = &mut run => break a,
                        _ = beat.tick() => {
                            // A job that ends as the beat comes counts as ended, as
                            // ansible-core's check (a module run itself) would find it.
                            if let Ok(a) = tokio::time::timeout(Self::POLL_GRACE, &mut run).await {
                                break a;
                            }
                            self.emit(Event::AsyncPoll {
                                host: t.host.to_string(),
                                jid: jid.clone(),
                            });
                        }
                    }
                }
            }
            None => run.await,
        };
        if poll > 0 {
            self.emit(Event::AsyncDone {
                host: t.host.to_string(),
                jid: jid.clone(),
                failed: a.result.is_failed(),
            });
        }
        let file = self.record_async_job(t.host, t.kw, ctx, &jid).await;
        let r = &mut a.result;
        r.set("ansible_job_id", json!(jid));
        r.set("started", json!(true));
        r.set("finished", json!(true));
        if let Some(file) = file {
            r.set("results_file", json!(file));
        }
        self.jobs
            .lock()
            .unwrap()
            .insert(jid, super::Job::Done(r.clone()));
        a
    }

    /// Make sure the host's async folder exists after a polled job, as ansible-core leaves it
    /// (playbooks look for it, `ansible_async_dir` included); the job's results file path, or
    /// `None` on a host that is not POSIX or where the folder could not be made (the task's
    /// result stands either way).
    async fn record_async_job(
        &self,
        host: &str,
        kw: &Keywords,
        ctx: &VarMap,
        jid: &str,
    ) -> Option<String> {
        let resolved = self.target_for(host, host, kw, ctx).ok()?;
        let conn = self.conns.get(&resolved.target).await.ok()?;
        if conn.shell() != crate::transport::ShellKind::Posix {
            return None;
        }
        let script = crate::modules::async_job::record_script(&self.async_dir(ctx), jid);
        let out = conn
            .exec(&crate::transport::ExecRequest {
                script,
                become_: self.become_options(kw, &resolved, ctx).ok()?,
                ..Default::default()
            })
            .await
            .ok()?;
        (out.rc == 0).then(|| out.stdout_str())
    }

    /// The async folder of the host (`ansible_async_dir`, `~/.ansible_async` by default).
    pub(crate) fn async_dir(&self, ctx: &VarMap) -> String {
        ctx.get("ansible_async_dir")
            .and_then(|v| self.templar.render_value(v, ctx).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| "~/.ansible_async".into())
    }

    /// One execution of the task's action on `t.host`.
    pub(crate) async fn attempt(&self, t: OnHost<'_>, ctx: &VarMap) -> Attempt {
        let OnHost { task, inh, .. } = t;
        match &task.action {
            Action::Module { name, args }
                if args.get(crate::playbook::VARIABLE_PARAMS).is_some() =>
            {
                match self.variable_params(name, args, ctx) {
                    Err(msg) => Attempt::of(self.error_result(task, msg)),
                    Ok((args, None)) => self.run_module(t, name, &args, ctx).await,
                    Ok((_, Some(Ok(action)))) => self.run_action(t, &action, ctx).await,
                    Ok((_, Some(Err(detail)))) => Attempt::failed(detail),
                }
            }
            Action::Module { name, args } => self.run_module(t, name, args, ctx).await,
            Action::Exec(action) => self.run_action(t, action, ctx).await,
            Action::IncludeTasks { .. } | Action::IncludeRole { .. } => {
                match self.include_request(task, inh, ctx) {
                    Ok(req) => Attempt {
                        result: TaskResult {
                            included: Some(req.shown()),
                            ..TaskResult::ok()
                        },
                        flow: Flow::Include(vec![req]),
                    },
                    Err(msg) => Attempt::of(self.error_result(task, msg)),
                }
            }
            Action::Block { .. } => Attempt::failed("a block is not a single task"),
            Action::Custom {
                module,
                path,
                args,
                collections,
                python: true,
            } => {
                let m = crate::modules::pymodule::PythonModule {
                    name: module,
                    path,
                    collections,
                };
                self.run_module_as(t, module, &m, args, ctx).await
            }
            Action::Custom {
                module, path, args, ..
            } => {
                let m = crate::modules::script_module::ScriptModule { name: module, path };
                self.run_module_as(t, module, &m, args, ctx).await
            }
            Action::Unimplemented { module } => Attempt::failed(format!(
                "module `{module}` is not implemented by kinit, so this task cannot run here \
                 (kinit warned about it when loading the playbook)"
            )),
            // Free-form text given to an action that takes none: ansible-core's words.
            Action::Invalid { module, detail }
                if detail.starts_with("unknown argument `_raw_params`") =>
            {
                Attempt::of(self.error_result(
                    task,
                    format!("Action 'ansible.builtin.{module}' does not support raw params."),
                ))
            }
            Action::Invalid { detail, .. } => Attempt::failed(detail.clone()),
            Action::Dynamic { template, args } => {
                let name = match self.templar.render_str(template, ctx) {
                    Ok(n) => n.trim().to_string(),
                    Err(e) => {
                        return Attempt::of(self.error_result(
                            task,
                            format!("Error processing keyword 'action': {e}"),
                        ));
                    }
                };
                let Some(short) = crate::playbook::resolve_action(&name) else {
                    return Attempt::failed(format!(
                        "couldn't resolve module/action '{name}' (the task's `action` \
                         `{template}`): kinit has no such module or action"
                    ));
                };
                match crate::playbook::actions::ExecAction::parse(&short, args) {
                    Some(Ok(action)) => self.run_action(t, &action, ctx).await,
                    Some(Err(e)) => Attempt::failed(e.to_string()),
                    None => self.run_module(t, &short, args, ctx).await,
                }
            }
        }
    }

    /// Arguments given as a template (`add_host: "{{ spec }}"`): the mapping it renders to,
    /// under the arguments written beside it, and the built-in action they make, if the
    /// module is one.
    #[allow(clippy::type_complexity)]
    fn variable_params(
        &self,
        name: &str,
        args: &serde_json::Value,
        ctx: &VarMap,
    ) -> Result<
        (
            serde_json::Value,
            Option<Result<crate::playbook::actions::ExecAction, String>>,
        ),
        String,
    > {
        let mut merged = args.as_object().cloned().unwrap_or_default();
        let template = merged
            .remove(crate::playbook::VARIABLE_PARAMS)
            .unwrap_or_default();
        let base = match self
            .templar
            .render_value(&template, ctx)
            .map_err(|e| e.to_string())?
        {
            serde_json::Value::Object(base) => base,
            // ansible-core's words (`Task args must resolve to a 'dict'`).
            other => {
                let full = match name.contains('.') {
                    true => name.to_string(),
                    false => format!("ansible.builtin.{name}"),
                };
                return Err(format!(
                    "Finalization of task args for '{full}' failed: Task args \
                     must resolve to a 'dict' not '{}'.",
                    crate::template::python_type_name(&other)
                ));
            }
        };
        let mut out = base;
        out.extend(merged);
        let out = serde_json::Value::Object(out);
        let action = crate::playbook::actions::ExecAction::parse(name, &out)
            .map(|r| r.map_err(|e| e.to_string()));
        Ok((out, action))
    }

    pub(crate) async fn sleep(&self, d: Duration) {
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = self.cancel.cancelled() => {}
        }
    }
}

pub(crate) fn item_status(r: &TaskResult, kw: &Keywords) -> Status {
    if r.unreachable {
        Status::Unreachable
    } else if r.is_failed() {
        if kw.ignore_errors == Some(true) {
            Status::Ignored
        } else {
            Status::Failed
        }
    } else if r.is_skipped() {
        Status::Skipped
    } else if r.changed {
        Status::Changed
    } else {
        Status::Ok
    }
}

pub(crate) fn skipped(cond: &str) -> TaskResult {
    // A literal `when: false` is reported as the boolean it was written as.
    let cond = match cond {
        "False" => json!(false),
        other => json!(other),
    };
    let mut fields = Map::new();
    fields.insert("skip_reason".into(), json!("Conditional result was False"));
    fields.insert("false_condition".into(), cond);
    TaskResult {
        skipped: Some(true),
        fields,
        ..TaskResult::default()
    }
}

/// A meta task on `host` whose `when` was false: skipped, with ansible-core's reason.
fn meta_skipped(action: Meta, host: &str) -> TaskResult {
    let name = action.name();
    let rest = match action {
        Meta::FlushHandlers => format!(", not running handlers for {host}"),
        Meta::ClearFacts => format!(", not clearing facts and fact cache for {host}"),
        Meta::ClearHostErrors => format!(", not clearing host error state for {host}"),
        Meta::EndBatch => ", continuing current batch".into(),
        Meta::EndPlay => ", continuing play".into(),
        Meta::EndHost => format!(", continuing execution for {host}"),
        Meta::Noop | Meta::RefreshInventory | Meta::ResetConnection => String::new(),
    };
    let reason = format!("{name} conditional evaluated to False{rest}");
    let msg = match action {
        Meta::EndHost => {
            format!("end_host conditional evaluated to false, continuing execution for {host}")
        }
        _ => String::new(),
    };
    TaskResult {
        skipped: Some(true),
        msg: Some(json!(msg)),
        ..TaskResult::default()
    }
    .with("skip_reason", reason)
}

/// A module's deprecation (`{msg, version | date, collection_name}`) as ansible-core 2.19
/// words it (`_event_formatting`): who removes the feature, and when.
fn deprecation(module: &str, d: &Value) -> Option<String> {
    let msg = d.get("msg")?.as_str()?;
    let text = |k: &str| d.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let who = match text("collection_name") {
        Some("ansible.builtin") => "ansible-core".to_string(),
        Some(c) => format!("collection '{c}'"),
        None => format!("module '{module}' in collection 'ansible.legacy'"),
    };
    let when = match (text("version"), text("date")) {
        (Some(v), _) => format!(" version {v}"),
        (None, Some(date)) => format!(" in a release after {date}"),
        (None, None) => " in a future release".to_string(),
    };
    Some(format!(
        "{}. This feature will be removed from {who}{when}.",
        msg.trim_end_matches('.')
    ))
}

/// What a `no_log` result shows: its outcome and nothing of its content.
pub(crate) fn censor(r: &TaskResult) -> TaskResult {
    let mut fields = Map::new();
    fields.insert("censored".into(), json!(CENSORED));
    TaskResult {
        changed: r.changed,
        failed: r.failed,
        skipped: r.skipped,
        unreachable: r.unreachable,
        msg: None,
        fields,
        // Where the task is, and a variable's name: nothing of the content.
        origin: r.origin.clone(),
        included: r.included.clone(),
        // ansible-core's censored result drops `_ansible_verbose_always`: a `debug` with
        // `no_log` shows no body below `-v`.
        verbose_always: false,
    }
}
