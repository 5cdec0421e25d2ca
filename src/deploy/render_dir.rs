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

use crate::exec::render::{PLACEHOLDER as PLACEHOLDER_START, RenderSink};
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

    /// A file's name under its machine's folder: state-folder files under `state/`, and
    /// nothing that climbs out (a network name comes from variables).
    fn place(&self, name: &str) -> String {
        let name = match name.strip_prefix(&self.state_prefix) {
            Some(rest) => format!("state/{rest}"),
            None => name.to_string(),
        };
        name.split('/')
            .filter(|p| !p.is_empty() && *p != "." && *p != "..")
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The content a task wrote at `path` on `machine`, if this render wrote it.
    fn written(&self, machine: &str, path: &str) -> Option<Vec<u8>> {
        let key = (folder(machine), self.place(&host_path(path)));
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

/// A machine's name as one folder of DIR (a hypervisor is named by the user).
fn folder(machine: &str) -> String {
    let f = machine.replace(['/', '\\'], "_");
    if f.is_empty() || f.starts_with('.') {
        format!("_{f}")
    } else {
        f
    }
}

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
        let owner = folder(match r.owner {
            Owner::Host => host,
            Owner::Target => target,
        });
        let mut names = Vec::new();
        for f in r.files {
            let name = self.place(&f.name);
            let path = self.root.join(&owner).join(&name);
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
                .insert((owner.clone(), name), (task.to_string(), f.content));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_render_folder() {
        assert_eq!(folder("hypervisor-01"), "hypervisor-01");
        assert_eq!(folder("../x"), "_.._x");
        assert_eq!(folder("a/b\\c"), "a_b_c");
        let d = RenderDir::new(Path::new("/r"), Path::new("/home/u/.local/state/kinit/c"));
        // `network-..` is a folder name like any other; `..` alone is dropped.
        assert_eq!(d.place("network-../../x.xml"), "network-../x.xml");
        assert_eq!(d.place("files/../../etc/x"), "files/etc/x");
        assert_eq!(
            d.place(&host_path("/home/u/.local/state/kinit/c/config/a.yaml")),
            "state/config/a.yaml"
        );
    }

    #[test]
    fn a_read_of_a_rendered_file_answers_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = RenderDir::new(dir.path(), Path::new("/state"));
        let files = Rendered::target(vec![crate::modules::render::RenderedFile {
            name: host_path("/etc/k/net-conf.json"),
            content: b"{\"Network\": \"10.244.0.0/16\"}\n".to_vec(),
        }]);
        d.keep("controller-01", "controller-01", "net-conf", files)
            .unwrap();
        let cat = json!({"_raw_params": "cat /etc/k/net-conf.json"});
        let r = d.stand_in("c", "controller-01", "Read", "command", &cat);
        assert_eq!(r["stdout"], "{\"Network\": \"10.244.0.0/16\"}");
        // Elsewhere, or a file nobody rendered: a visible placeholder.
        let r = d.stand_in("c", "compute-01", "Read", "command", &cat);
        assert_eq!(r["stdout"], "[deploy-time value: Read]");
        let stat = d.stand_in(
            "c",
            "compute-01",
            "Joined",
            "win_stat",
            &json!({"path": "x"}),
        );
        assert_eq!(stat["stat"]["exists"], false);
    }
}
