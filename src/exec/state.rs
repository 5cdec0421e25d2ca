//! Per-host run state: the variable layers a run adds (facts, `set_fact`/`register`,
//! `include_vars`, `vars_files`), pending handler notifications and the host's standing
//! (failed, unreachable, ended).

use serde_json::Value;

use crate::vars::VarMap;

#[derive(Debug, Clone, Default)]
pub struct HostState {
    /// `ansible_facts` (from `setup`/fact gathering and `set_fact: cacheable`).
    pub facts: VarMap,
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
    pub unreachable: bool,
    /// `meta: end_host`, or the play ended for this host.
    pub ended: bool,
    /// The last failed result, for `ansible_failed_result` in `rescue`.
    pub failed_result: Option<Value>,
    pub failed_task: Option<String>,
}

impl HostState {
    pub fn active(&self) -> bool {
        !self.failed && !self.unreachable && !self.ended
    }
}
