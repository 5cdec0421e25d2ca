//! What the `virt_*` modules share: the `uri` parameter and its check, opening the cached
//! libvirt connection, and turning provider errors into module errors.
//!
//! The libvirt connection is opened by the kinit process itself (the `virt` crate), not on
//! the task's host. `qemu:///system` names the libvirt of the task's host: on a host reached
//! locally it is opened as it is; on a host reached over SSH, kinit forwards the host's
//! libvirt socket over its own SSH connection to that host (the same authentication, host
//! key check and jump hosts as every other task there) and opens the forwarded socket.
//! A remote URI such as `qemu+ssh://root@<host>/system` is opened as given (libvirt's
//! client then runs the system `ssh`). Other controller-local URIs (`qemu:///session`) on
//! a remote host, and any on a WinRM host, are refused rather than silently acting on the
//! wrong machine.

use serde_json::Value;

use super::{ModuleCtx, ModuleError};
use crate::provider::{Hypervisor, ProviderError, error::chain};
use crate::transport::Connection;

pub fn default_uri() -> String {
    "qemu:///system".to_string()
}

/// Whether `uri` names a libvirt on the controller (`qemu:///system`, `qemu:///session`),
/// as opposed to a remote one (`qemu+ssh://host/system`) or the in-process test driver.
fn is_controller_local(uri: &str) -> bool {
    match uri.split_once("://") {
        Some((scheme, rest)) => !scheme.starts_with("test") && rest.starts_with('/'),
        None => false,
    }
}

/// Where the system libvirt daemon listens, in the order tried: the monolithic
/// `libvirtd` (or `virtproxyd`) socket under `/run`, the same under the older `/var/run`,
/// then the modular QEMU daemon's own socket.
const SYSTEM_SOCKETS: [&str; 3] = [
    "/run/libvirt/libvirt-sock",
    "/var/run/libvirt/libvirt-sock",
    "/run/libvirt/virtqemud-sock",
];

/// Open the connection for a task: a controller-local URI on a local host as it is,
/// `qemu:///system` on an SSH host through the forwarded socket, and refuse any other
/// controller-local URI on a remote host.
pub async fn connect(
    module: &'static str,
    ctx: &ModuleCtx<'_>,
    uri: &str,
) -> Result<Hypervisor, ModuleError> {
    if !is_controller_local(uri) {
        return Hypervisor::open(uri).await.map_err(failed);
    }
    match ctx.conn {
        Connection::Local(_) => Hypervisor::open(uri).await.map_err(failed),
        Connection::Ssh(ssh) if is_system(uri) => {
            let socket = ssh.forward_socket(&SYSTEM_SOCKETS).await?;
            let forwarded = format!("qemu+unix:///system?socket={}", socket.display());
            let shown = format!("{uri} on {} (over SSH)", ctx.host);
            Hypervisor::open_as(&forwarded, shown).await.map_err(failed)
        }
        _ => Err(ModuleError::BadArgs {
            module,
            detail: format!(
                "uri `{uri}` is the libvirt of the machine kinit runs on, but host `{}` is \
                 remote; use `qemu:///system` (forwarded over kinit's SSH connection) or \
                 `qemu+ssh://root@<host>/system`",
                ctx.host
            ),
        }),
    }
}

/// `qemu:///system`, with or without a trailing slash or query.
fn is_system(uri: &str) -> bool {
    let path = uri.split('?').next().unwrap_or(uri);
    matches!(path, "qemu:///system" | "qemu:///system/")
}

/// A provider error as a module failure, causes included.
pub fn failed(err: ProviderError) -> ModuleError {
    ModuleError::Failed { msg: chain(&err) }
}

/// A provider error found while checking arguments.
pub fn bad_args(module: &'static str, err: ProviderError) -> ModuleError {
    ModuleError::BadArgs {
        module,
        detail: chain(&err),
    }
}

/// Exactly one of the definition keys in `args` (`linux`/`windows`, `cloud_init`/`windows`).
pub fn one_of(
    module: &'static str,
    args: &Value,
    keys: &[&str],
    required: bool,
) -> Result<(), ModuleError> {
    let given: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| args.get(k).is_some_and(|v| !v.is_null()))
        .collect();
    if given.len() > 1 || (required && given.is_empty()) {
        return Err(ModuleError::BadArgs {
            module,
            detail: format!(
                "give exactly one of {}, got {}",
                keys.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if given.is_empty() {
                    "none".to_string()
                } else {
                    given.join(", ")
                }
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_uris_are_told_apart_from_remote_and_test_ones() {
        assert!(is_controller_local("qemu:///system"));
        assert!(is_controller_local("qemu:///session"));
        assert!(!is_controller_local("qemu+ssh://root@hv1/system"));
        assert!(!is_controller_local("test:///default"));
        assert!(!is_controller_local("garbage"));
    }

    #[test]
    fn only_the_system_uri_is_forwarded() {
        assert!(is_system("qemu:///system"));
        assert!(is_system("qemu:///system?mode=legacy"));
        assert!(!is_system("qemu:///session"));
        assert!(!is_system("qemu+ssh://root@hv1/system"));
    }
}

/// What must happen to a network or pool to bring its running and autostart flags to what
/// the task asked for; worked out without touching libvirt, applied by the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Activity {
    pub start: bool,
    pub stop: bool,
    /// `Some(on)` when autostart must be switched.
    pub autostart: Option<bool>,
}

impl Activity {
    /// `want_active`: `Some(true)` for `state: active`, `Some(false)` for `inactive`, `None`
    /// to leave it as it is; `want_autostart` likewise.
    pub fn plan(
        want_active: Option<bool>,
        active: bool,
        want_autostart: Option<bool>,
        autostart: bool,
    ) -> Self {
        Self {
            start: want_active == Some(true) && !active,
            stop: want_active == Some(false) && active,
            autostart: want_autostart.filter(|&on| on != autostart),
        }
    }

    pub fn changed(&self) -> bool {
        self.start || self.stop || self.autostart.is_some()
    }

    /// The words the module reports in `actions`, in the order they are applied.
    pub fn actions(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.start {
            out.push("started");
        }
        if self.stop {
            out.push("stopped");
        }
        match self.autostart {
            Some(true) => out.push("autostart on"),
            Some(false) => out.push("autostart off"),
            None => {}
        }
        out
    }
}

#[cfg(test)]
mod activity_tests {
    use super::Activity;

    #[test]
    fn plans_only_what_differs() {
        assert_eq!(
            Activity::plan(Some(true), false, Some(true), false).actions(),
            ["started", "autostart on"]
        );
        assert_eq!(
            Activity::plan(Some(false), true, Some(false), true).actions(),
            ["stopped", "autostart off"]
        );
        assert!(!Activity::plan(Some(true), true, Some(false), false).changed());
        assert!(!Activity::plan(None, false, None, true).changed());
    }
}
