//! `Inherit`: what enclosing plays, blocks, roles and includes hand down to the tasks inside
//! them (conditions, tags, variables, role parameters, environment, scalar keywords), and
//! `effective`, a task's keywords completed from its parent's.

use std::sync::Arc;

use serde_json::Value;

use crate::playbook::{Keywords, Play, RoleCtx, Task};
use crate::vars::VarMap;

/// What enclosing plays, blocks, roles and includes hand down to a task.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inherit {
    pub when: Vec<String>,
    pub tags: Vec<String>,
    pub vars: VarMap,
    /// Role and include parameters (above `set_fact` in precedence).
    pub params: VarMap,
    pub roles: Vec<Arc<RoleCtx>>,
    pub environment: Vec<Value>,
    /// `module_defaults` of the play and enclosing blocks, outermost first.
    pub module_defaults: Vec<Value>,
    /// Scalar keywords (`become`, `ignore_errors`, ...): the innermost setting wins.
    pub kw: Keywords,
    pub handler: bool,
    /// The dynamic includes this context is inside, outermost first (`file:line` of each
    /// `include_tasks`/`include_role`), for the nesting limit.
    pub includes: Vec<String>,
}

impl Inherit {
    /// A task's title in output (`Task::title` with the innermost role).
    pub fn title(&self, task: &Task) -> String {
        task.title(self.roles.last().map(|r| r.full_name()).as_deref())
    }

    /// `title` with `name` (the task's name as rendered) for the task's own name.
    pub fn title_named(&self, task: &Task, name: &str) -> String {
        task.title_named(self.roles.last().map(|r| r.full_name()).as_deref(), name)
    }

    pub fn from_play(play: &Play) -> Self {
        let mut i = Self {
            // Only an `import_playbook`'s `when` puts conditions on a play.
            when: play.kw.when.clone(),
            tags: play.kw.tags.clone(),
            kw: play.kw.clone(),
            ..Self::default()
        };
        if let Some(e) = &play.kw.environment {
            i.environment.push(e.clone());
        }
        if let Some(d) = &play.kw.module_defaults {
            i.module_defaults.push(d.clone());
        }
        if play.any_errors_fatal {
            i.kw.any_errors_fatal = Some(true);
        }
        i
    }

    /// The context inside block (or role wrapper) `t`.
    pub fn enter(&self, t: &Task) -> Self {
        let mut i = self.clone();
        i.when.extend(t.kw.when.iter().cloned());
        i.tags.extend(t.kw.tags.iter().cloned());
        crate::vars::overlay(&mut i.vars, &t.kw.vars);
        if let Some(e) = &t.kw.environment {
            i.environment.push(e.clone());
        }
        if let Some(d) = &t.kw.module_defaults {
            i.module_defaults.push(d.clone());
        }
        if let Some(r) = &t.role {
            crate::vars::combine(&mut i.params, &r.params);
            i.roles.push(r.clone());
        }
        i.kw = effective(&t.kw, &self.kw);
        i
    }
}

/// `task`'s keywords with every unset inheritable one taken from `parent`.
pub(crate) fn effective(task: &Keywords, parent: &Keywords) -> Keywords {
    let mut k = task.clone();
    // A block's `notify` (an include's `apply`) holds for the tasks inside that name none.
    if k.notify.is_empty() {
        k.notify = parent.notify.clone();
    }
    macro_rules! inherit {
        ($($f:ident),*) => { $( if k.$f.is_none() { k.$f = parent.$f.clone(); } )* };
    }
    inherit!(
        ignore_errors,
        ignore_unreachable,
        delegate_to,
        delegate_facts,
        remote_user,
        connection,
        port,
        run_once,
        become_,
        become_user,
        become_method,
        become_flags,
        no_log,
        check_mode,
        diff,
        timeout,
        throttle,
        any_errors_fatal
    );
    // A templated keyword of the parent applies where the task sets that keyword neither
    // way (its inherited value, copied above, is replaced when the template is rendered).
    for (key, t) in &parent.templated {
        if !k.templated.iter().any(|(own, _)| own == key) && !sets(task, key) {
            k.templated.push((key.clone(), t.clone()));
        }
    }
    k
}

/// Whether `kw` gives keyword `key` a value of its own (not a template).
fn sets(kw: &Keywords, key: &str) -> bool {
    match key {
        "ignore_errors" => kw.ignore_errors.is_some(),
        "ignore_unreachable" => kw.ignore_unreachable.is_some(),
        "delegate_facts" => kw.delegate_facts.is_some(),
        "run_once" => kw.run_once.is_some(),
        "become" => kw.become_.is_some(),
        "no_log" => kw.no_log.is_some(),
        "check_mode" => kw.check_mode.is_some(),
        "diff" => kw.diff.is_some(),
        "timeout" => kw.timeout.is_some(),
        "async" => kw.async_.is_some(),
        "poll" => kw.poll.is_some(),
        "any_errors_fatal" => kw.any_errors_fatal.is_some(),
        "throttle" => kw.throttle.is_some(),
        _ => false,
    }
}
