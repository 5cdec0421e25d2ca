//! Connections: one per host for the whole run, opened lazily the first time a task needs
//! it and reused by every later task (and by tasks delegated to that host). A task that
//! reaches the same host differently (`remote_user`, `port` or `connection` of its play or
//! task) gets a connection of its own, kept as long as the first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::modules::host_path::HostEnv;
use crate::transport::{Connection, HostTarget, TransportError};

/// One way of reaching a host: its connection, opened by the first task that needs it, and
/// what that connection's commands have learnt of the host's environment (for path
/// arguments), kept as long as the connection.
#[derive(Default)]
struct Slot {
    conn: OnceCell<Arc<Connection>>,
    env: Arc<HostEnv>,
}

#[derive(Default)]
pub struct ConnPool {
    /// By host name, then by how it is reached (`way`).
    conns: Mutex<HashMap<String, HashMap<String, Arc<Slot>>>>,
}

/// What tells two connections to one host apart: the kind, address, port and user.
fn way(target: &HostTarget) -> String {
    format!(
        "{:?} {}:{:?} {:?}",
        target.connection, target.address, target.port, target.user
    )
}

impl ConnPool {
    /// The open connection to `target.name`, opening it on first use. A failed open is not
    /// cached: a later task (`ignore_unreachable`, `wait_for_connection`) tries again.
    pub async fn get(&self, target: &HostTarget) -> Result<Arc<Connection>, TransportError> {
        self.slot(target)
            .conn
            .get_or_try_init(|| async { Connection::open(target).await.map(Arc::new) })
            .await
            .cloned()
    }

    /// What is known of the environment of the host as `target` reaches it.
    pub fn host_env(&self, target: &HostTarget) -> Arc<HostEnv> {
        self.slot(target).env.clone()
    }

    fn slot(&self, target: &HostTarget) -> Arc<Slot> {
        self.conns
            .lock()
            .unwrap()
            .entry(target.name.clone())
            .or_default()
            .entry(way(target))
            .or_default()
            .clone()
    }

    /// Forget a host's connection (after `wait_for_connection` sees it broken).
    pub fn reset(&self, host: &str) {
        self.conns.lock().unwrap().remove(host);
    }

    /// Close every connection (SSH disconnects, WinRM shells deleted); returns the warnings
    /// of those that left something behind.
    pub async fn close_all(&self) -> Vec<String> {
        let slots: Vec<_> = self
            .conns
            .lock()
            .unwrap()
            .drain()
            .flat_map(|(_, ways)| ways.into_values())
            .collect();
        let mut warnings = Vec::new();
        for slot in slots {
            if let Some(conn) = Arc::try_unwrap(slot).ok().and_then(|s| s.conn.into_inner())
                && let Ok(conn) = Arc::try_unwrap(conn)
            {
                warnings.extend(conn.close().await);
            }
        }
        warnings
    }
}
