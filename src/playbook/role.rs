//! Roles: find a role folder, load its `defaults/`, `vars/`, `meta/` dependencies, `tasks/`
//! and `handlers/`, and wrap its tasks in a block that carries the role's context.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::task::{TaskCtx, invalid, parse_task_file, scalar_string};
use super::{Action, Keywords, LoadError, Loader, Location, RoleCtx, RoleUse, Task};
use crate::vars::VarMap;

/// `main.yml`, `main.yaml` or `main` in `dir`.
fn main_file(dir: &Path, stem: &str) -> Option<PathBuf> {
    [
        format!("{stem}.yml"),
        format!("{stem}.yaml"),
        stem.to_string(),
    ]
    .into_iter()
    .map(|f| dir.join(f))
    .find(|p| p.is_file())
}

/// The files of a role's `defaults/` or `vars/`: `main.yml` (`.yaml`, or `main` without
/// extension), else every `.yml`, `.yaml`, `.json` or extensionless file under a `main/`
/// folder, depth first in name order, later files overriding earlier ones (Ansible's
/// `find_vars_files` with `allow_dir`).
fn main_vars_files(dir: &Path) -> Vec<PathBuf> {
    if let Some(f) = main_file(dir, "main") {
        return vec![f];
    }
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            if p.is_dir() {
                walk(&p, out);
            } else if p.is_file()
                && matches!(
                    p.extension().and_then(|x| x.to_str()),
                    None | Some("yml" | "yaml" | "json")
                )
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&dir.join("main"), &mut out);
    out
}

impl Loader {
    /// Load role `name` and return the block that runs it (dependencies first).
    pub(crate) fn role_block(
        &self,
        ctx: &TaskCtx<'_>,
        using: RoleUse,
        at: &Location,
    ) -> Result<Task, LoadError> {
        let name = using.name.as_str();
        let tasks_from = using.tasks_from.as_deref();
        let mut candidates = self.role_candidates(name, &ctx.dir);
        // Inside a role (its `dependencies`), Ansible also searches beside that role
        // (`role_basedir`, the folder holding it), after the roles path and before the
        // playbook's own folder, so `policy_controller/calico` in a role under
        // `kubernetes-apps/` is found there.
        if let Some(beside) = ctx.role.as_ref().and_then(|r| r.path.parent()) {
            let at = candidates.len().saturating_sub(1);
            candidates.insert(at, beside.join(name));
        }
        let path = match Path::new(name).is_absolute() {
            true => Some(PathBuf::from(name)),
            false => candidates.iter().find(|p| p.is_dir()).cloned(),
        }
        .ok_or_else(|| LoadError::RoleNotFound {
            file: at.file.to_path_buf(),
            line: at.line,
            name: name.to_string(),
            searched: candidates
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        let tasks_file = match tasks_from {
            Some(f) => {
                let stem = f.trim_end_matches(".yml").trim_end_matches(".yaml");
                Some(
                    main_file(&path.join("tasks"), stem).ok_or_else(|| LoadError::Invalid {
                        file: at.file.to_path_buf(),
                        line: at.line,
                        detail: format!("role `{name}` has no tasks file `{f}`"),
                    })?,
                )
            }
            None => main_file(&path.join("tasks"), "main"),
        };
        // A role is on the stack by the task file it runs: a role may import itself with
        // another `tasks_from` (Ansible allows it), not the file that is importing it.
        let key = tasks_file.clone().unwrap_or_else(|| path.clone());
        if ctx.stack.contains(&key) {
            return Err(LoadError::Cycle {
                file: at.file.to_path_buf(),
                line: at.line,
                target: name.to_string(),
            });
        }
        // `vars_from`/`defaults_from`/`handlers_from` name the file read instead of `main`.
        let from_file = |sub: &str, f: &str| -> Result<PathBuf, LoadError> {
            let stem = f.trim_end_matches(".yml").trim_end_matches(".yaml");
            main_file(&path.join(sub), stem).ok_or_else(|| LoadError::Invalid {
                file: at.file.to_path_buf(),
                line: at.line,
                detail: format!("role `{name}` has no {sub} file `{f}`"),
            })
        };
        let load_vars = |sub: &str| -> Result<VarMap, LoadError> {
            let from = match sub {
                "vars" => using.from.vars.as_deref(),
                _ => using.from.defaults.as_deref(),
            };
            let files = match from {
                Some(f) => vec![from_file(sub, f)?],
                None => main_vars_files(&path.join(sub)),
            };
            let mut vars = VarMap::new();
            for f in files {
                crate::vars::combine(&mut vars, &self.vars_file(&f)?);
            }
            Ok(vars)
        };
        // ansible-core's `RoleDefinition._load_role_path`: a role found on the search path is
        // named as the play writes it (`kubernetes/preinstall`), one given by its own path by
        // its last folder.
        let role_name = match Path::new(name).is_absolute() || !name.contains('/') {
            true => path
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| name.to_string()),
            false => name.trim_end_matches('/').to_string(),
        };
        // A role under `ansible_collections/<ns>/<coll>/roles/` is that collection's, by
        // whichever name the play found it (`RoleDefinition._role_collection`).
        let collection = {
            let parts: Vec<String> = path
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            match parts.as_slice() {
                [.., root, ns, coll, roles, _]
                    if root == "ansible_collections" && roles == "roles" =>
                {
                    Some(format!("{ns}.{coll}"))
                }
                _ => None,
            }
        };
        ctx.loader.note_plugin_root(&path);
        let meta = match main_file(&path.join("meta"), "main") {
            Some(f) => Some(self.doc(&f)?),
            None => None,
        };
        let allow_duplicates = match meta.as_ref().and_then(|d| d.root().get("allow_duplicates")) {
            Some(n) => super::keywords::parse_bool(&n, "allow_duplicates")?,
            None => false,
        };
        let dedup = ((!using.included && !allow_duplicates) || using.once).then(|| {
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            format!(
                "{}|{}|{}",
                real.display(),
                tasks_from.unwrap_or("main"),
                serde_json::Value::Object(using.params.clone())
            )
        });
        let role = Arc::new(RoleCtx {
            name: role_name,
            collection,
            path: path.clone(),
            defaults: load_vars("defaults")?,
            vars: load_vars("vars")?,
            params: using.params,
            included: using.included,
            dedup,
            keywords: using.keywords,
        });
        let mut stack = ctx.stack.clone();
        stack.push(key);
        let sub = TaskCtx {
            loader: self,
            dir: path.join("tasks"),
            role: Some(role.clone()),
            stack,
            handlers: RefCell::new(Vec::new()),
            is_handler: false,
        };
        let mut block = Vec::new();
        // A role's own `collections` list (`meta/main.yml`) holds while its files load; a
        // role inside a collection looks in that collection first (ansible-core's
        // `Role._load_role_data` puts `_role_collection` at the head of the list).
        let mut listed = match meta.as_ref().and_then(|d| d.root().get("collections")) {
            Some(n) => super::keywords::collection_list(&n)?,
            None => Vec::new(),
        };
        if let Some(own) = role.collection.as_ref().filter(|c| !listed.contains(c)) {
            listed.insert(0, own.clone());
        }
        let _scope = self.collections_scope(listed);
        let mut dep_roles: Vec<Arc<RoleCtx>> = Vec::new();
        if let Some(deps) = meta.as_ref().and_then(|d| d.root().get("dependencies")) {
            for dep in deps.items() {
                let (using, kw) = role_entry(&dep)?;
                let mut t = self.role_block(&sub, using, &super::task::loc(&dep))?;
                if let Some(r) = &t.role {
                    self.note_role(r, true);
                    dep_roles.push(r.clone());
                }
                t.kw = kw;
                block.push(t);
            }
        }
        // A role's defaults and vars take in its dependencies' first (ansible-core's
        // `Role.get_default_vars`/`get_vars`), so its tasks see a dependency's defaults
        // wherever the role runs, `include_role` too.
        let (role, sub) = if dep_roles.is_empty() {
            (role, sub)
        } else {
            let (mut defaults, mut vars) = (VarMap::new(), VarMap::new());
            for d in &dep_roles {
                crate::vars::combine(&mut defaults, &d.defaults);
                crate::vars::combine(&mut vars, &d.vars);
            }
            crate::vars::combine(&mut defaults, &role.defaults);
            crate::vars::combine(&mut vars, &role.vars);
            let role = Arc::new(RoleCtx {
                defaults,
                vars,
                ..(*role).clone()
            });
            let sub = TaskCtx {
                role: Some(role.clone()),
                ..sub
            };
            (role, sub)
        };
        if !using.skip_validation {
            let entry = tasks_from.unwrap_or("main");
            let meta_root = meta.as_ref().map(|d| d.root());
            if let Some(t) =
                self.validation_task(&role, entry, &using.role_params, meta_root.as_ref())?
            {
                block.push(t);
            }
        }
        if let Some(f) = tasks_file {
            let doc = self.doc(&f)?;
            block.extend(parse_task_file(&sub, doc.root())?);
        }
        let handlers_file = match &using.from.handlers {
            Some(f) => Some(from_file("handlers", f)?),
            None => main_file(&path.join("handlers"), "main"),
        };
        // A dependency's handlers come before the role's own (`Role.get_handler_blocks`).
        ctx.handlers.borrow_mut().extend(sub.handlers.take());
        if let Some(f) = handlers_file {
            let doc = self.doc(&f)?;
            let hctx = TaskCtx {
                is_handler: true,
                handlers: RefCell::new(Vec::new()),
                stack: sub.stack.clone(),
                dir: path.join("handlers"),
                role: Some(role.clone()),
                loader: self,
            };
            let handlers = parse_task_file(&hctx, doc.root())?;
            ctx.handlers
                .borrow_mut()
                .extend(wrap_handlers(handlers, &role));
        }
        Ok(Task {
            name: None,
            action: Action::Block {
                block,
                rescue: Vec::new(),
                always: Vec::new(),
            },
            kw: Keywords::default(),
            loc: at.clone(),
            role: Some(role),
            written: None,
        })
    }
}

/// Handlers of a role run in the role's context: each gets the role set on itself.
fn wrap_handlers(handlers: Vec<Task>, role: &Arc<RoleCtx>) -> Vec<Task> {
    handlers
        .into_iter()
        .map(|mut h| {
            h.role = Some(role.clone());
            h
        })
        .collect()
}

/// A `roles:` or `dependencies:` entry: `name` or `{role: name, when: .., tags: .., k: v}`.
/// Keys that are not keywords are role parameters, as in Ansible.
pub(crate) fn role_entry(n: &super::yaml::Node<'_>) -> Result<(RoleUse, Keywords), LoadError> {
    match n.value {
        Value::String(s) => Ok((
            RoleUse {
                name: s.clone(),
                ..RoleUse::default()
            },
            Keywords::default(),
        )),
        Value::Object(_) => {
            let mut name = None;
            let mut params = VarMap::new();
            let mut role_params = VarMap::new();
            let mut kws = Vec::new();
            for (k, v) in n.entries() {
                match k {
                    // `role` names the role; `name` only when there is no `role`
                    // (`RoleDefinition._load_role_name`).
                    "role" => name = Some(scalar_string(&v)?),
                    "name" => {
                        if n.get("role").is_none() {
                            name = Some(scalar_string(&v)?);
                        }
                    }
                    "vars" => params.extend(super::task::var_map(&v)?),
                    "when" | "tags" | "become" | "become_user" | "become_method"
                    | "become_flags" | "environment" | "no_log" | "ignore_errors"
                    | "ignore_unreachable" | "delegate_to" | "delegate_facts" | "check_mode"
                    | "diff" | "any_errors_fatal" | "remote_user" | "connection" | "port"
                    | "run_once" | "timeout" | "module_defaults" => kws.push((k, v)),
                    other => {
                        params.insert(other.to_string(), v.value.clone());
                        role_params.insert(other.to_string(), v.value.clone());
                    }
                }
            }
            let kw = super::task::parse_keywords(&kws, "a role entry")?;
            let name = name.ok_or_else(|| invalid(n, "role entry needs `role`"))?;
            let using = RoleUse {
                name,
                params,
                role_params,
                keywords: kw.clone(),
                ..RoleUse::default()
            };
            Ok((using, kw))
        }
        _ => Err(invalid(n, "a role entry must be a name or a mapping")),
    }
}
