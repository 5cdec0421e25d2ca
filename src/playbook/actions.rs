//! The executor's own actions as the loader knows them: their names (a task naming one is not
//! a module) and a load-time check of their arguments. Running them is `exec::actions`'.

use serde_json::Value;

/// Why an executor action's arguments were refused at load time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionArgsError {
    #[error("unknown argument `{name}`{hint}; expected one of {expected}")]
    UnknownArgument {
        name: String,
        /// ` (did you mean `x`?)` or nothing.
        hint: String,
        expected: String,
    },
    #[error("unknown meta action `{name}`{hint}")]
    UnknownMeta { name: String, hint: String },
    #[error("`assert` needs `that`")]
    AssertWithoutThat,
}

/// Every executor action, by short name.
pub const ACTIONS: &[&str] = &[
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
];

const META: &[&str] = &[
    "flush_handlers",
    "end_play",
    "end_host",
    "end_batch",
    "noop",
    "clear_host_errors",
    "refresh_inventory",
    "reset_connection",
    "clear_facts",
];

pub fn is_action(name: &str) -> bool {
    ACTIONS.contains(&name)
}

/// Load-time argument check of an executor action.
pub fn validate(name: &str, args: &Value) -> Result<(), ActionArgsError> {
    let allowed: &[&str] = match name {
        "debug" => &["msg", "var", "verbosity"],
        "assert" => &["that", "msg", "fail_msg", "success_msg", "quiet"],
        "fail" => &["msg"],
        "group_by" => &["key", "parents"],
        "meta" => &["_raw_params"],
        "pause" => &["seconds", "minutes", "prompt", "echo"],
        "include_vars" => &["_raw_params", "file", "name"],
        "async_status" => &["jid", "mode"],
        "wait_for_connection" => &["timeout", "delay", "sleep", "connect_timeout"],
        _ => return Ok(()),
    };
    let Some(map) = args.as_object() else {
        return Ok(());
    };
    for k in map.keys() {
        if !allowed.contains(&k.as_str()) {
            let hint = super::did_you_mean(k, allowed.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(ActionArgsError::UnknownArgument {
                name: k.clone(),
                hint,
                expected: allowed.join(", "),
            });
        }
    }
    if name == "meta" {
        let m = map.get("_raw_params").and_then(Value::as_str).unwrap_or("");
        if !META.contains(&m) {
            let hint = super::did_you_mean(m, META.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(ActionArgsError::UnknownMeta {
                name: m.to_string(),
                hint,
            });
        }
    }
    if name == "assert" && map.get("that").is_none() {
        return Err(ActionArgsError::AssertWithoutThat);
    }
    Ok(())
}
