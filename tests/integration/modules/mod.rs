//! Every POSIX module against a real host through `transport::Connection`.
//!
//! Each case is an `async fn(&Fixture)` that works in its own temporary folder *on the host*
//! and checks the host only through the connection, so the same cases run over any transport:
//! `suite(conn)` runs them all; the `local` tests below run each one over the local transport.
//! The usual shape: a check-mode run predicts a change and leaves the host as it was, the
//! first real run changes it, the second reports ok.

mod admin_files;
mod apt_sources;
mod commands;
mod files;
mod host_paths;
mod net;
mod repos;
mod sources;
mod sys;
mod system;
mod transfer;
mod windows;

use std::path::{Path, PathBuf};

use kinit::modules::{self, ModuleCtx, ModuleResult, Render};
use kinit::template::{Templar, TemplateError};
use kinit::transport::{Connection, ConnectionKind, ExecRequest, HostTarget};
use kinit::vars::VarMap;
use serde_json::Value;

/// A host to run modules on, a scratch folder there, and one on the controller.
pub struct Fixture<'c> {
    pub conn: &'c Connection,
    /// Scratch folder on the host (removed on drop through the connection is not possible in
    /// `Drop`, so `finish` removes it).
    pub remote: String,
    pub local: tempfile::TempDir,
    pub vars: VarMap,
    templar: Templar,
    search: Vec<PathBuf>,
    /// SSH logins to the host made by a program a module starts itself (`synchronize`'s
    /// rsync runs its own ssh), not by kinit's connection.
    pub own_logins: std::sync::atomic::AtomicUsize,
    /// What this fixture's module runs learnt of the host's environment (path arguments).
    pub host_env: kinit::modules::host_path::HostEnv,
}

struct TemplarRender<'a> {
    templar: &'a Templar,
    vars: &'a VarMap,
}

impl Render for TemplarRender<'_> {
    fn render(&self, source: &str) -> Result<String, TemplateError> {
        self.templar.render_str(source, self.vars)
    }

    fn render_with(&self, source: &str, extra: &VarMap) -> Result<String, TemplateError> {
        let mut vars = self.vars.clone();
        kinit::vars::overlay(&mut vars, extra);
        self.templar.render_str(source, &vars)
    }
}

impl<'c> Fixture<'c> {
    pub async fn new(conn: &'c Connection) -> Self {
        let out = conn
            .exec(&ExecRequest::new("mktemp -d /tmp/kinit-modtest.XXXXXX"))
            .await
            .expect("mktemp on the host");
        let remote = out.stdout_str().trim().to_string();
        assert!(remote.starts_with("/tmp/kinit-modtest."), "{out:?}");
        let local = tempfile::tempdir().expect("local tempdir");
        let search = vec![local.path().to_path_buf()];
        let mut vars = VarMap::new();
        vars.insert("inventory_hostname".into(), "testhost".into());
        Self {
            conn,
            remote,
            local,
            vars,
            templar: Templar::new(),
            search,
            own_logins: Default::default(),
            host_env: Default::default(),
        }
    }

    /// Remove the host's scratch folder.
    pub async fn finish(self) {
        self.sh(&format!("rm -rf {}", self.remote)).await;
    }

    /// A path inside the host's scratch folder.
    pub fn path(&self, rel: &str) -> String {
        format!("{}/{rel}", self.remote)
    }

    /// Write a file into the controller's scratch folder (the modules' search path).
    pub fn local_file(&self, rel: &str, contents: &str) -> PathBuf {
        let p = self.local.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn local_dir(&self) -> &Path {
        self.local.path()
    }

    /// Run sh text on the host, return stdout (asserting nothing about the exit status).
    pub async fn sh(&self, script: &str) -> String {
        self.conn
            .exec(&ExecRequest::new(script))
            .await
            .expect("exec on the host")
            .stdout_str()
    }

    /// Run a module for real; a module error (bad args, transport) fails the test.
    pub async fn run(&self, module: &str, args: Value) -> ModuleResult {
        self.try_run(module, args, false, false).await.unwrap()
    }

    /// Run a module in check mode.
    pub async fn check(&self, module: &str, args: Value) -> ModuleResult {
        self.try_run(module, args, true, false).await.unwrap()
    }

    pub async fn try_run(
        &self,
        module: &str,
        args: Value,
        check_mode: bool,
        diff: bool,
    ) -> Result<ModuleResult, modules::ModuleError> {
        self.try_run_env(module, args, check_mode, diff, Vec::new())
            .await
    }

    /// [`Fixture::try_run`] with the task's `environment`.
    pub async fn try_run_env(
        &self,
        module: &str,
        args: Value,
        check_mode: bool,
        diff: bool,
        env: Vec<(String, String)>,
    ) -> Result<ModuleResult, modules::ModuleError> {
        let m = modules::lookup(module).unwrap_or_else(|| panic!("no module `{module}`"));
        m.validate(&args)?;
        let render = TemplarRender {
            templar: &self.templar,
            vars: &self.vars,
        };
        let ctx = ModuleCtx {
            host: "testhost",
            conn: self.conn,
            check_mode,
            diff,
            become_: None,
            env,
            timeout: Some(std::time::Duration::from_secs(60)),
            search_paths: &self.search,
            vars: &self.vars,
            render: &render,
            progress: None,
            host_env: &self.host_env,
            detach: None,
        };
        m.run(&ctx, args).await
    }

    /// The usual contract of an idempotent module: check mode predicts a change and `probe`
    /// (sh text describing the affected state) shows nothing moved; the first run changes
    /// the state; the second run and a second check report ok. Returns the first real result.
    pub async fn converges(&self, module: &str, args: Value, probe: &str) -> ModuleResult {
        let before = self.sh(probe).await;
        let c = self.check(module, args.clone()).await;
        assert!(!c.failed, "{module} check failed: {c:?}");
        assert!(
            c.changed,
            "{module} check mode should predict a change: {c:?}"
        );
        assert_eq!(
            self.sh(probe).await,
            before,
            "{module} check mode changed the host"
        );
        let first = self.run(module, args.clone()).await;
        assert!(!first.failed, "{module} failed: {first:?}");
        assert!(first.changed, "{module} first run should change: {first:?}");
        let after = self.sh(probe).await;
        assert_ne!(
            after, before,
            "{module} reported a change but `{probe}` saw none"
        );
        let second = self.run(module, args.clone()).await;
        assert!(!second.failed, "{module} second run failed: {second:?}");
        assert!(
            !second.changed,
            "{module} second run should be ok: {second:?}"
        );
        assert_eq!(self.sh(probe).await, after);
        let c2 = self.check(module, args).await;
        assert!(
            !c2.changed,
            "{module} check after convergence should be ok: {c2:?}"
        );
        first
    }
}

/// Every case, in order, over `conn` (for transports other than local). Returns the SSH
/// logins the cases' own programs made (see `Fixture::own_logins`).
pub async fn suite(conn: &Connection) -> usize {
    let mut own = 0;
    macro_rules! all {
        ($($m:ident :: $case:ident),* $(,)?) => {{
            $(
                let fx = Fixture::new(conn).await;
                // Each case's future on the heap: inlined, the whole suite's state
                // overflows a test thread's stack.
                Box::pin($m::$case(&fx)).await;
                own += fx.own_logins.load(std::sync::atomic::Ordering::Relaxed);
                fx.finish().await;
            )*
        }};
    }
    all!(
        commands::command,
        commands::shell,
        commands::raw,
        commands::script,
        commands::ping,
        files::copy_content,
        files::copy_file_and_directory,
        files::copy_remote_src,
        files::template,
        files::file_states,
        files::lineinfile,
        files::blockinfile,
        files::ini_file,
        files::find,
        files::tempfile,
        files::stat_slurp_fetch,
        files::unknown_argument_is_explained,
        admin_files::cron,
        admin_files::authorized_key,
        admin_files::known_hosts,
        admin_files::assemble,
        transfer::archive,
        transfer::synchronize,
        repos::yum_repository,
        repos::rpm_key,
        apt_sources::apt_repository,
        apt_sources::apt_key,
        apt_sources::deb822_repository,
        apt_sources::dpkg_selections,
        net::get_url,
        net::uri,
        net::wait_for,
        net::unarchive,
        sources::pip,
        sources::git,
        system::setup,
        system::sysctl,
        system::modprobe,
        system::user,
        system::group,
        system::packages,
        system::service,
        sys::mount,
        sys::service_facts,
        sys::package_facts,
    );
    own
}

/// The whole suite over SSH, against a real `sshd` host started by the fixture (as the
/// fixture's unprivileged login user when the tests run as root).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suite_over_ssh() {
    let lab = crate::fixtures::sshd::SshLab::new(1);
    let conn = Connection::open(&lab.target(0)).await.expect("ssh connect");
    suite(&conn).await;
    conn.close().await;
}

/// Each case over the local transport, one test apiece.
mod local {
    use super::*;

    macro_rules! local_tests {
        ($($m:ident :: $case:ident),* $(,)?) => {
            $(
                #[tokio::test]
                async fn $case() {
                    let conn = Connection::open(&HostTarget::new("localhost", ConnectionKind::Local))
                        .await
                        .unwrap();
                    let fx = Fixture::new(&conn).await;
                    $m::$case(&fx).await;
                    fx.finish().await;
                }
            )*
        };
    }

    local_tests!(
        commands::command,
        commands::shell,
        commands::raw,
        commands::script,
        commands::ping,
        files::copy_content,
        files::copy_file_and_directory,
        files::copy_remote_src,
        files::template,
        files::file_states,
        files::lineinfile,
        files::blockinfile,
        files::ini_file,
        files::find,
        files::tempfile,
        files::stat_slurp_fetch,
        files::unknown_argument_is_explained,
        admin_files::cron,
        admin_files::authorized_key,
        admin_files::known_hosts,
        admin_files::assemble,
        transfer::archive,
        transfer::synchronize,
        repos::yum_repository,
        repos::rpm_key,
        apt_sources::apt_repository,
        apt_sources::apt_key,
        apt_sources::deb822_repository,
        apt_sources::dpkg_selections,
        net::get_url,
        net::uri,
        net::wait_for,
        net::unarchive,
        sources::pip,
        sources::git,
        system::setup,
        system::sysctl,
        system::modprobe,
        system::user,
        system::group,
        system::packages,
        system::service,
        sys::mount,
        sys::service_facts,
        sys::package_facts,
    );
}

/// A diff side's text (a text diff's `before`/`after` is a string).
pub fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}
