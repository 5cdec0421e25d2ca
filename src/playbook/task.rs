//! One task mapping → `Task`: sorting its keys into keywords, the action (a module, a block,
//! an include) and the module arguments (free-form `k=v` or `_raw_params`, plus `args:`).
//!
//! Over 300 lines because a task's keys are sorted in one pass: each key is either a keyword,
//! the action or an argument, and the three must be decided together.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::yaml::Node;
use super::{Action, Keywords, LoadError, Location, RoleCtx, Task, did_you_mean};

pub(crate) use super::args::{build_args, contains_template, raw_param, split_action_value};
pub(crate) use super::error::{invalid, scalar_string};
pub(crate) use super::keywords::{TASK_KEYWORDS, parse_bool, parse_keywords, var_map};

/// What parsing tasks needs to know about where they are.
pub struct TaskCtx<'a> {
    pub loader: &'a super::Loader,
    /// Folder relative static imports resolve against.
    pub dir: PathBuf,
    pub role: Option<Arc<RoleCtx>>,
    /// Files being imported, for cycle detection.
    pub stack: Vec<PathBuf>,
    /// Handlers of roles imported while parsing, for the play to add.
    pub handlers: RefCell<Vec<Task>>,
    pub is_handler: bool,
}

/// The short name `name` resolves to, if it is a module or an executor action.
pub fn resolve_action(name: &str) -> Option<String> {
    let short = crate::modules::short_name(name);
    if super::actions::is_action(short)
        || matches!(
            short,
            "include_tasks" | "import_tasks" | "include_role" | "import_role" | "include"
        )
        || crate::modules::lookup(name).is_some()
    {
        return Some(short.to_string());
    }
    None
}

fn all_action_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = crate::modules::names().collect();
    v.extend(super::actions::NAMES);
    v.extend([
        "include_tasks",
        "import_tasks",
        "include_role",
        "import_role",
    ]);
    v
}

pub fn loc(node: &Node<'_>) -> Location {
    Location {
        file: node.file.clone(),
        line: node.line(),
    }
}

/// A custom plugin Ansible would run for the action `name`: a module in a `library/` folder or
/// an action plugin in an `action_plugins/` folder, looked up in the current role, beside the
/// tasks file, beside the playbook, and in ansible.cfg's `library`. kinit runs Python modules
/// and modules in other languages (`Action::Custom`); an action plugin is named in a warning
/// at load and fails where a host reaches it.
fn custom_plugin(ctx: &TaskCtx<'_>, name: &str) -> Option<(PathBuf, &'static str)> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(r) = &ctx.role {
        roots.push(r.path.clone());
    }
    roots.push(ctx.dir.clone());
    if let Some(parent) = ctx.dir.parent() {
        roots.push(parent.to_path_buf());
    }
    roots.push(ctx.loader.base_dir().to_path_buf());
    let mut dirs: Vec<(PathBuf, &'static str)> = Vec::new();
    for root in &roots {
        dirs.push((root.join("library"), CUSTOM_MODULE));
        dirs.push((root.join("action_plugins"), ACTION_PLUGIN));
    }
    dirs.extend(
        ctx.loader
            .library_path()
            .iter()
            .map(|d| (d.clone(), CUSTOM_MODULE)),
    );
    dirs.into_iter().find_map(|(d, kind)| {
        std::fs::read_dir(&d)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_file() && p.file_stem().and_then(|s| s.to_str()) == Some(name))
            .map(|p| (p, kind))
    })
}

const CUSTOM_MODULE: &str = "a custom module";
const ACTION_PLUGIN: &str = "a custom action plugin";

/// The action a custom action plugin only re-exports (`from ansible.plugins.action.debug
/// import ActionModule`, with no class of its own), when kinit implements it: the plugin
/// runs as that action, as it does in Ansible.
fn action_alias(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    if text.lines().any(|l| l.trim_start().starts_with("class ")) {
        return None;
    }
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("from ansible.plugins.action.")?;
        let (module, imported) = rest.split_once(" import ")?;
        let imported = imported.trim();
        (imported == "ActionModule" || imported == "ActionModule as ActionModule")
            .then(|| resolve_action(module))
            .flatten()
    })
}

/// Whether kinit runs a custom module file: Python, or another POSIX language with a `#!`
/// line, or a compiled program. A PowerShell module (`.ps1`) loads with a warning and fails
/// where it runs.
fn runs_here(path: &Path) -> bool {
    !path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ps1") || e.eq_ignore_ascii_case("cs"))
}

/// Whether a custom module is Python: a `.py` file or one whose `#!` line names Python.
fn is_python(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "py") {
        return true;
    }
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = [0u8; 128];
    let n = std::io::Read::read(&mut f, &mut head).unwrap_or(0);
    let first = head[..n].split(|b| *b == b'\n').next().unwrap_or_default();
    first.starts_with(b"#!") && String::from_utf8_lossy(first).contains("python")
}

/// Parse a list of tasks.
pub fn parse_tasks(ctx: &TaskCtx<'_>, node: Option<Node<'_>>) -> Result<Vec<Task>, LoadError> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    match node.value {
        Value::Null => Ok(Vec::new()),
        Value::Array(_) => node.items().iter().map(|n| parse_task(ctx, n)).collect(),
        _ => Err(invalid(&node, "expected a list of tasks")),
    }
}

/// Refuse a `block` among handlers, as ansible-core's `load_list_of_tasks` for handlers: a
/// `handlers:` section's own entries may be blocks (each is the implicit block its handlers
/// are in), a block inside one or in a task file a handler imports or includes may not.
pub(crate) fn refuse_handler_blocks(list: Option<Node<'_>>) -> Result<(), LoadError> {
    let Some(list) = list else { return Ok(()) };
    if !matches!(list.value, Value::Array(_)) {
        return Ok(());
    }
    match list.items().into_iter().find(|t| t.get("block").is_some()) {
        Some(t) => Err(invalid(&t, "Using a block as a handler is not supported.")),
        None => Ok(()),
    }
}

/// Parse a task file's top level: a list of tasks, or nothing. Anything else is refused in
/// ansible-core's words, quoting the start of what the file holds.
pub fn parse_task_file(ctx: &TaskCtx<'_>, root: Node<'_>) -> Result<Vec<Task>, LoadError> {
    if let Value::Array(_) | Value::Null = root.value {
        return parse_tasks(ctx, Some(root));
    }
    let text = match root.value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let shown: String = text.chars().take(80).collect();
    let more = if shown.len() < text.len() { "..." } else { "" };
    Err(invalid(
        &root,
        format!("included task files must contain a list of tasks, not `{shown}{more}`"),
    ))
}

/// Parse one task (or block).
pub fn parse_task(ctx: &TaskCtx<'_>, node: &Node<'_>) -> Result<Task, LoadError> {
    if !node.value.is_object() {
        return Err(invalid(node, "a task must be a mapping (`- name: ...`)"));
    }
    let entries = node.entries();
    let is_block = entries.iter().any(|(k, _)| *k == "block");
    let mut action_key: Option<(String, String, Node<'_>)> = None;
    // A module Ansible knows and kinit does not implement (`ansible_modules`).
    let mut unimplemented: Option<(String, Node<'_>)> = None;
    let mut kw_entries = Vec::new();
    for (key, val) in &entries {
        if TASK_KEYWORDS.contains(key) || key.starts_with("with_") {
            kw_entries.push((*key, *val));
        } else if matches!(*key, "block" | "rescue" | "always") {
            continue;
        } else if let Some(short) = resolve_action(key) {
            if is_block {
                return Err(invalid(val, format!("a block cannot also run `{key}`")));
            }
            if let Some((prev, _, _)) = &action_key {
                return Err(invalid(
                    val,
                    format!("conflicting actions `{prev}` and `{key}` in one task"),
                ));
            }
            action_key = Some((key.to_string(), short, *val));
        } else if !is_block
            && action_key.is_none()
            && let Some(short) = custom_plugin(ctx, key)
                .filter(|(_, kind)| *kind == ACTION_PLUGIN)
                .and_then(|(path, _)| action_alias(&path))
        {
            action_key = Some((key.to_string(), short, *val));
        } else if !is_block
            && action_key.is_none()
            && (super::ansible_modules::is_known(key)
                || custom_plugin(ctx, key).is_some()
                || super::installed::module(ctx.loader, key).is_some())
            && !entries
                .iter()
                .any(|(k, _)| *k != *key && resolve_action(k).is_some())
        {
            unimplemented = Some((key.to_string(), *val));
        } else {
            let mut cands: Vec<&str> = TASK_KEYWORDS.to_vec();
            cands.extend(all_action_names());
            let suggestion = did_you_mean(key, cands);
            let looks_module = !entries.iter().any(|(k, _)| resolve_action(k).is_some());
            return Err(if looks_module && !is_block {
                LoadError::UnknownModule {
                    file: val.file.to_path_buf(),
                    line: node.line(),
                    name: key.to_string(),
                    suggestion,
                }
            } else {
                LoadError::UnknownKeyword {
                    file: val.file.to_path_buf(),
                    line: val.line(),
                    what: "a task",
                    key: key.to_string(),
                    suggestion,
                }
            });
        }
    }
    let mut kw = parse_keywords(&kw_entries, "a task")?;
    kw.tags = static_tags(
        ctx.loader,
        ctx.role.as_deref(),
        std::mem::take(&mut kw.tags),
        &kw.vars,
    );
    let name = match node.get("name") {
        Some(n) => Some(scalar_string(&n)?),
        None => None,
    };
    // `action:` / `local_action:` carry the module in their value.
    for key in ["action", "local_action"] {
        if let Some(n) = node.get(key) {
            if action_key.is_some() || is_block {
                return Err(invalid(&n, format!("`{key}` next to another action")));
            }
            let (module, args) = split_action_value(&n)?;
            if key == "local_action" {
                kw.delegate_to = Some("localhost".into());
            }
            let task_loc = loc(node);
            // A templated module name is known only when the task runs.
            if module.contains("{{") || module.contains("{%") {
                let args = build_args("", &args, node.get("args").as_ref(), &n)?;
                return Ok(Task {
                    name,
                    action: Action::Dynamic {
                        template: module,
                        args,
                    },
                    kw,
                    loc: task_loc,
                    role: None,
                    written: None,
                });
            }
            let Some(short) = resolve_action(&module) else {
                // A Python module kinit does not implement, given by `action: name args`.
                let path = custom_plugin(ctx, &module)
                    .filter(|(p, kind)| *kind == CUSTOM_MODULE && runs_here(p))
                    .map(|(p, _)| p)
                    .or_else(|| super::installed::module(ctx.loader, &module));
                let Some(path) = path else {
                    // A custom action plugin: one that only re-exports an action kinit has
                    // runs as that action; any other loads with a warning, as in the key form.
                    if let Some((file, ACTION_PLUGIN)) = custom_plugin(ctx, &module) {
                        if let Some(short) = action_alias(&file) {
                            let args = build_args(&short, &args, node.get("args").as_ref(), &n)?;
                            return finish_module(ctx, name, short, args, kw, &n, node)
                                .map(|t| t.written_as(&module));
                        }
                        let what = format!(
                            " ({ACTION_PLUGIN}, `{}`) is not implemented by kinit",
                            file.display()
                        );
                        let at = format!("{}:{}", n.file.display(), n.line());
                        return Ok(unimplemented_task(
                            ctx, name, module, &what, &at, kw, task_loc,
                        ));
                    }
                    return Err(LoadError::UnknownModule {
                        file: n.file.to_path_buf(),
                        line: n.line(),
                        name: module.clone(),
                        suggestion: did_you_mean(&module, all_action_names()),
                    });
                };
                let args = build_args(&module, &args, node.get("args").as_ref(), &n)?;
                return Ok(Task {
                    name,
                    action: Action::Custom {
                        module,
                        python: is_python(&path),
                        path,
                        args,
                        collections: ctx.loader.collection_roots(),
                    },
                    kw,
                    loc: task_loc,
                    role: None,
                    written: None,
                });
            };
            let args = build_args(&short, &args, node.get("args").as_ref(), &n)?;
            return finish_module(ctx, name, short, args, kw, &n, node)
                .map(|t| t.written_as(&module));
        }
    }
    let task_loc = loc(node);
    if is_block {
        if kw.loop_.is_some() {
            return Err(invalid(node, "a block cannot have a loop"));
        }
        if ctx.is_handler {
            for section in ["block", "rescue", "always"] {
                refuse_handler_blocks(node.get(section))?;
            }
        }
        let block = parse_tasks(ctx, node.get("block"))?;
        let rescue = parse_tasks(ctx, node.get("rescue"))?;
        let always = parse_tasks(ctx, node.get("always"))?;
        return Ok(Task {
            name,
            action: Action::Block {
                block,
                rescue,
                always,
            },
            kw,
            loc: task_loc,
            role: None,
            written: None,
        });
    }
    if entries
        .iter()
        .any(|(k, _)| matches!(*k, "rescue" | "always"))
    {
        return Err(invalid(node, "`rescue`/`always` need a `block`"));
    }
    if let Some((module, val)) = unimplemented {
        if action_key.is_some() {
            return Err(invalid(
                &val,
                format!("`{module}` next to another action in one task"),
            ));
        }
        let custom = custom_plugin(ctx, &module)
            .or_else(|| super::installed::module(ctx.loader, &module).map(|p| (p, CUSTOM_MODULE)));
        if let Some((path, CUSTOM_MODULE)) = &custom
            && runs_here(path)
        {
            let args = build_args(&module, val.value, node.get("args").as_ref(), &val)?;
            return Ok(Task {
                name,
                action: Action::Custom {
                    module,
                    python: is_python(path),
                    path: path.clone(),
                    args,
                    collections: ctx.loader.collection_roots(),
                },
                kw,
                loc: task_loc,
                role: None,
                written: None,
            });
        }
        let origin = match custom {
            Some((file, kind)) => format!(" ({kind}, `{}`)", file.display()),
            None => String::new(),
        };
        // Where kinit looked, so the fix (install the collection, or ansible-core on the
        // controller) is in the message.
        let not_found = match module.split('.').collect::<Vec<_>>().as_slice() {
            _ if !origin.is_empty() => String::new(),
            ["ansible", "builtin" | "legacy", _] | [_] => {
                " nor found in the controller Python's ansible-core".to_string()
            }
            [ns, coll, _] => format!(" nor found in an installed collection `{ns}.{coll}`"),
            _ => String::new(),
        };
        let at = format!("{}:{}", val.file.display(), node.line());
        let what = format!("{origin} is not implemented by kinit{not_found}");
        return Ok(unimplemented_task(
            ctx, name, module, &what, &at, kw, task_loc,
        ));
    }
    let Some((written, short, val)) = action_key else {
        return Err(invalid(node, "task has no module (and is not a block)"));
    };
    if let Some(l) = kw.loop_.as_mut()
        && written != short
    {
        l.action = Some(written.clone());
    }
    let args = build_args(&short, val.value, node.get("args").as_ref(), &val)?;
    finish_module(ctx, name, short, args, kw, &val, node).map(|t| t.written_as(&written))
}

/// A task naming a module kinit does not implement (`what`: what the name is and where kinit
/// looked): a load-time warning at `at`, and a task that fails on any host reaching it.
fn unimplemented_task(
    ctx: &TaskCtx<'_>,
    name: Option<String>,
    module: String,
    what: &str,
    at: &str,
    kw: Keywords,
    loc: Location,
) -> Task {
    ctx.loader.warn(format!(
        "{at}: module `{module}`{what}; the task fails on any host that reaches it"
    ));
    Task {
        name,
        action: Action::Unimplemented { module },
        kw,
        loc,
        role: None,
        written: None,
    }
}

fn finish_module(
    ctx: &TaskCtx<'_>,
    name: Option<String>,
    short: String,
    args: Value,
    kw: Keywords,
    val: &Node<'_>,
    task: &Node<'_>,
) -> Result<Task, LoadError> {
    let task_loc = loc(task);
    let mut args = args;
    if matches!(short.as_str(), "import_role" | "include_role") {
        if ctx.is_handler {
            return Err(invalid(
                task,
                format!("Using '{short}' as a handler is not supported."),
            ));
        }
        // ansible-core's role include reads `name`, else `role` (playbook/role_include.py).
        if let Some(m) = args.as_object_mut()
            && !m.contains_key("name")
            && let Some(role) = m.remove("role")
        {
            m.insert("name".into(), role);
        }
        check_role_include_args(&short, &args, val)?;
    }
    if matches!(
        short.as_str(),
        "import_tasks" | "include_tasks" | "import_role" | "include_role"
    ) {
        check_include_args(&short, &args, val)?;
    }
    match short.as_str() {
        "import_tasks" => {
            let file = raw_param(&args, "file")
                .ok_or_else(|| invalid(val, "import_tasks needs a file name"))?;
            let file = static_name(ctx, val, &kw.vars, "import_tasks", "include_tasks", file)?;
            if kw.loop_.is_some() {
                return Err(invalid(val, "import_tasks cannot loop; use include_tasks"));
            }
            let path = resolve_rel(&ctx.dir, ctx.role.as_deref(), &file)
                .or_else(|| Some(ctx.loader.base_dir().join(&file)).filter(|p| p.exists()))
                .unwrap_or_else(|| ctx.dir.join(&file));
            let block = ctx.loader.import_tasks_file(ctx, &path, &task_loc)?;
            Ok(Task {
                // Among handlers an import stands for its tasks, each a handler of its own:
                // its name answers no notification (ansible-core loads the tasks in its place).
                name: name.filter(|_| !ctx.is_handler),
                action: Action::Block {
                    block,
                    rescue: Vec::new(),
                    always: Vec::new(),
                },
                kw,
                loc: task_loc,
                role: None,
                written: None,
            })
        }
        "import_role" => {
            if kw.loop_.is_some() {
                return Err(invalid(val, "import_role cannot loop; use include_role"));
            }
            let rname = args
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid(val, "import_role needs `name`"))?;
            let rname = static_name(
                ctx,
                val,
                &kw.vars,
                "import_role",
                "include_role",
                rname.to_string(),
            )?;
            // Its other options too are rendered with what is known at load, as its name is
            // (`tasks_from: "{{ play_var }}"`, `allow_duplicates: "{{ x | bool }}"`).
            let mut args = args;
            if let Some(m) = args.as_object_mut() {
                for (key, v) in m.iter_mut().filter(|(k, _)| k.as_str() != "name") {
                    if let Value::String(t) = v
                        && (t.contains("{{") || t.contains("{%"))
                    {
                        let what = format!("import_role's `{key}`");
                        *t = static_name(ctx, val, &kw.vars, &what, "include_role", t.clone())?;
                    }
                }
            }
            let using = super::RoleUse {
                name: rname,
                // The import's keywords reach the role's handlers too (`delegate_to`...).
                keywords: kw.clone(),
                tasks_from: args
                    .get("tasks_from")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                skip_validation: !rolespec_validate(&args),
                once: !role_flag(&args, "allow_duplicates", true),
                included: true,
                from: super::RoleFrom::from_args(&args),
                ..Default::default()
            };
            let mut wrapper = ctx.loader.role_block(ctx, using, &task_loc)?;
            if let Some(r) = &wrapper.role {
                ctx.loader.note_role(r, false);
            }
            wrapper.name = name;
            wrapper.kw = kw;
            Ok(wrapper)
        }
        // ansible-core 2.16 removed `include` (`plugins/action/include.py` is gone; the
        // task loader refuses it at load time with these words).
        "include" => Err(invalid(
            val,
            "The 'ansible.builtin.include' action plugin has been removed. Use include_tasks or \
             import_tasks instead. This feature was removed from ansible-core in a release \
             after 2023-05-16.",
        )),
        "include_tasks" => {
            let file = args
                .get("_raw_params")
                .or_else(|| args.get("file"))
                .cloned()
                .ok_or_else(|| invalid(val, "include_tasks needs a file name"))?;
            let apply = include_apply(val, task.get("args").as_ref())?;
            Ok(Task {
                name,
                action: Action::IncludeTasks { file, args, apply },
                kw,
                loc: task_loc,
                role: None,
                written: None,
            })
        }
        "include_role" => {
            if args.get("name").is_none() {
                return Err(invalid(val, "include_role needs `name`"));
            }
            let apply = include_apply(val, task.get("args").as_ref())?;
            Ok(Task {
                name,
                action: Action::IncludeRole { args, apply },
                kw,
                loc: task_loc,
                role: None,
                written: None,
            })
        }
        _ if args.get(super::args::VARIABLE_PARAMS).is_some() => {
            // The arguments exist only when the task runs: checked then (`Action::Module`
            // resolves them first, whichever kind of action the module is).
            Ok(Task {
                name,
                action: Action::Module { name: short, args },
                kw,
                loc: task_loc,
                role: None,
                written: None,
            })
        }
        _ => {
            // Arguments are checked here so a mistake is named before anything runs, but as
            // Ansible checks them only when a host runs the task (a task meant to fail, or one
            // in a branch that never runs, must not stop the playbook), a bad task loads with a
            // warning and fails on the host that reaches it.
            if let Some(m) = crate::modules::lookup(&short)
                && !contains_template(&args)
                && let Err(e) = m.validate(&args)
            {
                // The error names the module already; the detail alone follows it.
                let detail = match e {
                    crate::modules::ModuleError::BadArgs { detail, .. } => detail,
                    other => other.to_string(),
                };
                warn_bad_args(ctx, &task_loc, &short, &detail);
            }
            let action = match super::actions::ExecAction::parse(&short, &args) {
                None => Action::Module { name: short, args },
                Some(Ok(a)) => Action::Exec(Box::new(a)),
                // An unknown `meta` action stops ansible-playbook's whole run when reached
                // ("invalid meta action requested"): kinit refuses it before the run.
                Some(Err(e)) if short == "meta" => {
                    return Err(LoadError::ModuleArgs {
                        file: task_loc.file.to_path_buf(),
                        line: task_loc.line,
                        module: short,
                        detail: e.to_string(),
                    });
                }
                Some(Err(e)) => {
                    let detail = e.to_string();
                    warn_bad_args(ctx, &task_loc, &short, &detail);
                    Action::Invalid {
                        module: short,
                        detail,
                    }
                }
            };
            Ok(Task {
                name,
                action,
                kw,
                loc: task_loc,
                role: None,
                written: None,
            })
        }
    }
}

/// The load-time warning for a task whose arguments its module refuses.
fn warn_bad_args(ctx: &TaskCtx<'_>, loc: &Location, module: &str, detail: &str) {
    ctx.loader.warn(format!(
        "{}:{}: bad arguments for module `{module}`: {detail}; the task fails on any host that \
         reaches it",
        loc.file.display(),
        loc.line
    ));
}

/// Python's name for the type of a YAML value (`type(x)` in ansible-core's messages).
pub(crate) fn python_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::Null => "NoneType",
    }
}

/// The options of the include and import actions as ansible-core checks them when it loads
/// the task (`TaskInclude.check_options`, `IncludeRole.load`): `import_tasks`/`include_tasks`
/// take only `file` and `apply`, and `apply` belongs to the includes, as a mapping.
fn check_include_args(action: &str, args: &Value, at: &Node<'_>) -> Result<(), LoadError> {
    let Some(m) = args.as_object() else {
        return Ok(());
    };
    if matches!(action, "import_tasks" | "include_tasks") {
        let bad: Vec<&str> = m
            .keys()
            .map(String::as_str)
            .filter(|k| !matches!(*k, "file" | "_raw_params" | "apply"))
            .collect();
        if !bad.is_empty() {
            // Upstream's words.
            return Err(invalid(
                at,
                format!("Invalid options for {action}: {}", bad.join(",")),
            ));
        }
    }
    let apply = m.get("apply");
    let given = apply.is_some_and(|a| match a {
        Value::Null | Value::Bool(false) => false,
        Value::Object(o) => !o.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::String(s) => !s.is_empty(),
        _ => true,
    });
    if given && action.starts_with("import_") {
        return Err(invalid(at, format!("Invalid options for {action}: apply")));
    }
    match apply {
        Some(a) if !a.is_object() => Err(invalid(
            at,
            format!(
                "Expected a dict for apply but got <class '{}'> instead",
                python_type(a)
            ),
        )),
        _ => Ok(()),
    }
}

/// The options of `import_role`/`include_role` as ansible-core checks them when it loads the
/// task (`IncludeRole.load`): only the ones it has, and the `*_from` ones strings.
fn check_role_include_args(action: &str, args: &Value, at: &Node<'_>) -> Result<(), LoadError> {
    const VALID: &[&str] = &[
        "name",
        "role",
        "tasks_from",
        "vars_from",
        "defaults_from",
        "handlers_from",
        "apply",
        "public",
        "allow_duplicates",
        "rolespec_validate",
    ];
    let Some(m) = args.as_object() else {
        return Ok(());
    };
    let bad: Vec<&str> = m
        .keys()
        .map(String::as_str)
        .filter(|k| !VALID.contains(k))
        .collect();
    if !bad.is_empty() {
        // Upstream's words.
        return Err(invalid(
            at,
            format!("Invalid options for {action}: {}", bad.join(",")),
        ));
    }
    for key in ["tasks_from", "vars_from", "defaults_from", "handlers_from"] {
        match m.get(key) {
            None | Some(Value::String(_)) => {}
            Some(v) => {
                return Err(invalid(
                    at,
                    format!(
                        "Expected a string for {key} but got <class '{}'> instead",
                        python_type(v)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A static import's name (`what`: `import_tasks`, `import_role`) rendered with what is
/// known before any host runs, as ansible-core templates it when the play loads: the play's
/// `vars`, the enclosing role's defaults, vars and parameters, `-e` variables,
/// `playbook_dir`, `role_path`. `dynamic` names the include to use
/// for a name that needs more.
fn static_name(
    ctx: &TaskCtx<'_>,
    at: &Node<'_>,
    task_vars: &crate::vars::VarMap,
    what: &str,
    dynamic: &str,
    name: String,
) -> Result<String, LoadError> {
    if !name.contains("{{") && !name.contains("{%") {
        return Ok(name);
    }
    // The import's own `vars:` rank above the play's (ansible-core templates the name with
    // the task's variables).
    let mut vars = ctx.loader.static_vars(ctx.role.as_deref());
    crate::vars::overlay(&mut vars, task_vars);
    crate::template::Templar::new()
        .render_str(&name, &vars)
        .map_err(|e| {
            invalid(
                at,
                format!(
                    "{what} is static: its name `{name}` may use only variables known when the \
                     playbook loads (the play's and its own vars, its role's defaults, vars and \
                     parameters, `-e` variables, playbook_dir, role_path), \
                     but {e}; use {dynamic} for a name that needs more"
                ),
            )
        })
}

/// `tags` given as templates (`tags: "{{ the_tags }}"`) rendered with what is known when the
/// playbook loads (the play's vars, the role's, the task's own, `-e`), as ansible-playbook
/// lists and selects them; a list result gives its items, a text is split at commas. A
/// template that cannot be rendered then stays as written.
pub(crate) fn static_tags(
    loader: &super::Loader,
    role: Option<&RoleCtx>,
    tags: Vec<String>,
    task_vars: &crate::vars::VarMap,
) -> Vec<String> {
    if !tags.iter().any(|t| t.contains("{{") || t.contains("{%")) {
        return tags;
    }
    let mut vars = loader.static_vars(role);
    crate::vars::overlay(&mut vars, task_vars);
    let templar = crate::template::Templar::new();
    let mut out = Vec::new();
    for t in tags {
        if !t.contains("{{") && !t.contains("{%") {
            out.push(t);
            continue;
        }
        match templar.render_value(&Value::String(t.clone()), &vars) {
            Ok(Value::Array(items)) => out.extend(items.iter().map(|i| match i {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })),
            Ok(Value::String(s)) => out.extend(
                s.split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty()),
            ),
            Ok(Value::Null) => {}
            Ok(other) => out.push(other.to_string()),
            Err(_) => out.push(t),
        }
    }
    out
}

/// `rolespec_validate` of `import_role`/`include_role` (default true): whether the role's
/// argument spec is checked.
pub fn rolespec_validate(args: &Value) -> bool {
    role_flag(args, "rolespec_validate", true)
}

/// A yes/no option `key` of `import_role`/`include_role` (`public`, `rolespec_validate`),
/// `default` when it is not given.
pub fn role_flag(args: &Value, key: &str, default: bool) -> bool {
    match args.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !matches!(
            s.trim().to_lowercase().as_str(),
            "no" | "false" | "off" | "n" | "f" | "0"
        ),
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        _ => default,
    }
}

/// A relative task file: beside the including file, else in the role's `tasks/` or folder; none when
/// neither exists (the caller then tries the playbook's folder, as ansible-core's search does).
pub fn resolve_rel(dir: &Path, role: Option<&RoleCtx>, file: &str) -> Option<PathBuf> {
    let p = Path::new(file);
    if p.is_absolute() {
        return Some(p.to_path_buf());
    }
    let here = dir.join(p);
    if here.exists() {
        return Some(here);
    }
    // ansible-core's `path_dwim_relative` for a role: its `tasks/`, then its own folder
    // (`import_tasks: tasks/x.yml` in `handlers/main.yml`).
    let role = role?;
    [role.path.join("tasks").join(p), role.path.join(p)]
        .into_iter()
        .find(|c| c.exists())
}

/// The `apply` keywords of an `include_tasks`/`include_role` task, under the action's key
/// (`action`) or under `args:` (ansible-core pops it from the merged arguments): the block
/// the included tasks run in gets them (ansible-core builds a `Block` of them, `notify`
/// included).
fn include_apply(
    action: &Node<'_>,
    args: Option<&Node<'_>>,
) -> Result<Option<std::sync::Arc<Keywords>>, LoadError> {
    fn under<'a>(n: &Node<'a>) -> Option<Node<'a>> {
        n.value.is_object().then(|| n.get("apply")).flatten()
    }
    let Some(apply) = under(action).or_else(|| args.and_then(under)) else {
        return Ok(None);
    };
    if !matches!(apply.value, Value::Object(_)) {
        return Err(invalid(&apply, "`apply` must be a mapping of keywords"));
    }
    let entries = apply.entries();
    let kw = super::keywords::parse_keywords(&entries, "apply")?;
    Ok(Some(std::sync::Arc::new(kw)))
}
