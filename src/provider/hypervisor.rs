//! `Hypervisor`: a libvirt connection for one URI, shared by every task of a run, whose
//! blocking libvirt calls run on tokio's blocking pool.
//!
//! Connections are cached per URI for the life of the process: one connection per hypervisor
//! (as SSH keeps one per host), and for `test:///default` one shared in-process state, so
//! that what one task defines the next one finds.
//!
//! A connection through a local socket (`?socket=<path>`, how kinit reaches the libvirt of a
//! host over its SSH connection) is dropped from the cache once that socket is gone: the
//! forward goes away with its SSH connection, and a re-opened SSH connection forwards to a
//! new path. Dropping it closes the libvirt connection, which ends the forwarded channel
//! that would otherwise hold the old SSH connection open for the rest of the run.

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
    let gone: Vec<String> = map
        .keys()
        .filter(|k| socket_of(k).is_some_and(|s| !std::path::Path::new(s).exists()))
        .cloned()
        .collect();
    for key in gone {
        if let Some(c) = map.remove(&key) {
            if c.is_alive().unwrap_or(false) {
                // Closing says goodbye through the socket's far end: off the caller's thread,
                // so a far end that never answers cannot stall the run.
                std::thread::spawn(move || drop(c));
            } else {
                std::mem::forget(c);
            }
        }
    }
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

/// The `socket=` parameter of a `qemu+unix` style URI.
fn socket_of(uri: &str) -> Option<&str> {
    let (_, query) = uri.split_once('?')?;
    query.split('&').find_map(|kv| kv.strip_prefix("socket="))
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

#[cfg(test)]
mod tests {
    use super::socket_of;

    #[test]
    fn the_socket_parameter_is_found_among_others() {
        assert_eq!(
            socket_of("qemu+unix:///system?socket=/tmp/f/sock"),
            Some("/tmp/f/sock")
        );
        assert_eq!(
            socket_of("qemu+unix:///system?mode=legacy&socket=/s"),
            Some("/s")
        );
        assert_eq!(socket_of("qemu:///system"), None);
        assert_eq!(socket_of("qemu+ssh://root@h/system?keyfile=/k"), None);
    }
}
