//! Custom Jinja filters, tests and lookups written in Python (`filter_plugins/*.py`,
//! `test_plugins/*.py` and `lookup_plugins/*.py` beside the playbook, in a role, or in
//! ansible.cfg's `filter_plugins`/`test_plugins`/`lookup_plugins`): ansible-core imports each
//! file and calls `FilterModule().filters()[name](value, *args, **kwargs)`
//! (`TestModule().tests()` for tests, `LookupModule().run(terms, variables, **kwargs)` for a
//! lookup named as its file) on the controller. A lookup's `variables` are read lazily: the
//! host asks for each one the plugin reads, and kinit answers from the template's scope. kinit does the same in one Python process per run
//! (`pyfilters.py`), started only when such files exist; a template calling one sends the
//! value and arguments as JSON and gets the result back. Plugins get ansible-core's modules when the controller's Python has them,
//! else kinit's stand-ins for the common imports.
//!
//! Values cross as JSON: a filter sees lists, dicts, strings, numbers, booleans and `None`
//! (as it does in Ansible for data from YAML), and a tuple or set it returns is a list.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use serde_json::{Value, json};

const HOST: &str = include_str!("pyfilters.py");

/// The running filter host and the filters it serves.
pub struct PythonFilters {
    io: Mutex<Io>,
    /// Each filter's name and the file that defines it.
    pub filters: BTreeMap<String, PathBuf>,
    /// Each test's name and the file that defines it.
    pub tests: BTreeMap<String, PathBuf>,
    /// Each lookup's name and its file.
    pub lookups: BTreeMap<String, PathBuf>,
    /// Files that could not be loaded, with why (shown as warnings).
    pub errors: Vec<String>,
}

struct Io {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for PythonFilters {
    fn drop(&mut self) {
        if let Ok(io) = self.io.get_mut() {
            let _ = io.child.kill();
            let _ = io.child.wait();
        }
    }
}

/// The `*.py` files of `dirs` (those not starting with `_`), in name order per folder.
pub fn plugin_files(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|e| e == "py")
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| !n.starts_with('_'))
                    && p.is_file()
            })
            .collect();
        files.sort();
        for f in files {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

impl PythonFilters {
    /// Start the host with `python` and load the filter plugin files `filters` and the test
    /// plugin files `tests`.
    pub fn start(
        python: &Path,
        filters: &[PathBuf],
        tests: &[PathBuf],
        lookups: &[PathBuf],
    ) -> Result<Self, String> {
        let mut child = Command::new(python)
            .args(["-u", "-c", HOST])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start `{}` for filter plugins: {e}",
                    python.display()
                )
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err("the filter plugin host has no stdin or stdout".into());
        };
        let io = Mutex::new(Io {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        });
        let mut host = Self {
            io,
            filters: BTreeMap::new(),
            tests: BTreeMap::new(),
            lookups: BTreeMap::new(),
            errors: Vec::new(),
        };
        let answer = host.ask(
            &json!({"op": "load", "filters": filters, "tests": tests, "lookups": lookups}),
            &|_| None,
        )?;
        let names = |kind: &str| -> BTreeMap<String, PathBuf> {
            answer
                .get(kind)
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), PathBuf::from(v.as_str().unwrap_or_default())))
                        .collect()
                })
                .unwrap_or_default()
        };
        host.filters = names("filters");
        host.tests = names("tests");
        host.lookups = names("lookups");
        host.errors = answer
            .get("errors")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|e| e.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(host)
    }

    /// `value | name(*args, **kwargs)` (`kind` "filter"), or `value is name(...)` ("test").
    pub fn call(
        &self,
        kind: &str,
        name: &str,
        value: Value,
        args: Vec<Value>,
        kwargs: serde_json::Map<String, Value>,
    ) -> Result<Value, String> {
        let answer = self.ask(
            &json!({
                "op": "call", "kind": kind, "name": name, "value": value, "args": args,
                "kwargs": kwargs,
            }),
            &|_| None,
        )?;
        match (answer.get("ok"), answer.get("error")) {
            (Some(v), _) => Ok(v.clone()),
            (_, Some(e)) => Err(e.as_str().unwrap_or("failed").to_string()),
            _ => Err(format!("the {kind} plugin '{name}' gave no answer")),
        }
    }

    /// `lookup(name, *terms, **kwargs)` of a Python lookup: its list, or its error's text.
    /// `variable` gives the value of a variable the plugin reads (`None`: not defined).
    pub fn lookup(
        &self,
        name: &str,
        terms: Vec<Value>,
        kwargs: serde_json::Map<String, Value>,
        variable: &dyn Fn(&str) -> Option<Value>,
    ) -> Result<Vec<Value>, String> {
        let answer = self.ask(
            &json!({"op": "lookup", "name": name, "terms": terms, "kwargs": kwargs}),
            variable,
        )?;
        match (answer.get("ok"), answer.get("error")) {
            (Some(Value::Array(v)), _) => Ok(v.clone()),
            (Some(v), _) => Ok(vec![v.clone()]),
            (_, Some(e)) => Err(e.as_str().unwrap_or("failed").to_string()),
            _ => Err(format!("the lookup plugin '{name}' gave no answer")),
        }
    }

    /// One request and its answer; requests from several hosts' templates take turns. The
    /// host's questions on the way (`{"need": variable}`) are answered with `variable`.
    fn ask(
        &self,
        request: &Value,
        variable: &dyn Fn(&str) -> Option<Value>,
    ) -> Result<Value, String> {
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let gone = |e: std::io::Error| format!("the filter plugin host stopped: {e}");
        writeln!(io.stdin, "{request}").map_err(gone)?;
        io.stdin.flush().map_err(gone)?;
        loop {
            let mut line = String::new();
            let n = io.stdout.read_line(&mut line).map_err(gone)?;
            if n == 0 {
                return Err("the filter plugin host stopped (see its output above)".into());
            }
            let answer: Value = serde_json::from_str(&line)
                .map_err(|e| format!("the filter plugin host answered badly: {e}"))?;
            let Some(name) = answer.get("need").and_then(Value::as_str) else {
                return Ok(answer);
            };
            let reply = match variable(name) {
                Some(v) => json!({ "value": v }),
                None => json!({ "missing": true }),
            };
            writeln!(io.stdin, "{reply}").map_err(gone)?;
            io.stdin.flush().map_err(gone)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host with the system Python (no ansible-core there, or its own: both give the
    /// imports a plugin commonly makes), a filter's arguments, its error and its results.
    #[test]
    fn filters_run_in_the_controllers_python_with_the_common_imports() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("f.py");
        std::fs::write(
            &plugin,
            "from ansible.errors import AnsibleFilterError\n\
             from ansible.module_utils.six import string_types\n\
             from ansible.module_utils._text import to_text\n\
             def twice(v, sep='-', n=2):\n\
             \x20   if not isinstance(v, string_types):\n\
             \x20       raise AnsibleFilterError('twice wants text')\n\
             \x20   return sep.join([to_text(v)] * n)\n\
             class FilterModule:\n\
             \x20   def filters(self):\n\
             \x20       return {'twice': twice, 'pair': lambda v: (v, {v})}\n",
        )
        .unwrap();
        let test = dir.path().join("t.py");
        std::fs::write(
            &test,
            "class TestModule:\n    def tests(self):\n        return {'even': lambda v: v % 2 == 0}\n",
        )
        .unwrap();
        let host =
            PythonFilters::start(Path::new("/usr/bin/python3"), &[plugin], &[test], &[]).unwrap();
        assert_eq!(host.tests.keys().collect::<Vec<_>>(), ["even"]);
        assert_eq!(
            host.call("test", "even", json!(4), vec![], Default::default())
                .unwrap(),
            json!(true)
        );
        assert!(host.errors.is_empty(), "{:?}", host.errors);
        assert_eq!(host.filters.keys().collect::<Vec<_>>(), ["pair", "twice"]);
        let mut kw = serde_json::Map::new();
        kw.insert("n".into(), json!(3));
        assert_eq!(
            host.call("filter", "twice", json!("a"), vec![json!("+")], kw)
                .unwrap(),
            json!("a+a+a")
        );
        assert_eq!(
            host.call("filter", "twice", json!(1), vec![], Default::default())
                .unwrap_err(),
            "The filter plugin 'twice' failed: twice wants text"
        );
        assert_eq!(
            host.call("filter", "pair", json!(1), vec![], Default::default())
                .unwrap(),
            json!([1, [1]])
        );
    }

    /// A lookup plugin with the system Python: its terms and options, the variables it reads
    /// asked of the caller one at a time (a missing one is a `KeyError`), its error's text.
    #[test]
    fn lookups_read_variables_lazily() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("pick.py");
        std::fs::write(
            &plugin,
            "from ansible.plugins.lookup import LookupBase\n\
             class LookupModule(LookupBase):\n\
             \x20   def run(self, terms, variables=None, **kw):\n\
             \x20       if kw.get('fail'):\n\
             \x20           raise ValueError('asked to fail')\n\
             \x20       return [variables[t] for t in terms] + [variables.get('nope', 'dflt'), __name__]\n",
        )
        .unwrap();
        let host =
            PythonFilters::start(Path::new("/usr/bin/python3"), &[], &[], &[plugin]).unwrap();
        assert!(host.errors.is_empty(), "{:?}", host.errors);
        assert_eq!(host.lookups.keys().collect::<Vec<_>>(), ["pick"]);
        let asked = Mutex::new(Vec::new());
        let variable = |name: &str| {
            asked.lock().unwrap().push(name.to_string());
            (name == "a").then(|| json!([1, "x"]))
        };
        assert_eq!(
            host.lookup("pick", vec![json!("a")], Default::default(), &variable)
                .unwrap(),
            vec![
                json!([1, "x"]),
                json!("dflt"),
                json!("ansible.plugins.lookup.pick")
            ]
        );
        assert_eq!(*asked.lock().unwrap(), ["a", "nope"]);
        let mut kw = serde_json::Map::new();
        kw.insert("fail".into(), json!(true));
        assert_eq!(
            host.lookup("pick", vec![], kw, &variable).unwrap_err(),
            "asked to fail"
        );
    }
}
