//! `virt_pool`: a libvirt `dir` storage pool (a directory of images on the hypervisor),
//! defined and built, started or stopped, or removed. Removing a pool leaves its files.

use serde::Deserialize;
use serde_json::Value;

use super::virt::{connect, default_uri, failed};
use super::{BoxFuture, Module, ModuleCtx, ModuleError, ModuleResult, args, params};
use crate::provider::storage::Pool;
use crate::provider::xml::Document;

const NAME: &str = "virt_pool";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolState {
    /// Defined, and running (the default).
    #[default]
    Active,
    /// Defined; running or not as it is.
    Present,
    /// Defined and stopped.
    Inactive,
    /// Stopped and undefined (the directory and its files stay).
    Absent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Pool name.
    pub name: String,
    /// `active` (default), `present`, `inactive` or `absent`.
    #[serde(default)]
    pub state: PoolState,
    /// libvirt URI (see `virt_network`).
    #[serde(default = "default_uri")]
    pub uri: String,
    /// Start the pool when the hypervisor boots; unchanged when not given.
    #[serde(default)]
    pub autostart: Option<bool>,
    /// Directory of the pool on the hypervisor; needed to create it.
    #[serde(default)]
    pub path: Option<String>,
}

pub struct VirtPool;

impl Module for VirtPool {
    /// Names and types only: values may still be templates (checked again at run time).
    fn validate(&self, args: &Value) -> Result<(), ModuleError> {
        args::validate::<Params>(NAME, args)
    }

    fn run<'a>(
        &'a self,
        ctx: &'a ModuleCtx<'a>,
        args: Value,
    ) -> BoxFuture<'a, Result<ModuleResult, ModuleError>> {
        Box::pin(run(ctx, args))
    }
}

fn check(p: &Params) -> Result<(), ModuleError> {
    if let Some(path) = &p.path
        && !path.starts_with('/')
    {
        return Err(ModuleError::BadArgs {
            module: NAME,
            detail: format!("`path` `{path}`: expected an absolute path on the hypervisor"),
        });
    }
    Ok(())
}

async fn run(ctx: &ModuleCtx<'_>, args: Value) -> Result<ModuleResult, ModuleError> {
    let p: Params = params(NAME, &args)?;
    check(&p)?;
    let hv = connect(NAME, ctx, &p.uri).await?;
    let cur = hv.pool(&p.name).await.map_err(failed)?;
    let check = ctx.check_mode;
    let mut changed = false;
    let mut actions: Vec<&str> = Vec::new();

    if p.state == PoolState::Absent {
        if let Some(c) = cur {
            changed = true;
            actions.push("undefined");
            if !check {
                if c.active {
                    hv.stop_pool(&p.name).await.map_err(failed)?;
                }
                hv.undefine_pool(&p.name).await.map_err(failed)?;
            }
        }
        return Ok(result(&p, changed, actions, "absent"));
    }

    let (mut active, mut autostart) = match (&cur, &p.path) {
        (None, None) => {
            return Err(ModuleError::BadArgs {
                module: NAME,
                detail: format!(
                    "pool `{}` does not exist on `{}`; give `path` to define it",
                    p.name, p.uri
                ),
            });
        }
        (None, Some(path)) => {
            changed = true;
            actions.push("defined");
            if !check {
                let xml = Pool::dir(&p.name, path).to_xml().map_err(failed)?;
                hv.define_pool(&p.name, xml).await.map_err(failed)?;
            }
            (false, false)
        }
        (Some(c), want) => {
            let d = &c.definition;
            if let Some(path) = want
                && (d.kind != "dir" || &d.target.path != path)
            {
                // Moving a pool would orphan its volumes: say so instead.
                return Err(ModuleError::Failed {
                    msg: format!(
                        "pool `{}` exists as a `{}` pool at `{}`, not a `dir` pool at \
                         `{path}`; remove it first (state: absent)",
                        p.name, d.kind, d.target.path
                    ),
                });
            }
            (c.active, c.autostart)
        }
    };

    let todo = super::virt::Activity::plan(
        match p.state {
            PoolState::Active => Some(true),
            PoolState::Inactive => Some(false),
            _ => None,
        },
        active,
        p.autostart,
        autostart,
    );
    changed |= todo.changed();
    actions.extend(todo.actions());
    if !check {
        if todo.start {
            hv.start_pool(&p.name).await.map_err(failed)?;
        }
        if todo.stop {
            hv.stop_pool(&p.name).await.map_err(failed)?;
        }
        if let Some(on) = todo.autostart {
            hv.set_pool_autostart(&p.name, on).await.map_err(failed)?;
        }
    }
    active = (active || todo.start) && !todo.stop;
    autostart = todo.autostart.unwrap_or(autostart);
    let state = if active { "active" } else { "inactive" };
    Ok(result(&p, changed, actions, state).with("autostart", autostart))
}

fn result(p: &Params, changed: bool, actions: Vec<&str>, state: &str) -> ModuleResult {
    ModuleResult {
        changed,
        ..ModuleResult::default()
    }
    .with("name", p.name.clone())
    .with("uri", p.uri.clone())
    .with("state", state)
    .with("actions", actions)
}
