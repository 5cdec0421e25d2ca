//! Per-host run state: the variable layers a run adds (facts, `set_fact`/`register`,
//! `include_vars`, `vars_files`), pending handler notifications and the host's standing
//! (failed, unreachable, ended).

use serde_json::Value;

use crate::vars::VarMap;

#[derive(Debug, Clone, Default)]
pub struct HostState {
    /// `ansible_facts` (from `setup`/fact gathering and `set_fact: cacheable`).
    pub facts: VarMap,
    /// Facts a module returned without the `ansible_` prefix (`getent_passwd`, `services`):
    /// variables under their own names, where prefixed facts are `ansible_<name>`, as
    /// Ansible injects the names a module returns.
    pub plain_facts: std::collections::BTreeSet<String>,
    /// `setup` ran on this host during this run (implicit fact gathering is not repeated).
    pub facts_gathered: bool,
    /// The fact cache holds facts gathered in an earlier run (`gathering = smart` does not
    /// gather again).
    pub cached_gathered: bool,
    /// `set_fact` and `register` results.
    pub set_facts: VarMap,
    pub include_vars: VarMap,
    /// This play's `vars_files`, loaded at play start.
    pub vars_files: VarMap,
    /// Handler names and `listen` topics notified and not yet run.
    pub notified: Vec<String>,
    pub failed: bool,
    /// Tasks that ran for the host (not skipped, not unreachable): a role counts as run on a
    /// host once one of its tasks did (ansible-core's `_had_task_run`).
    pub tasks_ran: u64,
    /// How many times `meta: clear_host_errors` cleared this host's failure: an `always`
    /// section that cleared it leaves the host going on after its block.
    pub errors_cleared: u64,
    pub unreachable: bool,
    /// `meta: end_host`, or the play ended for this host.
    pub ended: bool,
    /// The last failed result, for `ansible_failed_result` in `rescue`.
    pub failed_result: Option<Value>,
    /// The task that failed last, as `ansible_failed_task` shows it (`name`, `action`).
    pub failed_task: Option<Value>,
}

impl HostState {
    /// The facts as variables: `ansible_facts`, and each fact by its variable name.
    pub fn inject_facts(&self, m: &mut VarMap) {
        if self.facts.is_empty() {
            return;
        }
        m.insert("ansible_facts".into(), Value::Object(self.facts.clone()));
        for (k, v) in &self.facts {
            m.insert(self.fact_var_name(k), v.clone());
        }
    }

    /// The variable a fact is known by: `ansible_<name>`, or its own name for a fact a module
    /// returned without the prefix.
    fn fact_var_name(&self, fact: &str) -> String {
        if self.plain_facts.contains(fact) {
            fact.to_string()
        } else {
            format!("ansible_{fact}")
        }
    }

    /// The facts as a fact cache keeps them: each by its variable name, and whether they
    /// were gathered.
    pub fn cached_form(&self) -> VarMap {
        let mut m: VarMap = self
            .facts
            .iter()
            .map(|(k, v)| (self.fact_var_name(k), v.clone()))
            .collect();
        if self.facts_gathered || self.cached_gathered {
            m.insert(super::fact_cache::GATHERED.into(), Value::Bool(true));
        }
        m
    }

    /// Add facts given by their variable names (a fact cache's entry, a `cacheable`
    /// `set_fact`).
    pub fn add_named_facts(&mut self, named: VarMap) {
        for (k, v) in named {
            if k == super::fact_cache::GATHERED {
                self.cached_gathered = v.as_bool().unwrap_or(false);
            } else if let Some(name) = k.strip_prefix("ansible_") {
                self.facts.insert(name.to_string(), v);
            } else {
                self.plain_facts.insert(k.clone());
                self.facts.insert(k, v);
            }
        }
    }

    /// `meta: clear_facts`: no facts, none gathered.
    pub fn clear_facts(&mut self) {
        self.facts.clear();
        self.plain_facts.clear();
        self.facts_gathered = false;
        self.cached_gathered = false;
    }

    pub fn active(&self) -> bool {
        !self.failed && !self.unreachable && !self.ended
    }
}
