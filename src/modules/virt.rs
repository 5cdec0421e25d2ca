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
