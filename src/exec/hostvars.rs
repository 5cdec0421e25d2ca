//! `hostvars` for the executor's templates: each host's variables as other hosts see them
//! (inventory, magic variables, facts, `vars_files`, `include_vars`, `set_fact`/`register`,
//! extra vars), read from the live run state when a template asks for them. The templating
//! scope renders them in that host's own context, so `hostvars[other].x` is `other`'s `x`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::json;

use super::HostState;
use crate::inventory::Inventory;
use crate::template::HostVarsSource;
use crate::vars::{VarMap, combine, overlay};

pub(crate) struct ExecHostVars {
    pub inventory: Arc<RwLock<Inventory>>,
    pub hosts: Arc<Mutex<HashMap<String, HostState>>>,
    pub extra_vars: VarMap,
}

impl HostVarsSource for ExecHostVars {
    fn host_names(&self) -> Vec<String> {
        self.inventory
            .read()
            .unwrap()
            .hosts
            .keys()
            .cloned()
            .collect()
    }

    fn vars_of(&self, host: &str) -> Option<Arc<VarMap>> {
        let mut m = {
            let inv = self.inventory.read().unwrap();
            if !inv.has_host(host) {
                return None;
            }
            let mut v = inv.host_vars(host);
            overlay(&mut v, &inv.magic_vars(host));
            v
        };
        let mut data = Vec::new();
        if let Some(s) = self.hosts.lock().unwrap().get(host) {
            s.inject_facts(&mut m);
            combine(&mut m, &s.vars_files);
            combine(&mut m, &s.include_vars);
            combine(&mut m, &s.set_facts);
            // Registered results and `set_fact` values are data (`template::DATA_KEY`).
            data.extend(
                s.set_facts
                    .keys()
                    .filter(|k| !self.extra_vars.contains_key(*k))
                    .cloned(),
            );
        }
        combine(&mut m, &self.extra_vars);
        m.insert(crate::template::DATA_KEY.into(), json!(data));
        m.insert("inventory_hostname".into(), json!(host));
        Some(Arc::new(m))
    }
}
