//! Connections: one per host for the whole run, opened lazily the first time a task needs
//! it and reused by every later task (and by tasks delegated to that host). A task that
//! reaches the same host differently (`remote_user`, `port` or `connection` of its play or
//! task) gets a connection of its own, kept as long as the first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::modules::host_path::HostEnv;
use crate::transport::{Connection, HostTarget, TransportError};

/// A connection, opened by the first task that needs it.
type Slot = Arc<OnceCell<Arc<Connection>>>;

#[derive(Default)]
pub struct ConnPool {
    /// By host name, then by how it is reached (`way`).
    conns: Mutex<HashMap<String, HashMap<String, Slot>>>,
    /// What each connection's commands have learnt of the host's environment (for path
    /// arguments), kept as long as the connection.
    envs: Mutex<HashMap<String, HashMap<String, Arc<HostEnv>>>>,
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
        let cell = self
            .conns
            .lock()
            .unwrap()
            .entry(target.name.clone())
            .or_default()
            .entry(way(target))
            .or_default()
            .clone();
        cell.get_or_try_init(|| async { Connection::open(target).await.map(Arc::new) })
            .await
            .cloned()
    }

    /// What is known of the environment of the host as `target` reaches it.
    pub fn host_env(&self, target: &HostTarget) -> Arc<HostEnv> {
        self.envs
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
        self.envs.lock().unwrap().remove(host);
    }

    /// Close every connection (SSH disconnects, WinRM shells deleted); returns the warnings
    /// of those that left something behind.
    pub async fn close_all(&self) -> Vec<String> {
        let cells: Vec<_> = self
            .conns
            .lock()
            .unwrap()
            .drain()
            .flat_map(|(_, ways)| ways.into_values())
            .collect();
        let mut warnings = Vec::new();
        for cell in cells {
            if let Some(conn) = Arc::try_unwrap(cell).ok().and_then(|c| c.into_inner())
                && let Ok(conn) = Arc::try_unwrap(conn)
            {
                warnings.extend(conn.close().await);
            }
        }
        warnings
    }
}
