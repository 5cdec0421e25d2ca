//! The `validate_argument_spec` action: the task a role with an argument spec runs first,
//! and which a playbook may also call itself.
//!
//! # What kinit does, and why (ansible-core 2.19.4 parity)
//!
//! * A role whose `meta/argument_specs.yml` (`.yaml`, `.json`; else `argument_specs` in
//!   `meta/main.yml`) has an entry for the role's entry point (`main`, or the `tasks_from`
//!   name as given) gets one task put before its own tasks, after its dependencies, named
//!   `Validating arguments against arg spec '<entry>'` (` - <short_description>` when the
//!   entry has one) and tagged `always` (`Role._prepend_validation_task`,
//!   `_create_validation_task` in `ansible/playbook/role/__init__.py`). The loader builds it
//!   (`playbook::role_argspec`); `rolespec_validate: false` on `import_role`/`include_role`
//!   leaves it out. A role without a spec costs one `stat` of `meta/argument_specs.*` at load
//!   time and nothing when it runs.
//! * The task's arguments are the entry's `options` (`argument_spec`), the role parameters
//!   proper (`provided_arguments`: `roles: [{role: r, x: 1}]`; not `vars:`, none for
//!   `include_role`) and `validate_args_context` (`type: role`, `name`, `argument_spec_name`,
//!   `path`).
//! * Running, it takes each variable named like a top-level option (role parameters, `vars`,
//!   role defaults, play and host variables: whatever the task sees), renders it, lets the
//!   provided arguments override, and validates (`argspec_check`), as
//!   `plugins/action/validate_argument_spec.py` does. A passing check returns
//!   `msg: The arg spec validation passed`; a failing one `failed`, `msg: Validation of
//!   arguments failed:\n<errors>`, `argument_errors`, `argument_spec_data`, and both return
//!   `validate_args_context`.
//! * Spec `default`s are not set as variables: Ansible 2.19 validates a copy and returns no
//!   values (no `ansible_facts`), so a role still needs its `defaults/main.yml`. Neither are
//!   the converted values (a `type: int` option given `"5"` stays the string `"5"`).
//! * Values of `no_log` options are added to the redactor, so output never shows them (an
//!   error text may quote one); Ansible does not hide them here.

use serde_json::{Map, Value, json};

use super::Executor;
use super::actions::ok;
use super::argspec_types::{class_repr, py_str};
use super::host_task::Attempt;
use crate::playbook::actions::ValidateArgs;
use crate::report::TaskResult;
use crate::vars::VarMap;

impl Executor {
    /// Run `validate_argument_spec` with its arguments rendered.
    pub(crate) fn validate_argument_spec(&self, args: ValidateArgs, ctx: &VarMap) -> Attempt {
        let context = args.validate_args_context.clone().unwrap_or(json!({}));
        // Bad arguments are an error of the action itself: Ansible's result then has only
        // the message.
        let fail = |msg: String| Attempt::of(TaskResult::failed(format!("Task failed: {msg}")));
        let Some(spec) = &args.argument_spec else {
            let given = serde_json::to_value(&args).unwrap_or_default();
            return fail(format!(
                "\"argument_spec\" arg is required in args: {}",
                py_str(&given)
            ));
        };
        let Value::Object(spec_map) = spec else {
            return fail(format!(
                "Incorrect type for argument_spec, expected dict and got {}",
                class_repr(spec, false)
            ));
        };
        let provided = match &args.provided_arguments {
            None => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(other) => {
                return fail(format!(
                    "Incorrect type for provided_arguments, expected dict and got {}",
                    class_repr(other, false)
                ));
            }
        };
        let from_vars: Map<String, Value> = spec_map
            .keys()
            .filter_map(|k| ctx.get(k).map(|v| (k.clone(), v.clone())))
            .collect();
        let mut params = match self.templar.render_value(&Value::Object(from_vars), ctx) {
            Ok(Value::Object(m)) => m,
            Ok(_) => Map::new(),
            Err(e) => return fail(e.to_string()),
        };
        crate::vars::overlay(&mut params, &provided);
        let checked = super::argspec_check::validate(spec_map, params);
        for secret in &checked.no_log {
            self.events.redactor.add(secret);
        }
        if checked.errors.is_empty() {
            return ok(json!({
                "changed": false,
                "msg": "The arg spec validation passed",
                "validate_args_context": context,
            }));
        }
        let msg = format!(
            "Validation of arguments failed:\n{}",
            checked.errors.join("\n")
        );
        Attempt::of(
            TaskResult::failed(msg)
                .with("validate_args_context", context)
                .with("argument_spec_data", spec.clone())
                .with("argument_errors", checked.errors),
        )
    }
}
