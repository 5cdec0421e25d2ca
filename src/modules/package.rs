//! `package`: install or remove packages with whatever manager the host has: `apt` or `dnf`
//! (hosts with only `yum`, RHEL 7 and older, are not supported). The manager comes from the
//! gathered facts (`ansible_pkg_mgr`), or, without facts, from one probe of the host.

use serde::Deserialize;
use serde_json::Value;

use super::args::list;
use super::pkg::{self, Manager, PkgState};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Package, "package", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Package names (list or comma-separated).
    #[serde(default, alias = "pkg", deserialize_with = "list")]
    name: Vec<String>,
    /// `present` (default), `absent` or `latest`.
    #[serde(default)]
    state: PkgState,
    /// Force a manager (`apt`, `dnf`) instead of detecting it (`auto`).
    #[serde(default, rename = "use")]
    use_: Option<String>,
}

/// The manager named by facts or `use`, if kinit knows it.
fn named(name: &str) -> Option<Manager> {
    match name {
        "apt" | "apt-get" => Some(Manager::Apt),
        "dnf" | "dnf5" => Some(Manager::Dnf),
        _ => None,
    }
}

/// `ansible_pkg_mgr` from the task's variables (`ansible_facts.pkg_mgr` or the flat name).
fn from_facts(vars: &serde_json::Map<String, Value>) -> Option<String> {
    vars.get("ansible_facts")
        .and_then(|f| f.get("pkg_mgr").or_else(|| f.get("ansible_pkg_mgr")))
        .or_else(|| vars.get("ansible_pkg_mgr"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let chosen = match p.use_.as_deref().filter(|u| *u != "auto") {
        Some(u) => Some(u.to_string()),
        None => from_facts(ctx.vars),
    };
    let mgr = match chosen {
        Some(name) => named(&name).ok_or_else(|| ModuleError::Failed {
            msg: format!("package manager `{name}` is not supported by kinit (apt and dnf are)"),
        })?,
        None => {
            let out = ctx
                .run("for m in apt-get dnf; do command -v $m >/dev/null 2>&1 && { echo $m; exit 0; }; done")
                .await?;
            let found = out.stdout_str().trim().to_string();
            named(&found).ok_or_else(|| ModuleError::Failed {
                msg: "no supported package manager (apt-get, dnf) on the host".into(),
            })?
        }
    };
    let r = pkg::ensure(ctx, mgr, &p.name, p.state, false, false, &[]).await?;
    Ok(r.with(
        "manager",
        match mgr {
            Manager::Apt => "apt",
            Manager::Dnf => "dnf",
        },
    ))
}
