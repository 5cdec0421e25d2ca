//! `kinit plan --render DIR`: every file a deployment of the spec would produce, written under
//! `DIR/<machine>/`, and nothing else touched (no connection, no libvirt, no state folder).
//!
//! The bundled `site.yml` is walked by the real executor in render mode (`exec::render`):
//! the same inventory, variables, conditions, loops and includes as `kinit run`; each task
//! whose module writes a file hands over that file, built by the module's own code
//! (`modules::render`: templates rendered, domain and network XML from the provider's
//! builders, seed and config-ISO files, the PowerShell `win_shell` sends). Other tasks do not
//! run: `RenderDir` stands in their results. Those stand-ins describe a fresh deployment
//! (nothing exists yet: `stat` says absent, so first-run steps render) and carry a visible
//! placeholder where only a running deployment knows the value (a join token, the cluster
//! CA): `[deploy-time value: <task>]`. A `cat` of a file rendered earlier on the same machine
//! answers with that file, as on the host. The Windows administrator password is a
//! placeholder too; the real one is never read.
//!
//! Layout: `DIR/<inventory host or hypervisor>/` holds `domain.xml`, `seed/` (cloud-init),
//! `config-iso/` (answer file and first-logon scripts), `network-<name>.xml` (on the
//! hypervisor), `files/<path on the machine>` (templates and copies; `C:\k\x` is `files/C/k/x`),
//! `state/` (files of the cluster state folder) and `win_shell/<task>.ps1`; `DIR/INDEX` lists
//! every file with the task that writes it. A folder that is not empty is refused unless
//! `DIR/.kinit-render` marks it as an earlier render, which is then replaced.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::cluster::{Cluster, Phase};
use crate::exec::render::RenderSink;
use crate::exec::{Executor, RunOptions, TagFilter};
use crate::inventory::Inventory;
use crate::modules::render::{Owner, Rendered, host_path};
use crate::playbook::{Loader, Playbook};
use crate::report::{Event, EventSender, Status};
use crate::vars::VarMap;

/// The file that marks a folder as a render (and lets the next render replace it).
pub const MARKER: &str = ".kinit-render";
pub const INDEX: &str = "INDEX";
/// The Windows administrator password the answer file is rendered with.
pub const PASSWORD_PLACEHOLDER: &str = "Kinit-Render-Placeholder-1";

/// The phases whose plays write the deployment's files. The others only inspect or prepare
/// the hypervisors (packages, capacity checks, downloads, cleanup) or make the state folder's
/// secrets, which a render must not create.
pub const PHASES: [Phase; 6] = [
    Phase::GatherFacts,
    Phase::CreateNetwork,
    Phase::CreateServices,
    Phase::PrepareCluster,
    Phase::DeployCluster,
    Phase::PostDeployment,
];

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(
        "`{}` exists and is not empty, and is not an earlier `kinit plan --render` (no `{MARKER}` \
         file); give an empty or new folder",
        path.display()
    )]
    NotEmpty { path: PathBuf },
    #[error("`{}` exists and is not a folder", path.display())]
    NotADir { path: PathBuf },
    #[error("cannot write `{}`", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot render the deployment: {}", failures.join("; "))]
    Tasks { failures: Vec<String> },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RenderError + '_ {
    move |source| RenderError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An empty `dir` for a render: created, or emptied when it holds an earlier render.
pub fn prepare_dir(dir: &Path) -> Result<(), RenderError> {
    if dir.exists() {
        if !dir.is_dir() {
            return Err(RenderError::NotADir {
                path: dir.to_path_buf(),
            });
        }
        let entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(io(dir))?
            .collect::<Result<_, _>>()
            .map_err(io(dir))?;
        if !entries.is_empty() && !dir.join(MARKER).is_file() {
            return Err(RenderError::NotEmpty {
                path: dir.to_path_buf(),
            });
        }
        for e in entries {
            let p = e.path();
            let r = if e.file_type().map_err(io(&p))?.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            r.map_err(io(&p))?;
        }
    }
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    Ok(())
}

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

/// Everything one render needs.
pub struct RenderJob<'a> {
    pub cluster: &'a Cluster,
    pub loader: Arc<Loader>,
    /// `site.yml`, loaded and checked.
    pub book: &'a Playbook,
    pub inventory: Inventory,
    /// kinit's own variables with the user's `-e` over them, as `kinit run` passes them.
    pub extra_vars: VarMap,
    pub dir: &'a Path,
    pub state_dir: &'a Path,
}

/// Render the deployment into `job.dir` (prepared by `prepare_dir`); returns the sink with
/// its index.
pub fn render(job: RenderJob<'_>) -> Result<Arc<RenderDir>, crate::Error> {
    let sink = Arc::new(RenderDir::new(job.dir, job.state_dir));
    std::fs::write(
        job.dir.join(MARKER),
        format!("kinit plan --render of cluster `{}`\n", job.cluster.name),
    )
    .map_err(io(&job.dir.join(MARKER)))
    .map_err(super::DeployError::from)?;
    let opts = RunOptions {
        extra_vars: job.extra_vars,
        render: Some(sink.clone()),
        ..RunOptions::default()
    };
    let failures = crate::exec::session::runtime()?.block_on(async {
        let (events, mut rx) = EventSender::collect();
        let exec = Executor::new(
            job.loader,
            job.inventory,
            opts,
            events,
            tokio_util::sync::CancellationToken::new(),
        );
        for phase in PHASES {
            exec.set_tags(TagFilter::new(&[phase.name().to_string()], &[]));
            let book = Playbook {
                path: job.book.path.clone(),
                plays: super::catalog::plays_of(job.book, phase),
            };
            exec.run(&book).await;
            if exec.any_host_failed() {
                break;
            }
        }
        exec.end_run().await;
        drop(exec);
        let mut failures = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            if let Event::TaskResult {
                host,
                task,
                location,
                status: Status::Failed | Status::Unreachable,
                result,
                ..
            } = ev
            {
                let msg = result.msg_str().unwrap_or("failed");
                failures.push(format!("{host}: task `{task}` ({location}): {msg}"));
            }
        }
        failures
    });
    if !failures.is_empty() {
        return Err(super::DeployError::from(RenderError::Tasks { failures }).into());
    }
    let index = job.dir.join(INDEX);
    std::fs::write(&index, sink.index())
        .map_err(io(&index))
        .map_err(super::DeployError::from)?;
    Ok(sink)
}
