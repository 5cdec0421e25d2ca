//! `Loader`: reads playbooks, task files, vars files and roles, with the search paths and
//! caches the executor reuses for dynamic includes at run time.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::task::{TaskCtx, invalid, parse_task_file};
use super::yaml::Doc;
use super::{LoadError, Location, Playbook, RoleCtx, RoleUse, Task};
use crate::vars::VarMap;

#[derive(Debug, Clone, Default)]
pub struct LoaderOptions {
    /// Extra folders roles are looked up in (after `roles/` beside the playbook).
    pub roles_path: Vec<PathBuf>,
    /// Extra folders custom modules are found in (ansible.cfg's `library`, ANSIBLE_LIBRARY),
    /// after the `library/` folders beside the playbook and in roles.
    pub library_path: Vec<PathBuf>,
    /// Extra folders of custom Python filters (ansible.cfg's `filter_plugins`,
    /// ANSIBLE_FILTER_PLUGINS), after the `filter_plugins/` folders beside the playbooks and
    /// in roles.
    pub filter_plugins: Vec<PathBuf>,
    /// The same for custom Jinja tests (`test_plugins`, ANSIBLE_TEST_PLUGINS).
    pub test_plugins: Vec<PathBuf>,
    /// The same for custom lookups (`lookup_plugins`, ANSIBLE_LOOKUP_PLUGINS).
    pub lookup_plugins: Vec<PathBuf>,
    /// Folders holding installed collections (ansible.cfg's `collections_path`,
    /// ANSIBLE_COLLECTIONS_PATH), after the `collections/` folder beside the playbook;
    /// `None` for Ansible's default, `~/.ansible/collections:/usr/share/ansible/collections`.
    pub collections_path: Option<Vec<PathBuf>>,
    /// `-e` variables: with `role_path` and `playbook_dir`, all a static `import_tasks` file
    /// name may use, as they are known before any host runs.
    pub extra_vars: crate::vars::VarMap,
}

/// A `collections` list in force while it lives (`Loader::collections_scope`).
pub(crate) struct CollectionsScope<'l>(&'l Loader);

impl Drop for CollectionsScope<'_> {
    fn drop(&mut self) {
        self.0.collections_scope.lock().unwrap().pop();
    }
}

/// A role loaded for a dynamic `include_role`: its wrapper block and its handlers.
#[derive(Debug, Clone)]
pub struct LoadedRole {
    pub block: Task,
    pub handlers: Vec<Task>,
}

pub struct Loader {
    opts: LoaderOptions,
    /// Folder of the playbook being loaded (set by `load_playbook`).
    base: Mutex<PathBuf>,
    docs: Mutex<HashMap<PathBuf, Arc<Doc>>>,
    /// What loading found worth saying that is not an error (`take_warnings`).
    warnings: Mutex<Vec<String>>,
    /// The roles the play being parsed names (`roles:`, `import_role`) and those they pull
    /// in as dependencies, for `ansible_play_role_names` and friends (`take_role_names`).
    role_names: Mutex<RoleNames>,
    /// The folders of the playbooks and roles loaded, whose `filter_plugins/` and
    /// `test_plugins/` Ansible searches.
    plugin_roots: Mutex<Vec<PathBuf>>,
    /// The `collections` keyword lists in force while parsing (the play's, then each
    /// role's `meta/main.yml` list), innermost last: short module names are looked up in them.
    collections_scope: Mutex<Vec<Vec<String>>>,
    /// The variables of the `import_playbook` entries being loaded, outermost first, and
    /// of the play being parsed: a static import's templated name may use them.
    import_vars: Mutex<Vec<VarMap>>,
    play_vars: Mutex<VarMap>,
}

/// The role names a play's magic variables list (Ansible 2.19's `VariableManager`):
/// `play` are the roles the play names (its `roles:` and static `import_role`s), `dependent`
/// every role pulled in through a role's `dependencies`.
#[derive(Debug, Clone, Default)]
pub struct RoleNames {
    pub play: Vec<String>,
    pub dependent: Vec<String>,
    /// The roles themselves, each after its dependencies (the order `Role.get_default_vars`
    /// combines them in): their defaults and `vars/` are visible to the whole play.
    pub public: Vec<std::sync::Arc<super::RoleCtx>>,
}

impl Loader {
    pub fn new(opts: LoaderOptions) -> Self {
        Self {
            opts,
            base: Mutex::new(PathBuf::from(".")),
            docs: Mutex::new(HashMap::new()),
            warnings: Mutex::new(Vec::new()),
            role_names: Mutex::new(RoleNames::default()),
            plugin_roots: Mutex::new(Vec::new()),
            collections_scope: Mutex::new(Vec::new()),
            import_vars: Mutex::new(Vec::new()),
            play_vars: Mutex::new(VarMap::new()),
        }
    }

    /// Note a role the play names (`dependency: false`) or one pulled in as a dependency.
    pub(crate) fn note_role(&self, role: &std::sync::Arc<super::RoleCtx>, dependency: bool) {
        let mut names = self.role_names.lock().unwrap();
        let list = if dependency {
            &mut names.dependent
        } else {
            &mut names.play
        };
        list.push(role.full_name());
        names.public.push(role.clone());
    }

    /// The role names noted since the last call.
    pub(crate) fn take_role_names(&self) -> RoleNames {
        std::mem::take(&mut *self.role_names.lock().unwrap())
    }

    /// Note a folder (a playbook's or a role's) whose plugin folders Ansible searches.
    pub(crate) fn note_plugin_root(&self, root: &Path) {
        let mut roots = self.plugin_roots.lock().unwrap();
        if !roots.iter().any(|r| r == root) {
            roots.push(root.to_path_buf());
        }
    }

    /// Where custom Python filters are looked for: the `filter_plugins/` folders of the
    /// playbooks and roles loaded so far, then the configured ones.
    pub fn filter_plugin_dirs(&self) -> Vec<PathBuf> {
        self.plugin_dirs("filter_plugins", &self.opts.filter_plugins)
    }

    /// Where custom Python tests are looked for, as `filter_plugin_dirs`.
    pub fn test_plugin_dirs(&self) -> Vec<PathBuf> {
        self.plugin_dirs("test_plugins", &self.opts.test_plugins)
    }

    /// Where custom Python lookups are looked for, as `filter_plugin_dirs`.
    pub fn lookup_plugin_dirs(&self) -> Vec<PathBuf> {
        self.plugin_dirs("lookup_plugins", &self.opts.lookup_plugins)
    }

    fn plugin_dirs(&self, folder: &str, configured: &[PathBuf]) -> Vec<PathBuf> {
        let roots = self.plugin_roots.lock().unwrap();
        let mut dirs: Vec<PathBuf> = roots.iter().map(|r| r.join(folder)).collect();
        dirs.extend(configured.iter().cloned());
        dirs
    }

    /// Note a load-time warning (each text once).
    pub(crate) fn warn(&self, message: String) {
        let mut w = self.warnings.lock().unwrap();
        if !w.contains(&message) {
            w.push(message);
        }
    }

    /// The warnings of everything loaded so far, oldest first; they are handed out once.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap())
    }

    /// `LoaderOptions::library_path`.
    pub(crate) fn library_path(&self) -> &[PathBuf] {
        &self.opts.library_path
    }

    /// Set the variables of the play about to be parsed (its `vars`, under those of the
    /// `import_playbook` entries it came through), for `static_vars`.
    pub(crate) fn set_play_vars(&self, own: &VarMap) {
        let mut vars = own.clone();
        for v in self.import_vars.lock().unwrap().iter() {
            crate::vars::combine(&mut vars, v);
        }
        *self.play_vars.lock().unwrap() = vars;
    }

    /// The variables a static import's templated name may use, as ansible-core templates
    /// it with the play's variables when it loads: the play's `vars` (with its
    /// `import_playbook` vars), `-e` variables, `playbook_dir`, and `role_path`/`role_name`
    /// inside a role.
    pub(crate) fn static_vars(&self, role: Option<&RoleCtx>) -> VarMap {
        // ansible-core's `get_vars(play, task)` without a host: the task's role's defaults,
        // the play's vars, the role's vars and parameters, then `-e` (kolla's
        // `import_role: name: openstack.kolla.{{ container_engine }}` names a default).
        let mut vars = VarMap::new();
        if let Some(r) = role {
            crate::vars::overlay(&mut vars, &r.defaults);
        }
        crate::vars::overlay(&mut vars, &self.play_vars.lock().unwrap());
        if let Some(r) = role {
            crate::vars::overlay(&mut vars, &r.vars);
            crate::vars::overlay(&mut vars, &r.params);
        }
        crate::vars::combine(&mut vars, &self.opts.extra_vars);
        let base = std::path::absolute(self.base_dir()).unwrap_or_else(|_| self.base_dir());
        vars.insert(
            "playbook_dir".into(),
            Value::String(base.display().to_string()),
        );
        if let Some(r) = role {
            vars.insert(
                "role_path".into(),
                Value::String(r.path.display().to_string()),
            );
            vars.insert("role_name".into(), Value::String(r.name.clone()));
        }
        vars
    }

    /// Put a `collections` keyword list (a play's, a role's) in force until the returned
    /// guard is dropped.
    pub(crate) fn collections_scope(&self, list: Vec<String>) -> CollectionsScope<'_> {
        self.collections_scope.lock().unwrap().push(list);
        CollectionsScope(self)
    }

    /// The collections a short module name is looked up in, innermost list first.
    pub(crate) fn collections_in_scope(&self) -> Vec<String> {
        let scope = self.collections_scope.lock().unwrap();
        scope.iter().rev().flatten().cloned().collect()
    }

    /// The folders holding an `ansible_collections` folder that collection modules and
    /// their `module_utils` are looked up in, in ansible-core's order (the controller
    /// Python's `sys.path` comes after these, see `modules::pybundle::controller`).
    pub fn collection_roots(&self) -> Vec<PathBuf> {
        let mut roots = vec![self.base_dir().join("collections")];
        match &self.opts.collections_path {
            Some(paths) => roots.extend(paths.iter().cloned()),
            None => {
                if let Some(home) = std::env::var_os("HOME") {
                    roots.push(Path::new(&home).join(".ansible/collections"));
                }
                roots.push(PathBuf::from("/usr/share/ansible/collections"));
            }
        }
        roots.retain(|r| r.join("ansible_collections").is_dir());
        roots
    }

    pub fn base_dir(&self) -> PathBuf {
        self.base.lock().unwrap().clone()
    }

    pub(crate) fn doc(&self, path: &Path) -> Result<Arc<Doc>, LoadError> {
        if let Some(d) = self.docs.lock().unwrap().get(path) {
            return Ok(d.clone());
        }
        let d = Arc::new(Doc::load(path)?);
        for w in &d.warnings {
            self.warn(w.clone());
        }
        self.docs
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), d.clone());
        Ok(d)
    }

    /// Load a playbook file (and the playbooks it imports).
    pub fn load_playbook(&self, path: &Path) -> Result<Playbook, LoadError> {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        self.note_plugin_root(&dir);
        *self.base.lock().unwrap() = dir;
        let mut plays = Vec::new();
        self.load_plays(path, &mut plays, &mut Vec::new())?;
        Ok(Playbook {
            path: path.to_path_buf(),
            plays,
        })
    }

    fn load_plays(
        &self,
        path: &Path,
        plays: &mut Vec<super::Play>,
        stack: &mut Vec<PathBuf>,
    ) -> Result<(), LoadError> {
        let doc = self.doc(path)?;
        let root = doc.root();
        let items = match root.value {
            Value::Array(_) => root.items(),
            Value::Null => Vec::new(),
            _ => return Err(invalid(&root, "a playbook must be a list of plays")),
        };
        if items.is_empty() {
            // ansible-core's words (`Playbook._load_playbook_data`).
            let full = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            return Err(invalid(
                &root,
                format!(
                    "A playbook must contain at least one play: {}",
                    full.display()
                ),
            ));
        }
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        for item in items {
            if let Some(imp) = item
                .get("import_playbook")
                .or_else(|| item.get("ansible.builtin.import_playbook"))
                .or_else(|| item.get("ansible.legacy.import_playbook"))
            {
                let import = PlaybookImport::parse(self, &item, &imp)?;
                let target = dir.join(&import.file);
                if stack.contains(&target) {
                    return Err(LoadError::Cycle {
                        file: item.file.to_path_buf(),
                        line: item.line(),
                        target: import.file,
                    });
                }
                stack.push(target.clone());
                let first = plays.len();
                self.import_vars.lock().unwrap().push(import.vars.clone());
                let loaded = self.load_plays(&target, plays, stack);
                self.import_vars.lock().unwrap().pop();
                loaded?;
                stack.pop();
                for play in &mut plays[first..] {
                    import.apply(play);
                }
                continue;
            }
            plays.push(super::play::parse_play(self, &item, &dir)?);
        }
        Ok(())
    }

    /// Parse a task file for a static import (cycle-checked, handlers of imported roles kept).
    pub(crate) fn import_tasks_file(
        &self,
        ctx: &TaskCtx<'_>,
        path: &Path,
        at: &Location,
    ) -> Result<Vec<Task>, LoadError> {
        if ctx.stack.iter().any(|p| p == path) {
            return Err(LoadError::Cycle {
                file: at.file.to_path_buf(),
                line: at.line,
                target: path.display().to_string(),
            });
        }
        let doc = self.doc(path).map_err(|e| match e {
            LoadError::Read { path, source } => LoadError::Invalid {
                file: at.file.to_path_buf(),
                line: at.line,
                detail: format!("cannot read `{}`: {source}", path.display()),
            },
            other => other,
        })?;
        let mut stack = ctx.stack.clone();
        stack.push(path.to_path_buf());
        let sub = TaskCtx {
            loader: self,
            dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            role: ctx.role.clone(),
            stack,
            handlers: RefCell::new(Vec::new()),
            is_handler: ctx.is_handler,
        };
        if ctx.is_handler {
            super::task::refuse_handler_blocks(Some(doc.root()))?;
        }
        let tasks = parse_task_file(&sub, doc.root())?;
        ctx.handlers.borrow_mut().extend(sub.handlers.into_inner());
        Ok(tasks)
    }

    /// Load a task file for a dynamic `include_tasks` (at run time).
    /// `handler`: the include is a handler's, and its tasks are handlers.
    pub fn include_tasks_file(
        &self,
        path: &Path,
        role: Option<Arc<RoleCtx>>,
        handler: bool,
    ) -> Result<(Vec<Task>, Vec<Task>), LoadError> {
        let doc = self.doc(path)?;
        let ctx = TaskCtx {
            loader: self,
            dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            role,
            stack: vec![path.to_path_buf()],
            handlers: RefCell::new(Vec::new()),
            is_handler: handler,
        };
        if handler {
            super::task::refuse_handler_blocks(Some(doc.root()))?;
        }
        let tasks = parse_task_file(&ctx, doc.root())?;
        Ok((tasks, ctx.handlers.into_inner()))
    }

    /// Load a role for a dynamic `include_role` (at run time).
    pub fn include_role(&self, using: RoleUse, at: &Location) -> Result<LoadedRole, LoadError> {
        let ctx = TaskCtx {
            loader: self,
            dir: at.file.parent().unwrap_or(Path::new(".")).to_path_buf(),
            role: None,
            stack: Vec::new(),
            handlers: RefCell::new(Vec::new()),
            is_handler: false,
        };
        let block = self.role_block(&ctx, using, at)?;
        Ok(LoadedRole {
            block,
            handlers: ctx.handlers.into_inner(),
        })
    }

    /// A vars file (`vars_files`, `include_vars`, role `vars/`, `defaults/`): a mapping.
    pub fn vars_file(&self, path: &Path) -> Result<VarMap, LoadError> {
        let doc = self.doc(path)?;
        let root = doc.root();
        super::task::var_map(&root)
    }

    /// Folders a role named `name` may be in, in search order, each with `.` and `..`
    /// resolved by name as ansible-core's `unfrackpath` resolves them (`default/roles/../..`
    /// holds whether `roles` exists or not).
    pub(crate) fn role_candidates(&self, name: &str, from_dir: &Path) -> Vec<PathBuf> {
        let base = self.base_dir();
        let mut c = vec![
            from_dir.join("roles").join(name),
            base.join("roles").join(name),
        ];
        for p in &self.opts.roles_path {
            c.push(p.join(name));
        }
        c.push(base.join(name));
        // A role named by a path (`../../kubespray_defaults`) in a playbook another one
        // imports is found from that playbook's own folder (ansible-core's loader has it as
        // its base folder while the imported playbook loads), and at last from the current
        // folder (`unfrackpath(role_name)`).
        if name.contains('/') {
            c.push(from_dir.join(name));
            c.push(PathBuf::from(name));
        }
        // A collection's role: `ns.coll.role` by its full name, a short name through the
        // play's or role's `collections` list, in every collection root (`collections/`
        // beside the playbook first), as ansible-core's `RoleDefinition._load_role_path`.
        let roots = self.collection_roots();
        let in_collection = |coll: &str, role: &str, c: &mut Vec<PathBuf>| {
            if let Some((ns, co)) = coll.split_once('.') {
                for r in &roots {
                    c.push(
                        r.join("ansible_collections")
                            .join(ns)
                            .join(co)
                            .join("roles")
                            .join(role),
                    );
                }
            }
        };
        match name.rsplit_once('.') {
            _ if name.contains('/') => {}
            Some((coll, role)) if coll.contains('.') => in_collection(coll, role, &mut c),
            Some(_) => {}
            None => {
                for coll in self.collections_in_scope() {
                    in_collection(&coll, name, &mut c);
                }
            }
        }
        c.iter().map(|p| lexical(p)).collect()
    }
}

/// `path` absolute, with `.` and `..` resolved by name (no symbolic link followed), as
/// ansible-core's `unfrackpath(follow=False)` makes it.
pub fn unfrack(path: &Path) -> PathBuf {
    lexical(&std::path::absolute(path).unwrap_or_else(|_| path.into()))
}

/// `path` with `.` and `..` resolved by name: `a/b/../c` is `a/c` whether `b` exists or
/// not; a leading `..` of a relative path stays.
pub fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// An `import_playbook` entry: the file (a template over `-e` variables, `playbook_dir` and
/// its own `vars`) and what it gives each play it brings, as ansible-core's
/// `PlaybookInclude.load_data`: its `vars` over the play's, its `tags` added to the play's,
/// its `when` before the play's tasks (fact gathering too).
struct PlaybookImport {
    file: String,
    vars: VarMap,
    tags: Vec<String>,
    when: Vec<String>,
}

impl PlaybookImport {
    fn parse(
        loader: &Loader,
        item: &super::yaml::Node<'_>,
        imp: &super::yaml::Node<'_>,
    ) -> Result<Self, LoadError> {
        let vars = match item.get("vars") {
            Some(n) => super::task::var_map(&n)?,
            None => VarMap::new(),
        };
        let mut file = super::task::scalar_string(imp)?;
        if file.contains("{{") || file.contains("{%") {
            let mut scope = vars.clone();
            crate::vars::overlay(&mut scope, &loader.static_vars(None));
            file = crate::template::Templar::new()
                .render_str(&file, &scope)
                .map_err(|e| {
                    invalid(
                        imp,
                        format!(
                            "import_playbook is static: its file name `{file}` may use only \
                             `-e` variables, playbook_dir and its own vars, but {e}"
                        ),
                    )
                })?;
        }
        let tags = match item.get("tags") {
            Some(n) => super::keywords::string_list(&n)?,
            None => Vec::new(),
        };
        let when = match item.get("when") {
            Some(n) => super::keywords::conditions(&n)?,
            None => Vec::new(),
        };
        Ok(Self {
            file,
            vars,
            tags,
            when,
        })
    }

    fn apply(&self, play: &mut super::Play) {
        crate::vars::overlay(&mut play.vars, &self.vars);
        for t in &self.tags {
            if !play.kw.tags.contains(t) {
                play.kw.tags.push(t.clone());
            }
        }
        let mut when = self.when.clone();
        when.append(&mut play.kw.when);
        play.kw.when = when;
    }
}
