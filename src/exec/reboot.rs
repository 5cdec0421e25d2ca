//! The wait after `win_reboot`: the module only schedules the restart and returns
//! `reboot_requested` with its waiting parameters; here the executor closes the host's
//! connection (it dies with the reboot), reconnects until `reboot_timeout`, waits
//! `post_reboot_delay`, runs `test_command` until it succeeds, and adds `rebooted: true` and
//! `elapsed` to the result. A host that does not come back in time fails the task.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::modules::ModuleResult;
use crate::transport::{Connection, ExecRequest, HostTarget};

use super::Executor;

/// How long one attempt to close the old connection may take (the host may be gone already).
const CLOSE_GRACE: Duration = Duration::from_secs(5);

impl Executor {
    /// Wait for `target` to come back after a requested reboot; `r` is the module's result.
    pub(crate) async fn await_reboot(
        &self,
        target: &HostTarget,
        conn: Arc<Connection>,
        mut r: ModuleResult,
    ) -> ModuleResult {
        let num = |k: &str, d: u64| r.data.get(k).and_then(|v| v.as_u64()).unwrap_or(d);
        let timeout = Duration::from_secs(num("reboot_timeout", 600));
        let post_delay = Duration::from_secs(num("post_reboot_delay", 0));
        let connect_timeout = r
            .data
            .get("connect_timeout")
            .and_then(|v| v.as_u64())
            .map(Duration::from_secs);
        let test_command = r
            .data
            .get("test_command")
            .and_then(|v| v.as_str())
            .unwrap_or("whoami")
            .to_string();
        let start = Instant::now();
        self.conns.reset(&target.name);
        if let Ok(conn) = Arc::try_unwrap(conn) {
            let _ = tokio::time::timeout(CLOSE_GRACE, conn.close()).await;
        }
        let mut target = target.clone();
        if let Some(t) = connect_timeout {
            target.connect_timeout = t;
        }
        let mut delayed = false;
        loop {
            if self.cancel.is_cancelled() {
                return ModuleResult::failed("interrupted while waiting for the reboot");
            }
            if let Ok(conn) = self.conns.get(&target).await {
                if !delayed {
                    self.sleep(post_delay).await;
                    delayed = true;
                }
                let mut probe = ExecRequest::new(test_command.as_str());
                probe.timeout = Some(Duration::from_secs(30));
                if conn.exec(&probe).await.is_ok_and(|o| o.success()) {
                    r.data.insert("rebooted".into(), true.into());
                    r.data
                        .insert("elapsed".into(), start.elapsed().as_secs().into());
                    return r;
                }
                self.conns.reset(&target.name);
            }
            if start.elapsed() >= timeout {
                return ModuleResult::failed(format!(
                    "`{}` did not come back within {}s of the reboot (test command `{test_command}`)",
                    target.name,
                    timeout.as_secs()
                ));
            }
            self.sleep(Duration::from_secs(2)).await;
        }
    }
}
