//! Connections: one per host for the whole run, opened lazily the first time a task needs
//! it and reused by every later task (and by tasks delegated to that host).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::OnceCell;

use crate::cli::HostKeyChecking;
use crate::secret::Secret;
use crate::transport::{Connection, ConnectionKind, HostTarget, TransportError};
use crate::vars::VarMap;

#[derive(Default)]
pub struct ConnPool {
    conns: Mutex<HashMap<String, Arc<OnceCell<Arc<Connection>>>>>,
}

impl ConnPool {
    /// The open connection to `target.name`, opening it on first use. A failed open is not
    /// cached: a later task (`ignore_unreachable`, `wait_for_connection`) tries again.
    pub async fn get(&self, target: &HostTarget) -> Result<Arc<Connection>, TransportError> {
        let cell = self
            .conns
            .lock()
            .unwrap()
            .entry(target.name.clone())
            .or_default()
            .clone();
        cell.get_or_try_init(|| async { Connection::open(target).await.map(Arc::new) })
            .await
            .cloned()
    }

    /// Forget a host's connection (after `wait_for_connection` sees it broken).
    pub fn reset(&self, host: &str) {
        self.conns.lock().unwrap().remove(host);
    }

    /// Close every connection (SSH disconnects, WinRM shells deleted).
    pub async fn close_all(&self) {
        let cells: Vec<_> = self.conns.lock().unwrap().drain().map(|(_, c)| c).collect();
        for cell in cells {
            if let Some(conn) = Arc::try_unwrap(cell).ok().and_then(|c| c.into_inner())
                && let Ok(conn) = Arc::try_unwrap(conn)
            {
                conn.close().await;
            }
        }
    }
}

/// How to reach `name`, from its (rendered) variables.
///
/// Until the inventory layer resolves `ansible_*` variables itself, this covers the common
/// ones: connection kind, address, port, user, password and key file. `localhost` without
/// an explicit `ansible_connection` runs locally, like Ansible's implicit localhost.
pub fn target_from_vars(name: &str, vars: &VarMap, checking: HostKeyChecking) -> HostTarget {
    let s = |k: &str| vars.get(k).and_then(value_str);
    let kind = match s("ansible_connection").as_deref() {
        Some("local") => ConnectionKind::Local,
        Some("winrm") | Some("psrp") => ConnectionKind::WinRm,
        Some(_) => ConnectionKind::Ssh,
        None if matches!(name, "localhost" | "127.0.0.1" | "::1") => ConnectionKind::Local,
        None => ConnectionKind::Ssh,
    };
    let mut t = HostTarget::new(name, kind);
    if let Some(h) = s("ansible_host").or_else(|| s("ansible_ssh_host")) {
        t.address = h;
    }
    t.port = s("ansible_port")
        .or_else(|| s("ansible_ssh_port"))
        .and_then(|p| p.parse().ok());
    t.user = s("ansible_user").or_else(|| s("ansible_ssh_user"));
    t.password = s("ansible_password")
        .or_else(|| s("ansible_ssh_pass"))
        .map(Secret::new);
    if let Some(k) = s("ansible_ssh_private_key_file").or_else(|| s("ansible_private_key_file")) {
        t.private_key_files.push(PathBuf::from(k));
    }
    t.host_key_checking = checking;
    t
}

fn value_str(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
