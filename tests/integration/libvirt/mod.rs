//! The libvirt provider and the `virt_*` modules against libvirt's own test driver
//! (`test:///default`, in-process, no daemon), and the ISO module against the local host.
//!
//! The test driver's state lives as long as a connection to it is open; kinit caches one
//! connection per URI for the whole process, so every test here shares one driver state and
//! uses names of its own. Limits of the test driver (see the reference notes on the build
//! machine): no DHCP leases, no NVRAM/TPM files (kinit drops those undefine flags there), no
//! real boot.

mod boot_cd;
mod config_iso;
mod install_wait;
mod modules;
mod ovs;
mod real;
mod resume;
mod resume_real;
mod validate;

use kinit::modules::{ModuleCtx, ModuleError, ModuleResult, Render};
use kinit::template::TemplateError;
use kinit::transport::local::LocalConnection;
use kinit::transport::{Connection, ConnectionKind, HostTarget};
use kinit::vars::VarMap;
use serde_json::Value;

pub const TEST_URI: &str = "test:///default";

/// The real libvirtd the `*_real` and boot tests use: `KINIT_TEST_LIBVIRT_URI`, default
/// `qemu:///system` (ci/test.sh starts one).
pub fn real_uri() -> String {
    std::env::var("KINIT_TEST_LIBVIRT_URI").unwrap_or_else(|_| "qemu:///system".into())
}

/// `virsh -c <real_uri> args...`, bounded at 30 s.
pub fn virsh(args: &[&str]) -> std::process::Output {
    std::process::Command::new("timeout")
        .args(["30", "virsh", "-c", &real_uri()])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run virsh")
}

struct Verbatim;

impl Render for Verbatim {
    fn render(&self, source: &str) -> Result<String, TemplateError> {
        Ok(source.to_string())
    }

    fn render_with(
        &self,
        source: &str,
        _extra: &serde_json::Map<String, Value>,
    ) -> Result<String, TemplateError> {
        Ok(source.to_string())
    }
}

/// Run module `name` on the local host.
pub async fn run_module(
    name: &str,
    args: Value,
    check_mode: bool,
) -> Result<ModuleResult, ModuleError> {
    let conn = Connection::Local(LocalConnection::new(&HostTarget::new(
        "localhost",
        ConnectionKind::Local,
    )));
    let vars = VarMap::new();
    let ctx = ModuleCtx {
        host: "localhost",
        conn: &conn,
        check_mode,
        diff: false,
        become_: None,
        env: Vec::new(),
        timeout: None,
        search_paths: &[],
        vars: &vars,
        render: &Verbatim,
        progress: None,
        host_env: &Default::default(),
        detach: None,
    };
    let module = kinit::modules::lookup(name).expect("module is registered");
    module.validate(&args)?;
    module.run(&ctx, args).await
}

/// Run and expect success; returns the result.
pub async fn ok(name: &str, args: Value) -> ModuleResult {
    let r = run_module(name, args, false).await.expect("module ran");
    assert!(!r.failed, "{name} failed: {:?}", r.msg);
    r
}
