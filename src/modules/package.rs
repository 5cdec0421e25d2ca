//! `package`: install or remove packages with whatever manager the host has: `apt` or `dnf`
//! (hosts with only `yum`, RHEL 7 and older, are not supported). The manager comes from
//! `use`, else the gathered facts (`ansible_pkg_mgr`), else one probe of the host. As
//! ansible-core's `package` action does, every other argument goes to that manager's module
//! as it is (`update_cache`, `cache_valid_time`, `install_recommends` for apt), and that
//! module checks them.

use serde::Deserialize;
use serde_json::Value;

use super::{BoxFuture, Module, ModuleCtx, ModuleError, ModuleResult};

pub struct Package;

/// What `package` itself reads; the rest is the manager's.
#[derive(Debug, Deserialize)]
struct Params {
    /// Force a manager (`apt`, `dnf`) instead of detecting it (`auto`).
    #[serde(default, rename = "use")]
    use_: Option<String>,
}

/// `args` without `package`'s own `use`: what the manager's module gets.
fn for_manager(mut args: Value) -> Value {
    if let Value::Object(m) = &mut args {
        m.shift_remove("use");
    }
    args
}

impl Module for Package {
    /// Arguments one of the managers' modules takes (which one runs is known on the host).
    fn validate(&self, args: &Value) -> Result<(), ModuleError> {
        let p: Params = super::args::parse("package", args)?;
        let rest = for_manager(args.clone());
        match p.use_.as_deref().and_then(named) {
            Some("apt") => super::apt::Apt.validate(&rest),
            Some(_) => super::dnf::Dnf.validate(&rest),
            None => super::apt::Apt
                .validate(&rest)
                .or_else(|e| super::dnf::Dnf.validate(&rest).map_err(|_| e)),
        }
    }

    fn run<'a>(
        &'a self,
        ctx: &'a ModuleCtx<'a>,
        args: Value,
    ) -> BoxFuture<'a, Result<ModuleResult, ModuleError>> {
        Box::pin(async move {
            if let Some(refusal) = super::posix_only("package", ctx) {
                return Ok(refusal);
            }
            let p: Params = super::args::parse("package", &args)?;
            let mgr = manager(ctx, p.use_.as_deref()).await?;
            let args = for_manager(args);
            let r = match mgr {
                "apt" => super::apt::Apt.run(ctx, args).await?,
                _ => super::dnf::Dnf.run(ctx, args).await?,
            };
            Ok(r.with("manager", mgr))
        })
    }
}

/// The manager's module: `use`, else the facts, else a probe of the host.
async fn manager(ctx: &ModuleCtx<'_>, use_: Option<&str>) -> Result<&'static str, ModuleError> {
    let chosen = match use_.filter(|u| *u != "auto") {
        Some(u) => Some(u.to_string()),
        None => from_facts(ctx.vars),
    };
    match chosen {
        Some(name) => named(&name).ok_or_else(|| ModuleError::Failed {
            msg: format!("package manager `{name}` is not supported by kinit (apt and dnf are)"),
        }),
        None => {
            let out = ctx
                .run("for m in apt-get dnf; do command -v $m >/dev/null 2>&1 && { echo $m; exit 0; }; done")
                .await?;
            let found = out.stdout_str().trim().to_string();
            named(&found).ok_or_else(|| ModuleError::Failed {
                msg: "no supported package manager (apt-get, dnf) on the host".into(),
            })
        }
    }
}

/// The module of the manager named by facts or `use`, if kinit knows it.
fn named(name: &str) -> Option<&'static str> {
    match name {
        "apt" | "apt-get" => Some("apt"),
        "dnf" | "dnf5" => Some("dnf"),
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
