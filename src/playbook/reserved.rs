//! Variables named like a playbook keyword or a template global (`name`, `port`, `q`,
//! `lookup`...): ansible-core 2.19 warns `Found variable using reserved name 'q'.` for each
//! (`ansible.vars.reserved.warn_if_reserved`), as a variable `q` hides the `q()` function
//! from templates and a variable `port` reads like the play's keyword. kinit warns for the
//! variables a playbook defines when it is loaded (play, block, task and role variables and
//! `register`), and for `set_fact`/`include_vars` keys when they are set.

use super::actions::ExecAction;
use super::{Action, Playbook, Task};

/// ansible-core 2.19's `_RESERVED_NAMES`: the public and private attributes of Play, Role,
/// Block and Task, the template globals, `local_action` and `with_` (`gather_subset` left
/// out), as `ansible.vars.reserved.get_reserved_names()` lists them.
const RESERVED: &[&str] = &[
    "action",
    "always",
    "any_errors_fatal",
    "args",
    "async",
    "async_val",
    "become",
    "become_exe",
    "become_flags",
    "become_method",
    "become_user",
    "block",
    "changed_when",
    "check_mode",
    "collections",
    "connection",
    "cycler",
    "debugger",
    "delay",
    "delegate_facts",
    "delegate_to",
    "dict",
    "diff",
    "environment",
    "fact_path",
    "failed_when",
    "force_handlers",
    "gather_facts",
    "gather_timeout",
    "handlers",
    "hosts",
    "ignore_errors",
    "ignore_unreachable",
    "joiner",
    "lipsum",
    "local_action",
    "lookup",
    "loop",
    "loop_control",
    "loop_with",
    "max_fail_percentage",
    "module_defaults",
    "name",
    "namespace",
    "no_log",
    "notify",
    "now",
    "omit",
    "order",
    "poll",
    "port",
    "post_tasks",
    "pre_tasks",
    "q",
    "query",
    "range",
    "register",
    "remote_user",
    "rescue",
    "retries",
    "roles",
    "run_once",
    "serial",
    "strategy",
    "tags",
    "tasks",
    "throttle",
    "timeout",
    "undef",
    "until",
    "vars",
    "vars_files",
    "vars_prompt",
    "when",
    "with_",
];

/// The warning for variable `name` defined at `origin`, or `None` when the name is free.
pub fn warning(name: &str, origin: &dyn std::fmt::Display) -> Option<String> {
    // `vars` is one ansible-core adds itself and skips.
    (name != "vars" && RESERVED.binary_search(&name).is_ok())
        .then(|| format!("Found variable using reserved name '{name}'.\nOrigin: {origin}"))
}

/// The warnings for the variables `book` defines, each once, in the order they appear.
pub fn warnings(book: &Playbook) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |w: Option<String>| {
        if let Some(w) = w.filter(|w| !out.contains(w)) {
            out.push(w);
        }
    };
    for play in &book.plays {
        for name in play.vars.keys() {
            add(warning(name, &play.loc));
        }
        let sections = [
            &play.pre_tasks,
            &play.tasks,
            &play.post_tasks,
            &play.handlers,
        ];
        for task in sections.into_iter().flatten() {
            task_warnings(task, &mut add);
        }
    }
    out
}

fn task_warnings(task: &Task, add: &mut dyn FnMut(Option<String>)) {
    for name in task.kw.vars.keys().chain(task.kw.register.iter()) {
        add(warning(name, &task.loc));
    }
    if let Action::Exec(action) = &task.action
        && let ExecAction::SetFact { facts, .. } = action.as_ref()
    {
        for name in facts.keys() {
            add(warning(name, &task.loc));
        }
    }
    if let Some(role) = &task.role {
        for name in role.defaults.keys().chain(role.vars.keys()) {
            add(warning(name, &role.path.display()));
        }
    }
    if let Action::Block {
        block,
        rescue,
        always,
    } = &task.action
    {
        for t in block.iter().chain(rescue).chain(always) {
            task_warnings(t, add);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_so_lookups_find_every_name() {
        assert!(RESERVED.windows(2).all(|w| w[0] < w[1]));
        for name in RESERVED.iter().filter(|n| **n != "vars") {
            assert!(warning(name, &"site.yml:3").is_some(), "{name}");
        }
        assert_eq!(
            warning("q", &"site.yml:3").unwrap(),
            "Found variable using reserved name 'q'.\nOrigin: site.yml:3"
        );
        assert!(warning("vars", &"x").is_none());
        assert!(warning("web_port", &"x").is_none());
    }
}
