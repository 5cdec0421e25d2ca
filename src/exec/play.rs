//! One play: its hosts (after `--limit`), its `serial` batches, fact gathering, `vars_files`,
//! and its sections (`pre_tasks`, roles and `tasks`, `post_tasks`, each followed by its
//! notified handlers) on each batch; and a playbook as its plays in order.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use super::{Executor, PlayRun, inherit};
use crate::playbook::{HostOrder, Play, Playbook, Serial, Strategy, Task};
use crate::report::Event;
use crate::vars::VarMap;

/// A play's words that may be templates, as rendered when the play starts.
#[derive(Default)]
struct PlayWords {
    serial: Vec<Serial>,
    strategy: Strategy,
    order: HostOrder,
    max_fail_percentage: Option<f64>,
}

impl Executor {
    /// Run every play of `pb`. Connections, facts and host state stay for the next playbook
    /// run through this executor; `end_run` closes the connections. Returns whether the run
    /// was interrupted.
    pub async fn run(&self, pb: &Playbook) -> bool {
        *self.playbook_dir.lock().unwrap() = match pb.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        self.emit(Event::PlaybookStart {
            path: pb.path.display().to_string(),
            plays: pb.plays.len(),
        });
        for play in &pb.plays {
            if self.stopping() || self.run_play(play).await {
                break;
            }
        }
        self.stopping()
    }

    /// End the run: close every connection (warning about any that left something behind,
    /// such as a WinRM shell that could not be deleted) and report the end.
    pub async fn end_run(&self) {
        for message in self.conns.close_all().await {
            self.emit(Event::Warning { message });
        }
        self.emit(Event::RunEnd {
            interrupted: self.cancel.is_cancelled(),
        });
    }

    /// The hosts a play targets, after `--limit`. A templated `hosts` is rendered with the
    /// play's vars and `-e`; a list it gives is a list of patterns, as written lists are.
    pub fn play_hosts(&self, play: &Play) -> Result<Vec<String>, crate::inventory::InventoryError> {
        let pattern = if play.hosts.contains("{{") || play.hosts.contains("{%") {
            let mut vars = play.vars.clone();
            crate::vars::combine(&mut vars, &self.opts.extra_vars);
            match self
                .templar
                .render_value(&serde_json::Value::String(play.hosts.clone()), &vars)
            {
                Ok(serde_json::Value::Array(items)) => items
                    .iter()
                    .map(|i| match i {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(":"),
                Ok(serde_json::Value::String(s)) => s,
                Ok(other) => other.to_string(),
                Err(_) => play.hosts.clone(),
            }
        } else {
            play.hosts.clone()
        };
        let inv = self.inventory.read().unwrap();
        for word in inv.unmatched_words(&pattern) {
            self.warn_once(format!(
                "Could not match supplied host pattern, ignoring: {word}"
            ));
        }
        inv.select_limited(&pattern, self.opts.limit.as_deref())
    }

    /// Run one play; whether the playbook stops after it: a fatal stop (`any_errors_fatal`,
    /// a failed `run_once` task) or a batch whose every host failed ends the playbook, as
    /// ansible-core's `PlaybookExecutor` breaks out of its plays (`break_play`).
    async fn run_play(&self, play: &Play) -> bool {
        let prompted = self.with_prompted_vars(play);
        let play = prompted.as_ref().unwrap_or(play);
        let hosts = match self.play_hosts(play) {
            Ok(h) => h,
            Err(e) => {
                self.emit(Event::Warning {
                    message: format!("{}: {e}", play.loc),
                });
                Vec::new()
            }
        };
        // `ansible_play_hosts_all` is every host the play matches; hosts that failed or were
        // unreachable in an earlier play are in it but do not run (ansible-core's
        // `get_hosts(ignore_restrictions=True)` and its failed/unreachable host lists).
        let matched = hosts.clone();
        let hosts: Vec<String> = hosts
            .into_iter()
            .filter(|h| self.with_state(h, |s| !s.failed && !s.unreachable))
            .collect();
        // A templated name is shown rendered with the play's vars and `-e`, as
        // ansible-playbook's banner shows it; one that cannot be rendered ends the run
        // before the play starts, in ansible-core's words (exit 4).
        // A play named by its hosts (no `name`) shows them as written.
        let derived = play.name == play.hosts_items.join(",");
        let name = match play.name.contains("{{") && !derived {
            true => match self
                .templar
                .render_str(&play.name, &self.play_level_vars(play))
            {
                Ok(n) => n,
                Err(e) => {
                    self.end_run_with_playbook_error(format!(
                        "{}: Error processing keyword 'name': {e}",
                        play.loc
                    ));
                    return true;
                }
            },
            false => play.name.clone(),
        };
        self.emit(Event::PlayStart {
            name: name.clone(),
            hosts: hosts.clone(),
            planned: hosts.len() * count_tasks(&play.tasks, &play.pre_tasks, &play.post_tasks),
        });
        if hosts.is_empty() {
            self.emit(Event::NoHostsMatched);
        }
        let PlayWords {
            serial,
            strategy,
            order,
            max_fail_percentage,
        } = match self.play_words(play) {
            Ok(words) => words,
            Err(msg) => {
                for h in &hosts {
                    self.fail_host(h, "serial", &play.loc.to_string(), msg.clone());
                }
                Default::default()
            }
        };
        if hosts.iter().any(|h| self.with_state(h, |s| s.failed)) {
            self.emit(Event::PlayEnd {
                name: play.name.clone(),
            });
            return false;
        }
        let mut break_play = false;
        // `order` arranges the batches; `ansible_play_hosts_all` keeps the inventory's order
        // (Ansible's strategy caches `get_hosts(order=play.order)` for the batch only).
        // Batches are cut from every matched host, those that failed or were unreachable in
        // an earlier play too (they count in a batch's size but do not run), as ansible-core's
        // `_get_serialized_batches` cuts them.
        let all = order.arrange(&matched);
        for (n, whole) in batches(&all, &serial).into_iter().enumerate() {
            if self.stopping() {
                break;
            }
            let batch: Vec<String> = whole
                .iter()
                .filter(|h| hosts.contains(h))
                .cloned()
                .collect();
            if batch.is_empty() {
                continue;
            }
            // ansible-playbook shows the play's banner again for each later batch.
            if n > 0 {
                self.emit(Event::BatchStart { name: name.clone() });
            }
            let pr = PlayRun {
                play,
                all_hosts: matched.clone(),
                batch_size: whole.len(),
                batch: batch.clone(),
                handlers: Mutex::new(play.handlers.clone()),
                included_roles: Mutex::default(),
                roles_done: Mutex::default(),
                ended: AtomicBool::new(false),
                fatal: AtomicBool::new(false),
                end_play: AtomicBool::new(false),
                throttles: Mutex::default(),
                max_fail_percentage,
                max_fail_exceeded: AtomicBool::new(false),
            };
            for h in &batch {
                self.with_state(h, |s| {
                    s.ended = false;
                    s.notified.clear();
                });
            }
            self.load_vars_files(&pr).await;
            let gather = play
                .gather_facts
                .unwrap_or(self.opts.connect.gathering != crate::ansible_cfg::Gathering::Explicit);
            if gather {
                self.gather_facts(&pr).await;
            }
            match strategy {
                Strategy::Linear => self.run_sections(&pr, &batch).await,
                Strategy::Free => {
                    let runs = batch
                        .iter()
                        .map(|h| self.run_sections(&pr, std::slice::from_ref(h)));
                    futures_util::future::join_all(runs).await;
                }
            }
            // A fatal stop (`any_errors_fatal`, a failed `run_once` task) that no rescue took
            // back fails the batch's other hosts as well: they run no later play, and the run
            // exits 2 (ansible-core's linear strategy puts them in `_failed_hosts`; its recap
            // does not count them as failed, nor does kinit's).
            let fatal = pr.fatal.load(std::sync::atomic::Ordering::SeqCst);
            if fatal {
                for h in &batch {
                    self.with_state(h, |s| {
                        if !s.unreachable {
                            s.failed = true;
                        }
                    });
                }
            }
            // A batch whose every host failed in it ends the playbook (ansible-core compares
            // the batch's size with the hosts that failed or became unreachable in this batch,
            // so a host that failed in an earlier play keeps the rest going).
            let all_failed = batch.len() == whole.len()
                && batch
                    .iter()
                    .all(|h| self.with_state(h, |s| s.failed || s.unreachable));
            if fatal || all_failed {
                break_play = true;
                break;
            }
            // `max_fail_percentage` broke this batch: the play's later batches still run, the
            // later plays do not (ansible-core's `RUN_FAILED_BREAK_PLAY`, acted on after the
            // batch loop).
            if pr
                .max_fail_exceeded
                .load(std::sync::atomic::Ordering::SeqCst)
            {
                break_play = true;
            }
            if pr.end_play.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
        }
        self.emit(Event::PlayEnd { name });
        break_play
    }

    /// The play's `serial`, `strategy`, `order` and `max_fail_percentage`, each rendered
    /// first when it is a template; one that renders to `omit` keeps its default.
    fn play_words(&self, play: &Play) -> Result<PlayWords, String> {
        let vars = self.play_level_vars(play);
        let render = |t: &Option<String>| -> Result<Option<String>, String> {
            let Some(t) = t else { return Ok(None) };
            let v = self
                .templar
                .render_value(&serde_json::Value::String(t.clone()), &vars)
                .map_err(|e| e.to_string())?;
            Ok(match v {
                serde_json::Value::String(s) if s == crate::template::OMIT => None,
                serde_json::Value::String(s) => Some(s),
                other => Some(other.to_string()),
            })
        };
        let serial = match render(&play.serial_template)? {
            Some(s) => crate::playbook::serial_from_text(&s)?,
            None => play.serial.clone(),
        };
        let strategy = match render(&play.strategy_template)? {
            Some(s) => Strategy::from_word(&s)
                .ok_or_else(|| format!("unknown strategy `{s}` (expected {})", Strategy::WORDS))?,
            None => play.strategy,
        };
        let order = match render(&play.order_template)? {
            Some(s) => HostOrder::from_word(&s).ok_or_else(|| HostOrder::invalid(&s))?,
            None => play.order,
        };
        let max_fail_percentage = match render(&play.max_fail_percentage_template)? {
            Some(s) => Some(crate::playbook::percent_from_text(&s).ok_or_else(|| {
                format!("`max_fail_percentage` rendered to `{s}`, expected a number")
            })?),
            None => play.max_fail_percentage,
        };
        Ok(PlayWords {
            serial,
            strategy,
            order,
            max_fail_percentage,
        })
    }

    /// What a play-level template (`serial`) sees: the play's `vars` under the extra vars.
    pub(super) fn play_level_vars(&self, play: &Play) -> VarMap {
        let mut v = play.vars.clone();
        crate::vars::overlay(&mut v, &self.opts.extra_vars);
        v
    }

    async fn run_sections(&self, pr: &PlayRun<'_>, hosts: &[String]) {
        let inh = inherit::Inherit::from_play(pr.play);
        for section in [&pr.play.pre_tasks, &pr.play.tasks, &pr.play.post_tasks] {
            if pr.is_ended() || self.stopping() {
                break;
            }
            self.run_tasks(pr, hosts, section, &inh).await;
            self.flush_handlers(pr, hosts).await;
        }
    }

    /// Fact gathering: `setup` as an implicit first task on the hosts not gathered yet;
    /// `finish` stores the returned facts.
    async fn gather_facts(&self, pr: &PlayRun<'_>) {
        if crate::modules::lookup("setup").is_none() {
            return;
        }
        let task = Task {
            name: Some("Gathering Facts".into()),
            action: crate::playbook::Action::Module {
                name: "setup".into(),
                args: serde_json::Value::Object(pr.play.gather_args.clone()),
            },
            kw: Default::default(),
            loc: pr.play.loc.clone(),
            role: None,
            written: None,
        };
        let mut inh = inherit::Inherit::from_play(pr.play);
        inh.tags = vec!["always".into()];
        // Every host gathers its own facts, whatever the play's `run_once` (ansible-core's
        // setup block sets `run_once = False`: one host's facts would be copied to all).
        inh.kw.run_once = Some(false);
        inh.kw.templated.retain(|(k, _)| k != "run_once");
        // Facts are gathered once per host per run; later plays reuse them. With
        // `gathering = smart`, facts the fact cache holds from an earlier run count too.
        // A play naming its own `gather_subset`, `gather_timeout` or `fact_path` gathers
        // again (but for `smart`), as ansible-core gathers at every play.
        let smart = self.opts.connect.gathering == crate::ansible_cfg::Gathering::Smart;
        let again = !smart && !pr.play.gather_args.is_empty();
        let hosts: Vec<String> = pr
            .batch
            .iter()
            .filter(|h| {
                again || !self.with_state(h, |s| s.facts_gathered || (smart && s.cached_gathered))
            })
            .cloned()
            .collect();
        if hosts.is_empty() {
            return;
        }
        self.run_tasks(pr, &hosts, std::slice::from_ref(&task), &inh)
            .await;
    }

    async fn load_vars_files(&self, pr: &PlayRun<'_>) {
        // `vars_files` belong to their play: an earlier play's are gone before this play's
        // names are rendered (and when it has none).
        for h in &pr.batch {
            self.with_state(h, |s| s.vars_files = VarMap::new());
        }
        if pr.play.vars_files.is_empty() {
            return;
        }
        for h in &pr.batch {
            let inh = inherit::Inherit::from_play(pr.play);
            let ctx = match self.task_vars(pr, h, &inh, &VarMap::new()) {
                Ok(c) => c,
                Err(_) => continue,
            };
            let mut loaded = VarMap::new();
            let mut error = None;
            // As ansible-core's `VariableManager.get_vars`: the first candidate found is
            // loaded (`<play dir>/vars/<name>`, then `<play dir>/<name>`); a candidate that
            // reads an undefined variable skips the entry with a warning, as does an entry
            // none of whose files exists (ansible-core skips it silently).
            'entry: for candidates in &pr.play.vars_files {
                for f in candidates {
                    let name = match self.templar.render_str(f, &ctx) {
                        Ok(n) => n,
                        Err(e) => {
                            self.warn_once(format!(
                                "{}: skipping vars_files item `{f}` due to an undefined \
                                 variable: {e}",
                                pr.play.loc
                            ));
                            continue 'entry;
                        }
                    };
                    let Some(path) = self.vars_file_path(pr.play, &name) else {
                        continue;
                    };
                    match self.loader.vars_file(&path) {
                        Ok(v) => crate::vars::combine(&mut loaded, &v),
                        Err(e) => error = Some(e.to_string()),
                    }
                    self.loader_warnings();
                    continue 'entry;
                }
                self.warn_once(format!(
                    "{}: vars_files: none of {} found, skipped",
                    pr.play.loc,
                    candidates
                        .iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            self.with_state(h, |s| s.vars_files = loaded);
            if let Some(e) = error {
                self.fail_host(h, "vars_files", &pr.play.loc.to_string(), e);
            }
        }
    }
}

impl Executor {
    /// Where a `vars_files` name is: `vars/<name>` then `<name>` beside the file that holds
    /// the play (an imported playbook's own folder), as ansible-core's
    /// `path_dwim_relative_stack(search, 'vars', name)` looks; none when neither exists.
    fn vars_file_path(&self, play: &Play, name: &str) -> Option<PathBuf> {
        let dir = match play.loc.file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => self.playbook_dir(),
        };
        let path = std::path::Path::new(name);
        if path.is_absolute() {
            return path.exists().then(|| path.to_path_buf());
        }
        let in_vars = (!name.starts_with("vars/")).then(|| dir.join("vars").join(name));
        in_vars
            .into_iter()
            .chain([dir.join(name)])
            .find(|p| p.is_file())
    }
}

/// Split hosts into `serial` batches (the last size repeats, as in Ansible).
fn batches(hosts: &[String], serial: &[Serial]) -> Vec<Vec<String>> {
    if serial.is_empty() || hosts.is_empty() {
        return vec![hosts.to_vec()];
    }
    let mut out = Vec::new();
    let mut rest = hosts;
    let mut i = 0;
    while !rest.is_empty() {
        let s = serial[i.min(serial.len() - 1)];
        let n = match s {
            Serial::Count(c) => c,
            Serial::Percent(p) => ((hosts.len() as f64 * p / 100.0).floor() as usize).max(1),
        }
        .clamp(1, rest.len());
        out.push(rest[..n].to_vec());
        rest = &rest[n..];
        i += 1;
    }
    out
}

/// Leaf tasks in a play (for the progress bar's first estimate).
fn count_tasks(a: &[Task], b: &[Task], c: &[Task]) -> usize {
    fn n(ts: &[Task]) -> usize {
        ts.iter()
            .map(|t| match &t.action {
                crate::playbook::Action::Block { block, .. } => n(block),
                _ => 1,
            })
            .sum()
    }
    n(a) + n(b) + n(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_batches_repeat_the_last_size() {
        let hosts: Vec<String> = (1..=6).map(|i| format!("h{i}")).collect();
        let b = batches(&hosts, &[Serial::Count(1), Serial::Percent(50.0)]);
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), [1, 3, 2]);
    }
}
