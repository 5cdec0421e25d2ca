//! Executor actions that change the run's own state: `add_host` and `group_by` (the
//! inventory), `include_vars` (a host's variables) and `wait_for_connection` (a host's
//! connection).

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::Executor;
use super::actions::ok;
use super::host_task::Attempt;
use super::inherit::Inherit;
use crate::playbook::actions::{GroupByArgs, IncludeVarsArgs, WaitArgs};
use crate::playbook::{Keywords, Task};
use crate::report::TaskResult;
use crate::vars::VarMap;

impl Executor {
    pub(crate) fn add_host(&self, m: &Map<String, Value>) -> Attempt {
        let Some(name) = ["name", "hostname", "host"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str))
        else {
            return Attempt::failed("`add_host` needs `name`");
        };
        let groups: Vec<String> = ["groups", "group", "groupname"]
            .iter()
            .find_map(|k| m.get(*k))
            .map(|g| match g {
                Value::Array(a) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                Value::String(s) => s.split(',').map(|x| x.trim().to_string()).collect(),
                _ => Vec::new(),
            })
            .unwrap_or_default();
        let mut vars = VarMap::new();
        for (k, v) in m {
            if !matches!(
                k.as_str(),
                "name" | "hostname" | "host" | "groups" | "group" | "groupname"
            ) {
                vars.insert(k.clone(), v.clone());
            }
        }
        let mut inv = self.inventory.write().unwrap();
        let new = !inv.hosts.contains_key(name);
        inv.add_host(name, None, vars.clone());
        for g in &groups {
            inv.add_host(name, Some(g), VarMap::new());
            let is_child = inv.groups.values().any(|x| x.children.contains(g));
            if g != "all" && !is_child {
                let all = inv.group_mut("all");
                if !all.children.contains(g) {
                    all.children.push(g.clone());
                }
            }
        }
        let mut r = TaskResult::ok().with(
            "add_host",
            json!({"host_name": name, "groups": groups, "host_vars": vars}),
        );
        r.changed = new;
        Attempt::of(r)
    }

    pub(crate) fn group_by(&self, args: &GroupByArgs, host: &str) -> Attempt {
        let key = match &args.key {
            Some(Value::String(k)) => k.clone(),
            Some(other) => other.to_string(),
            None => return Attempt::failed("`group_by` needs `key`"),
        };
        let key = key.replace([' ', '-'], "_");
        let parents: Vec<String> = match &args.parents {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => vec!["all".into()],
        };
        let mut inv = self.inventory.write().unwrap();
        inv.add_host(host, Some(&key), VarMap::new());
        for p in &parents {
            if p != "all" {
                let g = inv.group_mut(p);
                if !g.children.contains(&key) {
                    g.children.push(key.clone());
                }
            }
        }
        ok(json!({"add_group": key, "parent_groups": parents}))
    }

    pub(crate) fn include_vars(
        &self,
        args: &IncludeVarsArgs,
        task: &Task,
        inh: &Inherit,
        host: &str,
    ) -> Attempt {
        let Some(file) = args
            .raw_params
            .as_ref()
            .or(args.file.as_ref())
            .and_then(Value::as_str)
        else {
            return Attempt::failed("`include_vars` needs a file");
        };
        let path = self.find_file(file, task, inh, "vars");
        let vars = match self.loader.vars_file(&path) {
            Ok(v) => v,
            Err(e) => return Attempt::failed(e.to_string()),
        };
        let facts = match args.name.as_ref().and_then(Value::as_str) {
            Some(ns) => {
                let mut m = VarMap::new();
                m.insert(ns.to_string(), Value::Object(vars));
                m
            }
            None => vars,
        };
        self.with_state(host, |s| crate::vars::overlay(&mut s.include_vars, &facts));
        ok(json!({
            "ansible_facts": facts,
            "ansible_included_var_files": [path.display().to_string()],
        }))
    }

    pub(crate) async fn wait_for_connection(
        &self,
        args: &WaitArgs,
        host: &str,
        kw: &Keywords,
        ctx: &VarMap,
    ) -> Attempt {
        let num = |v: &Option<Value>, d: f64| -> f64 {
            match v {
                Some(Value::Number(n)) => n.as_f64().unwrap_or(d),
                Some(Value::String(s)) => s.parse().unwrap_or(d),
                _ => d,
            }
        };
        let (timeout, delay, sleep) = (
            num(&args.timeout, 600.0),
            num(&args.delay, 0.0),
            num(&args.sleep, 1.0),
        );
        let start = Instant::now();
        self.sleep(Duration::from_secs_f64(delay)).await;
        let target = match self.target_for(host, host, kw, ctx) {
            Ok(r) => r.target,
            Err(e) => return Attempt::failed(e.to_string()),
        };
        loop {
            if self.cancel.is_cancelled() {
                return Attempt::failed("interrupted");
            }
            self.conns.reset(host);
            if let Ok(conn) = self.conns.get(&target).await {
                let probe = crate::transport::ExecRequest::new(match conn.shell() {
                    crate::transport::ShellKind::Posix => "true",
                    crate::transport::ShellKind::PowerShell => "exit 0",
                });
                if conn.exec(&probe).await.is_ok_and(|o| o.success()) {
                    return ok(json!({"elapsed": start.elapsed().as_secs()}));
                }
            }
            if start.elapsed().as_secs_f64() >= timeout {
                return Attempt::failed(format!(
                    "timed out waiting for connection to `{host}` after {timeout}s"
                ));
            }
            self.sleep(Duration::from_secs_f64(sleep)).await;
        }
    }
}
