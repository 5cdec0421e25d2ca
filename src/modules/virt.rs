//! What the `virt_*` modules share: the `uri` parameter and its check, opening the cached
//! libvirt connection, and turning provider errors into module errors.
//!
//! The libvirt connection is opened by the kinit process itself (the `virt` crate), not on
//! the task's host. So `qemu:///system` means the controller's own libvirt, which is only
//! right when the task's host is reached locally; a remote hypervisor is addressed as
//! `qemu+ssh://root@<host>/system` (libvirt's client runs the system `ssh`). A local URI on a
//! task whose host is reached over SSH or WinRM is refused rather than silently acting on
//! the wrong machine. Forwarding the libvirt socket over kinit's own SSH connection is a
//! planned improvement.

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

/// Open the connection for a task, refusing a controller-local URI on a remote host.
pub async fn connect(
    module: &'static str,
    ctx: &ModuleCtx<'_>,
    uri: &str,
) -> Result<Hypervisor, ModuleError> {
    if is_controller_local(uri) && !matches!(ctx.conn, Connection::Local(_)) {
        return Err(ModuleError::BadArgs {
            module,
            detail: format!(
                "uri `{uri}` is the libvirt of the machine kinit runs on, but host `{}` is \
                 remote; use `qemu+ssh://root@<host>/system`",
                ctx.host
            ),
        });
    }
    Hypervisor::open(uri).await.map_err(failed)
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
