//! Which handlers a notification wakes: handlers listed as ansible-core's strategy lists
//! them (in blocks, roles' before the play's, an included role's last), each with its name as
//! notifications see it, and the search that picks the handlers a notification names or a
//! topic they listen to (`StrategyBase.search_handlers_by_notification`).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::inherit::{Inherit, effective};
use super::{Executor, PlayRun};
use crate::playbook::Task;
use crate::report::Event;

/// Handlers as notifications reach them, each with the context it runs in and its handler
/// block: a [`crate::playbook::handler_group`] stands for its tasks (a block of their own); a
/// role's handler runs in its role, with the keywords of the role's entry. Consecutive
/// handlers of one level share a block, as ansible-core gives bare handlers an implicit one.
pub(crate) fn notifiable<'t>(
    tasks: &'t [Task],
    inh: &Inherit,
    blocks: &mut usize,
    out: &mut Vec<(&'t Task, Inherit, usize)>,
) {
    // The block of the current run of handlers, and the role they come from.
    let mut run: Option<(usize, Option<&Arc<crate::playbook::RoleCtx>>)> = None;
    for t in tasks {
        let mut i = inh.clone();
        if let Some(r) = &t.role {
            i.kw = effective(&r.keywords, &i.kw);
        }
        match crate::playbook::handler_group(t) {
            Some(inner) => {
                run = None;
                notifiable(inner, &i.enter(t), blocks, out)
            }
            None => {
                if let Some(r) = &t.role {
                    i.roles.push(r.clone());
                }
                let same_role = |r: Option<&Arc<_>>| match (r, t.role.as_ref()) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (a, b) => a.is_none() && b.is_none(),
                };
                let block = match run {
                    Some((block, role)) if same_role(role) => block,
                    _ => {
                        *blocks += 1;
                        run = Some((*blocks, t.role.as_ref()));
                        *blocks
                    }
                };
                out.push((t, i, block));
            }
        }
    }
}

/// A handler as notifications see it: the task, the context it runs in, its handler block and
/// its name (rendered when templated; `None` for no name or one that does not render).
pub(crate) type HandlerLeaf<'t> = (&'t Task, Inherit, usize, Option<String>);

impl Executor {
    /// `handlers` as [`notifiable`] lists them, each with its name as notifications see it.
    pub(crate) fn handler_leaves<'t>(
        &self,
        pr: &PlayRun<'_>,
        handlers: &'t [Task],
        inh: &Inherit,
        warn: bool,
    ) -> Vec<HandlerLeaf<'t>> {
        let mut leaves = Vec::new();
        notifiable(handlers, inh, &mut 0, &mut leaves);
        leaves
            .into_iter()
            .map(|(t, i, block)| {
                let name = match self.handler_name(pr, t, &i) {
                    Ok(name) => name,
                    Err(e) => {
                        if warn && t.kw.listen.is_empty() {
                            self.emit(Event::Warning {
                                message: format!(
                                    "Handler '{}' is unusable because it has no listen topics \
                                     and the name could not be templated (host-specific \
                                     variables are not supported in handler names). The \
                                     error: {e}",
                                    t.name.as_deref().unwrap_or_default()
                                ),
                            });
                        }
                        None
                    }
                };
                (t, i, block, name)
            })
            .collect()
    }

    /// A handler's name as notifications see it: a templated name is rendered with its role's
    /// defaults, the play's vars, its role's vars and `-e`, once for every host (ansible-core
    /// templates it without a host, and a handler whose name does not render answers only to
    /// its `listen` topics).
    fn handler_name(
        &self,
        pr: &PlayRun<'_>,
        t: &Task,
        inh: &Inherit,
    ) -> Result<Option<String>, crate::template::TemplateError> {
        let Some(name) = t.name.as_deref() else {
            return Ok(None);
        };
        if !name.contains("{{") && !name.contains("{%") {
            return Ok(Some(name.to_string()));
        }
        let role = inh.roles.last();
        let mut vars = role.map(|r| r.defaults.clone()).unwrap_or_default();
        crate::vars::combine(&mut vars, &pr.play.vars);
        if let Some(r) = role {
            crate::vars::combine(&mut vars, &r.vars);
        }
        crate::vars::combine(&mut vars, &self.opts.extra_vars);
        Ok(Some(
            match self
                .templar
                .render_value(&Value::String(name.to_string()), &vars)?
            {
                Value::String(s) => s,
                other => other.to_string(),
            },
        ))
    }
}

/// The handlers (indexes into `leaves`, from [`notifiable`]) notification `n` wakes, as
/// ansible-core's `StrategyBase.search_handlers_by_notification`: handler blocks newest first
/// (an included role's over the play's over `roles:`), the handlers of a block in order; by
/// name the first that answers (`name` or `role : name`), by `listen` every listener, one per
/// handler name. A role included twice, or two handlers of one name, run once.
pub(crate) fn woken_by(leaves: &[HandlerLeaf<'_>], n: &str) -> Vec<usize> {
    let mut order: Vec<usize> = (0..leaves.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(leaves[i].2), i));
    let answers = |i: usize| {
        let (_, inh, _, name) = &leaves[i];
        let role = inh.roles.last().map(|r| &**r);
        name.as_deref()
            .is_some_and(|name| crate::playbook::handler_named(name, role, n))
    };
    let mut out: Vec<usize> = order
        .iter()
        .copied()
        .find(|&i| answers(i))
        .into_iter()
        .collect();
    let mut seen = HashSet::new();
    for &i in &order {
        let (t, inh, _, name) = &leaves[i];
        let role = inh.roles.last().map(|r| &**r);
        // A role's handler listens to `role : topic` as well (`Handler._validate_listen`).
        let listens =
            t.kw.listen
                .iter()
                .any(|l| crate::playbook::handler_named(l, role, n));
        if listens && name.as_ref().is_none_or(|name| seen.insert(name)) {
            out.push(i);
        }
    }
    out
}
