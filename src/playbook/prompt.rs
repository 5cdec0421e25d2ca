//! A play's `vars_prompt` entries, checked at load time: Ansible's keys, `name` required,
//! booleans in Ansible's forms. Asking is the executor's (`exec/prompt.rs`).

use super::task::{invalid, loc, parse_bool, scalar_string};
use super::yaml::Node;
use super::{LoadError, VarPrompt, did_you_mean};

const PROMPT_KEYS: &[&str] = &[
    "name",
    "prompt",
    "default",
    "private",
    "confirm",
    "encrypt",
    "salt",
    "salt_size",
    "unsafe",
];

/// One `vars_prompt` entry: a mapping with `name` (Ansible's keys; `unsafe` is accepted and
/// changes nothing, as kinit never templates a prompted answer).
pub(super) fn parse_var_prompt(n: &Node<'_>) -> Result<VarPrompt, LoadError> {
    if !n.value.is_object() {
        return Err(invalid(
            n,
            "a `vars_prompt` entry must be a mapping with `name`",
        ));
    }
    if n.get("name").is_none() {
        // ansible-core's words.
        return Err(invalid(
            n,
            "Invalid vars_prompt data structure, missing 'name' key",
        ));
    }
    for (k, v) in n.entries() {
        if !PROMPT_KEYS.contains(&k) {
            return Err(LoadError::UnknownKeyword {
                file: v.file.to_path_buf(),
                line: v.line(),
                what: "a `vars_prompt` entry",
                key: k.to_string(),
                suggestion: did_you_mean(k, PROMPT_KEYS.iter().copied()),
            });
        }
    }
    let text = |key: &str| -> Result<Option<String>, LoadError> {
        n.get(key).map(|v| scalar_string(&v)).transpose()
    };
    let flag = |key: &str, default: bool| -> Result<bool, LoadError> {
        n.get(key)
            .map(|v| parse_bool(&v, key))
            .transpose()
            .map(|b| b.unwrap_or(default))
    };
    Ok(VarPrompt {
        name: text("name")?.ok_or_else(|| invalid(n, "a `vars_prompt` entry needs `name`"))?,
        prompt: text("prompt")?,
        default: n.get("default").map(|v| v.value.clone()),
        private: flag("private", true)?,
        confirm: flag("confirm", false)?,
        encrypt: text("encrypt")?,
        salt: text("salt")?,
        salt_size: match n.get("salt_size") {
            Some(v) => Some(
                scalar_string(&v)?
                    .parse()
                    .map_err(|_| invalid(&v, "`salt_size` expects a count"))?,
            ),
            None => None,
        },
        loc: loc(n),
    })
}
