//! The wait after `win_reboot` and `reboot`, as Ansible's action plugins do it: the module
//! only issues the restart and returns `reboot_requested` with its waiting parameters; here
//! the executor closes the host's connection (it dies with the reboot), reconnects until the
//! host's boot time (the module's `boot_time_command`, or Windows' last boot-up time)
//! differs from the one the module recorded (the host went down and came back), runs
//! `test_command` until it succeeds, and adds `rebooted: true` and `elapsed` to the result.
//! `post_reboot_delay` comes after the boot-time check for `win_reboot` and before it for
//! `reboot`, each as its upstream plugin waits. A host not back within `reboot_timeout`
//! fails the task; for `reboot` with upstream's text, and its result keeps only `changed`,
//! `rebooted` and `elapsed`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::modules::ModuleResult;
use crate::transport::{Connection, ExecRequest, HostTarget};

use super::Executor;

/// How long one attempt to close the old connection may take (the host may be gone already).
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Pause between two reconnection attempts.
const POLL: Duration = Duration::from_secs(1);

/// Prints the host's last boot time (the WinRM test server recognises the first line).
const BOOT_TIME: &str = "# kinit:boot-time\n\
    (Get-CimInstance -ClassName Win32_OperatingSystem).LastBootUpTime.ToUniversalTime().ToString('o')";

impl Executor {
    /// Wait for `target` to come back after a requested reboot; `r` is the module's result.
    pub(crate) async fn await_reboot(
        &self,
        module: &str,
        target: &HostTarget,
        conn: Arc<Connection>,
        mut r: ModuleResult,
    ) -> ModuleResult {
        let posix = module == "reboot";
        let num = |k: &str, d: u64| r.data.get(k).and_then(|v| v.as_u64()).unwrap_or(d);
        let timeout = Duration::from_secs(num("reboot_timeout", 600));
        let post_delay = Duration::from_secs(num("post_reboot_delay", 0));
        let text = |k: &str| r.data.get(k).and_then(|v| v.as_str()).map(str::trim);
        let test_command = text("test_command").unwrap_or("whoami").to_string();
        let previous_boot = text("previous_boot_time").unwrap_or_default().to_string();
        let boot_time = text("boot_time_command").unwrap_or(BOOT_TIME).to_string();
        let mut target = target.clone();
        if let Some(t) = r.data.get("connect_timeout").and_then(|v| v.as_u64()) {
            target.connect_timeout = Duration::from_secs(t);
        }
        let start = Instant::now();
        self.conns.reset(&target.name);
        if let Ok(conn) = Arc::try_unwrap(conn) {
            let _ = tokio::time::timeout(CLOSE_GRACE, conn.close()).await;
        }
        let gave_up = |what: &str, upstream: &str| {
            if posix {
                // ansible-core's TimedOutException text; the host did go down.
                return ModuleResult::failed(format!(
                    "Timed out waiting for {upstream} (timeout={})",
                    timeout.as_secs()
                ))
                .with("rebooted", true)
                .with("elapsed", start.elapsed().as_secs());
            }
            ModuleResult::failed(format!(
                "`{}` did not {what} within reboot_timeout ({}s) after {module}",
                target.name,
                timeout.as_secs()
            ))
        };
        if posix {
            self.sleep(post_delay).await;
        }
        // Down and back: a boot time other than the one before the reboot.
        while !previous_boot.is_empty()
            && self
                .probe(&target, &boot_time)
                .await
                .is_none_or(|boot| boot.trim().is_empty() || boot.trim() == previous_boot)
        {
            if self.cancel.is_cancelled() {
                return ModuleResult::failed("interrupted while waiting for the reboot");
            }
            if start.elapsed() >= timeout {
                return gave_up("come back", "last boot time check");
            }
            self.sleep(POLL).await;
        }
        if !posix {
            self.sleep(post_delay).await;
        }
        while self.probe(&target, &test_command).await.is_none() {
            if self.cancel.is_cancelled() {
                return ModuleResult::failed("interrupted while waiting for the reboot");
            }
            if start.elapsed() >= timeout {
                return gave_up(
                    &format!("pass the test command `{test_command}`"),
                    "post-reboot test command",
                );
            }
            self.sleep(POLL).await;
        }
        r.data.remove("reboot_requested");
        if posix {
            // Upstream's result: changed, rebooted, elapsed.
            r.data.clear();
        }
        r.data.insert("rebooted".into(), true.into());
        r.data
            .insert("elapsed".into(), start.elapsed().as_secs().into());
        r
    }

    /// Run `script` on a (re)opened connection: its stdout when it succeeded. A failed
    /// attempt drops the connection, so the next one opens a new one.
    async fn probe(&self, target: &HostTarget, script: &str) -> Option<String> {
        let attempt = async {
            let conn = self.conns.get(target).await.ok()?;
            let mut req = ExecRequest::new(script);
            req.timeout = Some(Duration::from_secs(30));
            conn.exec(&req).await.ok().filter(|o| o.success())
        };
        let out = tokio::select! {
            out = tokio::time::timeout(target.connect_timeout + Duration::from_secs(30), attempt) => out.ok().flatten(),
            _ = self.cancel.cancelled() => None,
        };
        if out.is_none() {
            self.conns.reset(&target.name);
        }
        out.map(|o| o.stdout_str())
    }
}
