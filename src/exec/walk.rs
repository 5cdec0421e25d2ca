//! The tree walker: runs a list of tasks over a set of hosts in lockstep, descending into
//! blocks (with `rescue`/`always`), running dynamic includes, and flushing handlers.
//! Keywords of plays, blocks and roles reach the tasks inside through `Inherit`.
//!
//! One file: blocks, includes and handler flushes recurse into each other through the walk.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::future::join_all;
use serde_json::Value;

use super::host_task::{Flow, HostOutcome, OnHost};
use super::inherit::{Inherit, effective};
use super::notify::woken_by;
use super::{Executor, PlayRun};
use crate::modules::BoxFuture;
use crate::playbook::{Action, Keywords, Task};
use crate::report::{Event, Status};

impl Executor {
    pub(crate) fn active(&self, hosts: &[String]) -> Vec<String> {
        let map = self.hosts.lock().unwrap();
        hosts
            .iter()
            .filter(|h| map.get(*h).is_none_or(|s| s.active()))
            .cloned()
            .collect()
    }

    /// `ansible_play_hosts`: the play's hosts without those that failed or were unreachable,
    /// and without those ended in this batch. A host ended (`meta: end_host`) in an earlier
    /// batch counts again, as in Ansible, whose removed-host list starts anew each batch and
    /// gets only the failed hosts back.
    pub(crate) fn play_hosts_left(&self, pr: &PlayRun<'_>) -> Vec<String> {
        let map = self.hosts.lock().unwrap();
        pr.all_hosts
            .iter()
            .filter(|h| {
                map.get(*h).is_none_or(|s| {
                    !(s.failed || s.unreachable || (s.ended && pr.batch.contains(h)))
                })
            })
            .cloned()
            .collect()
    }

    pub(crate) fn run_tasks<'a>(
        &'a self,
        pr: &'a PlayRun<'a>,
        hosts: &'a [String],
        tasks: &'a [Task],
        inh: &'a Inherit,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            for task in tasks {
                if self.stopping() || pr.is_ended() {
                    return;
                }
                let active = self.active(hosts);
                if active.is_empty() {
                    return;
                }
                match &task.action {
                    Action::Block {
                        block,
                        rescue,
                        always,
                    } => match task.role.as_ref().and_then(|r| r.dedup.as_ref()) {
                        Some(key) => self.run_role_once(pr, &active, task, key, inh).await,
                        None => {
                            self.run_block(pr, &active, task, [block, rescue, always], inh)
                                .await
                        }
                    },
                    _ => self.run_leaf(pr, &active, task, inh).await,
                }
            }
        })
    }

    /// A role from `roles:` or `dependencies:` on the hosts it has not run on yet in this
    /// play (ansible-core skips a cached role whose `_completed` has the host); it has run on
    /// a host once one of its tasks ran there.
    async fn run_role_once(
        &self,
        pr: &PlayRun<'_>,
        active: &[String],
        task: &Task,
        key: &str,
        inh: &Inherit,
    ) {
        let Action::Block {
            block,
            rescue,
            always,
        } = &task.action
        else {
            return;
        };
        let (hosts, before): (Vec<String>, Vec<u64>) = {
            let done = pr.roles_done.lock().unwrap();
            active
                .iter()
                .filter(|h| !done.contains(&((*h).clone(), key.to_string())))
                .map(|h| (h.clone(), self.with_state(h, |s| s.tasks_ran)))
                .unzip()
        };
        if hosts.is_empty() {
            return;
        }
        self.run_block(pr, &hosts, task, [block, rescue, always], inh)
            .await;
        let mut done = pr.roles_done.lock().unwrap();
        for (h, n) in hosts.iter().zip(before) {
            if self.with_state(h, |s| s.tasks_ran > n) {
                done.insert((h.clone(), key.to_string()));
            }
        }
    }

    async fn run_block(
        &self,
        pr: &PlayRun<'_>,
        entered: &[String],
        task: &Task,
        [block, rescue, always]: [&Vec<Task>; 3],
        inh: &Inherit,
    ) {
        let inner = inh.enter(task);
        self.run_tasks(pr, entered, block, &inner).await;
        let fatal = (!rescue.is_empty() || !always.is_empty()) && pr.take_fatal();
        let failed: Vec<String> = entered
            .iter()
            .filter(|h| self.with_state(h, |s| s.failed && !s.unreachable))
            .cloned()
            .collect();
        // After an `any_errors_fatal` stop every host of the block goes to its rescue
        // (ansible-core marks them all failed); only those that failed count as rescued.
        let rescuing: Vec<String> = match fatal {
            true => entered
                .iter()
                .filter(|h| failed.contains(h) || self.with_state(h, |s| s.active()))
                .cloned()
                .collect(),
            false => failed.clone(),
        };
        if !rescue.is_empty() && !failed.is_empty() && !self.stopping() {
            // A failure a rescue section takes counts as rescued, not failed, whatever the
            // rescue then does (ansible-core's strategy counts `rescued` when the task fails
            // inside a block with a rescue; a task failing in the rescue counts on its own).
            for h in &failed {
                self.with_state(h, |s| s.failed = false);
                self.emit(Event::Rescued { host: h.clone() });
            }
            self.run_tasks(pr, &rescuing, rescue, &inner).await;
        }
        if !always.is_empty() && !self.stopping() {
            let hosts: Vec<String> = entered
                .iter()
                .filter(|h| self.with_state(h, |s| !s.unreachable && !s.ended))
                .cloned()
                .collect();
            let was_failed: Vec<(String, u64)> = hosts
                .iter()
                .filter_map(|h| {
                    self.with_state(h, |s| s.failed.then_some(s.errors_cleared))
                        .map(|cleared| (h.clone(), cleared))
                })
                .collect();
            for (h, _) in &was_failed {
                self.with_state(h, |s| s.failed = false);
            }
            // `always` runs even after `end_play` stopped the block's remaining tasks.
            let ended = pr.ended.swap(false, Ordering::SeqCst);
            self.run_tasks(pr, &hosts, always, &inner).await;
            if ended {
                pr.end();
            }
            // The block's failure stands unless `always` cleared it (`meta: clear_host_errors`).
            for (h, cleared) in &was_failed {
                self.with_state(h, |s| s.failed |= s.errors_cleared == *cleared);
            }
        }
        if fatal && entered.iter().any(|h| self.with_state(h, |s| s.failed)) {
            pr.end_fatal();
        }
    }

    /// Whether `task` is selected by tags and `--start-at-task`.
    fn selected(&self, task: &Task, inh: &Inherit) -> bool {
        if !self.started.load(Ordering::SeqCst) {
            if task.name.is_some() && task.name == self.opts.start_at_task {
                self.started.store(true, Ordering::SeqCst);
            } else {
                return false;
            }
        }
        if inh.handler {
            return true;
        }
        let mut tags = inh.tags.clone();
        tags.extend(task.kw.tags.iter().cloned());
        self.tags().selects(&tags)
    }

    /// `kw` with its templated batch keywords (`run_once: "{{ x }}"`, `throttle`,
    /// `any_errors_fatal`) rendered: they decide for the whole task, so they are rendered
    /// once, with the variables of the batch's first host, as ansible-core's strategy does.
    /// The other templated keywords (`become`, `no_log`, `timeout`...) stay in
    /// `kw.templated`: each host renders them with its own variables, and each loop item with
    /// its item (`render_host_keywords`), as ansible-core's task executor post-validates the
    /// task per host and item. A keyword that cannot be rendered or converted is left as
    /// inherited, and the first such error is returned with the keywords: it fails the task
    /// on each host (`ignore_errors` and `register` still apply, as ansible-core fails the
    /// task when it validates the keyword).
    fn render_templated_keywords(
        &self,
        pr: &PlayRun<'_>,
        hosts: &[String],
        inh: &Inherit,
        mut kw: Keywords,
    ) -> (Keywords, Option<String>) {
        let Some(first) = hosts.first() else {
            return (kw, None);
        };
        let templated_notify = kw
            .notify
            .iter()
            .any(|n| n.contains("{{") || n.contains("{%"));
        if !templated_notify && !kw.templated.iter().any(|(k, _)| is_batch_keyword(k)) {
            return (kw, None);
        }
        let ctx = match self.task_vars(pr, first, inh, &kw.vars) {
            Ok(ctx) => ctx,
            Err(e) => {
                kw.templated.clear();
                return (kw, Some(e.to_string()));
            }
        };
        let mut error = None;
        // `notify` entries are templates too; one that gives a list names several handlers
        // (a handler's `listen` topics are not templated).
        if templated_notify {
            let mut names = Vec::new();
            for n in std::mem::take(&mut kw.notify) {
                match self.templar.render_value(&Value::String(n), &ctx) {
                    Ok(Value::Array(items)) => names.extend(items.iter().map(|i| match i {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })),
                    Ok(Value::String(s)) => names.push(s),
                    Ok(other) => names.push(other.to_string()),
                    Err(e) => {
                        error.get_or_insert(format!("Error processing keyword 'notify': {e}"));
                    }
                }
            }
            kw.notify = names;
        }
        let (batch, per_host): (Vec<_>, Vec<_>) = std::mem::take(&mut kw.templated)
            .into_iter()
            .partition(|(k, _)| is_batch_keyword(k));
        kw.templated = per_host;
        for (key, template) in batch {
            let set = self
                .templar
                .render_str(&template, &ctx)
                .map_err(|e| e.to_string())
                .and_then(|value| {
                    // `omit` leaves the keyword as inherited (`effective` copied the
                    // parent's value).
                    if value == crate::template::OMIT {
                        return Ok(());
                    }
                    crate::playbook::set_templated(&mut kw, &key, &value)
                });
            if let Err(e) = set {
                error.get_or_insert(match key.as_str() {
                    // ansible-core's own words for `throttle` (`StrategyBase._queue_task`).
                    "throttle" if !e.starts_with("Failed to convert") => {
                        format!("Failed to convert the throttle value to an integer: {e}")
                    }
                    "throttle" => e,
                    _ => format!("Error processing keyword '{key}': {e}"),
                });
            }
        }
        (kw, error)
    }

    /// The task's title for its banner and results: its name templated with the variables of
    /// the first host, 2.19's markers where a part cannot be, and their warning told first
    /// (ansible-core's strategies post-validate `name` before `v2_playbook_on_task_start`:
    /// `Task._post_validate_name`). A name without a template costs nothing.
    fn banner_title(
        &self,
        pr: &PlayRun<'_>,
        hosts: &[String],
        inh: &Inherit,
        task: &Task,
        kw: &Keywords,
    ) -> String {
        let (Some(name), Some(first)) = (&task.name, hosts.first()) else {
            return inh.title(task);
        };
        if !crate::template::is_template(name) {
            return inh.title(task);
        }
        let Ok(ctx) = self.task_vars(pr, first, inh, &kw.vars) else {
            return inh.title(task);
        };
        let marked = self.templar.render_marked(name, &ctx);
        if let Some(message) = marked.warning() {
            self.emit(Event::SourceWarning {
                message,
                location: task.loc.to_string(),
                key: "name".into(),
            });
        }
        inh.title_named(task, &marked.text)
    }

    /// Run one non-block task on every active host (once with `run_once`).
    async fn run_leaf(&self, pr: &PlayRun<'_>, hosts: &[String], task: &Task, inh: &Inherit) {
        if !self.selected(task, inh) {
            return;
        }
        let kw = effective(&task.kw, &inh.kw);
        let (kw, keyword_error) = self.render_templated_keywords(pr, hosts, inh, kw);
        let id = self.next_task_id();
        let title = self.banner_title(pr, hosts, inh, task, &kw);
        self.emit(Event::TaskStart {
            id,
            name: title.clone(),
            location: task.loc.to_string(),
            handler: inh.handler,
        });
        // `add_host` and `pause` run once for the batch, as `run_once` (their ansible-core
        // action plugins set `BYPASS_HOST_LOOP`, which the linear strategy honours).
        let bypass = matches!(task.module_name(), Some("add_host" | "pause"));
        let run_once = kw.run_once == Some(true) || bypass;
        let targets: &[String] = if run_once { &hosts[..1] } else { hosts };
        // `throttle`: this task's own bound on the hosts running it at once, under `forks`.
        let throttle = kw.throttle.filter(|&n| n > 0).map(|n| {
            let mut all = pr.throttles.lock().unwrap();
            let bound = all.entry((task.loc.to_string(), n));
            bound
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(n as usize)))
                .clone()
        });
        let outcomes: Vec<HostOutcome> = join_all(targets.iter().map(|h| {
            let kw = &kw;
            let title = &title;
            let keyword_error = &keyword_error;
            let throttle = &throttle;
            async move {
                let _throttled = match throttle {
                    Some(t) => t.acquire().await.ok(),
                    None => None,
                };
                let _permit = self.forks.acquire().await;
                let on = OnHost {
                    pr,
                    task,
                    title,
                    kw,
                    inh,
                    host: h,
                    task_id: id,
                };
                match keyword_error {
                    Some(msg) => self.keyword_failed(on, msg),
                    None => self.run_host_task(on).await,
                }
            }
        }))
        .await;
        if run_once && let Some(first) = outcomes.first() {
            self.share_run_once(pr, hosts, task, &kw, first);
        }
        let mut flush = false;
        let mut refresh = false;
        let mut includes = Vec::new();
        let mut newly_failed = false;
        for (host, out) in targets.iter().zip(outcomes) {
            if out.status == Status::Failed {
                newly_failed = true;
            }
            match out.flow {
                Flow::Continue => {}
                Flow::EndPlay => {
                    pr.end_play.store(true, std::sync::atomic::Ordering::SeqCst);
                    pr.end();
                }
                Flow::EndHost => {
                    let scope: &[String] = if run_once {
                        hosts
                    } else {
                        std::slice::from_ref(host)
                    };
                    for h in scope {
                        self.with_state(h, |s| s.ended = true);
                    }
                }
                Flow::EndBatch => pr.end(),
                // ansible-core's strategy raises this out of the run (`_execute_meta`).
                Flow::FlushHandlers if inh.handler => {
                    self.end_run_with_error(
                        "flush_handlers cannot be used as a handler".to_string(),
                    );
                }
                Flow::FlushHandlers => flush = true,
                // Unreachable hosts are tried again too, as ansible-core's strategy drops
                // them from `_unreachable_hosts` with the failed ones.
                Flow::ClearHostErrors => {
                    for h in &pr.batch {
                        self.with_state(h, |s| {
                            s.failed = false;
                            s.unreachable = false;
                            s.errors_cleared += 1;
                        });
                    }
                }
                Flow::RefreshInventory => refresh = true,
                // As ansible-core's strategy: every host of the play (not of the batch).
                Flow::ClearFacts => {
                    for h in &pr.all_hosts {
                        self.with_state(h, super::HostState::clear_facts);
                        self.cache_facts(h);
                    }
                }
                Flow::Include(reqs) => includes.push((host.clone(), reqs)),
            }
        }
        // A `run_once` task that fails is fatal to the play too (ansible-core's linear strategy
        // treats `run_once` as `any_errors_fatal`; an ignored failure is no failure here).
        if newly_failed && (kw.any_errors_fatal == Some(true) || run_once) {
            pr.end_fatal();
        }
        // `max_fail_percentage`: the hosts that failed in this batch (not those unreachable,
        // which ansible-core keeps apart from `_failed_hosts`) over the batch's size. Past it,
        // the batch's other hosts are failed too, without a count in the recap, as the linear
        // strategy marks `hosts_left` failed.
        if let Some(pct) = pr.max_fail_percentage {
            let failed = pr
                .batch
                .iter()
                .filter(|h| self.with_state(h, |s| s.failed && !s.unreachable))
                .count();
            if failed as f64 * 100.0 / pr.batch_size.max(1) as f64 > pct {
                for h in &pr.batch {
                    self.with_state(h, |s| {
                        if !s.unreachable {
                            s.failed = true;
                        }
                    });
                }
                pr.max_fail_exceeded.store(true, Ordering::SeqCst);
                pr.end();
            }
        }
        if refresh {
            self.refresh_inventory(pr);
        }
        if flush {
            self.flush_handlers(pr, hosts).await;
        }
        // An include that cannot be loaded fails its hosts as a task would, `any_errors_fatal`
        // included.
        if !includes.is_empty()
            && self.run_includes(pr, includes, inh).await
            && kw.any_errors_fatal == Some(true)
        {
            pr.end_fatal();
        }
    }

    /// `run_once`: the one result counts for every host of the batch. Its registered result
    /// and facts reach every batch host that is not unreachable, failed ones included (Ansible
    /// 2.19 `StrategyBase.get_task_hosts`); handlers are notified on the active hosts only.
    fn share_run_once(
        &self,
        pr: &PlayRun<'_>,
        active: &[String],
        task: &Task,
        kw: &Keywords,
        first: &HostOutcome,
    ) {
        let facts = match task.module_name() {
            Some("set_fact") => first
                .result
                .fields
                .get("ansible_facts")
                .and_then(Value::as_object)
                .cloned(),
            _ => None,
        };
        let ran_on = active.first();
        for h in pr.batch.iter().filter(|h| Some(*h) != ran_on) {
            let notify = first.status == Status::Changed && active.contains(h);
            self.with_state(h, |s| {
                if s.unreachable {
                    return;
                }
                if let Some(r) = &kw.register {
                    s.set_facts.insert(r.clone(), first.result.registered());
                }
                if let Some(f) = &facts {
                    crate::vars::overlay(&mut s.set_facts, f);
                }
                if notify {
                    s.notified.extend(kw.notify.iter().cloned());
                }
            });
        }
    }

    /// Run notified handlers, in the order they are defined, until none is pending.
    pub(crate) fn flush_handlers<'a>(
        &'a self,
        pr: &'a PlayRun<'a>,
        hosts: &'a [String],
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut inh = Inherit::from_play(pr.play);
            inh.handler = true;
            // `force_handlers` runs them after an `any_errors_fatal` stop too (ansible-core has
            // marked every host failed, and failed hosts run their handlers); the play stays
            // stopped.
            let force = pr.play.force_handlers.unwrap_or(self.opts.force_handlers);
            let resumed = force && pr.take_fatal();
            for _round in 0..16 {
                let handlers = pr.handlers.lock().unwrap().clone();
                let mut ran = false;
                // What each host was notified of: every handler named or listening for a
                // notification runs (a topic wakes all its listeners); notifications the
                // handlers make go to the next round.
                // `force_handlers`: hosts that failed run theirs too (not unreachable or
                // ended ones).
                let can_run = |s: &super::state::HostState| match force {
                    true => !s.unreachable && !s.ended,
                    false => s.active(),
                };
                let pending: Vec<(String, Vec<String>)> = hosts
                    .iter()
                    .filter(|h| self.with_state(h, |s| can_run(s)))
                    .cloned()
                    .map(|host| {
                        let notified = self.with_state(&host, |s| std::mem::take(&mut s.notified));
                        (host, notified)
                    })
                    .collect();
                let leaves = self.handler_leaves(pr, &handlers, &inh, true);
                let woken: Vec<(&String, HashSet<usize>)> = pending
                    .iter()
                    .map(|(host, notified)| {
                        let set = notified.iter().flat_map(|n| woken_by(&leaves, n)).collect();
                        (host, set)
                    })
                    .collect();
                for (index, (h, hinh, ..)) in leaves.iter().enumerate() {
                    let h: &Task = h;
                    if self.stopping() {
                        return;
                    }
                    let notified: Vec<String> = woken
                        .iter()
                        .filter(|(host, set)| {
                            set.contains(&index) && self.with_state(host, |s| can_run(s))
                        })
                        .map(|(host, _)| (*host).clone())
                        .collect();
                    if notified.is_empty() {
                        continue;
                    }
                    ran = true;
                    // A failed host runs a forced handler as if it had not failed, and
                    // stays failed.
                    let was_failed: Vec<&String> = notified
                        .iter()
                        .filter(|h| self.with_state(h, |s| std::mem::replace(&mut s.failed, false)))
                        .collect();
                    // A templated name shows rendered, as it was matched.
                    let renamed = match &leaves[index].3 {
                        Some(n) if h.name.as_ref() != Some(n) => Some(Task {
                            name: Some(n.clone()),
                            ..(*h).clone()
                        }),
                        _ => None,
                    };
                    let handler = renamed.as_ref().unwrap_or(h);
                    self.run_tasks(pr, &notified, std::slice::from_ref(handler), hinh)
                        .await;
                    for host in was_failed {
                        self.with_state(host, |s| s.failed = true);
                    }
                }
                if !ran {
                    break;
                }
            }
            if resumed {
                pr.end_fatal();
            }
        })
    }
}

/// Keywords ansible-core's strategy reads for the whole batch, rendered once with the first
/// host's variables; the others are rendered per host and loop item.
fn is_batch_keyword(key: &str) -> bool {
    matches!(key, "run_once" | "throttle" | "any_errors_fatal")
}
