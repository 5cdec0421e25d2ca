//! Executor-side actions: tasks that act on the run itself rather than on a host (`debug`,
//! `assert`, `fail`, `set_fact`, `add_host`, `group_by`, `meta`, `pause`, `include_vars`,
//! `wait_for_connection`; the ones changing run state are in `state_actions`).

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::Executor;
use super::host_task::{Attempt, Flow, OnHost};
use crate::playbook::{Keywords, Task};
use crate::report::TaskResult;
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
        name: &str,
        raw: &Value,
        ctx: &VarMap,
    ) -> Attempt {
        let OnHost {
            task,
            kw,
            inh,
            host,
            ..
        } = t;
        // `assert: that` holds bare expressions; everything else renders as templates.
        let args = if name == "assert" || name == "debug" && raw.get("var").is_some() {
            raw.clone()
        } else {
            match self.templar.render_value(raw, ctx) {
                Ok(mut a) => {
                    crate::template::strip_omit(&mut a);
                    a
                }
                Err(e) => return Attempt::of(self.error_result(task, e.to_string())),
            }
        };
        if kw.no_log == Some(true) {
            self.events.redactor.add_value(&args);
        }
        let s = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
        match name {
            "debug" => self.debug(&args, ctx),
            "assert" => self.assert(&args, ctx, task),
            "fail" => {
                Attempt::failed(s("msg").unwrap_or_else(|| "Failed as requested from task".into()))
            }
            "set_fact" => self.set_fact(&args, kw, host, ctx),
            "add_host" => self.add_host(&args),
            "group_by" => self.group_by(&args, host),
            "meta" => meta(&s("_raw_params").unwrap_or_default()),
            "pause" => self.pause(&args).await,
            "include_vars" => self.include_vars(&args, task, inh, host),
            "wait_for_connection" => self.wait_for_connection(&args, host, kw, ctx).await,
            "async_status" => self.async_status(&args),
            other => Attempt::failed(format!("unknown action `{other}`")),
        }
    }

    /// `async_status: jid=...`: the result of an `async` task of this run. kinit runs async
    /// tasks to their end, so a known job is always `finished`.
    fn async_status(&self, args: &Value) -> Attempt {
        let Some(jid) = args.get("jid").map(|j| match j {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }) else {
            return Attempt::failed("`async_status` needs `jid`");
        };
        if args.get("mode").and_then(Value::as_str) == Some("cleanup") {
            self.jobs.lock().unwrap().remove(&jid);
            return ok(json!({"ansible_job_id": jid, "erased": jid}));
        }
        match self.jobs.lock().unwrap().get(&jid) {
            Some(result) => Attempt::of(result.clone()),
            None => Attempt::failed(format!("could not find job `{jid}`")),
        }
    }

    fn debug(&self, args: &Value, ctx: &VarMap) -> Attempt {
        let verbosity = args.get("verbosity").and_then(Value::as_u64).unwrap_or(0);
        if u64::from(self.opts.verbose) < verbosity {
            return ok(json!({"skipped": true, "skipped_reason": "Verbosity threshold not met."}));
        }
        if let Some(var) = args.get("var").and_then(Value::as_str) {
            let v = match self.templar.eval(var, ctx) {
                Ok(Value::Null) if !ctx.contains_key(var) => json!("VARIABLE IS NOT DEFINED!"),
                Ok(v) => v,
                Err(_) => json!("VARIABLE IS NOT DEFINED!"),
            };
            return ok(json!({ var: v }));
        }
        let msg = args.get("msg").cloned().unwrap_or(json!("Hello world!"));
        ok(json!({ "msg": msg }))
    }

    fn assert(&self, args: &Value, ctx: &VarMap, task: &Task) -> Attempt {
        let that: Vec<String> = match args.get("that") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(other) => vec![other.to_string()],
            None => Vec::new(),
        };
        let render = |k: &str| -> Option<Value> {
            args.get(k).map(|v| {
                self.templar
                    .render_value(v, ctx)
                    .unwrap_or_else(|_| v.clone())
            })
        };
        for cond in that {
            let expr = cond
                .trim()
                .strip_prefix("{{")
                .and_then(|c| c.strip_suffix("}}"))
                .unwrap_or(&cond)
                .trim()
                .to_string();
            match self.templar.eval_bool(&expr, ctx) {
                Ok(true) => {}
                Ok(false) => {
                    let msg = render("fail_msg")
                        .or_else(|| render("msg"))
                        .unwrap_or(json!("Assertion failed"));
                    let mut r = TaskResult::failed("")
                        .with("assertion", cond)
                        .with("evaluated_to", false);
                    r.msg = Some(msg);
                    return Attempt::of(r);
                }
                Err(e) => {
                    return Attempt::of(self.error_result(
                        task,
                        format!("the conditional check `{cond}` failed: {e}"),
                    ));
                }
            }
        }
        let msg = render("success_msg").unwrap_or(json!("All assertions passed"));
        ok(json!({ "msg": msg }))
    }

    fn set_fact(&self, args: &Value, kw: &Keywords, host: &str, ctx: &VarMap) -> Attempt {
        let mut facts = Map::new();
        if let Some(m) = args.as_object() {
            for (k, v) in m {
                if k == "cacheable" {
                    continue;
                }
                facts.insert(k.clone(), v.clone());
            }
        }
        let target = match (&kw.delegate_to, kw.delegate_facts) {
            (Some(d), Some(true)) => self
                .templar
                .render_str(d, ctx)
                .unwrap_or_else(|_| d.clone()),
            _ => host.to_string(),
        };
        self.with_state(&target, |s| crate::vars::overlay(&mut s.set_facts, &facts));
        ok(json!({ "ansible_facts": facts }))
    }

    async fn pause(&self, args: &Value) -> Attempt {
        let num = |k: &str| -> Option<f64> {
            match args.get(k)? {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            }
        };
        let secs = match (num("seconds"), num("minutes")) {
            (Some(s), _) => s,
            (None, Some(m)) => m * 60.0,
            (None, None) => {
                return Attempt::failed(
                    "`pause` without `seconds`/`minutes` waits for a keypress; kinit runs non-interactively",
                );
            }
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

fn meta(action: &str) -> Attempt {
    let flow = match action {
        "flush_handlers" => Flow::FlushHandlers,
        "end_play" => Flow::EndPlay,
        "end_host" => Flow::EndHost,
        "end_batch" => Flow::EndBatch,
        "clear_host_errors" => Flow::ClearHostErrors,
        _ => Flow::Continue,
    };
    Attempt {
        result: TaskResult::ok().with("msg", action),
        flow,
    }
}
