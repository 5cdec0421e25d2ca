//! One play mapping → `Play`: hosts, variables, strategy knobs, and its task sections with
//! `roles:` expanded in front of `tasks:`.

use std::cell::RefCell;
use std::path::Path;

use serde_json::Value;

use super::prompt::parse_var_prompt;
use super::role::role_entry;
use super::task::{TaskCtx, invalid, loc, parse_bool, parse_keywords, parse_tasks, scalar_string};
use super::yaml::Node;
use super::{HostOrder, LoadError, Loader, Play, Serial, Strategy, did_you_mean};

const PLAY_KEYWORDS: &[&str] = &[
    "name",
    "hosts",
    "vars",
    "vars_files",
    "roles",
    "pre_tasks",
    "tasks",
    "post_tasks",
    "handlers",
    "gather_facts",
    "serial",
    "strategy",
    "any_errors_fatal",
    "force_handlers",
    "max_fail_percentage",
    "become",
    "become_user",
    "become_method",
    "become_flags",
    "tags",
    "environment",
    "module_defaults",
    "no_log",
    "check_mode",
    "diff",
    "ignore_errors",
    "ignore_unreachable",
    "collections",
    "timeout",
    "throttle",
    "debugger",
    "remote_user",
    "connection",
    "port",
    "run_once",
    "gather_subset",
    "gather_timeout",
    "fact_path",
    "order",
    "vars_prompt",
];

pub(crate) fn parse_play(loader: &Loader, node: &Node<'_>, dir: &Path) -> Result<Play, LoadError> {
    if !node.value.is_object() {
        return Err(invalid(node, "a play must be a mapping"));
    }
    let mut inherit = Vec::new();
    for (k, v) in node.entries() {
        // `user`, the old name of `remote_user` (ansible-core's `Play.preprocess_data`).
        if k == "user" {
            if node.get("remote_user").is_some() {
                return Err(invalid(
                    node,
                    "both 'user' and 'remote_user' are set for this play. The use of 'user' \
                     is deprecated, and should be removed",
                ));
            }
            inherit.push(("remote_user", v));
            continue;
        }
        if !PLAY_KEYWORDS.contains(&k) {
            return Err(LoadError::UnknownKeyword {
                file: v.file.to_path_buf(),
                line: v.line(),
                what: "a play",
                key: k.to_string(),
                suggestion: did_you_mean(k, PLAY_KEYWORDS.iter().copied()),
            });
        }
        if k == "debugger" {
            super::keywords::check_debugger(&v)?;
        }
        if matches!(
            k,
            "become"
                | "become_user"
                | "become_method"
                | "become_flags"
                | "tags"
                | "environment"
                | "module_defaults"
                | "no_log"
                | "check_mode"
                | "diff"
                | "ignore_errors"
                | "ignore_unreachable"
                | "timeout"
                | "throttle"
                | "remote_user"
                | "connection"
                | "port"
                | "run_once"
        ) {
            inherit.push((k, v));
        }
    }
    let hosts = node
        .get("hosts")
        .ok_or_else(|| invalid(node, "a play needs `hosts`"))?;
    // ansible-core's checks and words (`Play._validate_hosts`).
    let hosts_items: Vec<String> = match hosts.value {
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(String::from))
            .collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    };
    let hosts = match hosts.value {
        Value::Array(items) if !items.is_empty() => {
            let mut names = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => names.push(s.as_str()),
                    Value::Null => {
                        return Err(invalid(
                            &hosts,
                            "Hosts list cannot contain values of 'None'. Please check your playbook",
                        ));
                    }
                    other => {
                        return Err(invalid(
                            &hosts,
                            format!("Hosts list contains an invalid host value: '{other}'"),
                        ));
                    }
                }
            }
            names.join(":")
        }
        Value::String(s) if !s.trim().is_empty() => s.clone(),
        Value::Array(_) | Value::String(_) | Value::Null => {
            return Err(invalid(
                &hosts,
                "Hosts list cannot be empty. Please check your playbook",
            ));
        }
        _ => {
            return Err(invalid(
                &hosts,
                "Hosts list must be a sequence or string. Please check your playbook.",
            ));
        }
    };
    // An unnamed play is named by its hosts, a list's items joined with `,` (ansible-core's
    // `Play.get_name`).
    let name = match node.get("name") {
        Some(n) => scalar_string(&n)?,
        None => hosts_items.join(","),
    };
    let vars = match node.get("vars") {
        Some(n) => super::keywords::keyword_vars(&n)?,
        None => Default::default(),
    };
    loader.set_play_vars(&vars);
    let ctx = TaskCtx {
        loader,
        dir: dir.to_path_buf(),
        role: None,
        stack: Vec::new(),
        handlers: RefCell::new(Vec::new()),
        is_handler: false,
    };
    // Short module names are looked up in the play's `collections` while its tasks load.
    let collections = match node.get("collections") {
        Some(n) => super::keywords::collection_list(&n)?,
        None => Vec::new(),
    };
    let scope = loader.collections_scope(collections);
    let mut tasks = Vec::new();
    loader.take_role_names();
    if let Some(roles) = node.get("roles") {
        if !matches!(roles.value, Value::Array(_) | Value::Null) {
            return Err(invalid(
                &roles,
                format!(
                    "A malformed role declaration was encountered: ds ({}) should be a list \
                     but was a <class '{}'>",
                    crate::template::py_str(roles.value),
                    super::task::python_type(roles.value)
                ),
            ));
        }
        for r in roles.items() {
            if let Value::String(s) = r.value
                && s.contains(',')
            {
                return Err(invalid(
                    &r,
                    format!("Invalid old style role requirement: {s}"),
                ));
            }
            let (using, kw) = role_entry(&r)?;
            let mut t = loader.role_block(&ctx, using, &loc(&r))?;
            if let Some(r) = &t.role {
                loader.note_role(r, false);
            }
            t.kw = kw;
            tasks.push(t);
        }
    }
    // Handlers in ansible-core's order: the `roles:` section's, the play's own, then those
    // `import_role` brings in `pre_tasks`, `post_tasks` and `tasks` (`Play` loads its
    // `handlers` before its task sections and the strategy puts the roles' first). The order
    // is the order they run in, and the later of two answering to one name wins.
    let role_handlers = ctx.handlers.take();
    tasks.extend(parse_tasks(&ctx, section(node, "tasks")?)?);
    let task_handlers = ctx.handlers.take();
    let pre_tasks = parse_tasks(&ctx, section(node, "pre_tasks")?)?;
    let post_tasks = parse_tasks(&ctx, section(node, "post_tasks")?)?;
    let hctx = TaskCtx {
        is_handler: true,
        handlers: RefCell::new(Vec::new()),
        stack: Vec::new(),
        dir: dir.to_path_buf(),
        role: None,
        loader,
    };
    let mut handlers = role_handlers;
    handlers.extend(parse_tasks(&hctx, section(node, "handlers")?)?);
    handlers.extend(ctx.handlers.into_inner());
    handlers.extend(task_handlers);
    drop(scope);
    let vars_files = match node.get("vars_files") {
        Some(n) => {
            let names = |v: &Value| -> Option<Vec<String>> {
                match v {
                    Value::String(s) => Some(vec![s.clone()]),
                    Value::Array(c) => c.iter().map(|c| c.as_str().map(str::to_string)).collect(),
                    _ => None,
                }
            };
            let entries = match n.value {
                Value::Array(items) => items.clone(),
                Value::String(_) => vec![n.value.clone()],
                Value::Null => Vec::new(),
                _ => return Err(invalid(&n, "`vars_files` must be a list of file names")),
            };
            entries
                .iter()
                .map(|v| {
                    names(v).ok_or_else(|| {
                        invalid(
                            &n,
                            format!(
                                "`vars_files` entries must be file names or lists of them, got `{v}`"
                            ),
                        )
                    })
                })
                .collect::<Result<_, _>>()?
        }
        None => Vec::new(),
    };
    // `serial`, `strategy` and `order` may be templates over the play's vars and the extra
    // vars, rendered when the play starts (ansible-core templates them in
    // `Play.post_validate` before its hosts run).
    let template_of = |key: &str| {
        node.get(key)
            .and_then(|n| n.value.as_str().map(str::to_string))
            .filter(|s| s.contains("{{") || s.contains("{%"))
    };
    let (serial_template, strategy_template, order_template, max_fail_percentage_template) = (
        template_of("serial"),
        template_of("strategy"),
        template_of("order"),
        template_of("max_fail_percentage"),
    );
    let serial = match node.get("serial") {
        Some(_) if serial_template.is_some() => Vec::new(),
        Some(n) => parse_serial(&n)?,
        None => Vec::new(),
    };
    let strategy = match node.get("strategy") {
        Some(_) if strategy_template.is_some() => Strategy::Linear,
        Some(n) => {
            let word = scalar_string(&n)?;
            Strategy::from_word(&word).ok_or_else(|| {
                invalid(
                    &n,
                    format!("unknown strategy `{word}` (expected {})", Strategy::WORDS),
                )
            })?
        }
        None => Strategy::Linear,
    };
    let order = match node.get("order") {
        Some(_) if order_template.is_some() => HostOrder::Inventory,
        Some(n) => {
            let word = scalar_string(&n)?;
            HostOrder::from_word(&word).ok_or_else(|| invalid(&n, HostOrder::invalid(&word)))?
        }
        None => HostOrder::Inventory,
    };
    let max_fail_percentage = match node.get("max_fail_percentage") {
        Some(_) if max_fail_percentage_template.is_some() => None,
        Some(n) => Some(
            n.value
                .as_f64()
                .or_else(|| n.value.as_str().and_then(percent_from_text))
                .ok_or_else(|| invalid(&n, "`max_fail_percentage` expects a number"))?,
        ),
        None => None,
    };
    let role_names = loader.take_role_names();
    let (mut role_defaults, mut role_exports) =
        (crate::vars::VarMap::new(), crate::vars::VarMap::new());
    for r in &role_names.public {
        crate::vars::overlay(&mut role_defaults, &r.defaults);
        crate::vars::overlay(&mut role_exports, &r.vars);
    }
    Ok(Play {
        role_names,
        role_defaults,
        role_exports,
        name,
        hosts,
        hosts_items,
        loc: loc(node),
        vars,
        vars_files,
        gather_facts: match node.get("gather_facts") {
            Some(n) => Some(parse_bool(&n, "gather_facts")?),
            None => None,
        },
        gather_args: ["gather_subset", "gather_timeout", "fact_path"]
            .into_iter()
            .filter_map(|k| node.get(k).map(|n| (k.to_string(), n.value.clone())))
            .filter(|(_, v)| !v.is_null())
            .collect(),
        serial,
        serial_template,
        strategy_template,
        order_template,
        max_fail_percentage_template,
        strategy,
        order,
        vars_prompt: match node.get("vars_prompt") {
            Some(n) => n
                .items()
                .iter()
                .map(parse_var_prompt)
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        },
        // A templated `any_errors_fatal` goes to the play's keywords, rendered per task.
        force_handlers: match node.get("force_handlers") {
            Some(n) => Some(parse_bool(&n, "force_handlers")?),
            None => None,
        },
        any_errors_fatal: match node.get("any_errors_fatal") {
            Some(n) if crate::playbook::task_contains_template(n.value) => {
                inherit.push(("any_errors_fatal", n));
                false
            }
            Some(n) => parse_bool(&n, "any_errors_fatal")?,
            None => false,
        },
        max_fail_percentage,
        kw: parse_keywords(&inherit, "a play")?,
        pre_tasks,
        tasks,
        post_tasks,
        handlers,
    })
}

/// A `max_fail_percentage` given as text, as ansible-core's `percent` field type reads it
/// (a number with an optional `%`).
pub fn percent_from_text(text: &str) -> Option<f64> {
    text.trim().trim_end_matches('%').trim().parse().ok()
}

/// A rendered `serial`: a count, a percentage, or a list of them (`[1, "50%"]`, as YAML or
/// JSON text). Errors say what was expected.
pub fn serial_from_text(text: &str) -> Result<Vec<Serial>, String> {
    let one = |v: &Value| -> Result<Serial, String> {
        let s = match v {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.trim().to_string(),
            other => return Err(format!("`serial` rendered to `{other}`")),
        };
        if let Some(p) = s.strip_suffix('%') {
            return p
                .trim()
                .parse::<f64>()
                .map(Serial::Percent)
                .map_err(|_| format!("`serial` rendered to the bad percentage `{s}`"));
        }
        s.parse::<usize>()
            .ok()
            .filter(|c| *c > 0)
            .map(Serial::Count)
            .ok_or_else(|| {
                format!("`serial` rendered to `{s}`, expected a positive count or a percentage")
            })
    };
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Array(items)) => items.iter().map(one).collect(),
        Ok(v @ Value::Number(_)) => Ok(vec![one(&v)?]),
        _ => Ok(vec![one(&Value::String(text.to_string()))?]),
    }
}

fn parse_serial(n: &Node<'_>) -> Result<Vec<Serial>, LoadError> {
    let one = |v: &Value| -> Result<Serial, LoadError> {
        match v {
            Value::Number(x) if x.as_u64().is_some_and(|c| c > 0) => {
                Ok(Serial::Count(x.as_u64().unwrap_or(1) as usize))
            }
            Value::String(s) if s.ends_with('%') => s
                .trim_end_matches('%')
                .trim()
                .parse::<f64>()
                .map(Serial::Percent)
                .map_err(|_| invalid(n, format!("bad `serial` percentage `{s}`"))),
            Value::String(s) => s
                .parse::<usize>()
                .ok()
                .filter(|c| *c > 0)
                .map(Serial::Count)
                .ok_or_else(|| invalid(n, format!("bad `serial` value `{s}`"))),
            other => Err(invalid(
                n,
                format!("`serial` expects a positive count or a percentage, got `{other}`"),
            )),
        }
    };
    match n.value {
        Value::Array(items) => items.iter().map(one).collect(),
        v => Ok(vec![one(v)?]),
    }
}

/// A play's task section (`tasks`, `pre_tasks`...), refused in ansible-core's words when it is
/// neither a list nor empty (`Play._load_tasks` over `load_list_of_blocks`).
fn section<'a>(play: &Node<'a>, key: &str) -> Result<Option<Node<'a>>, LoadError> {
    match play.get(key) {
        Some(n) if !matches!(n.value, Value::Array(_) | Value::Null) => Err(invalid(
            &n,
            format!(
                "A malformed block was encountered while loading {key}: {} should be a list or \
                 None but is <class '{}'>",
                crate::template::py_str(n.value),
                super::task::python_type(n.value)
            ),
        )),
        other => Ok(other),
    }
}
