//! `Hypervisor`: a libvirt connection for one URI, shared by every task of a run, whose
//! blocking libvirt calls run on tokio's blocking pool.
//!
//! Connections are cached per URI for the life of the process: one connection per hypervisor
//! (as SSH keeps one per host), and for `test:///default` one shared in-process state, so
//! that what one task defines the next one finds.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Once};

use virt::connect::Connect;
use virt::error::ErrorNumber;

use super::ProviderError;

static CONNECTIONS: LazyLock<Mutex<HashMap<String, Arc<Connect>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// libvirt prints every error to stderr by default; kinit reports errors itself.
static QUIET: Once = Once::new();

#[derive(Clone)]
pub struct Hypervisor {
    uri: String,
    conn: Arc<Connect>,
}

impl std::fmt::Debug for Hypervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hypervisor")
            .field("uri", &self.uri)
            .finish()
    }
}

impl Hypervisor {
    /// The connection for `uri`, opened on first use.
    pub async fn open(uri: &str) -> Result<Self, ProviderError> {
        Self::open_as(uri, uri.to_string()).await
    }

    /// The connection for `uri`, named `shown` in errors: a forwarded socket's URI names a
    /// temporary path, where the user knows the hypervisor and the URI they gave.
    pub async fn open_as(uri: &str, shown: String) -> Result<Self, ProviderError> {
        let conn = tokio::task::spawn_blocking({
            let (key, shown) = (uri.to_string(), shown.clone());
            move || open_cached(&key, &shown)
        })
        .await
        .map_err(|source| ProviderError::Join {
            uri: shown.clone(),
            source,
        })??;
        Ok(Self { uri: shown, conn })
    }

    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// libvirt's test driver: in-process, no NVRAM or TPM state, no real guests.
    pub fn is_test_driver(&self) -> bool {
        self.uri.starts_with("test:")
    }

    /// Run `f` with the connection on the blocking pool; `action` names it in errors
    /// (`define domain `x``).
    pub async fn call<T, F>(&self, action: String, f: F) -> Result<T, ProviderError>
    where
        T: Send + 'static,
        F: FnOnce(&Connect) -> Result<T, virt::error::Error> + Send + 'static,
    {
        let conn = self.conn.clone();
        let res = tokio::task::spawn_blocking(move || f(&conn))
            .await
            .map_err(|source| ProviderError::Join {
                uri: self.uri.clone(),
                source,
            })?;
        res.map_err(|source| ProviderError::Libvirt {
            uri: self.uri.clone(),
            action,
            source,
        })
    }
}

fn open_cached(uri: &str, shown: &str) -> Result<Arc<Connect>, ProviderError> {
    QUIET.call_once(virt::error::clear_error_callback);
    let mut map = CONNECTIONS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = map.get(uri) {
        if c.is_alive().unwrap_or(false) {
            return Ok(c.clone());
        }
        // A dead remote connection: forget it without closing (closing a dead connection
        // can fail, and `Connect`'s drop panics on that).
        if let Some(dead) = map.remove(uri) {
            std::mem::forget(dead);
        }
    }
    let conn = Connect::open(Some(uri)).map_err(|source| ProviderError::Libvirt {
        uri: shown.to_string(),
        action: "open a connection".into(),
        source,
    })?;
    let conn = Arc::new(conn);
    map.insert(uri.to_string(), conn.clone());
    Ok(conn)
}

/// `Ok(None)` for libvirt's "no such object" errors, so lookups read as `Option`.
pub(crate) fn absent<T>(
    res: Result<T, virt::error::Error>,
) -> Result<Option<T>, virt::error::Error> {
    match res {
        Ok(v) => Ok(Some(v)),
        Err(e)
            if e.code().is_known_and(|c| {
                matches!(
                    c,
                    ErrorNumber::NoDomain
                        | ErrorNumber::NoNetwork
                        | ErrorNumber::NoStoragePool
                        | ErrorNumber::NoStorageVolume
                )
            }) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
