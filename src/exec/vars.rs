//! The variables a task sees on one host: the precedence layers (see `exec`), the magic
//! variables (`inventory_hostname`, `groups`, `omit`, ...); templating is lazy (left to the
//! templating scope, which renders variables that reference variables when read, and reads
//! `hostvars` from `hostvars::ExecHostVars`).

use serde_json::{Value, json};

use super::inherit::Inherit;
use super::{Executor, PlayRun, RunOptions};
use crate::template::TemplateError;
use crate::vars::{VarMap, combine, overlay};

impl Executor {
    /// `ansible_delegated_vars` for a task delegated to `delegate`: that host's variables
    /// for the same task, under its name, with the task host's `inventory_hostname`
    /// (ansible-core's `VariableManager.get_delegated_vars_and_hostname`). A host whose
    /// variables cannot be rendered gets none, and the connection reports the problem.
    pub(crate) fn add_delegated_vars(
        &self,
        pr: &PlayRun<'_>,
        delegate: &str,
        inh: &Inherit,
        task_vars: &VarMap,
        ctx: &mut VarMap,
    ) {
        let Ok(mut vars) = self.task_vars(pr, delegate, inh, task_vars) else {
            return;
        };
        if let Some(name) = ctx.get("inventory_hostname") {
            vars.insert("inventory_hostname".into(), name.clone());
        }
        // Both levels carry `DATA_KEY`, so the scope reads each as variables of their own
        // (templated lazily, data left as data) rather than templating the whole tree.
        ctx.insert(
            "ansible_delegated_vars".into(),
            json!({ delegate: Value::Object(vars), crate::template::DATA_KEY: [] }),
        );
    }

    /// Every variable of `host` for a task in context `inh` with task vars `task_vars`.
    pub(crate) fn task_vars(
        &self,
        pr: &PlayRun<'_>,
        host: &str,
        inh: &Inherit,
        task_vars: &VarMap,
    ) -> Result<VarMap, TemplateError> {
        let mut m = pr.play.role_defaults.clone();
        // Roles brought in by `include_role` with `public: true`, for the tasks after it.
        let public: Vec<std::sync::Arc<crate::playbook::RoleCtx>> =
            pr.included_roles.lock().unwrap().public.clone();
        for r in &public {
            combine(&mut m, &r.defaults);
        }
        for r in &inh.roles {
            combine(&mut m, &r.defaults);
        }
        let (mut inv_vars, groups, magic, address, implicit) = {
            let inv = self.inventory.read().unwrap();
            (
                inv.host_vars(host),
                inv.groups_map(),
                inv.magic_vars(host),
                inv.default_address(host).to_string(),
                inv.is_implicit(host),
            )
        };
        // The implicit localhost runs Python with the controller's own interpreter, a host
        // variable below the playbook's `host_vars` (`_create_implicit_localhost`).
        if implicit
            && !inv_vars.contains_key("ansible_python_interpreter")
            && let Some(python) = playbook_python()
        {
            inv_vars.insert("ansible_python_interpreter".into(), json!(python));
        }
        combine(&mut m, &inv_vars);
        self.with_state(host, |s| s.inject_facts(&mut m));
        combine(&mut m, &pr.play.vars);
        let (vars_files, include_vars, set_facts, failed) = self.with_state(host, |s| {
            (
                s.vars_files.clone(),
                s.include_vars.clone(),
                s.set_facts.clone(),
                s.failed_result.clone().map(|r| (r, s.failed_task.clone())),
            )
        });
        combine(&mut m, &vars_files);
        combine(&mut m, &pr.play.role_exports);
        for r in &public {
            combine(&mut m, &r.vars);
        }
        for r in &inh.roles {
            combine(&mut m, &r.vars);
        }
        combine(&mut m, &inh.vars);
        combine(&mut m, task_vars);
        combine(&mut m, &include_vars);
        combine(&mut m, &set_facts);
        combine(&mut m, &inh.params);
        combine(&mut m, &self.opts.extra_vars);
        // Registered results and `set_fact` values are data, not templates (`DATA_KEY`),
        // unless a role parameter or an extra variable of the same name wins over them.
        let mut data: Vec<&str> = set_facts
            .keys()
            .filter(|k| !inh.params.contains_key(*k) && !self.opts.extra_vars.contains_key(*k))
            .map(String::as_str)
            .collect();
        if failed.is_some() {
            data.push("ansible_failed_result");
        }
        let data = json!(data);

        overlay(&mut m, &magic);
        let magic = [
            ("groups", Value::Object(groups)),
            ("ansible_play_hosts_all", json!(pr.all_hosts)),
            // Ansible 2.19 (`VariableManager._get_magic_variables`): the play's hosts and the
            // batch, each without the hosts that failed, were unreachable or ended.
            ("ansible_play_hosts", json!(self.play_hosts_left(pr))),
            ("play_hosts", json!(self.active(&pr.batch))),
            ("ansible_play_batch", json!(self.active(&pr.batch))),
            ("ansible_play_name", json!(pr.play.name)),
            ("omit", json!(crate::template::OMIT)),
            ("playbook_dir", json!(self.abs(&self.playbook_dir()))),
            ("ansible_check_mode", json!(self.opts.check)),
            ("ansible_diff_mode", json!(self.opts.diff)),
            ("ansible_verbosity", json!(self.opts.verbose)),
            ("ansible_run_tags", json!(self.run_tags())),
            ("ansible_skip_tags", json!(self.tags().skip)),
        ];
        for (k, v) in magic {
            m.insert(k.to_string(), v);
        }
        for (k, v) in &self.options_vars {
            m.insert(k.clone(), v.clone());
        }
        if let Some(python) = playbook_python() {
            m.insert("ansible_playbook_python".into(), json!(python));
        }
        // Ansible's task variables always have `ansible_host`: the host's address when the
        // inventory sets none (`localhost` in an inventory gives `localhost`, the implicit
        // one `127.0.0.1`).
        if !m.contains_key("ansible_host") {
            m.insert("ansible_host".into(), json!(address));
        }
        // The play's role names as `VariableManager._get_magic_variables` lists them: the
        // roles it names, the roles pulled in as dependencies (a set there; sorted here), both.
        let names = &pr.play.role_names;
        let included = pr.included_roles.lock().unwrap();
        let mut play_roles = names.play.clone();
        play_roles.extend(included.play.iter().cloned());
        let mut dependent: Vec<String> = names
            .dependent
            .iter()
            .chain(&included.dependent)
            .cloned()
            .collect();
        drop(included);
        dependent.sort();
        dependent.dedup();
        let mut all: Vec<String> = play_roles.iter().chain(&dependent).cloned().collect();
        all.sort();
        all.dedup();
        m.insert("ansible_play_role_names".into(), json!(play_roles));
        m.insert("role_names".into(), json!(play_roles));
        m.insert("ansible_dependent_role_names".into(), json!(dependent));
        m.insert("ansible_role_names".into(), json!(all));
        if let Some(r) = inh.roles.last() {
            m.insert("role_name".into(), json!(r.name));
            m.insert("ansible_role_name".into(), json!(r.full_name()));
            m.insert("ansible_collection_name".into(), json!(r.collection));
            m.insert("role_path".into(), json!(self.abs(&r.path)));
        }
        // A role that `import_role`/`include_role` entered from inside another role sees that
        // role first, then that role's own parents while it was itself entered that way
        // (ansible-core's `IncludeRole.get_include_params`); elsewhere they are undefined.
        let parents: Vec<_> = inh
            .roles
            .windows(2)
            .rev()
            .take_while(|w| w[1].included)
            .map(|w| &w[0])
            .collect();
        if !parents.is_empty() {
            let names: Vec<String> = parents.iter().map(|r| r.full_name()).collect();
            let paths: Vec<String> = parents.iter().map(|r| self.abs(&r.path)).collect();
            m.insert("ansible_parent_role_names".into(), json!(names));
            m.insert("ansible_parent_role_paths".into(), json!(paths));
        }
        // Where lookups (`file`, `template`) find relative names, as in Ansible: the roles
        // from the innermost out, then the playbook's folder.
        let search: Vec<String> = inh
            .roles
            .iter()
            .rev()
            .map(|r| self.abs(&r.path))
            .chain([self.abs(&self.playbook_dir())])
            .collect();
        m.insert("ansible_search_path".into(), json!(search));
        if let Some((res, task)) = failed {
            m.insert("ansible_failed_result".into(), res);
            let task = task.unwrap_or_else(|| json!({ "name": null }));
            m.insert("ansible_failed_task".into(), task);
        }
        m.insert(crate::template::DATA_KEY.into(), data);
        self.register_secret_vars(&m);
        Ok(m)
    }

    /// Secret-named variables from any layer (play/role/block/task vars, `vars_files`,
    /// `set_fact`) are masked like inventory passwords, before a task can print them; a
    /// templated one is registered with its rendered value too.
    fn register_secret_vars(&self, m: &VarMap) {
        let secret: Vec<&String> = m.keys().filter(|k| super::is_secret_name(k)).collect();
        if secret.is_empty() {
            return;
        }
        let mut scope = None;
        for k in secret {
            let v = &m[k];
            self.events.redactor.add_value(v);
            if crate::playbook::task_contains_template(v) {
                let scope =
                    scope.get_or_insert_with(|| self.templar.scope(std::sync::Arc::new(m.clone())));
                if let Ok(Some(r)) = scope.get(k) {
                    self.events.redactor.add_value(&r);
                }
            }
        }
    }

    fn run_tags(&self) -> Vec<String> {
        let tags = self.tags();
        if tags.only.is_empty() {
            vec!["all".into()]
        } else {
            tags.only.clone()
        }
    }

    fn abs(&self, p: &std::path::Path) -> String {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    }
}

/// The run's options as variables, as ansible-core's `load_options_vars` makes them:
/// `ansible_version` (the ansible-core release whose behaviour kinit follows and is tested
/// against, `ci/requirements.txt`), `ansible_forks`, `ansible_inventory_sources` (a file or
/// folder as an absolute path, a host list as written) and `ansible_limit` when `--limit` is
/// given. (`ansible_check_mode` and the others that may change during a run are set with the
/// magic variables.)
pub(crate) fn options_vars(opts: &RunOptions, sources: &[String]) -> VarMap {
    let mut m = VarMap::new();
    let part = |i: usize| {
        ANSIBLE_CORE
            .split('.')
            .nth(i)
            .and_then(|p| p.parse::<u32>().ok())
    };
    m.insert(
        "ansible_version".into(),
        json!({"string": ANSIBLE_CORE, "full": ANSIBLE_CORE,
               "major": part(0), "minor": part(1), "revision": part(2)}),
    );
    m.insert("ansible_forks".into(), json!(opts.forks));
    let sources: Vec<String> = sources
        .iter()
        .map(|s| match s.contains(',') {
            true => s.clone(),
            false => normalized_absolute(s),
        })
        .collect();
    m.insert("ansible_inventory_sources".into(), json!(sources));
    if let Some(limit) = &opts.limit {
        m.insert("ansible_limit".into(), json!(limit));
    }
    m
}

/// The ansible-core release kinit follows (`ansible_version`).
pub const ANSIBLE_CORE: &str = "2.19.4";

/// An inventory source as ansible-core's `unfrackpath(follow=False)` makes it.
fn normalized_absolute(path: &str) -> String {
    crate::playbook::unfrack(std::path::Path::new(path))
        .display()
        .to_string()
}

/// `ansible_playbook_python`: the controller's Python, the one kinit runs Python plugins
/// with (`python3` on `PATH`), found once; undefined on a controller without one.
fn playbook_python() -> Option<&'static str> {
    static PYTHON: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let path = std::env::var_os("PATH")?;
            std::env::split_paths(&path)
                .map(|d| d.join("python3"))
                .find(|p| p.is_file())
                .map(|p| p.display().to_string())
        })
        .as_deref()
}
