//! `until`/`retries`/`delay` (with Ansible's count of attempts) and `changed_when`/
//! `failed_when`, both evaluated with the task's result registered.

use std::time::Duration;

use serde_json::{Value, json};

use super::Executor;
use super::host_task::{Attempt, Failure, NO_TRACEBACK, OnHost};
use crate::playbook::{Keywords, Task};
use crate::report::Event;
use crate::vars::VarMap;

impl Executor {
    /// Run the action, repeating while `until` does not hold (`retries`, `delay`).
    pub(crate) async fn until_loop(&self, t: OnHost<'_>, ctx: &mut VarMap) -> Attempt {
        let OnHost { task, kw, host, .. } = t;
        // `retries` without `until` repeats until the task does not fail (as in Ansible).
        // Render mode answers with stand-ins: repeating them would only wait.
        if kw.until.is_none() && kw.retries.is_none() || self.opts.render.is_some() {
            let a = self.attempt(t, ctx).await;
            return self.post_process(task, kw, ctx, a);
        }
        // A value that is not a number is the task's error, as in Ansible ("the field
        // 'retries' has an invalid value"), never a silent default.
        let num = |field: &str, v: &Option<Value>, default: f64, whole: bool| {
            let text = match v {
                None | Some(Value::Null) => return Ok(default),
                Some(Value::Number(n)) => return Ok(n.as_f64().unwrap_or(default)),
                Some(Value::String(s)) => self
                    .templar
                    .render_str(s, ctx)
                    .map_err(|e| format!("`{field}`: {e}"))?,
                Some(other) => other.to_string(),
            };
            let t = text.trim();
            let parsed = if whole {
                t.parse::<i64>().ok().map(|n| n as f64)
            } else {
                t.parse::<f64>().ok().filter(|f| f.is_finite())
            };
            parsed.ok_or_else(|| {
                format!(
                    "the field `{field}` has an invalid value (`{t}`): expected {}",
                    if whole {
                        "a whole number"
                    } else {
                        "a number of seconds"
                    }
                )
            })
        };
        let (retries, delay) = match (
            num("retries", &kw.retries, 3.0, true),
            num("delay", &kw.delay, 5.0, false),
        ) {
            (Ok(r), Ok(d)) => (r.clamp(0.0, u32::MAX as f64) as u32, d.max(0.0)),
            (Err(e), _) | (_, Err(e)) => return Attempt::failed(e),
        };
        if retries == 0 {
            let a = self.attempt(t, ctx).await;
            return self.post_process(task, kw, ctx, a);
        }
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut a = self.attempt(t, ctx).await;
            // Set before `changed_when`/`failed_when` so they can read it, as in
            // ansible-core's TaskExecutor ("make attempts available early").
            a.result.set("attempts", json!(attempt));
            let mut a = self.post_process(task, kw, ctx, a);
            if a.result.unreachable || self.cancel.is_cancelled() {
                return a;
            }
            let mut c = ctx.clone();
            let registered = a.result.to_value();
            if let Value::Object(obj) = &registered {
                for (k, v) in obj {
                    c.entry(k.clone()).or_insert(v.clone());
                }
            }
            if let Some(r) = &kw.register {
                c.insert(r.clone(), registered);
            }
            let done = match &kw.until {
                None => !a.result.is_failed(),
                Some(until) => match self.condition("until", until, &c) {
                    Ok(b) => b,
                    Err(failure) => {
                        return Attempt::of(self.error_result(task, failure));
                    }
                },
            };
            if done {
                return a;
            }
            if attempt > retries {
                // Ansible reports the retries (not the runs) once they are exhausted.
                a.result.failed = Some(true);
                a.result.set("attempts", json!(retries));
                normalize_failure(&mut a.result);
                return a;
            }
            self.emit(Event::Retry {
                host: host.to_string(),
                task: t.title.to_string(),
                attempt,
                retries,
            });
            self.sleep(Duration::from_secs_f64(delay)).await;
        }
    }

    /// `changed_when` / `failed_when`, evaluated with the result registered.
    fn post_process(&self, task: &Task, kw: &Keywords, ctx: &VarMap, mut a: Attempt) -> Attempt {
        normalize_failure(&mut a.result);
        if a.result.unreachable || (kw.changed_when.is_none() && kw.failed_when.is_none()) {
            return a;
        }
        // Render mode: the result is a stand-in (or a rendered file), not a host's answer, so
        // conditions on that answer say nothing (see `render`).
        if self.opts.render.is_some() {
            return a;
        }
        if a.result.is_skipped() {
            return a;
        }
        let mut c = ctx.clone();
        if let Some(r) = &kw.register {
            c.insert(r.clone(), a.result.to_value());
        }
        let mut eval = |conds: &Vec<String>, key: &str| -> Result<(), Failure> {
            let mut all = true;
            for cond in conds {
                all &= self.condition(&format!("{key}_when"), cond, &c)?;
            }
            a.result.set(key, json!(all));
            if let Some(r) = &kw.register {
                c.insert(r.clone(), a.result.to_value());
            }
            Ok(())
        };
        let mut error = None;
        if let Some(conds) = &kw.changed_when
            && let Err(e) = eval(conds, "changed")
        {
            error = Some(("changed", e));
        }
        if error.is_none()
            && let Some(conds) = &kw.failed_when
            && let Err(e) = eval(conds, "failed")
        {
            error = Some(("failed", e));
        }
        if let Some((key, e)) = error {
            // As ansible-core's TaskExecutor: the module's own result stays (its `stdout`,
            // `rc`...), failed, with the error under `<key>_when_result`. The error is the
            // message too when the module gave none, so the output says what went wrong.
            a.result.set(&format!("{key}_when_result"), json!(e.reason));
            let err = self.error_result(task, e);
            a.result.failed = Some(true);
            a.result.origin = err.origin;
            if a.result.msg.is_none() {
                a.result.msg = err.msg;
            }
            normalize_failure(&mut a.result);
            return a;
        }
        if let Some(conds) = &kw.failed_when
            && !conds.is_empty()
        {
            let failed = a.result.is_failed();
            a.result.set("failed_when_result", json!(failed));
            if !failed && let Some(e) = a.result.fields.shift_remove("exception") {
                a.result.set("failed_when_suppressed_exception", e);
            }
        }
        // A result `failed_when` made a failure is normalized too, as ansible-core does
        // after its conditions.
        normalize_failure(&mut a.result);
        a
    }
}

/// A failed result gets an `exception` if it has none, as ansible-core 2.19 normalizes every
/// result that failed (`AnsibleResultCapturedError.normalize_result_exception`), so
/// `result.exception is defined` tells a failure apart the same way.
fn normalize_failure(result: &mut crate::report::TaskResult) {
    if result.failed == Some(true) && !result.fields.contains_key("exception") {
        result.set("exception", json!(NO_TRACEBACK));
    }
}
