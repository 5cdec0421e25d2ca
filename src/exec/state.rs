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
    /// Facts (as `facts` keys) whose variable names [`restricted_fact`] keeps out of the
    /// top-level variables, found when they are stored, so that building a task's variables
    /// checks nothing when there are none.
    pub restricted_facts: std::collections::BTreeSet<String>,
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
    /// The facts as variables: `ansible_facts`, and each fact by its variable name but those
    /// [`restricted_fact`] names (a module's facts cannot set connection variables or
    /// `ansible_facts` itself).
    /// A host without facts has `ansible_facts` all the same, empty, as in ansible-core
    /// (`when: ansible_facts == {}` is how roles ask whether facts were gathered).
    pub fn inject_facts(&self, m: &mut VarMap) {
        m.insert("ansible_facts".into(), Value::Object(self.facts.clone()));
        if self.facts.is_empty() {
            return;
        }
        for (k, v) in &self.facts {
            if !self.restricted_facts.is_empty() && self.restricted_facts.contains(k) {
                continue;
            }
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
            if restricted_fact(&k) {
                self.restricted_facts
                    .insert(k.strip_prefix("ansible_").unwrap_or(&k).to_string());
            }
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
        self.restricted_facts.clear();
        self.facts_gathered = false;
        self.cached_gathered = false;
    }

    pub fn active(&self) -> bool {
        !self.failed && !self.unreachable && !self.ended
    }
}

/// Variables a fact may not set at the top level, as ansible-core's `clean_facts` removes
/// them (`vars/clean.py`): the connection and become variables (`MAGIC_VARIABLE_MAPPING`,
/// `COMMON_CONNECTION_VARS`), any `ansible_<connection plugin>_*` but bridges, any
/// `ansible_become_*`, `ansible_*_interpreter`, and `RESTRICTED_RESULT_KEYS` and
/// `INTERNAL_RESULT_KEYS`. SSH host key facts stay. The fact itself stays in `ansible_facts`.
pub fn restricted_fact(name: &str) -> bool {
    const NAMED: [&str; 39] = [
        "ansible_become",
        "ansible_become_exe",
        "ansible_become_flags",
        "ansible_become_method",
        "ansible_become_pass",
        "ansible_become_password",
        "ansible_become_user",
        "ansible_connection",
        "ansible_connection_user",
        "ansible_docker_extra_args",
        "ansible_host",
        "ansible_module_compression",
        "ansible_network_os",
        "ansible_password",
        "ansible_pipelining",
        "ansible_port",
        "ansible_private_key_file",
        "ansible_scp_extra_args",
        "ansible_sftp_extra_args",
        "ansible_shell_executable",
        "ansible_shell_type",
        "ansible_ssh_common_args",
        "ansible_ssh_executable",
        "ansible_ssh_extra_args",
        "ansible_ssh_host",
        "ansible_ssh_pass",
        "ansible_ssh_pipelining",
        "ansible_ssh_port",
        "ansible_ssh_private_key_file",
        "ansible_ssh_timeout",
        "ansible_ssh_transfer_method",
        "ansible_ssh_user",
        "ansible_timeout",
        "ansible_user",
        "ansible_rsync_path",
        "ansible_playbook_python",
        "ansible_facts",
        "add_host",
        "add_group",
    ];
    const CONNECTIONS: [&str; 5] = ["local", "paramiko_ssh", "psrp", "ssh", "winrm"];
    if name.starts_with("ansible_ssh_host_key_") {
        return false;
    }
    if NAMED.contains(&name) || name.starts_with("ansible_become_") {
        return true;
    }
    let Some(rest) = name.strip_prefix("ansible_") else {
        return false;
    };
    let plugin_var = CONNECTIONS.iter().any(|c| {
        rest.strip_prefix(c).is_some_and(|r| r.starts_with('_'))
            && !rest.ends_with("_bridge")
            && !rest.ends_with("_gwbridge")
    });
    plugin_var || rest.ends_with("_interpreter")
}

#[cfg(test)]
mod restricted_tests {
    use super::restricted_fact;

    #[test]
    fn connection_variables_and_interpreters_are_not_facts() {
        for name in [
            "ansible_facts",
            "ansible_host",
            "ansible_python_interpreter",
            "ansible_become_anything",
            "ansible_ssh_foo",
            "ansible_winrm_transport",
            "ansible_local_x",
            "ansible__interpreter",
            "add_host",
        ] {
            assert!(restricted_fact(name), "{name}");
        }
        for name in [
            "ansible_local",
            "ansible_ssh_host_key_rsa_public",
            "ansible_docker_bridge",
            "ansible_local_gwbridge",
            "ansible_distribution",
            "dansible_iscovered_interpreter_python",
            "discovered_interpreter_python",
            "ansible_interpreter",
        ] {
            assert!(!restricted_fact(name), "{name}");
        }
    }
}
