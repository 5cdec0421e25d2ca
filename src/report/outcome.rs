//! `TaskResult`: what one task (or one loop item) returned, with the fields Ansible gives a
//! meaning typed (`changed`, `failed`, `skipped`, `unreachable`, `msg`) and everything else a
//! module returned (`rc`, `stdout`, `results`, facts...) kept as it came. It becomes a JSON
//! value only where something reads it as one: `register`, the templates, the event log.
//!
//! The value form has exactly the keys Ansible's has: `changed` always, `failed` except on
//! skipped and unreachable results, `skipped` and `unreachable` only when they mean something.
//! The event log carries that form, and reading the log back yields the same `TaskResult`,
//! less `origin`: where kinit found an error of its own, which only the live output shows.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskResult {
    pub changed: bool,
    /// `None` when the result has no `failed` key (skipped and unreachable results).
    pub failed: Option<bool>,
    /// `None` when the result has no `skipped` key.
    pub skipped: Option<bool>,
    pub unreachable: bool,
    /// Usually a string; `debug: msg=` and some modules return any value.
    pub msg: Option<Value>,
    /// Every other key, in the order the module returned them.
    pub fields: Map<String, Value>,
    /// For an error kinit raised preparing the task (a template, a condition, a loop): the
    /// task's file:line and what was being templated, shown under the message as
    /// ansible-playbook shows its `Origin:`. Not part of the value form: Ansible registers no
    /// such key.
    pub origin: Option<String>,
    /// For an `include_tasks`/`include_role` that ran: the file it included (or the role),
    /// which output shows as ansible-playbook's `included: <file> for <host>` line. Not part
    /// of the value form either.
    pub included: Option<String>,
    /// Shown whole at any verbosity, as ansible-core's `_ansible_verbose_always` asks (an
    /// `assert` that is not `quiet`). Not part of the value form.
    pub verbose_always: bool,
}

impl TaskResult {
    /// Mask the known secrets inside its message and fields (see [`super::redact::Redactor::apply_value`]).
    pub fn redact(&mut self, redactor: &super::redact::Redactor) {
        if let Some(m) = self.msg.as_mut() {
            redactor.apply_value(m);
        }
        for v in self.fields.values_mut() {
            redactor.apply_value(v);
        }
    }

    /// Did nothing, and did not fail.
    pub fn ok() -> Self {
        Self {
            failed: Some(false),
            ..Self::default()
        }
    }

    pub fn failed(msg: impl Into<String>) -> Self {
        Self {
            failed: Some(true),
            msg: Some(Value::String(msg.into())),
            ..Self::default()
        }
    }

    pub fn unreachable(msg: impl Into<String>) -> Self {
        Self {
            unreachable: true,
            msg: Some(Value::String(msg.into())),
            ..Self::default()
        }
    }

    /// An `ok()` with `fields`.
    pub fn ok_with(fields: Map<String, Value>) -> Self {
        Self {
            fields,
            ..Self::ok()
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.set(key, value.into());
        self
    }

    /// Whether the task failed. A result with `failed_when_result` is failed by that value, not
    /// by `failed`, as ansible-core's `TaskResult.is_failed`: a task whose `until` ran out of
    /// retries has `failed: true`, but its `failed_when` had the last word.
    pub fn is_failed(&self) -> bool {
        match self.fields.get("failed_when_result") {
            Some(Value::Bool(b)) => *b,
            // An error while evaluating `failed_when` (its text) counts as a failure.
            Some(Value::String(s)) => !s.is_empty(),
            Some(_) | None => self.failed == Some(true),
        }
    }

    pub fn is_skipped(&self) -> bool {
        self.skipped == Some(true)
    }

    /// The message when it is a string.
    pub fn msg_str(&self) -> Option<&str> {
        self.msg.as_ref().and_then(Value::as_str)
    }

    /// Any key of the value form, typed ones included.
    pub fn get(&self, key: &str) -> Option<Value> {
        match key {
            "changed" => Some(Value::Bool(self.changed)),
            "failed" => self.failed.map(Value::Bool),
            "skipped" => self.skipped.map(Value::Bool),
            "unreachable" => self.unreachable.then_some(Value::Bool(true)),
            "msg" => self.msg.clone(),
            _ => self.fields.get(key).cloned(),
        }
    }

    /// A string field other than `msg` (`stdout`, `stderr`, `cmd`...).
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    /// A command's exit code.
    pub fn rc(&self) -> Option<i64> {
        self.fields.get("rc").and_then(Value::as_i64)
    }

    /// Set any key of the value form; the typed ones are parsed as Ansible reads them (a
    /// `changed` that is not a boolean counts as false).
    pub fn set(&mut self, key: &str, value: Value) {
        match key {
            "changed" => self.changed = value.as_bool().unwrap_or(false),
            "failed" => self.failed = Some(value.as_bool().unwrap_or(false)),
            "skipped" => self.skipped = Some(value.as_bool().unwrap_or(false)),
            "unreachable" => self.unreachable = value.as_bool().unwrap_or(false),
            "msg" => self.msg = Some(value),
            _ => {
                self.fields.insert(key.to_string(), value);
            }
        }
    }

    /// The value form (what `register` stores and templates read).
    pub fn to_value(&self) -> Value {
        let mut m = self.fields.clone();
        m.insert("changed".into(), Value::Bool(self.changed));
        if let Some(f) = self.failed {
            m.insert("failed".into(), Value::Bool(f));
        }
        if let Some(s) = self.skipped {
            m.insert("skipped".into(), Value::Bool(s));
        }
        if self.unreachable {
            m.insert("unreachable".into(), Value::Bool(true));
        }
        if let Some(msg) = &self.msg {
            m.insert("msg".into(), msg.clone());
        }
        Value::Object(m)
    }

    /// What `register` keeps once the task is done: the value form without the module's
    /// top-level `invocation` (ansible-core's strategy drops it; loop items keep theirs).
    pub fn registered(&self) -> Value {
        let mut v = self.to_value();
        if let Value::Object(m) = &mut v {
            m.remove("invocation");
        }
        v
    }

    /// Read a value form back (a result an earlier task registered, a line of the event log).
    /// A value that is not a mapping becomes the `msg` of an ok result.
    pub fn from_value(v: Value) -> Self {
        let Value::Object(map) = v else {
            return Self {
                msg: Some(v),
                ..Self::ok()
            };
        };
        let mut r = Self::default();
        for (k, v) in map {
            r.set(&k, v);
        }
        r
    }
}

impl Serialize for TaskResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for TaskResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::from_value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_value_form_has_the_keys_ansible_shows_and_reads_back_the_same() {
        let ok = TaskResult::ok().with("rc", 0).with("stdout", "hi");
        assert_eq!(
            ok.to_value(),
            json!({"rc": 0, "stdout": "hi", "changed": false, "failed": false})
        );
        let skipped = TaskResult {
            skipped: Some(true),
            ..TaskResult::default()
        };
        assert_eq!(
            skipped.to_value(),
            json!({"changed": false, "skipped": true})
        );
        let lost = TaskResult::unreachable("refused");
        assert_eq!(
            lost.to_value(),
            json!({"changed": false, "unreachable": true, "msg": "refused"})
        );
        for r in [ok, skipped, lost, TaskResult::failed("boom").with("rc", 2)] {
            let text = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<TaskResult>(&text).unwrap(), r);
        }
        assert_eq!(TaskResult::failed("x").rc(), None);
        assert_eq!(TaskResult::ok().with("rc", 3).rc(), Some(3));
    }
}
