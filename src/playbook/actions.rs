//! The executor's own actions (tasks that act on the run rather than on a host) as the
//! loader resolves them: one enum, each variant with its typed arguments, parsed and checked
//! when the playbook loads. Argument values may still hold templates; the executor renders
//! them when the task runs (`exec::actions`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why an executor action's arguments were refused at load time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionArgsError {
    /// Unknown or mistyped arguments, worded as for modules.
    #[error("{0}")]
    Args(String),
    #[error("unknown meta action `{name}`{hint}")]
    UnknownMeta { name: String, hint: String },
    #[error("`assert` needs `that`")]
    AssertWithoutThat,
}

/// An executor action with its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecAction {
    Debug(DebugArgs),
    Assert(AssertArgs),
    Fail(FailArgs),
    /// The facts to set, and `cacheable` (a template): whether they are facts too, kept in
    /// the fact cache.
    SetFact {
        facts: Map<String, Value>,
        cacheable: Option<Value>,
    },
    /// `name`/`hostname`/`host`, `groups`/`group`/`groupname`, and the new host's variables.
    AddHost(Map<String, Value>),
    GroupBy(GroupByArgs),
    Meta(Meta),
    Pause(PauseArgs),
    IncludeVars(Box<IncludeVarsArgs>),
    WaitForConnection(WaitArgs),
    AsyncStatus(AsyncStatusArgs),
    ValidateArgumentSpec(ValidateArgs),
    SetStats(SetStatsArgs),
}

/// Every executor action, by short name.
pub const NAMES: &[&str] = &[
    "debug",
    "assert",
    "fail",
    "set_fact",
    "add_host",
    "group_by",
    "meta",
    "pause",
    "include_vars",
    "wait_for_connection",
    "async_status",
    "validate_argument_spec",
    "set_stats",
];

pub fn is_action(name: &str) -> bool {
    NAMES.contains(&name)
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebugArgs {
    pub msg: Option<Value>,
    /// A variable name or expression, evaluated (never rendered as a template).
    pub var: Option<String>,
    pub verbosity: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssertArgs {
    /// Bare expressions (a `{{ }}` around one is taken off).
    #[serde(deserialize_with = "one_or_many_exprs")]
    pub that: Vec<String>,
    pub msg: Option<Value>,
    pub fail_msg: Option<Value>,
    pub success_msg: Option<Value>,
    pub quiet: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailArgs {
    pub msg: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupByArgs {
    pub key: Option<Value>,
    pub parents: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseArgs {
    pub seconds: Option<Value>,
    pub minutes: Option<Value>,
    pub prompt: Option<Value>,
    pub echo: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncludeVarsArgs {
    /// The file, free-form (`include_vars: vars/main.yml`).
    #[serde(rename = "_raw_params")]
    pub raw_params: Option<Value>,
    pub file: Option<Value>,
    /// Put the variables under this one name.
    pub name: Option<Value>,
    /// Load every variables file of this folder (and below), in sorted order.
    pub dir: Option<Value>,
    /// How many folder levels `dir` reads (1: the folder only); 0 (the default): all.
    pub depth: Option<Value>,
    /// Only files whose name this regular expression finds.
    pub files_matching: Option<Value>,
    /// File names (regular expressions, matched at the end) to leave out.
    pub ignore_files: Option<Value>,
    /// File extensions a `dir` file must have (default `yaml`, `yml`, `json`).
    pub extensions: Option<Value>,
    /// Skip files with other extensions instead of failing on them.
    pub ignore_unknown_extensions: Option<Value>,
    /// `merge`: dicts loaded merge into the variables of the same name the task sees;
    /// `replace` (the default): they replace them.
    pub hash_behaviour: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    pub timeout: Option<Value>,
    pub delay: Option<Value>,
    pub sleep: Option<Value>,
    pub connect_timeout: Option<Value>,
}

/// `validate_argument_spec`: check variables and given arguments against an argument spec
/// (what a role's `meta/argument_specs.yml` holds for one entry point).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    /// Options by name, each with `type`, `required`, `default`, `choices`, `elements`,
    /// `options`, `aliases`, `no_log`... as in a module's argument spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument_spec: Option<Value>,
    /// Values to check besides the variables named like an option (which they override).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provided_arguments: Option<Value>,
    /// Returned as it is, to say what was validated (the role and its entry point).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validate_args_context: Option<Value>,
}

/// `set_stats`: custom statistics for the end of the run (`data`), per host or for the
/// whole run (`per_host`), added to what earlier tasks set or replacing it (`aggregate`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetStatsArgs {
    pub data: Option<Value>,
    pub per_host: Option<Value>,
    pub aggregate: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AsyncStatusArgs {
    pub jid: Option<Value>,
    pub mode: Option<Value>,
}

/// `meta:` actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meta {
    FlushHandlers,
    EndPlay,
    EndHost,
    EndBatch,
    Noop,
    ClearHostErrors,
    RefreshInventory,
    ResetConnection,
    ClearFacts,
}

impl Meta {
    const ALL: [(&'static str, Meta); 9] = [
        ("flush_handlers", Meta::FlushHandlers),
        ("end_play", Meta::EndPlay),
        ("end_host", Meta::EndHost),
        ("end_batch", Meta::EndBatch),
        ("noop", Meta::Noop),
        ("clear_host_errors", Meta::ClearHostErrors),
        ("refresh_inventory", Meta::RefreshInventory),
        ("reset_connection", Meta::ResetConnection),
        ("clear_facts", Meta::ClearFacts),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("noop", |(n, _)| n)
    }

    fn parse(text: &str) -> Result<Self, ActionArgsError> {
        Self::ALL
            .iter()
            .find(|(n, _)| *n == text)
            .map(|(_, m)| *m)
            .ok_or_else(|| ActionArgsError::UnknownMeta {
                name: text.to_string(),
                hint: super::did_you_mean(text, Self::ALL.iter().map(|(n, _)| *n))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default(),
            })
    }
}

impl ExecAction {
    /// The action called `name` with the task's argument map, or `None` when `name` is not
    /// an executor action.
    pub fn parse(name: &str, args: &Value) -> Option<Result<Self, ActionArgsError>> {
        if !is_action(name) {
            return None;
        }
        Some(Self::build(name, args))
    }

    fn build(name: &str, args: &Value) -> Result<Self, ActionArgsError> {
        let map = || match args {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        Ok(match name {
            "debug" => Self::Debug(typed("debug", args)?),
            "assert" => {
                if args.get("that").is_none() {
                    return Err(ActionArgsError::AssertWithoutThat);
                }
                Self::Assert(typed("assert", args)?)
            }
            "fail" => Self::Fail(typed("fail", args)?),
            "set_fact" => {
                let mut facts = map();
                let cacheable = facts.remove("cacheable");
                Self::SetFact { facts, cacheable }
            }
            "add_host" => Self::AddHost(map()),
            "group_by" => Self::GroupBy(typed("group_by", args)?),
            "meta" => Self::Meta(Meta::parse(
                args.get("_raw_params")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim(),
            )?),
            "pause" => Self::Pause(typed("pause", args)?),
            "include_vars" => Self::IncludeVars(Box::new(typed("include_vars", args)?)),
            "wait_for_connection" => Self::WaitForConnection(typed("wait_for_connection", args)?),
            "validate_argument_spec" => {
                Self::ValidateArgumentSpec(typed("validate_argument_spec", args)?)
            }
            "set_stats" => Self::SetStats(typed("set_stats", args)?),
            _ => Self::AsyncStatus(typed("async_status", args)?),
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Self::Debug(_) => "debug",
            Self::Assert(_) => "assert",
            Self::Fail(_) => "fail",
            Self::SetFact { .. } => "set_fact",
            Self::AddHost(_) => "add_host",
            Self::GroupBy(_) => "group_by",
            Self::Meta(_) => "meta",
            Self::Pause(_) => "pause",
            Self::IncludeVars(_) => "include_vars",
            Self::WaitForConnection(_) => "wait_for_connection",
            Self::AsyncStatus(_) => "async_status",
            Self::ValidateArgumentSpec(_) => "validate_argument_spec",
            Self::SetStats(_) => "set_stats",
        }
    }
}

/// Parse `args` as `T`, worded as module argument errors are.
fn typed<T: serde::de::DeserializeOwned>(
    name: &'static str,
    args: &Value,
) -> Result<T, ActionArgsError> {
    crate::modules::params(name, args).map_err(|e| match e {
        crate::modules::ModuleError::BadArgs { detail, .. } => ActionArgsError::Args(detail),
        other => ActionArgsError::Args(other.to_string()),
    })
}

/// `that: x` or `that: [x, y]`; a non-string item is taken as its YAML text.
fn one_or_many_exprs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    // A value that is no string fails where the task runs, as in ansible-core.
    let text = |v: Value| crate::template::non_string_condition(&v);
    Ok(match Value::deserialize(d)? {
        Value::Array(a) => a.into_iter().map(text).collect(),
        other => vec![text(other)],
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn actions_parse_to_typed_arguments_and_bad_ones_are_named() {
        assert_eq!(
            ExecAction::parse("meta", &json!({"_raw_params": "flush_handlers"})),
            Some(Ok(ExecAction::Meta(Meta::FlushHandlers)))
        );
        let Some(Ok(ExecAction::Assert(a))) = ExecAction::parse("assert", &json!({"that": "x"}))
        else {
            panic!("assert did not parse");
        };
        assert_eq!(a.that, vec!["x".to_string()]);
        assert!(ExecAction::parse("copy", &json!({})).is_none());
        let err = ExecAction::parse("debug", &json!({"msgg": "hi"}))
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown argument `msgg`, did you mean `msg`?"),
            "{err}"
        );
        let err = ExecAction::parse("meta", &json!({"_raw_params": "flush_handler"}))
            .unwrap()
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "unknown meta action `flush_handler` (did you mean `flush_handlers`?)"
        );
        for name in NAMES {
            let args = match *name {
                "assert" => json!({"that": "true"}),
                "meta" => json!({"_raw_params": "noop"}),
                _ => json!({}),
            };
            assert_eq!(
                ExecAction::parse(name, &args).unwrap().unwrap().name(),
                *name
            );
        }
    }
}
