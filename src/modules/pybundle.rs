//! The Python files a module takes with it to the host: the `module_utils` it imports, from
//! ansible-core (`ansible.module_utils.*`) and from collections
//! (`ansible_collections.<ns>.<coll>.plugins.module_utils.*`), followed through their own
//! imports, as ansible-core's `ModuleDepFinder` does before it builds an AnsiballZ payload.
//!
//! Imports are read from the source text (a small tokenizer that skips strings and comments
//! and joins bracketed and backslash-continued lines); an import that names no file is left
//! for Python to report on the host. kinit's runner (`pymodule_runner.py`) serves the files
//! from memory. When every `ansible.*` import is one its own stand-ins provide (`basic`,
//! `_text`, `common.text.converters`, `six`), no ansible-core file is sent: the module starts
//! faster and runs where the controller has no ansible-core.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `ansible.*` modules the runner's stand-ins provide (and their parent packages).
const PROVIDED: &[&str] = &[
    "ansible",
    "ansible.module_utils",
    "ansible.module_utils.basic",
    "ansible.module_utils._text",
    "ansible.module_utils.common",
    "ansible.module_utils.common.text",
    "ansible.module_utils.common.text.converters",
    "ansible.module_utils.six",
];

/// Where imported files are looked up.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    /// The folder holding the controller's `ansible` package, when its Python has
    /// ansible-core.
    pub ansible: Option<PathBuf>,
    /// Folders holding an `ansible_collections` folder, in search order.
    pub collections: Vec<PathBuf>,
}

/// One shipped Python file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyFile {
    /// Whether it is a package's `__init__`.
    pub package: bool,
    pub source: Vec<u8>,
}

/// The files to ship, by dotted module name.
#[derive(Debug, Clone, Default)]
pub struct Bundle {
    pub files: BTreeMap<String, PyFile>,
    /// Whether ansible-core's own `module_utils` are in `files` (the runner then installs
    /// no stand-ins).
    pub real_ansible: bool,
}

/// One `import` statement: `import a.b` is `{level 0, module "a.b", names []}`, `from ..x
/// import y, z` is `{level 2, module "x", names [y, z]}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub level: usize,
    pub module: String,
    pub names: Vec<String>,
}

/// The modules ansible-core's AnsiballZ always sends, beside what the module imports: its
/// loader, `basic`, and the JSON profiles the loader picks by name
/// (`executor/module_common.py`, `recursive_finder`).
const ALWAYS: &[&str] = &[
    "ansible.module_utils._internal._ansiballz._loader",
    "ansible.module_utils.basic",
    "ansible.module_utils._internal._json._profiles._module_legacy_c2m",
    "ansible.module_utils._internal._json._profiles._module_legacy_m2c",
];

/// The files the module `fqn` (its dotted name: `ansible_collections.ns.coll.plugins.modules.x`,
/// or `ansible.legacy.x` for a `library/` module) with text `source` needs, its parent
/// packages included. Modules of collections and of ansible-core are written against
/// ansible-core's whole `module_utils`, so they always get the real files when the
/// controller has them; a `library/` module gets them only when it imports more than the
/// stand-ins provide.
pub fn bundle(source: &[u8], fqn: &str, roots: &Roots) -> Bundle {
    let text = String::from_utf8_lossy(source);
    let package = fqn.rsplit_once('.').map_or("", |(p, _)| p);
    let mut f = Finder::new(roots, false);
    f.scan(&text, package, false);
    let installed = !fqn.starts_with("ansible.legacy.");
    let real = (f.needs_real || installed) && roots.ansible.is_some();
    if real {
        f = Finder::new(roots, true);
        f.scan(&text, package, false);
        for name in ALWAYS {
            f.add(name);
        }
    }
    if !package.is_empty() && (real || !is_ansible(package)) {
        let parts: Vec<&str> = package.split('.').collect();
        for i in 1..=parts.len() {
            let name = parts[..i].join(".");
            if !f.files.contains_key(&name) {
                f.add_package(&name);
            }
        }
    }
    Bundle {
        files: f.files,
        real_ansible: real,
    }
}

/// The dotted name Ansible imports the module at `path` under: its place below an
/// `ansible_collections` folder, `ansible.modules.<name>` for ansible-core's own, else
/// `ansible.legacy.<name>` (`_get_ansible_module_fqn`).
pub fn module_fqn(path: &Path, name: &str) -> String {
    let parts: Vec<String> = path
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let n = parts.len();
    if let Some(i) = parts.iter().rposition(|p| p == "ansible_collections") {
        return parts[i..].join(".");
    }
    if n >= 3 && parts[n - 3] == "ansible" && parts[n - 2] == "modules" {
        return parts[n - 3..].join(".");
    }
    format!("ansible.legacy.{}", name.rsplit('.').next().unwrap_or(name))
}

/// What the controller's `python3` offers modules: the folder holding its ansible-core, and
/// the folders on its `sys.path` that hold collections (ansible-core scans them too,
/// `COLLECTIONS_SCAN_SYS_PATH`). Asked once per run, the first time a module needs it; the
/// package is found, not imported, so this costs one interpreter start.
#[derive(Debug, Clone, Default)]
pub struct Controller {
    pub ansible: Option<PathBuf>,
    pub collections: Vec<PathBuf>,
}

const ASK_CONTROLLER: &str = r#"
import importlib.util, json, os, sys
spec = importlib.util.find_spec("ansible")
root = None
if spec is not None and spec.submodule_search_locations:
    top = list(spec.submodule_search_locations)[0]
    if os.path.isfile(os.path.join(top, "module_utils", "basic.py")):
        root = os.path.dirname(top)
paths = [p for p in sys.path if p and os.path.isdir(os.path.join(p, "ansible_collections"))]
print(json.dumps({"ansible": root, "collections": paths}))
"#;

pub fn controller() -> &'static Controller {
    static CONTROLLER: std::sync::OnceLock<Controller> = std::sync::OnceLock::new();
    CONTROLLER.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", ASK_CONTROLLER])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output();
        let Ok(out) = out else {
            return Controller::default();
        };
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        Controller {
            ansible: v["ansible"].as_str().map(PathBuf::from),
            collections: v["collections"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str().map(PathBuf::from))
                .collect(),
        }
    })
}

fn is_ansible(name: &str) -> bool {
    name == "ansible" || name.starts_with("ansible.")
}

struct Finder<'r> {
    roots: &'r Roots,
    /// Whether ansible-core's files are shipped (else the stand-ins serve them).
    follow_ansible: bool,
    files: BTreeMap<String, PyFile>,
    /// The module or a collection file imports an `ansible.*` module the stand-ins lack.
    needs_real: bool,
}

impl<'r> Finder<'r> {
    fn new(roots: &'r Roots, follow_ansible: bool) -> Self {
        Self {
            roots,
            follow_ansible,
            files: BTreeMap::new(),
            needs_real: false,
        }
    }

    /// Follows the imports of one file, which lives in `package`; `core` when the file is
    /// ansible-core's own.
    fn scan(&mut self, text: &str, package: &str, core: bool) {
        for imp in imports(text) {
            let base = if imp.level == 0 {
                imp.module.clone()
            } else {
                let mut parts: Vec<&str> = package.split('.').filter(|p| !p.is_empty()).collect();
                if imp.level - 1 > parts.len() {
                    continue;
                }
                parts.truncate(parts.len() - (imp.level - 1));
                if !imp.module.is_empty() {
                    parts.push(&imp.module);
                }
                parts.join(".")
            };
            if !is_ansible(&base) && !base.starts_with("ansible_collections.") {
                continue;
            }
            let subs = imp.names.iter().map(|n| format!("{base}.{n}"));
            for (i, name) in std::iter::once(base.clone()).chain(subs).enumerate() {
                if is_ansible(&name) && !core && !PROVIDED.contains(&name.as_str()) {
                    // `from X import n`: `X.n` counts only where it is a module.
                    if i == 0 || self.locate(&name).is_some() {
                        self.needs_real = true;
                    }
                }
                if !is_ansible(&name) || self.follow_ansible {
                    self.add(&name);
                }
            }
        }
    }

    /// Adds the module `name` and its parent packages, when its file exists, and follows
    /// their imports.
    fn add(&mut self, name: &str) {
        if self.files.contains_key(name) {
            return;
        }
        let Some((path, package)) = self.locate(name) else {
            return;
        };
        let parts: Vec<&str> = name.split('.').collect();
        for i in 1..parts.len() {
            let parent = parts[..i].join(".");
            if !self.files.contains_key(&parent) {
                self.add_package(&parent);
            }
        }
        let source = path.and_then(|p| std::fs::read(p).ok()).unwrap_or_default();
        let text = String::from_utf8_lossy(&source).into_owned();
        self.files
            .insert(name.to_string(), PyFile { package, source });
        let own_package = if package {
            name.to_string()
        } else {
            parts[..parts.len() - 1].join(".")
        };
        self.scan(&text, &own_package, is_ansible(name));
    }

    /// A parent package: its `__init__.py`, else an empty package (the
    /// `ansible_collections`, namespace and collection levels have none). The `ansible`
    /// package is always a stub: its real `__init__` pulls in the controller's whole
    /// release, where a module needs only the package, as AnsiballZ's own stub is.
    fn add_package(&mut self, name: &str) {
        if name != "ansible" && matches!(self.locate(name), Some((Some(_), true))) {
            self.add(name);
            return;
        }
        let source = if name == "ansible" {
            b"from pkgutil import extend_path\n__path__ = extend_path(__path__, __name__)\n"
                .to_vec()
        } else {
            Vec::new()
        };
        self.files.insert(
            name.to_string(),
            PyFile {
                package: true,
                source,
            },
        );
    }

    /// The file of module `name` (none for a folder without `__init__.py`) and whether it
    /// is a package.
    fn locate(&self, name: &str) -> Option<(Option<PathBuf>, bool)> {
        let rel: PathBuf = name.split('.').collect();
        let roots = if is_ansible(name) {
            self.roots.ansible.as_slice()
        } else {
            self.roots.collections.as_slice()
        };
        roots.iter().find_map(|root| {
            let dir = root.join(&rel);
            let init = dir.join("__init__.py");
            if init.is_file() {
                return Some((Some(init), true));
            }
            if dir.is_dir() {
                return Some((None, true));
            }
            let file = dir.with_extension("py");
            file.is_file().then_some((Some(file), false))
        })
    }
}

/// The import statements of Python source `text`, in order, wherever they are (inside `try`,
/// `if`, functions). Strings and comments are skipped, so a docstring's `from x import y`
/// is not an import.
pub fn imports(text: &str) -> Vec<Import> {
    logical_lines(text)
        .iter()
        .flat_map(|l| l.split(';'))
        .filter_map(|stmt| parse_import(stmt.trim()))
        .flatten()
        .collect()
}

/// Python's logical lines with string literals blanked and comments removed.
fn logical_lines(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut lines = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '\'' | '"' => {
                let triple = i + 2 < chars.len() && chars[i + 1] == c && chars[i + 2] == c;
                let quote_len = if triple { 3 } else { 1 };
                i += quote_len;
                while i < chars.len() {
                    if chars[i] == '\\' {
                        i += 2;
                        continue;
                    }
                    if !triple && chars[i] == '\n' {
                        break;
                    }
                    if chars[i] == c
                        && (!triple
                            || (i + 2 < chars.len() && chars[i + 1] == c && chars[i + 2] == c))
                    {
                        i += quote_len;
                        break;
                    }
                    i += 1;
                }
                cur.push_str("''");
                continue;
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '\\' if chars.get(i + 1) == Some(&'\n') => {
                i += 2;
                cur.push(' ');
                continue;
            }
            '\n' if depth == 0 => {
                lines.push(std::mem::take(&mut cur));
                i += 1;
                continue;
            }
            '\n' => {
                cur.push(' ');
                i += 1;
                continue;
            }
            _ => {}
        }
        cur.push(c);
        i += 1;
    }
    lines.push(cur);
    lines
}

fn parse_import(stmt: &str) -> Option<Vec<Import>> {
    if let Some(rest) = stmt.strip_prefix("import ") {
        let list = rest
            .split(',')
            .filter_map(|part| {
                let module = part.split_whitespace().next()?;
                Some(Import {
                    level: 0,
                    module: module.to_string(),
                    names: Vec::new(),
                })
            })
            .collect();
        return Some(list);
    }
    let rest = stmt.strip_prefix("from ")?;
    let (module, names) = rest.split_once(" import ")?;
    let module = module.trim();
    let level = module.chars().take_while(|c| *c == '.').count();
    let names = names
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .filter_map(|n| n.split_whitespace().next())
        .filter(|n| *n != "*")
        .map(str::to_string)
        .collect();
    Some(vec![Import {
        level,
        module: module[level..].to_string(),
        names,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imp(level: usize, module: &str, names: &[&str]) -> Import {
        Import {
            level,
            module: module.into(),
            names: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    #[test]
    fn modules_are_named_as_ansible_imports_them() {
        let p = Path::new("/c/ansible_collections/ns/coll/plugins/modules/greet.py");
        assert_eq!(
            module_fqn(p, "ns.coll.greet"),
            "ansible_collections.ns.coll.plugins.modules.greet"
        );
        assert_eq!(
            module_fqn(Path::new("/venv/site/ansible/modules/expect.py"), "expect"),
            "ansible.modules.expect"
        );
        assert_eq!(
            module_fqn(Path::new("/p/library/mine.py"), "mine"),
            "ansible.legacy.mine"
        );
    }

    #[test]
    fn imports_are_found_across_lines_and_not_in_strings_or_comments() {
        let src = r#"
"""Doc.
from not.an import import_
"""
import os, ansible.module_utils.urls as u
# from ansible.module_utils import commented
try:
    from ansible.module_utils.common.dict_transformations import (
        dict_merge,   # a comment
        recursive_diff,
    )
except ImportError:
    pass
from ..module_utils.words import greet; import sys
x = "from a import b"
from ansible.module_utils.basic \
    import AnsibleModule
"#;
        assert_eq!(
            imports(src),
            vec![
                imp(0, "os", &[]),
                imp(0, "ansible.module_utils.urls", &[]),
                imp(
                    0,
                    "ansible.module_utils.common.dict_transformations",
                    &["dict_merge", "recursive_diff"]
                ),
                imp(2, "module_utils.words", &["greet"]),
                imp(0, "sys", &[]),
                imp(0, "ansible.module_utils.basic", &["AnsibleModule"]),
            ]
        );
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn collection_utils_are_followed_and_stand_ins_keep_ansible_files_home() {
        let d = tempfile::tempdir().unwrap();
        let coll = d.path().join("colls");
        let core = d.path().join("core");
        let utils = "ansible_collections/kt/demo/plugins/module_utils";
        write(
            &coll,
            &format!("{utils}/words.py"),
            "from .inner import x\n",
        );
        write(&coll, &format!("{utils}/inner.py"), "import os\n");
        write(&core, "ansible/__init__.py", "import everything\n");
        write(&core, "ansible/module_utils/__init__.py", "");
        write(
            &core,
            "ansible/module_utils/basic.py",
            "from .common import y\n",
        );
        write(&core, "ansible/module_utils/common/__init__.py", "");
        write(&core, "ansible/module_utils/common/y.py", "");
        write(
            &core,
            "ansible/module_utils/urls.py",
            "from ansible.module_utils.basic import z\n",
        );
        let roots = Roots {
            ansible: Some(core.clone()),
            collections: vec![coll.clone()],
        };
        // A library module that imports only what the stand-ins provide, and a collection's
        // module_utils by full name.
        let module = "from ansible.module_utils.basic import AnsibleModule\n\
                      from ansible_collections.kt.demo.plugins.module_utils.words import greet\n";
        let b = bundle(module.as_bytes(), "ansible.legacy.greet", &roots);
        assert!(!b.real_ansible);
        let names: Vec<&str> = b.files.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            vec![
                "ansible_collections",
                "ansible_collections.kt",
                "ansible_collections.kt.demo",
                "ansible_collections.kt.demo.plugins",
                "ansible_collections.kt.demo.plugins.module_utils",
                "ansible_collections.kt.demo.plugins.module_utils.inner",
                "ansible_collections.kt.demo.plugins.module_utils.words",
            ]
        );
        // A collection's own module always gets ansible-core's files, and its package for
        // its relative imports.
        let own = "from ..module_utils.words import greet\n";
        let c = bundle(
            own.as_bytes(),
            "ansible_collections.kt.demo.plugins.modules.greet",
            &roots,
        );
        assert!(c.real_ansible);
        assert!(
            c.files
                .contains_key("ansible_collections.kt.demo.plugins.modules")
        );
        assert!(
            c.files
                .contains_key("ansible_collections.kt.demo.plugins.module_utils.inner")
        );
        assert!(c.files.contains_key("ansible.module_utils.basic"));
        assert!(b.files["ansible_collections.kt.demo.plugins"].package);
        assert!(!b.files["ansible_collections.kt.demo.plugins.module_utils.words"].package);

        // `urls` is not a stand-in: ansible-core's files go, followed through `basic`, with
        // a stub for the `ansible` package itself.
        let b = bundle(
            b"import ansible.module_utils.urls\n",
            "ansible.legacy.m",
            &roots,
        );
        assert!(b.real_ansible);
        let names: Vec<&str> = b.files.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            vec![
                "ansible",
                "ansible.legacy",
                "ansible.module_utils",
                "ansible.module_utils.basic",
                "ansible.module_utils.common",
                "ansible.module_utils.common.y",
                "ansible.module_utils.urls",
            ]
        );
        assert!(!String::from_utf8_lossy(&b.files["ansible"].source).contains("everything"));
        assert!(
            b.files["ansible.module_utils.basic"]
                .source
                .starts_with(b"from .common")
        );

        // Without ansible-core on the controller nothing of it is sent; the runner names the
        // import it cannot serve.
        let none = Roots {
            ansible: None,
            collections: vec![coll],
        };
        let b = bundle(
            b"import ansible.module_utils.urls\n",
            "ansible.legacy.m",
            &none,
        );
        assert!(!b.real_ansible && b.files.is_empty());
    }
}
