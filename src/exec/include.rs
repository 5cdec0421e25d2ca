//! Dynamic includes (`include_tasks`, `include_role`): the files are loaded when hosts reach
//! them. Hosts that include the same file with the same parameters run it together (in
//! lockstep); different includes run one after another.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::inherit::Inherit;

/// How deep dynamic includes may nest. A file or role that includes itself without a `when`
/// that ends it would otherwise recurse until the stack overflows; Ansible stops such a
/// playbook with a recursion error too. Real content nests a handful of levels.
pub(crate) const MAX_INCLUDE_DEPTH: usize = 64;
use super::{Executor, PlayRun};

use crate::playbook::{Action, Keywords, Location, RoleFrom, RoleUse, Task};
use crate::vars::VarMap;

/// One include a host asked for (one per loop item).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum IncludeReq {
    Tasks {
        path: PathBuf,
        params: VarMap,
        loc: Location,
        /// `apply`: keywords of the block the included tasks run in.
        apply: Option<Arc<Keywords>>,
    },
    Role {
        name: String,
        tasks_from: Option<String>,
        params: VarMap,
        /// `rolespec_validate`: check the role's argument spec first.
        validate: bool,
        /// `public`: the role's defaults and vars stay visible to the play's later tasks.
        public: bool,
        /// `allow_duplicates: false`: not again on a host it ran on with these parameters.
        once: bool,
        loc: Location,
        apply: Option<Arc<Keywords>>,
        from: RoleFrom,
    },
}

impl IncludeReq {
    /// What output names as included: the tasks file, or the role.
    pub(crate) fn shown(&self) -> String {
        match self {
            IncludeReq::Tasks { path, .. } => std::path::absolute(path)
                .unwrap_or_else(|_| path.clone())
                .display()
                .to_string(),
            IncludeReq::Role { name, .. } => name.clone(),
        }
    }
}

impl IncludeReq {
    fn key(&self) -> String {
        match self {
            IncludeReq::Tasks { path, params, .. } => {
                format!("t:{}:{}", path.display(), Value::Object(params.clone()))
            }
            IncludeReq::Role {
                name,
                tasks_from,
                params,
                validate,
                public,
                once,
                from,
                ..
            } => format!(
                "r:{name}:{tasks_from:?}:{from:?}:{validate}:{public}:{once}:{}",
                Value::Object(params.clone())
            ),
        }
    }
}

impl Executor {
    /// Run each host's includes, hosts asking for the same one together. Returns whether an
    /// include could not be loaded (its hosts failed).
    pub(crate) async fn run_includes(
        &self,
        pr: &PlayRun<'_>,
        includes: Vec<(String, Vec<IncludeReq>)>,
        inh: &Inherit,
    ) -> bool {
        let mut failed = false;
        let rounds = includes.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
        for i in 0..rounds {
            // Group hosts by identical include, keeping first-seen order.
            let mut groups: Vec<(String, IncludeReq, Vec<String>)> = Vec::new();
            for (host, reqs) in &includes {
                let Some(req) = reqs.get(i) else { continue };
                let key = req.key();
                match groups.iter_mut().find(|g| g.0 == key) {
                    Some(g) => g.2.push(host.clone()),
                    None => groups.push((key, req.clone(), vec![host.clone()])),
                }
            }
            for (_, req, hosts) in groups {
                if self.stopping() || pr.is_ended() {
                    return failed;
                }
                let hosts = self.active(&hosts);
                if hosts.is_empty() {
                    continue;
                }
                failed |= !self.run_include(pr, &req, &hosts, inh).await;
            }
        }
        failed
    }

    /// Load one include and run it on `hosts`; `false` when it could not be loaded.
    async fn run_include(
        &self,
        pr: &PlayRun<'_>,
        req: &IncludeReq,
        hosts: &[String],
        inh: &Inherit,
    ) -> bool {
        let mut inner = inh.clone();
        let at = match req {
            IncludeReq::Tasks { path, loc, .. } => format!("{} ({loc})", path.display()),
            IncludeReq::Role { name, loc, .. } => format!("role `{name}` ({loc})"),
        };
        if inh.includes.len() >= MAX_INCLUDE_DEPTH {
            let loc = match req {
                IncludeReq::Tasks { loc, .. } | IncludeReq::Role { loc, .. } => loc,
            };
            let recent: Vec<&str> = inh
                .includes
                .iter()
                .rev()
                .take(3)
                .map(String::as_str)
                .collect();
            let msg = format!(
                "includes nest deeper than {MAX_INCLUDE_DEPTH} levels, most likely a file or role \
                 that includes itself with nothing to stop it: {at}, included from {}",
                recent.join(", from ")
            );
            for h in hosts {
                self.fail_host(h, "include", &loc.to_string(), msg.clone());
            }
            return false;
        }
        inner.includes.push(at);
        let (loaded, loc) = match req {
            IncludeReq::Tasks {
                path,
                params,
                loc,
                apply,
            } => {
                crate::vars::overlay(&mut inner.params, params);
                let role = inh.roles.last().cloned();
                (
                    self.loader.include_tasks_file(path, role, inh.handler).map(
                        |(tasks, handlers)| {
                            (
                                Task {
                                    name: None,
                                    action: crate::playbook::Action::Block {
                                        block: tasks,
                                        rescue: Vec::new(),
                                        always: Vec::new(),
                                    },
                                    kw: apply.as_deref().cloned().unwrap_or_default(),
                                    loc: loc.clone(),
                                    role: None,
                                    written: None,
                                },
                                handlers,
                            )
                        },
                    ),
                    loc,
                )
            }
            IncludeReq::Role {
                name,
                tasks_from,
                params,
                validate,
                once,
                loc,
                apply,
                from,
                ..
            } => {
                // `include_role` passes no role parameters: its `vars:` are variables.
                let using = RoleUse {
                    name: name.clone(),
                    params: params.clone(),
                    tasks_from: tasks_from.clone(),
                    skip_validation: !validate,
                    once: *once,
                    included: true,
                    from: from.clone(),
                    ..RoleUse::default()
                };
                (
                    self.loader.include_role(using, loc).map(|mut r| {
                        if let Some(kw) = apply {
                            r.block.kw = (**kw).clone();
                        }
                        (r.block, r.handlers)
                    }),
                    loc,
                )
            }
        };
        self.loader_warnings();
        // The role (and what it depends on) joins the play's roles, as `IncludeRole` appends
        // it to `play.roles` in ansible-core.
        let names = self.loader.take_role_names();
        if let Ok((block, _)) = &loaded
            && block.role.is_some()
        {
            let mut included = pr.included_roles.lock().unwrap();
            let role = block.role.as_ref().map(|r| r.full_name());
            // Each include appends, the same role again included (`ansible_play_role_names` is
            // a list of `play.roles`).
            included.play.extend(role);
            included.play.extend(names.play);
            included.dependent.extend(names.dependent);
            // ansible-core's VariableManager adds a public role's defaults and vars (its
            // dependencies' within them) for every later task of the play.
            if let (IncludeReq::Role { public: true, .. }, Some(r)) = (req, &block.role) {
                included.public.push(r.clone());
            }
        }
        match loaded {
            Ok((block, handlers)) => {
                pr.handlers.lock().unwrap().extend(handlers);
                self.run_tasks(pr, hosts, std::slice::from_ref(&block), &inner)
                    .await;
                true
            }
            Err(e) => {
                for h in hosts {
                    self.fail_host(h, "include", &loc.to_string(), e.to_string());
                }
                false
            }
        }
    }
}

impl Executor {
    /// The include a host asks for at this point (file or role resolved, parameters rendered).
    pub(crate) fn include_request(
        &self,
        task: &Task,
        inh: &Inherit,
        ctx: &VarMap,
    ) -> Result<IncludeReq, String> {
        // The include's `vars:` are its parameters, rendered as written: in the task's scope a
        // `set_fact` of the same name hides them, and parameters rank above it.
        let mut params = VarMap::new();
        for (k, v) in &task.kw.vars {
            let v = self
                .templar
                .render_value(v, ctx)
                .map_err(|e| e.to_string())?;
            params.insert(k.clone(), v);
        }
        if task.kw.loop_.is_some() {
            let lv = self.loop_var_name(&task.kw.loop_control, ctx);
            // With their names (`IncludedFile.process_include_results`).
            for k in [
                Some(lv),
                task.kw.loop_control.index_var.clone(),
                Some("ansible_loop".into()),
                Some("ansible_loop_var".into()),
                Some("ansible_index_var".into()),
            ]
            .into_iter()
            .flatten()
            {
                if let Some(v) = ctx.get(&k) {
                    params.insert(k, v.clone());
                }
            }
        }
        let render = |v: &Value| self.templar.render_value(v, ctx).map_err(|e| e.to_string());
        match &task.action {
            Action::IncludeTasks { file, args, apply } => {
                let file = render(file)?;
                let file = file.as_str().ok_or("include_tasks needs a file name")?;
                if let Some(Value::Object(extra)) =
                    args.as_object().map(|_| render(args)).transpose()?
                {
                    for (k, v) in extra {
                        if !matches!(k.as_str(), "_raw_params" | "file" | "apply") {
                            params.insert(k, v);
                        }
                    }
                }
                Ok(IncludeReq::Tasks {
                    path: self.find_file(file, task, inh, "tasks"),
                    params,
                    loc: task.loc.clone(),
                    apply: apply.clone(),
                })
            }
            Action::IncludeRole { args, apply } => {
                let mut args = render(args)?;
                // An option that renders to `omit` is not given (`tasks_from: "{{ omit }}"`).
                if let Some(m) = args.as_object_mut() {
                    m.retain(|_, v| v.as_str() != Some(crate::template::OMIT));
                }
                let name = args
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("include_role needs `name`")?
                    .to_string();
                Ok(IncludeReq::Role {
                    name,
                    tasks_from: args
                        .get("tasks_from")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    validate: crate::playbook::rolespec_validate(&args),
                    public: crate::playbook::role_flag(&args, "public", false),
                    once: !crate::playbook::role_flag(&args, "allow_duplicates", true),
                    params,
                    loc: task.loc.clone(),
                    apply: apply.clone(),
                    from: RoleFrom::from_args(&args),
                })
            }
            _ => Err("not an include".into()),
        }
    }

    /// A relative file of kind `sub` (`vars`, `tasks`): in the roles' `sub/`, beside the
    /// task file, then the playbook's `sub/` and folder.
    pub(crate) fn find_file(&self, file: &str, task: &Task, inh: &Inherit, sub: &str) -> PathBuf {
        let p = Path::new(file);
        if p.is_absolute() {
            return p.to_path_buf();
        }
        let mut cands = Vec::new();
        // As the loader's `path_dwim_relative_stack`: in each role, `<role>/<sub>/<file>`
        // then `<role>/<file>`.
        for r in inh.roles.iter().rev() {
            cands.push(r.path.join(sub).join(p));
            cands.push(r.path.join(p));
        }
        if let Some(dir) = task.loc.file.parent() {
            cands.push(dir.join(sub).join(p));
            cands.push(dir.join(p));
        }
        cands.push(self.playbook_dir().join(sub).join(p));
        cands.push(self.playbook_dir().join(p));
        cands
            .iter()
            .find(|c| c.is_file())
            .cloned()
            .unwrap_or_else(|| self.playbook_dir().join(p))
    }
}
