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
    pub failed_task: Option<String>,
}

impl HostState {
    /// The facts as variables: `ansible_facts`, and each fact by its variable name.
    pub fn inject_facts(&self, m: &mut VarMap) {
        if self.facts.is_empty() {
            return;
        }
        m.insert("ansible_facts".into(), Value::Object(self.facts.clone()));
        for (k, v) in &self.facts {
            let name = if self.plain_facts.contains(k) {
                k.clone()
            } else {
                format!("ansible_{k}")
            };
            m.insert(name, v.clone());
        }
    }

    pub fn active(&self) -> bool {
        !self.failed && !self.unreachable && !self.ended
    }
}
