//! Loops: the items of `loop`/`with_*` (each form flattens its own way), and running a task
//! once per item with the loop variables set, `when` per item and one result per item.
//!
//! One file: computing the items and running the task per item share the loop variables'
//! rules (`loop_var`, `index_var`, `label`, `extended`); `with_sequence` parsing is the rest.

use std::time::Duration;

use serde_json::{Value, json};

use super::Executor;
use super::host_task::{Flow, OnHost, censor, item_status, skipped};
use crate::playbook::LoopKind;
use crate::report::{Event, TaskResult};
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
            LoopKind::Sequence => {
                sequence(&v).map_err(|e| crate::template::lookup_failed("sequence", &e))?
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
            let label = match &lc.label {
                Some(l) => self.templar.render_str(l, &c).unwrap_or_else(|_| l.clone()),
                None => match item {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
            };
            if task.module_name() == Some("set_fact")
                && kw.delegate_facts != Some(true)
                && !r.is_failed()
                && let Some(facts) = r.fields.get("ansible_facts").and_then(Value::as_object)
            {
                crate::vars::overlay(&mut base, facts);
            }
            let status = item_status(&r, kw);
            if no_log {
                self.events.redactor.add_task_data(&r.to_value());
            }
            self.emit(Event::ItemResult {
                host: host.to_string(),
                task_id,
                task: t.inh.title(task),
                item: if no_log { "None".into() } else { label },
                status,
                module: task.module_name().map(str::to_string),
                result: if no_log { censor(&r) } else { r.clone() },
            });
            results.push(r);
        }
        let mut agg = TaskResult {
            changed: results.iter().any(|r| r.changed),
            ..TaskResult::default()
        };
        if let Some(lost) = results.iter().rev().find(|r| r.unreachable) {
            agg.unreachable = true;
            agg.msg = Some(lost.msg.clone().unwrap_or(json!("")));
        } else if results.iter().any(TaskResult::is_failed) {
            agg.failed = Some(true);
            agg.msg = Some(json!("One or more items failed"));
        } else {
            agg.failed = Some(false);
            agg.msg = Some(json!("All items completed"));
        }
        if results.iter().all(TaskResult::is_skipped) {
            agg.skipped = Some(true);
        }
        if results.is_empty() {
            agg.set("skipped_reason", json!("No items in the list"));
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

/// `with_sequence: start=1 end=5 stride=1 format=x%d` or `count=3`.
/// `with_sequence`: `start=1 end=10 stride=2 format=host%02d` (or `count=`), or the
/// shortcut `[start-]end[/stride][:format]` (`4`, `2-6/2`, `0x0a-0x0f:%x`), as Ansible's
/// `sequence` lookup; numbers may be decimal, hex (`0x`) or octal (`0o`/`0`).
fn sequence(v: &Value) -> Result<Vec<Value>, String> {
    let s = match v {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => {
            return Err(
                "`with_sequence` expects `start=.. end=..` or `[start-]end[/stride]`".into(),
            );
        }
    };
    let int = |field: &str, t: &str| -> Result<i64, String> {
        let t = t.trim();
        let (neg, t) = match t.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, t),
        };
        let n = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            i64::from_str_radix(h, 16)
        } else if let Some(o) = t.strip_prefix("0o") {
            i64::from_str_radix(o, 8)
        } else if t.len() > 1 && t.starts_with('0') {
            i64::from_str_radix(&t[1..], 8)
        } else {
            t.parse::<i64>()
        }
        // Upstream's option check (`set_option` of an `integer` option).
        .map_err(|_| {
            format!(
                "Config '{field}' for 'sequence' lookup plugin from 'Direct' has an invalid \
                 value: Invalid value provided for 'integer': '{t}'"
            )
        })?;
        Ok(if neg { -n } else { n })
    };
    let (mut start, mut end, mut count, mut stride, mut format) = (1i64, None, None, 1i64, None);
    let mut words = s.split_whitespace().peekable();
    if let Some(first) = words.peek().filter(|w| !w.contains('=')) {
        // The shortcut form.
        let (range, fmt) = match first.split_once(':') {
            Some((r, f)) => (r, Some(f.to_string())),
            None => (*first, None),
        };
        let (range, step) = match range.split_once('/') {
            Some((r, st)) => (r, Some(int("stride", st)?)),
            None => (range, None),
        };
        match range.rsplit_once('-').filter(|(a, _)| !a.is_empty()) {
            Some((a, b)) => {
                start = int("start", a)?;
                end = Some(int("end", b)?);
            }
            None => end = Some(int("end", range)?),
        }
        if let Some(st) = step {
            stride = st;
        }
        format = fmt;
        words.next();
    }
    for tok in words {
        let (k, v) = tok
            .split_once('=')
            .ok_or(format!("bad `with_sequence` part `{tok}`"))?;
        match k {
            "start" => start = int("start", v)?,
            "end" => end = Some(int("end", v)?),
            "count" => count = Some(int("count", v)?),
            "stride" => stride = int("stride", v)?,
            "format" => format = Some(v.to_string()),
            // Upstream lists the unknown names as a Python list.
            _ => {
                return Err(format!(
                    "unrecognized arguments to with_sequence: ['{}']",
                    k.replace('\'', "\\'")
                ));
            }
        }
    }
    // Upstream's `sanity_check`, in its order and words.
    if count.is_none() && end.is_none() {
        return Err("must specify count or end in with_sequence".into());
    }
    if let Some(c) = count {
        if end.is_some() {
            return Err("can't specify both count and end in with_sequence".into());
        }
        if c == 0 {
            return Ok(Vec::new());
        }
        // Ansible's conversion, exactly (sequence.py): end = start + count * stride - 1.
        end = Some(start + c * stride - 1);
    }
    let end = end.unwrap_or(start);
    if stride > 0 && end < start {
        return Err("to count backwards make stride negative".into());
    }
    if stride < 0 && end > start {
        return Err("to count forward don't make stride negative".into());
    }
    if stride == 0 {
        return Ok(Vec::new());
    }
    if let Some(f) = &format
        && f.matches('%').count() != 1
    {
        return Err(format!("bad formatting string: {f}"));
    }
    let mut out = Vec::new();
    let mut i = start;
    while (stride > 0 && i <= end) || (stride < 0 && i >= end) {
        out.push(json!(match &format {
            Some(f) => printf_int(f, i),
            None => i.to_string(),
        }));
        i += stride;
    }
    Ok(out)
}

/// Python's `format % n` for the integer conversions sequence formats use: `%d`, `%i`,
/// `%x`, `%X`, `%o`, `%s`, with an optional `0` flag and width; `%%` is a percent sign.
fn printf_int(f: &str, n: i64) -> String {
    let mut out = String::new();
    let mut chars = f.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = chars.peek() {
            if d.is_ascii_digit() {
                spec.push(d);
                chars.next();
            } else {
                break;
            }
        }
        let zero = spec.starts_with('0');
        let width: usize = spec.parse().unwrap_or(0);
        let body = match chars.next() {
            Some('d' | 'i' | 's') => n.to_string(),
            Some('x') => format!("{n:x}"),
            Some('X') => format!("{n:X}"),
            Some('o') => format!("{n:o}"),
            Some('%') => {
                out.push('%');
                continue;
            }
            Some(other) => {
                out.push('%');
                out.push_str(&spec);
                out.push(other);
                continue;
            }
            None => {
                out.push('%');
                out.push_str(&spec);
                continue;
            }
        };
        if zero {
            out.push_str(&format!("{body:0>width$}"));
        } else {
            out.push_str(&format!("{body:>width$}"));
        }
    }
    out
}
