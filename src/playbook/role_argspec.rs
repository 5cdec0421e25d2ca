//! A role's argument spec and the validation task it puts first among the role's own tasks,
//! as ansible-core 2.19's `Role._get_role_argspecs`, `_prepend_validation_task` and
//! `_create_validation_task` (`ansible/playbook/role/__init__.py`). What the task does when
//! it runs, and why kinit follows Ansible there, is said in `exec::argspec`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::actions::ExecAction;
use super::yaml::Node;
use super::{Action, Keywords, LoadError, Loader, RoleCtx, Task};
use crate::vars::VarMap;

/// The files holding a role's argument specs, in the order Ansible looks for them.
const SPEC_FILES: [&str; 3] = [
    "argument_specs.yml",
    "argument_specs.yaml",
    "argument_specs.json",
];

impl Loader {
    /// The `validate_argument_spec` task for `role` used through `entry` (`main` or the
    /// `tasks_from` name), or `None` when its spec has no such entry point. `meta` is the
    /// role's `meta/main.yml`, read only when there is no `meta/argument_specs.yml`.
    pub(super) fn validation_task(
        &self,
        role: &Arc<RoleCtx>,
        entry: &str,
        role_params: &VarMap,
        meta: Option<&Node<'_>>,
    ) -> Result<Option<Task>, LoadError> {
        let meta_dir = role.path.join("meta");
        // Most roles have no `meta/` at all: one `stat`, and nothing else to do.
        if meta.is_none() && !meta_dir.is_dir() {
            return Ok(None);
        }
        let file = SPEC_FILES
            .iter()
            .map(|f| meta_dir.join(f))
            .find(|p| p.is_file());
        // A spec file wins over `meta/main.yml` even when it holds no `argument_specs`.
        let doc = match &file {
            Some(f) => Some(self.doc(f)?),
            None => None,
        };
        let root = doc.as_ref().map(|d| d.root());
        let specs = match (&root, meta) {
            (Some(r), _) => r.get("argument_specs"),
            (None, Some(m)) => m.get("argument_specs"),
            (None, None) => None,
        };
        let Some(spec) = specs.and_then(|s| s.get(entry)) else {
            return Ok(None);
        };
        let Value::Object(fields) = spec.value else {
            return Ok(None);
        };
        if fields.is_empty() {
            return Ok(None);
        }
        let mut name = format!("Validating arguments against arg spec '{entry}'");
        if let Some(short) = fields.get("short_description") {
            name.push_str(" - ");
            name.push_str(&crate::template::py_str(short));
        }
        let args = json!({
            "argument_spec": fields.get("options").cloned().unwrap_or(json!({})),
            "provided_arguments": role_params,
            "validate_args_context": {
                "type": "role",
                "name": role.name,
                "argument_spec_name": entry,
                "path": std::path::absolute(&role.path).unwrap_or_else(|_| role.path.clone()).display().to_string(),
            },
        });
        let at = super::task::loc(&spec);
        let action = ExecAction::parse("validate_argument_spec", &args)
            .and_then(Result::ok)
            .ok_or_else(|| LoadError::Invalid {
                file: at.file.to_path_buf(),
                line: at.line,
                detail: "argument spec entry cannot become a validation task".into(),
            })?;
        Ok(Some(Task {
            name: Some(name),
            action: Action::Exec(Box::new(action)),
            kw: Keywords {
                tags: vec!["always".into()],
                ..Keywords::default()
            },
            loc: at,
            role: None,
            written: None,
        }))
    }
}
