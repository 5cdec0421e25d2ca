//! One task on one host: `when`, loops, `until`/`retries`, `changed_when`/`failed_when`,
//! `register`, `notify`, `ignore_errors`, `no_log` censoring, and the result event.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::include::IncludeReq;
use super::walk::Inherit;
use super::{Executor, PlayRun};
use crate::playbook::{Action, Keywords, LoopKind, Task};
use crate::report::{Event, Status};
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
    Include(Vec<IncludeReq>),
}

pub(crate) struct HostOutcome {
    pub status: Status,
    pub flow: Flow,
    pub result: Value,
}

/// One execution of the action (one loop item, one `until` attempt).
pub(crate) struct Attempt {
    pub result: Value,
    pub unreachable: bool,
    pub flow: Flow,
}

impl Attempt {
    pub fn failed(msg: impl Into<String>) -> Self {
        Self {
            result: json!({"failed": true, "changed": false, "msg": msg.into()}),
            unreachable: false,
            flow: Flow::Continue,
        }
    }
    pub fn ok(result: Value) -> Self {
        Self {
            result,
            unreachable: false,
            flow: Flow::Continue,
        }
    }
}

const CENSORED: &str =
    "the output has been hidden due to the fact that 'no_log: true' was specified for this result";

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

impl Executor {
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn run_host_task(
        &self,
        pr: &PlayRun<'_>,
        task: &Task,
        kw: &Keywords,
        inh: &Inherit,
        host: &str,
        task_id: usize,
        hostvars: Option<Arc<Value>>,
    ) -> HostOutcome {
        let started = Instant::now();
        self.emit(Event::HostTask {
            host: host.to_string(),
            task: task.display_name(),
        });
        let no_log = kw.no_log == Some(true);
        let mut flow = Flow::Continue;
        let mut unreachable = false;
        let looped = kw.loop_.is_some();
        let result = match self.task_vars(pr, host, inh, &kw.vars, hostvars) {
            Err(e) => self.error_result(task, e.to_string()),
            Ok(mut ctx) => {
                let conds: Vec<String> = inh.when.iter().chain(kw.when.iter()).cloned().collect();
                match &kw.loop_ {
                    None => match self.check_when(&conds, &ctx) {
                        Err(msg) => self.error_result(task, msg),
                        Ok(Some(cond)) => skipped(&cond),
                        Ok(None) => {
                            let a = self.until_loop(pr, task, kw, inh, host, &mut ctx).await;
                            unreachable = a.unreachable;
                            flow = a.flow;
                            a.result
                        }
                    },
                    Some(spec) => match self.loop_items(spec, &ctx) {
                        Err(msg) => self.error_result(task, msg),
                        Ok(items) => {
                            let (r, u, f) = self
                                .run_items(
                                    pr, task, kw, inh, host, task_id, &ctx, &conds, items, no_log,
                                )
                                .await;
                            unreachable = u;
                            flow = f;
                            r
                        }
                    },
                }
            }
        };
        self.finish(
            pr,
            task,
            kw,
            host,
            task_id,
            started,
            result,
            unreachable,
            flow,
            no_log,
            looped,
        )
    }

    /// Register, notify, update the host's standing and report.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        pr: &PlayRun<'_>,
        task: &Task,
        kw: &Keywords,
        host: &str,
        task_id: usize,
        started: Instant,
        result: Value,
        unreachable: bool,
        flow: Flow,
        no_log: bool,
        looped: bool,
    ) -> HostOutcome {
        let failed = flag(&result, "failed");
        let changed = flag(&result, "changed");
        let skipped = flag(&result, "skipped");
        let ignore = kw.ignore_errors == Some(true);
        let status = if unreachable {
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
        self.with_state(host, |s| {
            if let Some(r) = &kw.register {
                s.set_facts.insert(r.clone(), result.clone());
            }
            match status {
                Status::Failed => {
                    s.failed = true;
                    s.failed_result = Some(result.clone());
                    s.failed_task = Some(task.display_name());
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
            for n in &kw.notify {
                let known = handlers
                    .iter()
                    .any(|h| h.name.as_deref() == Some(n) || h.kw.listen.contains(n));
                if !known {
                    self.emit(Event::Warning {
                        message: format!("{}: no handler named `{n}`", task.loc),
                    });
                }
            }
        }
        let shown = if no_log {
            self.events.redactor.add_value(&result);
            censor(&result)
        } else {
            result.clone()
        };
        self.emit(Event::TaskResult {
            host: host.to_string(),
            task_id,
            task: task.display_name(),
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

    pub(crate) fn error_result(&self, task: &Task, msg: String) -> Value {
        json!({
            "failed": true,
            "changed": false,
            "msg": format!("task `{}` ({}): {msg}", task.display_name(), task.loc),
        })
    }

    /// `None` when every condition holds, else the first one that does not.
    pub(crate) fn check_when(
        &self,
        conds: &[String],
        ctx: &VarMap,
    ) -> Result<Option<String>, String> {
        for c in conds {
            match self.templar.eval_bool(c, ctx) {
                Ok(true) => {}
                Ok(false) => return Ok(Some(c.clone())),
                Err(e) => return Err(format!("error in condition `{c}`: {e}")),
            }
        }
        Ok(None)
    }

    fn loop_items(
        &self,
        spec: &crate::playbook::LoopSpec,
        ctx: &VarMap,
    ) -> Result<Vec<Value>, String> {
        let v = self
            .templar
            .render_value(&spec.value, ctx)
            .map_err(|e| format!("error in loop: {e}"))?;
        let v = match v {
            Value::String(s) if spec.kind != LoopKind::Sequence => {
                // A string that renders to a list's JSON (from a filter chain) is that list.
                serde_json::from_str::<Value>(&s)
                    .ok()
                    .filter(Value::is_array)
                    .unwrap_or(Value::String(s))
            }
            other => other,
        };
        Ok(match spec.kind {
            LoopKind::Loop | LoopKind::List => match v {
                Value::Array(a) => a,
                Value::Null => Vec::new(),
                other => {
                    return Err(format!(
                        "invalid data passed to `loop`, it requires a list, got `{other}`"
                    ));
                }
            },
            LoopKind::Items => match v {
                Value::Array(a) => a
                    .into_iter()
                    .flat_map(|x| match x {
                        Value::Array(inner) => inner,
                        other => vec![other],
                    })
                    .collect(),
                Value::Null => Vec::new(),
                other => vec![other],
            },
            LoopKind::Dict => match v {
                Value::Object(m) => m
                    .into_iter()
                    .map(|(k, v)| json!({"key": k, "value": v}))
                    .collect(),
                other => return Err(format!("`with_dict` expects a dict, got `{other}`")),
            },
            LoopKind::IndexedItems => match v {
                Value::Array(a) => a
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| json!([i, x]))
                    .collect(),
                other => {
                    return Err(format!(
                        "`with_indexed_items` expects a list, got `{other}`"
                    ));
                }
            },
            LoopKind::Sequence => sequence(&v)?,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_items(
        &self,
        pr: &PlayRun<'_>,
        task: &Task,
        kw: &Keywords,
        inh: &Inherit,
        host: &str,
        task_id: usize,
        ctx: &VarMap,
        conds: &[String],
        items: Vec<Value>,
        no_log: bool,
    ) -> (Value, bool, Flow) {
        let lc = &kw.loop_control;
        let loop_var = lc.loop_var.clone().unwrap_or_else(|| "item".into());
        let n = items.len();
        let mut results = Vec::new();
        let mut includes = Vec::new();
        let mut unreachable = false;
        for (i, item) in items.iter().enumerate() {
            if self.cancel.is_cancelled() {
                break;
            }
            if i > 0
                && let Some(p) = lc.pause
            {
                self.sleep(Duration::from_secs_f64(p)).await;
            }
            let mut c = ctx.clone();
            c.insert(loop_var.clone(), item.clone());
            c.insert("ansible_loop_var".into(), json!(loop_var));
            if let Some(iv) = &lc.index_var {
                c.insert(iv.clone(), json!(i));
            }
            if lc.extended {
                c.insert(
                    "ansible_loop".into(),
                    json!({"index": i + 1, "index0": i, "first": i == 0, "last": i + 1 == n,
                           "length": n, "revindex": n - i, "revindex0": n - i - 1,
                           "allitems": items}),
                );
            }
            let mut r = match self.check_when(conds, &c) {
                Err(msg) => self.error_result(task, msg),
                Ok(Some(cond)) => skipped(&cond),
                Ok(None) => {
                    let a = self.until_loop(pr, task, kw, inh, host, &mut c).await;
                    unreachable |= a.unreachable;
                    if let Flow::Include(reqs) = a.flow {
                        includes.extend(reqs);
                    }
                    a.result
                }
            };
            if let Some(obj) = r.as_object_mut() {
                obj.insert(loop_var.clone(), item.clone());
                obj.insert("ansible_loop_var".into(), json!(loop_var));
                if let Some(iv) = &lc.index_var {
                    obj.insert(iv.clone(), json!(i));
                    obj.insert("ansible_index_var".into(), json!(iv));
                }
            }
            let label = match &lc.label {
                Some(l) => self.templar.render_str(l, &c).unwrap_or_else(|_| l.clone()),
                None => match item {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
            };
            let status = item_status(&r, kw);
            if no_log {
                self.events.redactor.add_value(&r);
            }
            self.emit(Event::ItemResult {
                host: host.to_string(),
                task_id,
                task: task.display_name(),
                item: if no_log { "None".into() } else { label },
                status,
                module: task.module_name().map(str::to_string),
                result: if no_log { censor(&r) } else { r.clone() },
            });
            results.push(r);
        }
        let any = |k: &str| results.iter().any(|r| flag(r, k));
        let mut agg = Map::new();
        agg.insert("changed".into(), json!(any("changed")));
        let failed = any("failed");
        if failed {
            agg.insert("failed".into(), json!(true));
            agg.insert("msg".into(), json!("One or more items failed"));
        } else {
            agg.insert("failed".into(), json!(false));
            agg.insert("msg".into(), json!("All items completed"));
        }
        if !results.is_empty() && results.iter().all(|r| flag(r, "skipped")) {
            agg.insert("skipped".into(), json!(true));
        }
        if results.is_empty() {
            agg.insert("skipped".into(), json!(true));
            agg.insert("skipped_reason".into(), json!("No items in the list"));
        }
        agg.insert("results".into(), Value::Array(results));
        let flow = if includes.is_empty() {
            Flow::Continue
        } else {
            Flow::Include(includes)
        };
        (Value::Object(agg), unreachable, flow)
    }

    /// Run the action, repeating while `until` does not hold (`retries`, `delay`).
    async fn until_loop(
        &self,
        pr: &PlayRun<'_>,
        task: &Task,
        kw: &Keywords,
        inh: &Inherit,
        host: &str,
        ctx: &mut VarMap,
    ) -> Attempt {
        // `retries` without `until` repeats until the task does not fail (as in Ansible).
        if kw.until.is_none() && kw.retries.is_none() {
            let a = self.attempt(pr, task, kw, inh, host, ctx).await;
            return self.post_process(task, kw, ctx, a);
        }
        let num = |v: &Option<Value>, default: f64| -> f64 {
            match v {
                Some(Value::Number(n)) => n.as_f64().unwrap_or(default),
                Some(Value::String(s)) => self
                    .templar
                    .render_str(s, ctx)
                    .ok()
                    .and_then(|r| r.trim().parse().ok())
                    .unwrap_or(default),
                _ => default,
            }
        };
        let retries = num(&kw.retries, 3.0).max(0.0) as u32;
        if retries == 0 {
            let a = self.attempt(pr, task, kw, inh, host, ctx).await;
            return self.post_process(task, kw, ctx, a);
        }
        let delay = num(&kw.delay, 5.0).max(0.0);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let a = self.attempt(pr, task, kw, inh, host, ctx).await;
            let mut a = self.post_process(task, kw, ctx, a);
            if let Some(obj) = a.result.as_object_mut() {
                obj.insert("attempts".into(), json!(attempt));
            }
            if a.unreachable || self.cancel.is_cancelled() {
                return a;
            }
            let mut c = ctx.clone();
            if let Some(r) = &kw.register {
                c.insert(r.clone(), a.result.clone());
            }
            if let Some(obj) = a.result.as_object() {
                for (k, v) in obj {
                    c.entry(k.clone()).or_insert(v.clone());
                }
            }
            let done = match &kw.until {
                None => !flag(&a.result, "failed"),
                Some(until) => match self.templar.eval_bool(until, &c) {
                    Ok(b) => b,
                    Err(e) => {
                        return Attempt::failed(format!(
                            "error in `until` condition `{until}`: {e}"
                        ));
                    }
                },
            };
            if done {
                return a;
            }
            if attempt > retries {
                // Ansible reports the retries (not the runs) once they are exhausted.
                if let Some(obj) = a.result.as_object_mut() {
                    obj.insert("failed".into(), json!(true));
                    obj.insert("attempts".into(), json!(retries));
                }
                return a;
            }
            self.emit(Event::Retry {
                host: host.to_string(),
                task: task.display_name(),
                attempt,
                retries,
            });
            self.sleep(Duration::from_secs_f64(delay)).await;
        }
    }

    /// `changed_when` / `failed_when`, evaluated with the result registered.
    fn post_process(&self, task: &Task, kw: &Keywords, ctx: &VarMap, mut a: Attempt) -> Attempt {
        if a.unreachable || (kw.changed_when.is_none() && kw.failed_when.is_none()) {
            return a;
        }
        if flag(&a.result, "skipped") {
            return a;
        }
        let mut c = ctx.clone();
        if let Some(r) = &kw.register {
            c.insert(r.clone(), a.result.clone());
        }
        let mut eval = |conds: &Vec<String>, key: &str| -> Result<(), String> {
            let mut all = true;
            for cond in conds {
                match self.templar.eval_bool(cond, &c) {
                    Ok(b) => all &= b,
                    Err(e) => return Err(format!("error in `{key}` condition `{cond}`: {e}")),
                }
            }
            if let Some(obj) = a.result.as_object_mut() {
                obj.insert(key.into(), json!(all));
            }
            if let Some(r) = &kw.register {
                c.insert(r.clone(), a.result.clone());
            }
            Ok(())
        };
        let mut error = None;
        if let Some(conds) = &kw.changed_when
            && let Err(e) = eval(conds, "changed")
        {
            error = Some(e);
        }
        if let Some(conds) = &kw.failed_when
            && let Err(e) = eval(conds, "failed")
        {
            error = Some(e);
        }
        if let Some(e) = error {
            return Attempt::ok(self.error_result(task, e));
        }
        if let Some(conds) = &kw.failed_when
            && !conds.is_empty()
            && let Some(obj) = a.result.as_object_mut()
        {
            let failed = obj.get("failed").cloned().unwrap_or(json!(false));
            obj.insert("failed_when_result".into(), failed);
        }
        a
    }

    /// One execution of the task's action on `host`.
    async fn attempt(
        &self,
        pr: &PlayRun<'_>,
        task: &Task,
        kw: &Keywords,
        inh: &Inherit,
        host: &str,
        ctx: &VarMap,
    ) -> Attempt {
        match &task.action {
            Action::Module { name, args } => {
                if super::actions::is_action(name) {
                    self.run_action(pr, task, kw, inh, host, name, args, ctx)
                        .await
                } else {
                    self.run_module(task, kw, inh, host, name, args, ctx).await
                }
            }
            Action::IncludeTasks { .. } | Action::IncludeRole { .. } => {
                match self.include_request(task, inh, ctx) {
                    Ok(req) => Attempt {
                        result: json!({"changed": false, "failed": false}),
                        unreachable: false,
                        flow: Flow::Include(vec![req]),
                    },
                    Err(msg) => Attempt::ok(self.error_result(task, msg)),
                }
            }
            Action::Block { .. } => Attempt::failed("a block is not a single task"),
        }
    }

    pub(crate) async fn sleep(&self, d: Duration) {
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = self.cancel.cancelled() => {}
        }
    }
}

fn item_status(r: &Value, kw: &Keywords) -> Status {
    if flag(r, "unreachable") {
        Status::Unreachable
    } else if flag(r, "failed") {
        if kw.ignore_errors == Some(true) {
            Status::Ignored
        } else {
            Status::Failed
        }
    } else if flag(r, "skipped") {
        Status::Skipped
    } else if flag(r, "changed") {
        Status::Changed
    } else {
        Status::Ok
    }
}

fn skipped(cond: &str) -> Value {
    // A literal `when: false` is reported as the boolean it was written as.
    let cond = match cond {
        "False" => json!(false),
        other => json!(other),
    };
    json!({
        "changed": false,
        "skipped": true,
        "skip_reason": "Conditional result was False",
        "false_condition": cond,
    })
}

fn censor(r: &Value) -> Value {
    let mut m = Map::new();
    m.insert("censored".into(), json!(CENSORED));
    for k in ["changed", "failed", "skipped"] {
        if let Some(v) = r.get(k) {
            m.insert(k.into(), v.clone());
        }
    }
    Value::Object(m)
}

/// `with_sequence: start=1 end=5 stride=1 format=x%d` or `count=3`.
fn sequence(v: &Value) -> Result<Vec<Value>, String> {
    let s = v
        .as_str()
        .ok_or("`with_sequence` expects `start=.. end=..`")?;
    let (mut start, mut end, mut stride, mut format) = (1i64, None, 1i64, None);
    for tok in s.split_whitespace() {
        let (k, v) = tok
            .split_once('=')
            .ok_or(format!("bad `with_sequence` part `{tok}`"))?;
        let num = || {
            v.parse::<i64>()
                .map_err(|_| format!("bad number `{v}` in `with_sequence`"))
        };
        match k {
            "start" => start = num()?,
            "end" => end = Some(num()?),
            "count" => end = Some(start + num()? - 1),
            "stride" => stride = num()?,
            "format" => format = Some(v.to_string()),
            _ => return Err(format!("unknown `with_sequence` option `{k}`")),
        }
    }
    let end = end.ok_or("`with_sequence` needs `end` or `count`")?;
    if stride == 0 {
        return Err("`with_sequence` stride cannot be 0".into());
    }
    let mut out = Vec::new();
    let mut i = start;
    while (stride > 0 && i <= end) || (stride < 0 && i >= end) {
        out.push(json!(match &format {
            Some(f) => f
                .replace("%d", &i.to_string())
                .replace("%02d", &format!("{i:02}")),
            None => i.to_string(),
        }));
        i += stride;
    }
    Ok(out)
}
