//! Loops: the items of `loop`/`with_*` (each form flattens its own way), and running a task
//! once per item with the loop variables set, `when` per item and one result per item.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::Executor;
use super::host_task::{Flow, OnHost, censor, flag, item_status, skipped};
use crate::playbook::LoopKind;
use crate::report::Event;
use crate::vars::VarMap;

impl Executor {
    pub(crate) fn loop_items(
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
        Ok(match &spec.kind {
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
            LoopKind::Lookup(name) => {
                // Ansible hands a `with_<lookup>` value to the lookup as its terms: a list is
                // the terms, anything else one term.
                let terms = match v {
                    Value::Array(a) => a,
                    other => vec![other],
                };
                let mut scope = ctx.clone();
                scope.insert("__kinit_with_terms".into(), Value::Array(terms));
                let call = format!("{{{{ query('{name}', *__kinit_with_terms) }}}}");
                match self.templar.render_value(&Value::String(call), &scope) {
                    Ok(Value::Array(items)) => items,
                    Ok(Value::Null) => Vec::new(),
                    Ok(other) => vec![other],
                    Err(e) => return Err(format!("error in `with_{name}`: {e}")),
                }
            }
        })
    }

    pub(crate) async fn run_items(
        &self,
        t: OnHost<'_>,
        ctx: &VarMap,
        conds: &[String],
        items: Vec<Value>,
    ) -> (Value, bool, Flow) {
        let OnHost {
            task,
            kw,
            host,
            task_id,
            ..
        } = t;
        let no_log = kw.no_log == Some(true);
        let lc = &kw.loop_control;
        let loop_var = lc.loop_var.clone().unwrap_or_else(|| "item".into());
        let n = items.len();
        let mut results = Vec::new();
        let mut includes = Vec::new();
        let mut unreachable = false;
        // Facts an item sets (`set_fact` in a loop) are seen by the items after it, as in
        // Ansible, so a loop can build up a list.
        let mut base = ctx.clone();
        for (i, item) in items.iter().enumerate() {
            // An unreachable host leaves the play: its remaining items are not tried (each
            // would only wait for the same connection to fail), as in Ansible.
            if self.cancel.is_cancelled() || (unreachable && kw.ignore_unreachable != Some(true)) {
                break;
            }
            if i > 0
                && let Some(p) = lc.pause
            {
                self.sleep(Duration::from_secs_f64(p)).await;
            }
            let mut c = base.clone();
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
                    let a = self.until_loop(t, &mut c).await;
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
            if task.module_name() == Some("set_fact")
                && kw.delegate_facts != Some(true)
                && !flag(&r, "failed")
                && let Some(facts) = r.get("ansible_facts").and_then(Value::as_object)
            {
                crate::vars::overlay(&mut base, facts);
            }
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
        if let Some(lost) = results.iter().rev().find(|r| flag(r, "unreachable")) {
            agg.insert("unreachable".into(), json!(true));
            agg.insert("msg".into(), lost.get("msg").cloned().unwrap_or(json!("")));
        } else if failed {
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
