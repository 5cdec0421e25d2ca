//! One task mapping → `Task`: sorting its keys into keywords, the action (a module, a block,
//! an include) and the module arguments (free-form `k=v` or `_raw_params`, plus `args:`).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::yaml::Node;
use super::{
    Action, Keywords, LoadError, Location, LoopControl, LoopKind, LoopSpec, RoleCtx, Task,
    did_you_mean,
};
use crate::vars::VarMap;

/// Keywords a task may carry (besides its action).
pub const TASK_KEYWORDS: &[&str] = &[
    "name",
    "when",
    "loop",
    "loop_control",
    "register",
    "until",
    "retries",
    "delay",
    "changed_when",
    "failed_when",
    "ignore_errors",
    "ignore_unreachable",
    "notify",
    "listen",
    "tags",
    "delegate_to",
    "delegate_facts",
    "run_once",
    "become",
    "become_user",
    "become_method",
    "environment",
    "no_log",
    "vars",
    "check_mode",
    "diff",
    "timeout",
    "any_errors_fatal",
    "args",
    "action",
    "local_action",
    "collections",
    "throttle",
];

const LOOP_FORMS: &[(&str, LoopKind)] = &[
    ("with_items", LoopKind::Items),
    ("with_list", LoopKind::List),
    ("with_dict", LoopKind::Dict),
    ("with_indexed_items", LoopKind::IndexedItems),
    ("with_sequence", LoopKind::Sequence),
];

/// Modules whose free-form text is a command line, not `k=v` pairs.
const RAW_MODULES: &[&str] = &[
    "command",
    "shell",
    "raw",
    "script",
    "win_shell",
    "win_command",
    "meta",
    "include_tasks",
    "import_tasks",
    "include_vars",
    "win_powershell",
];

/// Options that `command`/`shell` accept inside their free-form text.
const COMMAND_OPTIONS: &[&str] = &["creates", "removes", "chdir", "executable", "stdin"];

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
    if crate::exec::actions::is_action(short)
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
    v.extend(crate::exec::actions::ACTIONS);
    v.extend([
        "include_tasks",
        "import_tasks",
        "include_role",
        "import_role",
    ]);
    v
}

pub fn invalid(node: &Node<'_>, detail: impl Into<String>) -> LoadError {
    LoadError::Invalid {
        file: node.file.to_path_buf(),
        line: node.line(),
        detail: detail.into(),
    }
}

pub fn loc(node: &Node<'_>) -> Location {
    Location {
        file: node.file.clone(),
        line: node.line(),
    }
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

/// Parse one task (or block).
pub fn parse_task(ctx: &TaskCtx<'_>, node: &Node<'_>) -> Result<Task, LoadError> {
    if !node.value.is_object() {
        return Err(invalid(node, "a task must be a mapping (`- name: ...`)"));
    }
    let entries = node.entries();
    let is_block = entries.iter().any(|(k, _)| *k == "block");
    let mut action_key: Option<(String, String, Node<'_>)> = None;
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
            let short = resolve_action(&module).ok_or_else(|| LoadError::UnknownModule {
                file: n.file.to_path_buf(),
                line: n.line(),
                name: module.clone(),
                suggestion: did_you_mean(&module, all_action_names()),
            })?;
            if key == "local_action" {
                kw.delegate_to = Some("localhost".into());
            }
            let task_loc = loc(node);
            let args = build_args(&short, &args, node.get("args").as_ref(), &n)?;
            return finish_module(ctx, name, short, args, kw, task_loc, &n);
        }
    }
    let task_loc = loc(node);
    if is_block {
        if kw.loop_.is_some() {
            return Err(invalid(node, "a block cannot have a loop"));
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
        });
    }
    if entries
        .iter()
        .any(|(k, _)| matches!(*k, "rescue" | "always"))
    {
        return Err(invalid(node, "`rescue`/`always` need a `block`"));
    }
    let Some((_, short, val)) = action_key else {
        return Err(invalid(node, "task has no module (and is not a block)"));
    };
    let args = build_args(&short, val.value, node.get("args").as_ref(), &val)?;
    finish_module(ctx, name, short, args, kw, task_loc, &val)
}

fn finish_module(
    ctx: &TaskCtx<'_>,
    name: Option<String>,
    short: String,
    args: Value,
    kw: Keywords,
    task_loc: Location,
    val: &Node<'_>,
) -> Result<Task, LoadError> {
    match short.as_str() {
        "import_tasks" => {
            let file = raw_param(&args, "file")
                .ok_or_else(|| invalid(val, "import_tasks needs a file name"))?;
            if file.contains("{{") {
                return Err(invalid(
                    val,
                    "import_tasks is static and needs a literal file name; use include_tasks for a templated one",
                ));
            }
            if kw.loop_.is_some() {
                return Err(invalid(val, "import_tasks cannot loop; use include_tasks"));
            }
            let path = resolve_rel(&ctx.dir, ctx.role.as_deref(), &file);
            let block = ctx.loader.import_tasks_file(ctx, &path, &task_loc)?;
            Ok(Task {
                name,
                action: Action::Block {
                    block,
                    rescue: Vec::new(),
                    always: Vec::new(),
                },
                kw,
                loc: task_loc,
                role: None,
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
            let tasks_from = args.get("tasks_from").and_then(Value::as_str);
            let mut wrapper =
                ctx.loader
                    .role_block(ctx, rname, VarMap::new(), tasks_from, &task_loc)?;
            wrapper.name = name;
            wrapper.kw = kw;
            Ok(wrapper)
        }
        "include_tasks" | "include" => {
            let file = args
                .get("_raw_params")
                .or_else(|| args.get("file"))
                .cloned()
                .ok_or_else(|| invalid(val, "include_tasks needs a file name"))?;
            Ok(Task {
                name,
                action: Action::IncludeTasks { file, args },
                kw,
                loc: task_loc,
                role: None,
            })
        }
        "include_role" => {
            if args.get("name").is_none() {
                return Err(invalid(val, "include_role needs `name`"));
            }
            Ok(Task {
                name,
                action: Action::IncludeRole { args },
                kw,
                loc: task_loc,
                role: None,
            })
        }
        _ => {
            if let Some(m) = crate::modules::lookup(&short)
                && !contains_template(&args)
                && let Err(e) = m.validate(&args)
            {
                return Err(LoadError::ModuleArgs {
                    file: task_loc.file.to_path_buf(),
                    line: task_loc.line,
                    module: short,
                    detail: e.to_string(),
                });
            }
            crate::exec::actions::validate(&short, &args).map_err(|detail| {
                LoadError::ModuleArgs {
                    file: task_loc.file.to_path_buf(),
                    line: task_loc.line,
                    module: short.clone(),
                    detail,
                }
            })?;
            Ok(Task {
                name,
                action: Action::Module { name: short, args },
                kw,
                loc: task_loc,
                role: None,
            })
        }
    }
}

/// A relative task file: beside the including file, else in the role's `tasks/`.
pub fn resolve_rel(dir: &Path, role: Option<&RoleCtx>, file: &str) -> PathBuf {
    let p = Path::new(file);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    let here = dir.join(p);
    if here.exists() {
        return here;
    }
    if let Some(r) = role {
        let in_role = r.path.join("tasks").join(p);
        if in_role.exists() {
            return in_role;
        }
    }
    here
}

fn raw_param(args: &Value, key: &str) -> Option<String> {
    args.get("_raw_params")
        .or_else(|| args.get(key))
        .and_then(Value::as_str)
        .map(str::to_string)
}

pub fn contains_template(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("{{") || s.contains("{%"),
        Value::Array(a) => a.iter().any(contains_template),
        Value::Object(m) => m.values().any(contains_template),
        _ => false,
    }
}

/// `action: copy src=a dest=b` or `action: {module: copy, src: a}`.
fn split_action_value(n: &Node<'_>) -> Result<(String, Value), LoadError> {
    match n.value {
        Value::String(s) => {
            let s = s.trim();
            let (m, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
            Ok((m.to_string(), Value::String(rest.trim().to_string())))
        }
        Value::Object(map) => {
            let m = map
                .get("module")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid(n, "`action` mapping needs `module`"))?;
            let mut rest = map.clone();
            rest.remove("module");
            Ok((m.to_string(), Value::Object(rest)))
        }
        _ => Err(invalid(n, "`action` must be a string or a mapping")),
    }
}

/// The module's argument map from its value (mapping, free-form string or null) and `args:`.
fn build_args(
    module: &str,
    value: &Value,
    args_kw: Option<&Node<'_>>,
    at: &Node<'_>,
) -> Result<Value, LoadError> {
    let mut out = Map::new();
    match value {
        Value::Null => {}
        Value::Object(m) => out = m.clone(),
        Value::String(s) => {
            if RAW_MODULES.contains(&module) {
                let mut rest = Vec::new();
                for tok in split_kv(s) {
                    match tok.split_once('=') {
                        Some((k, v))
                            if matches!(
                                module,
                                "command" | "shell" | "win_shell" | "win_command"
                            ) && COMMAND_OPTIONS.contains(&k) =>
                        {
                            out.insert(k.to_string(), Value::String(unquote(v)));
                        }
                        _ => rest.push(tok),
                    }
                }
                out.insert("_raw_params".into(), Value::String(rest.join(" ")));
            } else if s.contains('=') {
                for tok in split_kv(s) {
                    let (k, v) = tok.split_once('=').ok_or_else(|| {
                        invalid(at, format!("expected `key=value` arguments, got `{tok}`"))
                    })?;
                    out.insert(k.to_string(), Value::String(unquote(v)));
                }
            } else {
                out.insert("_raw_params".into(), Value::String(s.clone()));
            }
        }
        Value::Bool(_) | Value::Number(_) => {
            out.insert("_raw_params".into(), value.clone());
        }
        Value::Array(_) => {
            return Err(invalid(
                at,
                format!("arguments of `{module}` cannot be a list"),
            ));
        }
    }
    if let Some(a) = args_kw {
        match a.value {
            Value::Object(m) => {
                for (k, v) in m {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Null => {}
            _ => return Err(invalid(a, "`args` must be a mapping")),
        }
    }
    Ok(Value::Object(out))
}

/// Split free-form `k=v` text on whitespace outside quotes and `{{ }}` / `{% %}`.
pub fn split_kv(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quote, mut depth) = (None::<char>, 0usize);
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (None, '\'' | '"') if depth == 0 => quote = Some(c),
            (None, '{') if matches!(next, Some('{') | Some('%')) => depth += 1,
            (None, '}' | '%') if next == Some('}') && depth > 0 => depth -= 1,
            (None, c) if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        cur.push(c);
        i += 1;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn unquote(v: &str) -> String {
    let b = v.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        v[1..v.len() - 1].to_string()
    } else {
        v.to_string()
    }
}

pub fn scalar_string(n: &Node<'_>) -> Result<String, LoadError> {
    match n.value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(x) => Ok(x.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null => Ok(String::new()),
        _ => Err(invalid(n, "expected a string")),
    }
}

/// Ansible booleans: true/false and the YAML 1.1 words (yes/no/on/off), case-insensitive.
pub fn parse_bool(n: &Node<'_>, key: &str) -> Result<bool, LoadError> {
    match n.value {
        Value::Bool(b) => Ok(*b),
        Value::Number(x) if x.as_i64() == Some(0) || x.as_i64() == Some(1) => {
            Ok(x.as_i64() == Some(1))
        }
        Value::String(s) => match s.to_lowercase().as_str() {
            "yes" | "true" | "on" | "y" | "1" => Ok(true),
            "no" | "false" | "off" | "n" | "0" => Ok(false),
            _ => Err(invalid(n, format!("`{key}` expects a boolean, got `{s}`"))),
        },
        other => Err(invalid(
            n,
            format!("`{key}` expects a boolean, got `{other}`"),
        )),
    }
}

/// A condition list: a string, a bool, or a list of either (all must hold).
fn conditions(n: &Node<'_>) -> Result<Vec<String>, LoadError> {
    let one = |v: &Value| -> Result<String, LoadError> {
        match v {
            Value::String(s) => Ok(strip_braces(s)),
            Value::Bool(b) => Ok(if *b { "True".into() } else { "False".into() }),
            Value::Number(x) => Ok(x.to_string()),
            _ => Err(invalid(n, "a condition must be a string or boolean")),
        }
    };
    match n.value {
        Value::Array(items) => items.iter().map(one).collect(),
        Value::Null => Ok(Vec::new()),
        v => Ok(vec![one(v)?]),
    }
}

/// `when: "{{ x }}"` is accepted (with a warning in Ansible): use the bare expression.
fn strip_braces(s: &str) -> String {
    let t = s.trim();
    match t.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")) {
        Some(inner) if !inner.contains("{{") => inner.trim().to_string(),
        _ => t.to_string(),
    }
}

fn string_list(n: &Node<'_>) -> Result<Vec<String>, LoadError> {
    match n.value {
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(x) => Ok(x.to_string()),
                _ => Err(invalid(n, "expected a list of strings")),
            })
            .collect(),
        Value::String(s) => Ok(s
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect()),
        Value::Number(x) => Ok(vec![x.to_string()]),
        Value::Null => Ok(Vec::new()),
        _ => Err(invalid(n, "expected a string or a list of strings")),
    }
}

pub fn var_map(n: &Node<'_>) -> Result<VarMap, LoadError> {
    match n.value {
        Value::Object(m) => Ok(m.clone()),
        Value::Null => Ok(VarMap::new()),
        _ => Err(invalid(n, "`vars` must be a mapping")),
    }
}

/// Parse keyword entries (already known to be keywords) into `Keywords`.
pub fn parse_keywords(
    entries: &[(&str, Node<'_>)],
    what: &'static str,
) -> Result<Keywords, LoadError> {
    let mut kw = Keywords::default();
    for (key, n) in entries {
        match *key {
            "name" | "args" | "action" | "local_action" | "collections" | "throttle" => {}
            "when" => kw.when = conditions(n)?,
            "loop" => {
                kw.loop_ = Some(LoopSpec {
                    kind: LoopKind::Loop,
                    value: n.value.clone(),
                })
            }
            k if k.starts_with("with_") => {
                let kind = LOOP_FORMS
                    .iter()
                    .find(|(f, _)| *f == k)
                    .map(|(_, kind)| kind.clone())
                    .ok_or_else(|| LoadError::UnknownKeyword {
                        file: n.file.to_path_buf(),
                        line: n.line(),
                        what,
                        key: k.to_string(),
                        suggestion: did_you_mean(k, LOOP_FORMS.iter().map(|(f, _)| *f)),
                    })?;
                if kw.loop_.is_some() {
                    return Err(invalid(n, "only one of `loop`/`with_*` per task"));
                }
                kw.loop_ = Some(LoopSpec {
                    kind,
                    value: n.value.clone(),
                });
            }
            "loop_control" => kw.loop_control = loop_control(n)?,
            "register" => kw.register = Some(scalar_string(n)?),
            "until" => kw.until = conditions(n)?.into_iter().next(),
            "retries" => kw.retries = Some(n.value.clone()),
            "delay" => kw.delay = Some(n.value.clone()),
            "changed_when" => kw.changed_when = Some(conditions(n)?),
            "failed_when" => kw.failed_when = Some(conditions(n)?),
            "ignore_errors" => kw.ignore_errors = Some(parse_bool(n, key)?),
            "ignore_unreachable" => kw.ignore_unreachable = Some(parse_bool(n, key)?),
            "notify" => kw.notify = string_list(n)?,
            "listen" => kw.listen = string_list(n)?,
            "tags" => kw.tags = string_list(n)?,
            "delegate_to" => kw.delegate_to = Some(scalar_string(n)?),
            "delegate_facts" => kw.delegate_facts = Some(parse_bool(n, key)?),
            "run_once" => kw.run_once = Some(parse_bool(n, key)?),
            "become" => kw.become_ = Some(parse_bool(n, key)?),
            "become_user" => kw.become_user = Some(scalar_string(n)?),
            "become_method" => {
                let m = scalar_string(n)?;
                if m != "sudo" {
                    return Err(invalid(
                        n,
                        format!("`become_method` `{m}` is not supported (only `sudo`)"),
                    ));
                }
            }
            "environment" => kw.environment = Some(n.value.clone()),
            "no_log" => kw.no_log = Some(parse_bool(n, key)?),
            "vars" => kw.vars = var_map(n)?,
            "check_mode" => kw.check_mode = Some(parse_bool(n, key)?),
            "diff" => kw.diff = Some(parse_bool(n, key)?),
            "timeout" => {
                kw.timeout = Some(
                    n.value
                        .as_u64()
                        .ok_or_else(|| invalid(n, "`timeout` expects seconds"))?,
                )
            }
            "any_errors_fatal" => kw.any_errors_fatal = Some(parse_bool(n, key)?),
            other => {
                return Err(LoadError::UnknownKeyword {
                    file: n.file.to_path_buf(),
                    line: n.line(),
                    what,
                    key: other.to_string(),
                    suggestion: did_you_mean(other, TASK_KEYWORDS.iter().copied()),
                });
            }
        }
    }
    Ok(kw)
}

fn loop_control(n: &Node<'_>) -> Result<LoopControl, LoadError> {
    let mut lc = LoopControl::default();
    for (k, v) in n.entries() {
        match k {
            "loop_var" => lc.loop_var = Some(scalar_string(&v)?),
            "index_var" => lc.index_var = Some(scalar_string(&v)?),
            "label" => lc.label = Some(scalar_string(&v)?),
            "pause" => lc.pause = v.value.as_f64(),
            "extended" => lc.extended = parse_bool(&v, k)?,
            "extended_allitems" => {}
            other => {
                return Err(LoadError::UnknownKeyword {
                    file: v.file.to_path_buf(),
                    line: v.line(),
                    what: "loop_control",
                    key: other.to_string(),
                    suggestion: did_you_mean(
                        other,
                        ["loop_var", "index_var", "label", "pause", "extended"],
                    ),
                });
            }
        }
    }
    Ok(lc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_form_splits_outside_quotes_and_braces() {
        assert_eq!(
            split_kv(r#"msg="a b" var={{ x | default('y z') }} n=1"#),
            vec![r#"msg="a b""#, "var={{ x | default('y z') }}", "n=1"]
        );
    }
}
