//! Executor-side actions: tasks that act on the run itself rather than on a host (`debug`,
//! `assert`, `fail`, `set_fact`, `add_host`, `group_by`, `meta`, `pause`, `include_vars`,
//! `wait_for_connection`; `validate_argument_spec` is in `argspec`, and the ones changing run
//! state are in `state_actions`).

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::Executor;
use super::host_task::{Attempt, Flow, OnHost};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::playbook::actions::{
    AssertArgs, AsyncStatusArgs, DebugArgs, ExecAction, Meta, PauseArgs, SetStatsArgs,
};
use crate::playbook::{Keywords, Task};
use crate::report::{Event, TaskResult};
use crate::template::TemplateError;
use crate::vars::VarMap;

/// An ok result with the keys of `extra`.
pub(crate) fn ok(extra: Value) -> Attempt {
    let mut r = TaskResult::ok();
    if let Value::Object(e) = extra {
        for (k, v) in e {
            r.set(&k, v);
        }
    }
    Attempt::of(r)
}

impl Executor {
    pub(crate) async fn run_action(
        &self,
        t: OnHost<'_>,
        action: &ExecAction,
        ctx: &VarMap,
    ) -> Attempt {
        let OnHost {
            task,
            kw,
            inh,
            host,
            ..
        } = t;
        let no_log = kw.no_log == Some(true);
        // Arguments render as templates when the task runs; `assert: that` and `debug: var`
        // hold bare expressions and are evaluated instead.
        let defaults =
            (!inh.module_defaults.is_empty() || kw.module_defaults.is_some()).then_some((inh, kw));
        macro_rules! rendered {
            ($args:expr) => {
                match self.rendered_args(
                    task.module_name().unwrap_or_default(),
                    $args,
                    ctx,
                    no_log,
                    defaults,
                ) {
                    Ok(a) => a,
                    Err(e) => return Attempt::of(self.error_result(task, e)),
                }
            };
        }
        // ansible-core templates every task's keywords, `environment` too, before its action
        // runs, so one that cannot be templated fails a `debug` or `set_fact` as well.
        if let Err(msg) = self.environment(inh, kw, ctx) {
            return Attempt::of(self.error_result(task, msg));
        }
        match action {
            // Render mode: waiting for a host or a pause would only wait; a `fail` that judges
            // a stood-in answer (its message carries a placeholder) judges nothing (see
            // `render`). Any other `fail` stops the render as it would stop the run.
            ExecAction::Pause(_) | ExecAction::WaitForConnection(_)
                if self.opts.render.is_some() =>
            {
                ok(json!({"msg": "not run by a render: it waits for a host"}))
            }
            ExecAction::Fail(a)
                if self.opts.render.is_some()
                    && rendered!(a)
                        .msg
                        .is_some_and(|m| m.to_string().contains(super::render::PLACEHOLDER)) =>
            {
                ok(json!({"msg": "not judged by a render: it checks a host's answer"}))
            }
            ExecAction::Debug(a) if a.var.is_some() => self.debug(a, ctx, task),
            ExecAction::Debug(a) => self.debug(&rendered!(a), ctx, task),
            ExecAction::Assert(a) => self.assert(a, ctx, task),
            ExecAction::Fail(a) => {
                let a = rendered!(a);
                let mut r = TaskResult::failed("Failed as requested from task");
                if let Some(m) = a.msg {
                    r.msg = Some(m);
                }
                Attempt::of(r)
            }
            ExecAction::SetFact { facts, cacheable } => {
                let values = rendered!(facts);
                // ansible-core's set_fact reads `cacheable` as a lenient boolean.
                let cacheable = match cacheable {
                    Some(c) => crate::modules::args::boolish(rendered!(c)).unwrap_or(false),
                    None => false,
                };
                // `set_fact` alone templates its keys (ansible-core's set_fact action keeps
                // this "for dynamic storage"); nowhere else is a key templated.
                // The names of the values left (an omitted value takes its name with it).
                let names = values.keys().map(|k| Value::String(k.clone())).collect();
                let names = match rendered!(&Value::Array(names)) {
                    Value::Array(names) => names,
                    other => vec![other],
                };
                // Each name is checked as ansible-core's action checks it
                // (`validate_variable_name`); nothing is set when one is refused.
                if let Some(why) = names
                    .iter()
                    .find_map(crate::template::invalid_variable_name)
                {
                    return Attempt::of(TaskResult::failed(format!("Task failed: {why}")));
                }
                let facts = names
                    .into_iter()
                    .zip(values.into_iter().map(|(_, v)| v))
                    .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v)))
                    .collect();
                self.set_fact(facts, cacheable, kw, host, ctx)
            }
            ExecAction::AddHost(args) => self.add_host(&rendered!(args)),
            ExecAction::GroupBy(a) => self.group_by(&rendered!(a), host),
            ExecAction::Meta(m) => meta(*m, host),
            ExecAction::Pause(a) => self.pause(&rendered!(a), &inh.title(task)).await,
            ExecAction::IncludeVars(a) => {
                self.include_vars(&rendered!(a.as_ref()), task, inh, host, ctx)
            }
            ExecAction::WaitForConnection(a) => {
                self.wait_for_connection(&rendered!(a), host, kw, ctx).await
            }
            ExecAction::AsyncStatus(a) => self.async_status(&rendered!(a), host, kw, ctx).await,
            ExecAction::ValidateArgumentSpec(a) => self.validate_argument_spec(rendered!(a), ctx),
            ExecAction::SetStats(a) => set_stats(rendered!(a)),
        }
    }

    /// `args` with every template rendered and omitted values left out.
    /// `args` rendered, over the `module_defaults` for `module` where the play, a block or
    /// the task sets any (ansible-core applies them to every action, `debug` too).
    fn rendered_args<T: Serialize + DeserializeOwned>(
        &self,
        module: &str,
        args: &T,
        ctx: &VarMap,
        no_log: bool,
        defaults: Option<(&super::inherit::Inherit, &Keywords)>,
    ) -> Result<T, String> {
        let mut raw = serde_json::to_value(args).map_err(|e| e.to_string())?;
        if let Some((inh, kw)) = defaults {
            // An argument the task leaves out serializes as null; a default fills it.
            if let Value::Object(own) = &mut raw {
                own.retain(|_, v| !v.is_null());
            }
            raw = super::remote::module_defaults(module, inh, kw, &raw);
        }
        let mut v = self
            .templar
            .render_value(&raw, ctx)
            .map_err(|e| self.args_failed(module, &raw, ctx, e))?;
        crate::template::strip_omit(&mut v);
        if no_log {
            self.events.redactor.add_task_data(&v);
        }
        T::deserialize(&v).map_err(|e| crate::modules::args::explain(&e.to_string()))
    }

    /// `async_status: jid=...`: the result of an `async` task. A job that ran to its end is
    /// answered from memory; one started in the background (`poll: 0`), or by another run, is
    /// read from its files on the host (`modules::async_job`); `mode: cleanup` removes them.
    async fn async_status(
        &self,
        args: &AsyncStatusArgs,
        host: &str,
        kw: &Keywords,
        ctx: &VarMap,
    ) -> Attempt {
        use crate::modules::async_job::{self, JobState};
        let Some(jid) = args.jid.as_ref().map(|j| match j {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }) else {
            return Attempt::failed("`async_status` needs `jid`");
        };
        let cleanup = args.mode.as_ref().and_then(Value::as_str) == Some("cleanup");
        let known = self.jobs.lock().unwrap().get(&jid).cloned();
        let (dir, launched) = match known {
            Some(super::Job::Done(_)) if cleanup => {
                // Nothing of it is on the host: it ran to its end in the task.
                self.jobs.lock().unwrap().remove(&jid);
                return ok(
                    json!({"ansible_job_id": jid, "erased": jid, "started": false,
                                 "finished": false}),
                );
            }
            Some(super::Job::Done(result)) => return Attempt::of(result),
            Some(super::Job::Started {
                ended: Some(result),
                ..
            }) if !cleanup => return Attempt::of(result),
            // The job is looked for where this task's `ansible_async_dir` says, as
            // ansible-core's `async_status` does: another folder than the launch's finds
            // nothing.
            Some(super::Job::Started { launched, .. }) => (self.async_dir(ctx), Some(launched)),
            None => (self.async_dir(ctx), None),
        };
        let resolved = match self.target_for(host, host, kw, ctx) {
            Ok(r) => r,
            Err(e) => return Attempt::failed(e.to_string()),
        };
        // The job's files are the launching user's: read them as the task becomes, as
        // ansible-core's async_status does.
        let become_ = match self.become_options(kw, &resolved, ctx) {
            Ok(b) => b,
            Err(msg) => return Attempt::failed(msg),
        };
        let conn = match self.conns.get(&resolved.target).await {
            Ok(c) => c,
            Err(e) => return Attempt::failed(e.to_string()),
        };
        // A job that failed without output of its own, as ansible-core 2.19 reports one.
        let failed_job = |msg: &str, file: &str| {
            let mut r = TaskResult::failed(msg);
            for (k, v) in async_job::status_fields(&jid, file, true, true)
                .as_object()
                .into_iter()
                .flatten()
            {
                r.set(k, v.clone());
            }
            for k in ["stdout", "stderr"] {
                r.set(k, json!(""));
                r.set(&format!("{k}_lines"), json!([]));
            }
            Attempt::of(r)
        };
        let no_such_job = || failed_job("could not find job", "");
        if conn.shell() != crate::transport::ShellKind::Posix {
            return no_such_job();
        }
        let run = |script: String| {
            let conn = conn.clone();
            async move {
                conn.exec(&crate::transport::ExecRequest {
                    script,
                    become_,
                    ..Default::default()
                })
                .await
            }
        };
        // The empty output ansible-core 2.19 reports beside a job that has no result yet.
        let with_empty_output = |mut r: Value| {
            for (k, v) in [
                ("changed", json!(false)),
                ("stdout", json!("")),
                ("stderr", json!("")),
                ("stdout_lines", json!([])),
                ("stderr_lines", json!([])),
            ] {
                r[k] = v;
            }
            r
        };
        if cleanup {
            return match run(async_job::cleanup_script(&dir, &jid)).await {
                Ok(out) => {
                    self.jobs.lock().unwrap().remove(&jid);
                    let mut r = with_empty_output(json!({
                        "ansible_job_id": jid, "started": false, "finished": false
                    }));
                    r["erased"] = json!(out.stdout_str());
                    ok(r)
                }
                Err(e) => Attempt::failed(e.to_string()),
            };
        }
        let printed = match run(async_job::state_script(&dir, &jid)).await {
            Ok(out) => out.stdout,
            Err(e) => return Attempt::failed(e.to_string()),
        };
        let file = launched
            .as_ref()
            .map(|l| l.file.clone())
            .unwrap_or_default();
        match async_job::read_state(&printed) {
            None | Some(JobState::Missing) => no_such_job(),
            Some(JobState::Running) => ok(with_empty_output(async_job::status_fields(
                &jid, &file, true, false,
            ))),
            Some(JobState::TimedOut) => failed_job("Timeout exceeded", &file),
            Some(JobState::Ended { out, start, end }) => {
                let at = |nanos: i128| {
                    let t = time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
                        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
                    t.to_offset(crate::template::local_now().offset())
                };
                let (cmd, strip) = launched
                    .as_ref()
                    .map_or((Value::Null, true), |l| (l.cmd.clone(), l.strip_empty_ends));
                let m =
                    crate::modules::command::finish_between(out, at(start), at(end), cmd, strip);
                let mut r = super::remote::task_result(m);
                for (k, v) in async_job::status_fields(&jid, &file, true, true)
                    .as_object()
                    .into_iter()
                    .flatten()
                {
                    r.set(k, v.clone());
                }
                if let Some(launched) = launched {
                    self.jobs.lock().unwrap().insert(
                        jid,
                        super::Job::Started {
                            launched,
                            ended: Some(r.clone()),
                        },
                    );
                }
                Attempt::of(r)
            }
        }
    }

    fn debug(&self, args: &DebugArgs, ctx: &VarMap, task: &Task) -> Attempt {
        let verbosity = match &args.verbosity {
            Some(Value::Number(n)) => n.as_u64().unwrap_or(0),
            Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
            _ => 0,
        };
        if u64::from(self.opts.verbose) < verbosity {
            return ok(json!({"skipped": true, "skipped_reason": "Verbosity threshold not met."}));
        }
        if let Some(var) = args.var.as_deref() {
            // `var: "{{ expr }}"` names the same value as `var: expr`.
            let expr = var
                .trim()
                .strip_prefix("{{")
                .and_then(|e| e.strip_suffix("}}"))
                .filter(|e| !e.contains("{{"))
                .unwrap_or(var);
            // An undefined value shows as 2.19's marker, told in a warning (its debug action
            // replaces `UndefinedMarker`s); an undefined value that evaluates to nothing
            // (`d.missing`) is printed to learn why.
            let undefined = |e: TemplateError| {
                let marked = crate::template::Marked::failed(&e);
                if let Some(message) = marked.warning() {
                    self.emit(Event::SourceWarning {
                        message,
                        location: task.loc.to_string(),
                        key: "var".into(),
                    });
                }
                json!(marked.text)
            };
            let v = match self.templar.eval(expr, ctx) {
                Ok(Value::Null) if !ctx.contains_key(var) => {
                    match self.templar.render_str(&format!("{{{{ {expr} }}}}"), ctx) {
                        Err(e @ TemplateError::Undefined { .. }) => undefined(e),
                        _ => Value::Null,
                    }
                }
                Ok(v) => v,
                Err(e @ TemplateError::Undefined { .. }) => undefined(e),
                // Any other failure (a filter's or a lookup's) fails the task, as
                // ansible-core 2.19's debug does.
                Err(e) => return Attempt::failed(e.to_string()),
            };
            return ok(json!({ var: v }));
        }
        let msg = args.msg.clone().unwrap_or(json!("Hello world!"));
        ok(json!({ "msg": msg }))
    }

    fn assert(&self, args: &AssertArgs, ctx: &VarMap, task: &Task) -> Attempt {
        let render = |v: &Option<Value>| -> Option<Value> {
            v.as_ref().map(|v| {
                self.templar
                    .render_value(v, ctx)
                    .unwrap_or_else(|_| v.clone())
            })
        };
        // Not `quiet`: the result is shown whole at any verbosity (ansible-core's assert
        // action sets `_ansible_verbose_always`).
        let quiet =
            render(&args.quiet).is_some_and(|q| crate::modules::args::boolish(q).unwrap_or(false));
        let listed = match args.that.as_slice() {
            [one] => self.templar.conditions_of(one, ctx),
            _ => None,
        };
        for cond in listed.as_ref().unwrap_or(&args.that) {
            match self.condition("that", cond.trim(), ctx) {
                Ok(true) => {}
                Ok(false) => {
                    let msg = render(&args.fail_msg)
                        .or_else(|| render(&args.msg))
                        .unwrap_or(json!("Assertion failed"));
                    let mut r = TaskResult::failed("")
                        .with("assertion", cond.as_str())
                        .with("evaluated_to", false);
                    r.msg = Some(msg);
                    r.verbose_always = !quiet;
                    return Attempt::of(r);
                }
                Err(mut failure) => {
                    failure.at = Some(format!("that: {}", crate::template::shown_condition(cond)));
                    return Attempt::of(self.error_result(task, failure));
                }
            }
        }
        let msg = render(&args.success_msg).unwrap_or(json!("All assertions passed"));
        let mut r = TaskResult::ok().with("msg", msg);
        r.verbose_always = !quiet;
        Attempt::of(r)
    }

    /// `set_fact`: variables of the host at `set_fact`'s precedence; `cacheable` ones are
    /// facts too (`ansible_facts.<name>`, the fact cache), as ansible-core's strategy sets
    /// both.
    fn set_fact(
        &self,
        facts: Map<String, Value>,
        cacheable: bool,
        kw: &Keywords,
        host: &str,
        ctx: &VarMap,
    ) -> Attempt {
        let target = match (&kw.delegate_to, kw.delegate_facts) {
            (Some(d), Some(true)) => self
                .templar
                .render_str(d, ctx)
                .unwrap_or_else(|_| d.clone()),
            _ => host.to_string(),
        };
        self.with_state(&target, |s| {
            crate::vars::overlay(&mut s.set_facts, &facts);
            if cacheable {
                s.add_named_facts(facts.clone());
            }
        });
        if cacheable {
            self.cache_facts(&target);
        }
        ok(json!({ "ansible_facts": facts }))
    }

    /// `pause`: for `seconds`/`minutes`, a wait; without them, the prompt ansible-core's
    /// action asks (`[task]\nprompt:`) and the line typed as `user_input`, or, when stdin is
    /// no terminal, a warning and no wait (`plugins/action/pause.py`).
    async fn pause(&self, args: &PauseArgs, title: &str) -> Attempt {
        let num = |v: &Option<Value>| -> Option<f64> {
            match v.as_ref()? {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            }
        };
        let secs = match (num(&args.seconds), num(&args.minutes)) {
            (Some(s), _) => s,
            (None, Some(m)) => m * 60.0,
            (None, None) => return self.pause_for_input(args, title),
        };
        let start = Instant::now();
        self.sleep(Duration::from_secs_f64(secs.max(0.0))).await;
        if self.cancel.is_cancelled() {
            return Attempt::failed("interrupted");
        }
        ok(json!({
            "delta": start.elapsed().as_secs(),
            "stdout": format!("Paused for {secs} seconds"),
            "user_input": "",
        }))
    }
}

impl Executor {
    fn pause_for_input(&self, args: &PauseArgs, title: &str) -> Attempt {
        use std::io::IsTerminal;
        let echo = match &args.echo {
            None => true,
            Some(v) => match super::argspec_types::to_bool(v, false) {
                Ok(b) => b,
                Err(e) => return Attempt::failed(format!("pause: echo: {e}")),
            },
        };
        let started = chrono::Local::now().naive_local().to_string();
        let start = Instant::now();
        let mut warnings = Vec::new();
        let input = if std::io::stdin().is_terminal() {
            let text = match &args.prompt {
                Some(Value::String(p)) if !p.is_empty() => p.clone(),
                Some(v) if !v.is_null() && v.as_str() != Some("") => v.to_string(),
                _ => "Press enter to continue, Ctrl+C to interrupt".to_string(),
            };
            let hidden = if echo { "" } else { " (output is hidden)" };
            let question = format!("[{}]\n{text}{hidden}:", title.trim());
            let answer = self
                .events
                .suspend(|| super::prompt::ask(&question, !echo, false));
            if !echo && !answer.is_empty() {
                self.events.redactor.add(&answer);
            }
            answer
        } else {
            warnings.push("Not waiting for response to prompt as stdin is not interactive");
            String::new()
        };
        let minutes = (start.elapsed().as_secs_f64() / 60.0 * 100.0).round() / 100.0;
        let mut r = json!({
            "rc": 0, "stderr": "", "echo": echo,
            "start": started,
            "stop": chrono::Local::now().naive_local().to_string(),
            "delta": start.elapsed().as_secs(),
            "stdout": format!("Paused for {} minutes", crate::template::pyrepr::float(minutes)),
            "user_input": input,
        });
        if !warnings.is_empty() {
            r["warnings"] = json!(warnings);
        }
        ok(r)
    }
}

/// What a meta task did on `host`, in ansible-core's words (`StrategyBase._execute_meta`,
/// shown as `META: ...` at `-vv`).
fn meta_message(action: Meta, host: &str) -> String {
    match action {
        Meta::FlushHandlers => format!("triggered running handlers for {host}"),
        Meta::EndPlay => "ending play".into(),
        Meta::EndHost => format!("ending play for {host}"),
        Meta::EndBatch => "ending batch".into(),
        Meta::Noop => "noop".into(),
        Meta::ClearHostErrors => "cleared host errors".into(),
        Meta::RefreshInventory => "inventory successfully refreshed".into(),
        Meta::ResetConnection => "reset connection".into(),
        Meta::ClearFacts => "facts cleared".into(),
    }
}

fn meta(action: Meta, host: &str) -> Attempt {
    let flow = match action {
        Meta::FlushHandlers => Flow::FlushHandlers,
        Meta::EndPlay => Flow::EndPlay,
        Meta::EndHost => Flow::EndHost,
        Meta::EndBatch => Flow::EndBatch,
        Meta::ClearHostErrors => Flow::ClearHostErrors,
        Meta::ClearFacts => Flow::ClearFacts,
        Meta::RefreshInventory => Flow::RefreshInventory,
        Meta::Noop | Meta::ResetConnection => Flow::Continue,
    };
    Attempt {
        result: TaskResult::ok().with("msg", meta_message(action, host)),
        flow,
    }
}

/// `set_stats`, as ansible-core's action: `data` must be a mapping whose keys are variable
/// names; `per_host` (default no) and `aggregate` (default yes) are read as lenient booleans.
/// The result carries `ansible_stats`; the reporter adds it up for the end of the run.
fn set_stats(args: SetStatsArgs) -> Attempt {
    let data = match args.data {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Attempt::of(TaskResult::failed(
                "The 'data' option needs to be a dictionary/hash",
            ));
        }
    };
    if let Some(why) = data
        .keys()
        .find_map(|k| crate::template::invalid_variable_name(&Value::String(k.clone())))
    {
        return Attempt::of(TaskResult::failed(format!("Task failed: {why}")));
    }
    let flag = |v: Option<Value>, default: bool| match v {
        None | Some(Value::Null) => default,
        Some(v) => crate::modules::args::boolish(v).unwrap_or(false),
    };
    let mut r = TaskResult::ok();
    r.set(
        "ansible_stats",
        json!({
            "data": data,
            "per_host": flag(args.per_host, false),
            "aggregate": flag(args.aggregate, true),
        }),
    );
    Attempt::of(r)
}
