//! `RenderDir`: where `kinit plan --render` writes each task's files (`DIR/<machine>/<name>`,
//! files of the cluster state folder under `state/`), the `INDEX` of them, and the results it
//! stands in for the tasks that write nothing. Those stand-ins describe a fresh deployment
//! (nothing exists yet: `stat` says absent, so first-run steps render) and carry a visible
//! placeholder where only a running deployment knows the value (a join token, the cluster
//! CA): `[deploy-time value: <task>]`. A `cat` of a file rendered earlier on the same machine
//! answers with that file, as on the host. Downloads are recorded, not made.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::exec::render::RenderSink;
use crate::modules::render::{Owner, Rendered, host_path};

/// The Windows administrator password the answer file is rendered with.
pub const PASSWORD_PLACEHOLDER: &str = "Kinit-Render-Placeholder-1";

/// Every file written: (owner folder, name) -> (task, content).
type Written = BTreeMap<(String, String), (String, Vec<u8>)>;

/// Where render mode writes, and what it answers for the tasks it does not run.
#[derive(Debug)]
pub struct RenderDir {
    root: PathBuf,
    /// `host_path` of the cluster state folder: files there go to `state/`.
    state_prefix: String,
    files: Mutex<Written>,
    /// Files a task downloads at deploy time: (machine/name, url, checksum).
    downloads: Mutex<std::collections::BTreeSet<(String, String, String)>>,
}

impl RenderDir {
    pub fn new(root: &Path, state_dir: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            state_prefix: format!("{}/", host_path(&state_dir.display().to_string())),
            files: Mutex::default(),
            downloads: Mutex::default(),
        }
    }

    fn place(&self, name: &str) -> String {
        match name.strip_prefix(&self.state_prefix) {
            Some(rest) => format!("state/{rest}"),
            None => name.to_string(),
        }
    }

    /// The content a task wrote at `path` on `machine`, if this render wrote it.
    fn written(&self, machine: &str, path: &str) -> Option<Vec<u8>> {
        let key = (machine.to_string(), self.place(&host_path(path)));
        self.files.lock().unwrap().get(&key).map(|(_, c)| c.clone())
    }

    /// Every file written, as `owner/name<TAB>task` lines, then the stood-in values.
    pub fn index(&self) -> String {
        let mut out = String::from(
            "# kinit plan --render: every file the deployment writes, and the task writing it\n",
        );
        for ((owner, name), (task, _)) in self.files.lock().unwrap().iter() {
            let _ = writeln!(out, "{owner}/{name}\t{task}");
        }
        // The placeholders that reached a file, with the files they are in.
        let mut stood: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for ((owner, name), (_, content)) in self.files.lock().unwrap().iter() {
            let text = String::from_utf8_lossy(content);
            if text.contains(PASSWORD_PLACEHOLDER) {
                stood
                    .entry(format!(
                        "{PASSWORD_PLACEHOLDER} (the generated Windows administrator password)"
                    ))
                    .or_default()
                    .push(format!("{owner}/{name}"));
            }
            for (i, _) in text.match_indices(PLACEHOLDER_START) {
                let rest = &text[i..];
                if let Some(end) = rest.find(']') {
                    let files = stood.entry(rest[..=end].to_string()).or_default();
                    let file = format!("{owner}/{name}");
                    if !files.contains(&file) {
                        files.push(file);
                    }
                }
            }
        }
        let downloads = self.downloads.lock().unwrap();
        if !downloads.is_empty() {
            out.push_str("\n# downloaded at deploy time, not rendered (where, from, checksum):\n");
            for (file, url, checksum) in downloads.iter() {
                let checksum = if checksum.is_empty() {
                    "no checksum"
                } else {
                    checksum
                };
                let _ = writeln!(out, "#   {file}\t{url}\t{checksum}");
            }
        }
        if !stood.is_empty() {
            out.push_str(
                "\n# values only a running deployment knows, rendered as placeholders \
                 (the task that makes each one, and where it is used):\n",
            );
            for (value, files) in &stood {
                let _ = writeln!(out, "#   {value}: {}", files.join(", "));
            }
        }
        out
    }

    pub fn count(&self) -> usize {
        self.files.lock().unwrap().len()
    }
}

const PLACEHOLDER_START: &str = "[deploy-time value: ";

/// The placeholder a stood-in command prints.
pub fn placeholder(task: &str) -> String {
    format!("{PLACEHOLDER_START}{task}]")
}

/// A command-like result printing `stdout`.
fn output(stdout: &str) -> Value {
    let stdout = stdout.strip_suffix('\n').unwrap_or(stdout);
    json!({
        "changed": false,
        "rc": 0,
        "stdout": stdout,
        "stderr": "",
        "stdout_lines": stdout.lines().collect::<Vec<_>>(),
        "stderr_lines": [],
    })
}

impl RenderSink for RenderDir {
    fn keep(&self, host: &str, target: &str, task: &str, r: Rendered) -> Result<Value, String> {
        let owner = match r.owner {
            Owner::Host => host,
            Owner::Target => target,
        };
        let mut names = Vec::new();
        for f in r.files {
            let name = self.place(&f.name);
            let path = self.root.join(owner).join(&name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
            }
            std::fs::write(&path, &f.content)
                .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
            names.push(format!("{owner}/{name}"));
            self.files
                .lock()
                .unwrap()
                .insert((owner.to_string(), name), (task.to_string(), f.content));
        }
        // Shaped as a command's result too, for `register`ed uses (`changed_when` on stdout).
        let mut result = output("");
        result["changed"] = json!(true);
        result["rendered"] = json!(names);
        Ok(result)
    }

    fn stand_in(&self, _host: &str, target: &str, task: &str, module: &str, args: &Value) -> Value {
        match crate::modules::short_name(module) {
            // A fresh deployment: nothing exists yet.
            "stat" | "win_stat" => json!({"changed": false, "stat": {"exists": false}}),
            "get_url" | "win_get_url" => {
                let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default();
                self.downloads.lock().unwrap().insert((
                    format!("{target}/{}", self.place(&host_path(arg("dest")))),
                    arg("url").to_string(),
                    arg("checksum").to_string(),
                ));
                json!({"changed": false, "dest": arg("dest"), "url": arg("url")})
            }
            short => {
                let text = args
                    .get("_raw_params")
                    .or_else(|| args.get("cmd"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let cat = text
                    .strip_prefix("cat ")
                    .map(str::trim)
                    .filter(|p| matches!(short, "command" | "shell") && !p.contains(' '));
                if let Some(content) = cat.and_then(|p| self.written(target, p)) {
                    return output(&String::from_utf8_lossy(&content));
                }
                output(&placeholder(task))
            }
        }
    }
}
