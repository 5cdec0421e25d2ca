//! Loops: the items of `loop`/`with_*` (each form flattens its own way), and running a task
//! once per item with the loop variables set, `when` per item and one result per item.
//!
//! One file: computing the items and running the task per item share the loop variables'
//! rules (`loop_var`, `index_var`, `label`, `extended`).

use std::time::Duration;

use serde_json::{Value, json};

use super::Executor;
use super::host_task::{Failure, Flow, OnHost, censor, item_status, skipped};
use crate::playbook::LoopKind;
use crate::report::{Event, TaskResult};
use crate::vars::VarMap;

impl Executor {
    /// The loop variable's name: `item`, or `loop_var`, which may be a template
    /// (`"{{ name_var }}"`) rendered with the task's variables.
    pub(crate) fn loop_var_name(&self, lc: &crate::playbook::LoopControl, ctx: &VarMap) -> String {
        match &lc.loop_var {
            Some(v) if v.contains("{{") => self
                .templar
                .render_str(v, ctx)
                .unwrap_or_else(|_| v.clone()),
            Some(v) => v.clone(),
            None => "item".into(),
        }
    }

    /// `value` rendered leaf by leaf, leaving out each leaf that is undefined: ansible-core
    /// gives `first_found` its terms so when a `with_first_found` loop invokes it
    /// (`_recurse_terms(omit_undefined=True)` in plugins/lookup/first_found.py). A leaf that
    /// is only a variable holding a list or mapping (`files: "{{ files }}"`) is that value's
    /// leaves, as Ansible templates such a variable lazily, item by item.
    fn render_omitting_undefined(
        &self,
        value: &Value,
        ctx: &VarMap,
        depth: usize,
    ) -> Result<Option<Value>, String> {
        let nested = |v: &Value| self.render_omitting_undefined(v, ctx, depth + 1);
        Ok(Some(match value {
            Value::Array(a) => {
                let mut out = Vec::new();
                for x in a {
                    out.extend(nested(x)?);
                }
                Value::Array(out)
            }
            Value::Object(m) => {
                let mut out = serde_json::Map::new();
                for (k, x) in m {
                    if let Some(r) = nested(x)? {
                        out.insert(k.clone(), r);
                    }
                }
                Value::Object(out)
            }
            Value::String(s)
                if depth < MAX_TERM_DEPTH
                    && let Some(raw) = lone_variable(s)
                        .and_then(|name| ctx.get(name))
                        .filter(|v| v.is_array() || v.is_object()) =>
            {
                return nested(raw);
            }
            leaf => match self.templar.render_value(leaf, ctx) {
                Ok(r) => r,
                Err(crate::template::TemplateError::Undefined { .. }) => return Ok(None),
                Err(e) => return Err(e.to_string()),
            },
        }))
    }

    /// The items of a task's loop. `action` is the task's module: a `with_first_found` loop
    /// searches the folder its name points to, as in Ansible.
    pub(crate) fn loop_items(
        &self,
        spec: &crate::playbook::LoopSpec,
        ctx: &VarMap,
        action: &str,
    ) -> Result<Vec<Value>, String> {
        let first_found = matches!(&spec.kind, LoopKind::Lookup(n)
            if n.strip_prefix("ansible.builtin.").unwrap_or(n) == "first_found");
        let v = if first_found {
            self.render_omitting_undefined(&spec.value, ctx, 0)?
                .unwrap_or(Value::Null)
        } else {
            self.templar
                .render_value(&spec.value, ctx)
                .map_err(|e| e.to_string())?
        };
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
            // `with_list` hands its value to the `list` lookup as terms: one value that is not a
            // list is one item.
            LoopKind::List => match v {
                Value::Array(a) => a,
                Value::Null => Vec::new(),
                other => vec![other],
            },
            LoopKind::Loop => match v {
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
            // The dict lookup's terms: one dict, or a list of them (plugins/lookup/dict.py).
            LoopKind::Dict => {
                let terms = match v {
                    Value::Array(a) => a,
                    other => vec![other],
                };
                let mut items = Vec::new();
                for term in terms {
                    let Value::Object(m) = term else {
                        let shown = crate::template::pyrepr::to_str(
                            &minijinja::Value::from_serialize(&term),
                        )
                        .unwrap_or_else(|_| term.to_string());
                        let ty = match term {
                            Value::Array(_) => "list",
                            Value::String(_) => "str",
                            Value::Bool(_) => "bool",
                            Value::Number(n) if n.is_f64() => "float",
                            Value::Number(_) => "int",
                            _ => "NoneType",
                        };
                        return Err(crate::template::lookup_failed(
                            "dict",
                            &format!(
                                "the 'dict' lookup plugin expects a dictionary, got '{shown}' of \
                                 type <class '{ty}'>)"
                            ),
                        ));
                    };
                    items.extend(m.into_iter().map(|(k, v)| json!({"key": k, "value": v})));
                }
                items
            }
            // Upstream flattens the terms one level and numbers them
            // (plugins/lookup/indexed_items.py): anything but a list is one term.
            LoopKind::IndexedItems => {
                let terms = match v {
                    Value::Array(a) => a,
                    other => vec![other],
                };
                terms
                    .into_iter()
                    .flat_map(|x| match x {
                        Value::Array(inner) => inner,
                        other => vec![other],
                    })
                    .enumerate()
                    .map(|(i, x)| json!([i, x]))
                    .collect()
            }
            LoopKind::Sequence => {
                let term = match &v {
                    Value::String(t) => t.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => {
                        return Err(
                            "`with_sequence` expects `start=.. end=..` or `[start-]end[/stride]`"
                                .into(),
                        );
                    }
                };
                crate::template::sequence(&[term], &[])
                    .map_err(|e| crate::template::lookup_failed("sequence", &e))?
                    .into_iter()
                    .map(Value::String)
                    .collect()
            }
            LoopKind::Lookup(name) => {
                // Ansible hands a `with_<lookup>` value to the lookup as its terms: a list is
                // the terms, anything else one term.
                let terms = match v {
                    Value::Array(a) => a,
                    other => vec![other],
                };
                let mut scope = ctx.clone();
                scope.insert("__kinit_with_terms".into(), Value::Array(terms));
                if first_found {
                    // `plugins/lookup/first_found.py`: the first of `template`, `var`, `file`
                    // in the action's name picks the folder; `files` otherwise.
                    let action = spec.action.as_deref().unwrap_or(action);
                    let sub = ["template", "var", "file"]
                        .into_iter()
                        .find(|s| action.contains(s))
                        .unwrap_or("file");
                    scope.insert(
                        crate::template::WITH_SUBDIR_VAR.into(),
                        Value::String(format!("{sub}s")),
                    );
                }
                let call = format!("{{{{ query('{name}', *__kinit_with_terms) }}}}");
                match self.templar.render_value(&Value::String(call), &scope) {
                    Ok(Value::Array(items)) => items,
                    Ok(Value::Null) => Vec::new(),
                    Ok(other) => vec![other],
                    Err(e) => return Err(e.to_string()),
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
    ) -> (TaskResult, Flow) {
        let OnHost {
            task,
            kw,
            host,
            task_id,
            ..
        } = t;
        let lc = &kw.loop_control;
        let loop_var = self.loop_var_name(lc, ctx);
        let n = items.len();
        let mut results = Vec::new();
        let mut includes = Vec::new();
        let mut unreachable = false;
        let mut broken = None;
        // Facts an item sets (`set_fact` in a loop) are seen by the items after it, as in
        // Ansible, so a loop can build up a list.
        let mut base = ctx.clone();
        for (i, item) in items.iter().enumerate() {
            // An unreachable host leaves the play: its remaining items are not tried (each
            // would only wait for the same connection to fail), as in Ansible.
            if self.stopping() || (unreachable && kw.ignore_unreachable != Some(true)) {
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
                c.insert("ansible_index_var".into(), json!(iv));
            }
            if lc.extended {
                // As ansible-core's `TaskExecutor._run_loop`: `previtem`/`nextitem` only where
                // there is one.
                let mut info = json!({"index": i + 1, "index0": i, "first": i == 0,
                    "last": i + 1 == n, "length": n, "revindex": n - i, "revindex0": n - i - 1,
                    "allitems": items});
                if lc.without_allitems {
                    info.as_object_mut().map(|o| o.remove("allitems"));
                }
                if let Some(next) = items.get(i + 1) {
                    info["nextitem"] = next.clone();
                }
                if let Some(prev) = i.checked_sub(1).and_then(|p| items.get(p)) {
                    info["previtem"] = prev.clone();
                }
                c.insert("ansible_loop".into(), info);
            }
            let item_kw = match kw.templated.is_empty() {
                true => Ok(None),
                false => self.render_host_keywords(kw, &c).map(Some),
            };
            // `no_log` and `ignore_errors` as this item rendered them.
            let ikw = match &item_kw {
                Ok(Some(k)) => k,
                _ => kw,
            };
            let no_log = ikw.no_log == Some(true);
            let mut r = match (self.check_when(conds, &c), &item_kw) {
                (Err(msg), _) => self.error_result(task, msg),
                (Ok(Some(cond)), _) => skipped(&cond),
                (Ok(None), Err(msg)) => self.error_result(task, msg.clone()),
                (Ok(None), Ok(_)) => {
                    let t = OnHost { kw: ikw, ..t };
                    let a = self.until_loop(t, &mut c).await;
                    unreachable |= a.result.unreachable;
                    if let Flow::Include(reqs) = a.flow {
                        includes.extend(reqs);
                    }
                    a.result
                }
            };
            r.set(&loop_var, item.clone());
            r.set("ansible_loop_var", json!(loop_var));
            if let Some(iv) = &lc.index_var {
                r.set(iv, json!(i));
                r.set("ansible_index_var", json!(iv));
            }
            // As ansible-core's `TaskExecutor._run_loop`: the item's result is registered
            // before its label is rendered (a label may read it) and stays registered for the
            // items after it; a label reading something undefined fails the item.
            if let Some(reg) = &kw.register {
                let so_far = r.to_value();
                c.insert(reg.clone(), so_far.clone());
                base.insert(reg.clone(), so_far);
            }
            let label = match &lc.label {
                Some(l) => match self.templar.render_str(l, &c) {
                    Ok(s) => s,
                    Err(e @ crate::template::TemplateError::Undefined { .. }) => {
                        r.failed = Some(true);
                        r.msg = Some(json!(format!("Failed to template loop_control.label: {e}")));
                        l.clone()
                    }
                    Err(_) => l.clone(),
                },
                // As ansible-core's callback prints it: Python's `str()` of the item
                // (`{'name': 'x'}`, `True`).
                None => match item {
                    Value::String(s) => s.clone(),
                    other => crate::template::py_str(other),
                },
            };
            if task.module_name() == Some("set_fact")
                && kw.delegate_facts != Some(true)
                && !r.is_failed()
                && let Some(facts) = r.fields.get("ansible_facts").and_then(Value::as_object)
            {
                crate::vars::overlay(&mut base, facts);
            }
            let status = item_status(&r, ikw);
            if no_log {
                self.events.redactor.add_task_data(&r.to_value());
            }
            self.emit(Event::ItemResult {
                host: host.to_string(),
                task_id,
                task: t.title.to_string(),
                // ansible-core's callback label for a censored item.
                item: if no_log {
                    "(censored due to no_log)".into()
                } else {
                    label
                },
                status,
                module: task.module_name().map(str::to_string),
                result: if no_log { censor(&r) } else { r.clone() },
            });
            results.push(r);
            // As ansible-core's `TaskExecutor._run_loop`: `break_when` is checked after the
            // item's result is registered and shown; a condition that cannot be evaluated
            // fails the task.
            if !lc.break_when.is_empty() {
                let stop = lc.break_when.iter().try_fold(true, |all, cond| {
                    Ok::<_, Failure>(all && self.condition("break_when", cond, &c)?)
                });
                match stop {
                    Ok(false) => {}
                    Ok(true) => break,
                    Err(f) => {
                        broken = Some(self.error_result(task, f));
                        break;
                    }
                }
            }
        }
        let mut agg = TaskResult {
            changed: results.iter().any(|r| r.changed),
            // A looped include: the items name what they included.
            included: results.iter().find_map(|r| r.included.clone()),
            ..TaskResult::default()
        };
        // The keys ansible-core's `TaskExecutor.run` sets: `skipped` always (true when every
        // item was skipped), `failed` only when an item failed, and no `msg` for an empty
        // loop.
        let all_skipped = results.iter().all(TaskResult::is_skipped);
        agg.skipped = Some(all_skipped);
        if let Some(lost) = results.iter().rev().find(|r| r.unreachable) {
            agg.unreachable = true;
            agg.msg = Some(lost.msg.clone().unwrap_or(json!("")));
        } else if let Some(e) = broken {
            agg.failed = e.failed;
            agg.msg = e.msg;
            agg.origin = e.origin;
            agg.fields.extend(e.fields);
        } else if results.iter().any(TaskResult::is_failed) {
            agg.failed = Some(true);
            agg.msg = Some(json!("One or more items failed"));
        } else if results.is_empty() {
            agg.set("skipped_reason", json!("No items in the list"));
        } else if all_skipped {
            agg.msg = Some(json!("All items skipped"));
        } else {
            agg.msg = Some(json!("All items completed"));
        }
        agg.set(
            "results",
            Value::Array(results.iter().map(TaskResult::to_value).collect()),
        );
        let flow = if includes.is_empty() {
            Flow::Continue
        } else {
            Flow::Include(includes)
        };
        (agg, flow)
    }
}

/// How deep `first_found` terms that are variables holding terms are followed (a variable
/// that holds itself stops here and is templated as usual).
const MAX_TERM_DEPTH: usize = 16;

/// `name` when `s` is `{{ name }}` and nothing else.
fn lone_variable(s: &str) -> Option<&str> {
    let inner = s.trim().strip_prefix("{{")?.strip_suffix("}}")?.trim();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    (!inner.is_empty()
        && inner.chars().all(ident)
        && !inner.starts_with(|c: char| c.is_ascii_digit()))
    .then_some(inner)
}
