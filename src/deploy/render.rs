//! `kinit plan --render DIR`: every file a deployment of the spec would produce, written under
//! `DIR/<machine>/`, and nothing else touched (no connection, no libvirt, no state folder).
//!
//! The bundled `site.yml` is walked by the real executor in render mode (`exec::render`):
//! the same inventory, variables, conditions, loops and includes as `kinit run`; each task
//! whose module writes a file hands over that file, built by the module's own code
//! (`modules::render`: templates rendered, domain and network XML from the provider's
//! builders, seed and config-ISO files, the PowerShell `win_shell` sends). Other tasks do not
//! run: `RenderDir` (`render_dir`) keeps the files and stands in the other results. The
//! Windows administrator password is a placeholder; the real one is never read.
//!
//! Layout: `DIR/<inventory host or hypervisor>/` holds `domain.xml`, `seed/` (cloud-init),
//! `config-iso/` (answer file and first-logon scripts), `network-<name>.xml` (on the
//! hypervisor), `files/<path on the machine>` (templates and copies; `C:\k\x` is `files/C/k/x`),
//! `state/` (files of the cluster state folder) and `win_shell/<task>.ps1`; `DIR/INDEX` lists
//! every file with the task that writes it. A folder that is not empty is refused unless
//! `DIR/.kinit-render` marks it as an earlier render, which is then replaced.

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use super::render_dir::{PASSWORD_PLACEHOLDER, RenderDir};
use crate::cluster::{Cluster, Phase};
use crate::exec::{Executor, RunOptions, TagFilter};
use crate::inventory::Inventory;
use crate::playbook::{Loader, Playbook};
use crate::report::{Event, EventSender, Status};
use crate::vars::VarMap;

/// The file that marks a folder as a render (and lets the next render replace it).
pub const MARKER: &str = ".kinit-render";
pub const INDEX: &str = "INDEX";

/// The phases whose plays write the deployment's files, after `gather-facts`, whose facts
/// (from stand-ins) the later plays read, as every `kinit run` window starts with it. The
/// others only inspect or prepare the hypervisors (packages, capacity checks, downloads,
/// cleanup) or make the state folder's secrets, which a render must not create.
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
                // An error kinit met preparing the task says where, with the variable.
                let at = result.origin.as_deref().unwrap_or(&location);
                failures.push(format!("{host}: task `{task}` ({at}): {msg}"));
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
