//! Executor actions that change the run's own state: `add_host` and `group_by` (the
//! inventory), `include_vars` (a host's variables) and `wait_for_connection` (a host's
//! connection).
//!
//! One file: each action here changes state the executor owns (inventory, host variables,
//! connections) and shares its locking and reporting.

use std::path::PathBuf;
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
        // Upstream's action plugin (plugins/action/add_host.py): `name`, `hostname` or `host`;
        // a `host:port` name sets `ansible_ssh_port`; every key but the name and group keys
        // becomes a host variable.
        let Some(full_name) = ["name", "hostname", "host"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str))
        else {
            return Attempt::failed("name, host or hostname needs to be provided");
        };
        let (name, port) = crate::inventory::split_host_port(full_name);
        let groups: Vec<String> = ["groupname", "groups", "group"]
            .iter()
            .find_map(|k| m.get(*k))
            .map(|g| match g {
                Value::Array(a) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|x| x.trim().to_string())
                    .collect(),
                Value::String(s) if !s.is_empty() => {
                    s.split(',').map(|x| x.trim().to_string()).collect()
                }
                _ => Vec::new(),
            })
            .unwrap_or_default();
        let mut groups_once: Vec<String> = Vec::new();
        for g in groups {
            if !groups_once.contains(&g) {
                groups_once.push(g);
            }
        }
        let groups = groups_once;
        let mut vars = VarMap::new();
        for (k, v) in m {
            if !matches!(k.as_str(), "name" | "hostname" | "groups" | "groupname") {
                vars.insert(k.clone(), v.clone());
            }
        }
        if let Some(p) = port {
            vars.insert("ansible_ssh_port".into(), json!(p));
        }
        let changed =
            match self
                .inventory
                .write()
                .unwrap()
                .add_dynamic_host(name, &groups, vars.clone())
            {
                Ok(c) => c,
                Err(e) => return Attempt::failed(e.to_string()),
            };
        let mut r = TaskResult::ok().with(
            "add_host",
            json!({"host_name": name, "groups": groups, "host_vars": vars}),
        );
        r.changed = changed;
        Attempt::of(r)
    }

    /// `meta: refresh_inventory`: the inventory's sources read again, the run's `add_host`
    /// and `group_by` changes kept; later plays target what it now holds, and a host of this
    /// play the sources no longer have runs none of its remaining tasks (ansible-core's
    /// strategy recomputes the hosts left). A source that is gone is skipped with a warning, as
    /// when the run started; one that no longer parses leaves the inventory as it was, with a
    /// warning.
    pub(crate) fn refresh_inventory(&self, pr: &super::PlayRun<'_>) {
        let fresh = self.inventory.read().unwrap().refreshed();
        match fresh {
            Ok(fresh) => {
                for w in &fresh.warnings {
                    self.warn_once(w.clone());
                }
                for path in &fresh.unparsed {
                    self.warn_once(format!(
                        "Unable to parse {} as an inventory source",
                        path.display()
                    ));
                }
                for h in fresh.hosts.keys() {
                    self.hide_host_secrets(&fresh, h);
                }
                for h in pr.batch.iter().filter(|h| !fresh.has_host(h)) {
                    self.with_state(h, |s| s.ended = true);
                }
                *self.inventory.write().unwrap() = fresh;
            }
            Err(e) => self.warn_once(format!(
                "meta: refresh_inventory: {e}; the inventory stays as it was"
            )),
        }
    }

    pub(crate) fn group_by(&self, args: &GroupByArgs, host: &str) -> Attempt {
        let key = match &args.key {
            Some(Value::String(k)) => k.clone(),
            Some(other) => other.to_string(),
            None => return Attempt::failed("`group_by` needs `key`"),
        };
        // Blanks become dashes, nothing else changes (ansible-core's group_by action; its
        // inventory keeps other characters unless `force_valid_group_names` says otherwise).
        let key = key.replace(' ', "-");
        let parents: Vec<String> = match &args.parents {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(|p| p.replace(' ', "-"))
                .collect(),
            Some(Value::String(s)) => vec![s.replace(' ', "-")],
            _ => vec!["all".into()],
        };
        let changed = match self
            .inventory
            .write()
            .unwrap()
            .add_dynamic_group(host, &key, &parents)
        {
            Ok(c) => c,
            Err(e) => return Attempt::failed(e.to_string()),
        };
        let mut r = TaskResult::ok().with("add_group", json!(key));
        r.set("parent_groups", json!(parents));
        r.changed = changed;
        Attempt::of(r)
    }

    pub(crate) fn include_vars(
        &self,
        args: &IncludeVarsArgs,
        task: &Task,
        inh: &Inherit,
        host: &str,
        ctx: &VarMap,
    ) -> Attempt {
        let (vars, files) = if let Some(dir) = &args.dir {
            match self.vars_dir(args, dir, task, inh) {
                Ok(loaded) => loaded,
                // Ansible reports these in `message`, not `msg`.
                Err(message) => {
                    return Attempt::of(
                        TaskResult {
                            failed: Some(true),
                            ..TaskResult::default()
                        }
                        .with("message", message),
                    );
                }
            }
        } else {
            // `file` first, else the free-form name without its trailing newlines (a folded
            // `include_vars: >` block ends in one), as ansible-core's include_vars action.
            let file = match (&args.file, &args.raw_params) {
                (Some(Value::String(f)), _) if !f.is_empty() => f.as_str(),
                (_, Some(Value::String(raw))) => raw.trim_end_matches('\n'),
                _ => "",
            };
            if file.is_empty() {
                // ansible-core's `AnsibleFileNotFound` without a name, in `message`.
                return Attempt::of(
                    TaskResult {
                        failed: Some(true),
                        msg: Some(json!("`include_vars` needs a file or `dir`")),
                        ..TaskResult::default()
                    }
                    .with(
                        "message",
                        "Could not find file on the Ansible Controller.\nIf you are using a \
                         module and expect the file to exist on the remote, see the remote_src \
                         option",
                    ),
                );
            }
            let path = self.find_file(file, task, inh, "vars");
            let loaded = self.loader.vars_file(&path);
            self.loader_warnings();
            match loaded {
                // Reported by its absolute path, as Ansible reports it.
                Ok(v) => (
                    v,
                    vec![
                        std::path::absolute(&path)
                            .unwrap_or(path)
                            .display()
                            .to_string(),
                    ],
                ),
                Err(e) => return Attempt::failed(e.to_string()),
            }
        };
        let facts = match args.name.as_ref().and_then(Value::as_str) {
            Some(ns) => {
                let mut m = VarMap::new();
                m.insert(ns.to_string(), Value::Object(vars));
                m
            }
            None => vars,
        };
        for name in facts.keys() {
            if let Some(w) = crate::playbook::reserved::warning(name, &task.loc) {
                self.warn_once(w);
            }
        }
        // `hash_behaviour: merge` (include_vars.py): the loaded dicts merged into the
        // variables of the same name the task sees.
        let facts = match args.hash_behaviour.as_ref().and_then(Value::as_str) {
            Some("merge") => {
                let mut merged: VarMap = facts
                    .keys()
                    .filter_map(|k| ctx.get(k).map(|v| (k.clone(), v.clone())))
                    .collect();
                crate::vars::merge_deep(&mut merged, &facts);
                merged
            }
            None | Some("replace") => facts,
            Some(other) => {
                return Attempt::failed(format!(
                    "`hash_behaviour` must be `replace` or `merge`, got `{other}`"
                ));
            }
        };
        self.with_state(host, |s| crate::vars::combine(&mut s.include_vars, &facts));
        ok(json!({
            "ansible_facts": facts,
            "ansible_included_var_files": files,
        }))
    }

    /// `include_vars: dir=...`, as Ansible's action reads a folder: relative to the role's
    /// `vars/` (or the role, when it starts with `vars`) or to the task's file, walked in
    /// sorted order down to `depth`, each file's variables over the earlier ones'.
    fn vars_dir(
        &self,
        args: &IncludeVarsArgs,
        dir: &Value,
        task: &Task,
        inh: &Inherit,
    ) -> Result<(VarMap, Vec<String>), String> {
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let list = |v: &Option<Value>| -> Vec<String> {
            match v {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a.iter().map(text).collect(),
                Some(other) => text(other).split_whitespace().map(str::to_string).collect(),
            }
        };
        let dir = text(dir);
        let root = match inh.roles.last() {
            _ if std::path::Path::new(&dir).is_absolute() => PathBuf::from(&dir),
            Some(r) if dir.split('/').next() == Some("vars") && r.path.join(&dir).exists() => {
                r.path.join(&dir)
            }
            Some(r) => r.path.join("vars").join(&dir),
            None => task
                .loc
                .file
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join(&dir),
        };
        let root = std::path::absolute(&root).unwrap_or(root);
        if !root.exists() {
            return Err(format!("{} directory does not exist", root.display()));
        }
        if !root.is_dir() {
            return Err(format!("{} is not a directory", root.display()));
        }
        let depth = args
            .depth
            .as_ref()
            .and_then(|d| text(d).trim().parse::<usize>().ok())
            .unwrap_or(0);
        let regex = |p: &str| {
            crate::pyre::PyRegex::new(p)
                .map_err(|e| format!("Invalid regular expression: {p}: {e}"))
        };
        let matcher = args
            .files_matching
            .as_ref()
            .map(|m| regex(&text(m)))
            .transpose()?;
        let ignore = list(&args.ignore_files)
            .iter()
            .map(|p| regex(&format!("(?:{p})$")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut extensions = list(&args.extensions);
        if extensions.is_empty() {
            extensions = vec!["yaml".into(), "yml".into(), "json".into()];
        }
        let skip_unknown = args.ignore_unknown_extensions.as_ref().is_some_and(|v| {
            matches!(v, Value::Bool(true)) || text(v).eq_ignore_ascii_case("true")
        });
        let mut folders = vec![root.clone()];
        let mut i = 0;
        while i < folders.len() {
            let level = folders[i]
                .strip_prefix(&root)
                .map_or(0, |r| r.components().count())
                + 1;
            if depth == 0 || level < depth {
                let mut subs: Vec<PathBuf> = std::fs::read_dir(&folders[i])
                    .map_err(|e| format!("{}: {e}", folders[i].display()))?
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect();
                folders.append(&mut subs);
            }
            i += 1;
        }
        folders.sort();
        let mut vars = VarMap::new();
        let mut files = Vec::new();
        for folder in folders {
            let mut names: Vec<String> = std::fs::read_dir(&folder)
                .map_err(|e| format!("{}: {e}", folder.display()))?
                .flatten()
                .filter(|e| e.path().is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            for name in names {
                if matcher.as_ref().is_some_and(|m| !m.is_match(&name)) {
                    continue;
                }
                if ignore.iter().any(|r| r.is_match(&name)) {
                    continue;
                }
                let ext = std::path::Path::new(&name)
                    .extension()
                    .map(|e| e.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let path = folder.join(&name);
                if !extensions.contains(&ext) {
                    if skip_unknown {
                        continue;
                    }
                    return Err(format!(
                        "{} does not have a valid extension: {}",
                        path.display(),
                        extensions.join(", ")
                    ));
                }
                let loaded = self.loader.vars_file(&path).map_err(|e| e.to_string());
                self.loader_warnings();
                let loaded = loaded?;
                crate::vars::combine(&mut vars, &loaded);
                files.push(path.display().to_string());
            }
        }
        Ok((vars, files))
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
