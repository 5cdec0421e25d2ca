//! The variables a task sees on one host: the precedence layers (see `exec`), the magic
//! variables (`inventory_hostname`, `groups`, `hostvars`, `omit`, ...); templating is lazy
//! (left to the templating scope, which renders variables that reference variables when read).

use std::sync::Arc;

use serde_json::{Value, json};

use super::walk::Inherit;
use super::{Executor, PlayRun};
use crate::playbook::Task;
use crate::template::TemplateError;
use crate::vars::{VarMap, overlay};

impl Executor {
    /// Variables of `host` as other hosts see them (`hostvars[host]`).
    fn host_level_vars(&self, host: &str) -> VarMap {
        let mut m = {
            let inv = self.inventory.read().unwrap();
            let mut v = inv.host_vars(host);
            crate::vars::overlay(&mut v, &inv.magic_vars(host));
            v
        };
        self.with_state(host, |s| {
            if !s.facts.is_empty() {
                m.insert("ansible_facts".into(), Value::Object(s.facts.clone()));
                for (k, v) in &s.facts {
                    m.insert(format!("ansible_{k}"), v.clone());
                }
            }
            overlay(&mut m, &s.vars_files);
            overlay(&mut m, &s.include_vars);
            overlay(&mut m, &s.set_facts);
        });
        overlay(&mut m, &self.opts.extra_vars);
        m.insert("inventory_hostname".into(), json!(host));
        m
    }

    /// `hostvars`, built once per task and only for tasks that mention it.
    pub(crate) fn hostvars_for(
        &self,
        pr: &PlayRun<'_>,
        task: &Task,
        inh: &Inherit,
    ) -> Option<Arc<Value>> {
        let mentions = |v: &Value| v.to_string().contains("hostvars");
        let in_task = format!("{:?}{:?}", task.action, task.kw).contains("hostvars");
        let in_vars = mentions(&Value::Object(pr.play.vars.clone()))
            || mentions(&Value::Object(inh.vars.clone()))
            || inh.roles.iter().any(|r| {
                mentions(&Value::Object(r.defaults.clone()))
                    || mentions(&Value::Object(r.vars.clone()))
            });
        if !in_task && !in_vars {
            return None;
        }
        let names: Vec<String> = {
            let inv = self.inventory.read().unwrap();
            let mut n: Vec<String> = inv.hosts.keys().cloned().collect();
            for h in &pr.all_hosts {
                if !n.contains(h) {
                    n.push(h.clone());
                }
            }
            n
        };
        let mut all = serde_json::Map::new();
        for h in names {
            let mut v = self.host_level_vars(&h);
            self.resolve(&mut v);
            all.insert(h, Value::Object(v));
        }
        Some(Arc::new(Value::Object(all)))
    }

    /// Every variable of `host` for a task in context `inh` with task vars `task_vars`.
    pub(crate) fn task_vars(
        &self,
        pr: &PlayRun<'_>,
        host: &str,
        inh: &Inherit,
        task_vars: &VarMap,
        hostvars: Option<Arc<Value>>,
    ) -> Result<VarMap, TemplateError> {
        let mut m = VarMap::new();
        for r in &inh.roles {
            overlay(&mut m, &r.defaults);
        }
        let (inv_vars, groups, magic) = {
            let inv = self.inventory.read().unwrap();
            (inv.host_vars(host), inv.groups_map(), inv.magic_vars(host))
        };
        overlay(&mut m, &inv_vars);
        self.with_state(host, |s| {
            if !s.facts.is_empty() {
                m.insert("ansible_facts".into(), Value::Object(s.facts.clone()));
                for (k, v) in &s.facts {
                    m.insert(format!("ansible_{k}"), v.clone());
                }
            }
        });
        overlay(&mut m, &pr.play.vars);
        let (vars_files, include_vars, set_facts, failed) = self.with_state(host, |s| {
            (
                s.vars_files.clone(),
                s.include_vars.clone(),
                s.set_facts.clone(),
                s.failed_result.clone().map(|r| (r, s.failed_task.clone())),
            )
        });
        overlay(&mut m, &vars_files);
        for r in &inh.roles {
            overlay(&mut m, &r.vars);
        }
        overlay(&mut m, &inh.vars);
        overlay(&mut m, task_vars);
        overlay(&mut m, &include_vars);
        overlay(&mut m, &set_facts);
        overlay(&mut m, &inh.params);
        overlay(&mut m, &self.opts.extra_vars);

        overlay(&mut m, &magic);
        let magic = [
            ("groups", Value::Object(groups)),
            ("ansible_play_hosts_all", json!(pr.all_hosts)),
            ("ansible_play_hosts", json!(self.active(&pr.batch))),
            ("play_hosts", json!(self.active(&pr.batch))),
            ("ansible_play_batch", json!(pr.batch)),
            ("ansible_play_name", json!(pr.play.name)),
            ("omit", json!(crate::template::OMIT)),
            ("playbook_dir", json!(self.abs(&self.playbook_dir()))),
            ("ansible_check_mode", json!(self.opts.check)),
            ("ansible_diff_mode", json!(self.opts.diff)),
            ("ansible_verbosity", json!(self.opts.verbose)),
            ("ansible_run_tags", json!(self.run_tags())),
            ("ansible_skip_tags", json!(self.opts.tags.skip)),
        ];
        for (k, v) in magic {
            m.insert(k.to_string(), v);
        }
        if let Some(r) = inh.roles.last() {
            m.insert("role_name".into(), json!(r.name));
            m.insert("role_path".into(), json!(self.abs(&r.path)));
        }
        if let Some((res, task)) = failed {
            m.insert("ansible_failed_result".into(), res);
            m.insert("ansible_failed_task".into(), json!({ "name": task }));
        }
        if let Some(hv) = hostvars {
            m.insert("hostvars".into(), (*hv).clone());
        }
        Ok(m)
    }

    fn run_tags(&self) -> Vec<String> {
        if self.opts.tags.only.is_empty() {
            vec!["all".into()]
        } else {
            self.opts.tags.only.clone()
        }
    }

    fn abs(&self, p: &std::path::Path) -> String {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    }

    /// Render each variable of one host (for `hostvars`) in that host's own scope; a value
    /// that cannot render (it needs a task's loop variable, say) keeps its text.
    pub(crate) fn resolve(&self, m: &mut VarMap) {
        let scope = self.templar.scope(std::sync::Arc::new(m.clone()));
        for (k, v) in m.iter_mut() {
            if crate::playbook::task_contains_template(v)
                && let Ok(Some(r)) = scope.get(k)
            {
                *v = r;
            }
        }
    }
}
