//! Python modules kinit does not implement itself: a module file in a `library/` folder
//! (beside the playbook, in a role, or in ansible.cfg's `library`) or in an installed
//! collection (`ns.coll.module`), run on the host by its Python as Ansible runs it.
//!
//! The `module_utils` a module imports go with it (`pybundle`). kinit ships no Ansible:
//! `pymodule_runner.py` stands in for the part of `ansible.module_utils` most custom modules
//! import (`basic.AnsibleModule` and the text helpers); a module that needs more of it runs
//! with the controller's own ansible-core files, as AnsiballZ would send them.
//! The runner, the arguments and the module's text go on the interpreter's stdin in one
//! command (nothing is left on the host), and the JSON the module prints is the task's result,
//! read as ansible-core's `_parse_returned_data` reads it: text before the JSON object is
//! skipped.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{Map, Value, json};

use super::{BoxFuture, Module, ModuleCtx, ModuleError, ModuleResult, pybundle};

const RUNNER: &str = include_str!("pymodule_runner.py");

/// The interpreters tried, in order, when `ansible_python_interpreter` is not set (or is one
/// of Ansible's `auto` values): the first of ansible-core's discovery candidates that exist.
const CANDIDATES: &[&str] = &[
    "/usr/bin/python3",
    "/usr/libexec/platform-python",
    "/usr/bin/python",
    "python3",
];

/// One Python module: its name in the task, its file on the controller, and the folders
/// holding `ansible_collections` its `module_utils` imports are looked up in.
pub struct PythonModule<'p> {
    pub name: &'p str,
    pub path: &'p Path,
    pub collections: &'p [PathBuf],
}

/// A module's file and the `module_utils` it takes along, read once per run.
struct Prepared {
    source: Vec<u8>,
    fqn: String,
    /// `_KINIT_FILES`: the bundle as base64 of zlib-compressed JSON, empty when there is none.
    files: String,
    real_ansible: bool,
}

/// Prepared modules by file, so a module that runs on many hosts or in a loop is read and
/// followed through its imports once.
fn prepared(m: &PythonModule<'_>) -> Result<Arc<Prepared>, ModuleError> {
    static CACHE: Mutex<BTreeMap<PathBuf, Arc<Prepared>>> = Mutex::new(BTreeMap::new());
    if let Some(p) = CACHE.lock().unwrap().get(m.path) {
        return Ok(p.clone());
    }
    let source = std::fs::read(m.path).map_err(|e| ModuleError::Failed {
        msg: format!("cannot read custom module `{}`: {e}", m.path.display()),
    })?;
    let fqn = pybundle::module_fqn(m.path, m.name);
    let controller = pybundle::controller();
    let mut collections = m.collections.to_vec();
    collections.extend(controller.collections.iter().cloned());
    let roots = pybundle::Roots {
        ansible: controller.ansible.clone(),
        collections,
    };
    let bundle = pybundle::bundle(&source, &fqn, &roots);
    let files = if bundle.files.is_empty() {
        String::new()
    } else {
        let map: Map<String, Value> = bundle
            .files
            .iter()
            .map(|(name, f)| {
                let text = String::from_utf8_lossy(&f.source).into_owned();
                (name.clone(), json!([f.package, text]))
            })
            .collect();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        let _ = z.write_all(Value::Object(map).to_string().as_bytes());
        base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap_or_default())
    };
    let p = Arc::new(Prepared {
        source,
        fqn,
        files,
        real_ansible: bundle.real_ansible,
    });
    CACHE
        .lock()
        .unwrap()
        .insert(m.path.to_path_buf(), p.clone());
    Ok(p)
}

impl Module for PythonModule<'_> {
    fn validate(&self, _args: &Value) -> Result<(), ModuleError> {
        // The module's `argument_spec` is checked on the host, as Ansible does.
        Ok(())
    }

    fn run<'a>(
        &'a self,
        ctx: &'a ModuleCtx<'a>,
        args: Value,
    ) -> BoxFuture<'a, Result<ModuleResult, ModuleError>> {
        Box::pin(run(self, ctx, args))
    }
}

async fn run(
    m: &PythonModule<'_>,
    ctx: &ModuleCtx<'_>,
    args: Value,
) -> Result<ModuleResult, ModuleError> {
    if let Some(refusal) = super::posix_only(m.name, ctx) {
        return Ok(refusal);
    }
    let prep = prepared(m)?;
    let params = match module_params(m.name, args, ctx) {
        Ok(p) => p,
        Err(refusal) => return Ok(*refusal),
    };
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    // JSON string literals are Python string literals too.
    let payload = format!(
        "_KINIT_NAME = {}\n_KINIT_ARGS = {}\n_KINIT_SOURCE = {}\n_KINIT_FQN = {}\n\
         _KINIT_FILES = {}\n_KINIT_REAL = {}\n{RUNNER}",
        json!(m.name),
        json!(b64(Value::Object(params).to_string().as_bytes())),
        json!(b64(&prep.source)),
        json!(prep.fqn),
        json!(prep.files),
        if prep.real_ansible { "True" } else { "False" },
    );
    let out = ctx
        .run_with_stdin(interpreter_script(ctx), Some(payload.into_bytes()))
        .await?;
    let mut r = result_of(&out.stdout_str(), &out.stderr_str(), out.rc);
    // `async_wrapper` keeps what the module wrote to stderr (modules/async_wrapper.py).
    let stderr = out.stderr_str();
    if super::async_job::under_async() && !stderr.is_empty() && !r.data.contains_key("stderr") {
        r.data.insert("stderr".into(), json!(stderr));
    }
    Ok(r)
}

/// A custom module's arguments (a mapping) with what ansible-core's `_update_module_args`
/// adds for every module (`_ansible_check_mode`, `_ansible_diff`...); arguments that are not
/// a mapping fail the task.
pub(super) fn module_params(
    name: &str,
    args: Value,
    ctx: &ModuleCtx<'_>,
) -> Result<Map<String, Value>, Box<ModuleResult>> {
    let mut params = match args {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            return Err(Box::new(ModuleResult::failed(format!(
                "the arguments of `{name}` must be a mapping, not {other}"
            ))));
        }
    };
    params.insert("_ansible_check_mode".into(), json!(ctx.check_mode));
    params.insert("_ansible_diff".into(), json!(ctx.diff));
    params.insert("_ansible_module_name".into(), json!(name));
    params.insert("_ansible_verbosity".into(), json!(0));
    Ok(params)
}

/// The command that runs the payload on stdin with the host's Python.
fn interpreter_script(ctx: &ModuleCtx<'_>) -> String {
    let set = ctx
        .vars
        .get("ansible_python_interpreter")
        .and_then(Value::as_str)
        .and_then(|v| ctx.render.render(v).ok())
        .filter(|v| !v.is_empty() && !v.starts_with("auto"));
    if let Some(python) = set {
        return format!("{} -", crate::transport::quote::sh(&python));
    }
    let list = CANDIDATES.join(" ");
    format!(
        "for p in {list}; do command -v \"$p\" >/dev/null 2>&1 && exec \"$p\" -; done; \
         echo 'no Python interpreter on this host (tried {list}); set ansible_python_interpreter' >&2; \
         exit 127"
    )
}

/// The task's result from what the module printed: the first JSON object in its output, or a
/// failure holding the output when there is none.
pub(super) fn result_of(stdout: &str, stderr: &str, rc: i32) -> ModuleResult {
    let parsed = stdout
        .match_indices('{')
        .filter(|(i, _)| stdout[..*i].ends_with('\n') || *i == 0)
        .find_map(|(i, _)| {
            let mut values = serde_json::Deserializer::from_str(&stdout[i..]).into_iter::<Value>();
            match values.next() {
                Some(Ok(Value::Object(m))) => Some((m, &stdout[i + values.byte_offset()..])),
                _ => None,
            }
        });
    let Some((mut data, after)) = parsed else {
        let mut r = ModuleResult::failed(
            "Module result deserialization failed. See stdout/stderr for the returned output.",
        );
        r.data.insert("module_stdout".into(), json!(stdout));
        r.data.insert("module_stderr".into(), json!(stderr));
        r.data.insert("rc".into(), json!(rc));
        return r;
    };
    // ansible-core's `_filter_non_json_lines` words for text after the JSON, kept in the
    // result's `warnings` (as its async wrapper keeps it; a direct run only shows it).
    let junk = after.trim_start_matches(['\n', '\r', ' ']);
    if !junk.trim().is_empty() {
        let warning = json!(format!(
            "Module invocation had junk after the JSON data: {}",
            junk.trim_end_matches('\n')
        ));
        match data.get_mut("warnings") {
            Some(Value::Array(list)) => list.push(warning),
            _ => {
                data.insert("warnings".into(), json!([warning]));
            }
        }
    }
    // As ansible-core's action base does for every module result.
    for key in ["stdout", "stderr"] {
        let lines = format!("{key}_lines");
        if let Some(Value::String(text)) = data.get(key)
            && !data.contains_key(&lines)
        {
            let split = super::command::splitlines(text);
            data.insert(lines, json!(split));
        }
    }
    ModuleResult::from_map(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_json_object_on_its_own_line_is_the_result() {
        let r = result_of(
            "noise {not json\n{\"changed\": true, \"rc\": 0, \"msg\": \"hi\"}\ntrailing\n",
            "",
            0,
        );
        assert!(r.changed && !r.failed);
        assert_eq!(r.msg.as_deref(), Some("hi"));
        assert_eq!(r.data.get("rc"), Some(&json!(0)));
        assert_eq!(
            r.data["warnings"],
            json!(["Module invocation had junk after the JSON data: trailing"])
        );
    }

    #[test]
    fn no_json_is_a_failure_that_keeps_the_output() {
        let r = result_of("", "Traceback ...\nNameError: x\n", 1);
        assert!(r.failed);
        assert_eq!(
            r.data["module_stderr"],
            json!("Traceback ...\nNameError: x\n")
        );
        assert_eq!(r.data["rc"], json!(1));
    }
}
