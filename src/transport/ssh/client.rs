//! The russh client handler of every SSH connection: it checks each server's host key
//! against known_hosts (off the async threads) and keeps the reason of a refusal.

use std::sync::{Arc, Mutex};

use russh::client;
use russh::keys::PublicKeyOrCertificate;

use super::known_hosts::{KnownHosts, Verdict};

/// The russh handler: checks the server's host key; remembers why a key was refused so the
/// error can say so instead of russh's generic "unknown key".
pub(crate) struct Client {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) known: Arc<KnownHosts>,
    pub(super) refusal: Arc<Mutex<Option<String>>>,
}

impl client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        offered: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let key = match offered {
            PublicKeyOrCertificate::PublicKey { key, .. } => key.clone(),
            PublicKeyOrCertificate::Certificate(cert) => cert.public_key().clone().into(),
        };
        let (known, host, port) = (self.known.clone(), self.host.clone(), self.port);
        // known_hosts is a small file, but reading (and appending to) it is blocking I/O.
        let verdict = tokio::task::spawn_blocking(move || known.check(&host, port, &key))
            .await
            .unwrap_or_else(|e| Verdict::Rejected(e.to_string()));
        match verdict {
            Verdict::Rejected(reason) => {
                *self.refusal.lock().expect("not poisoned") = Some(reason);
                Ok(false)
            }
            Verdict::Trusted | Verdict::Learned(_) | Verdict::Unchecked => Ok(true),
        }
    }
}
