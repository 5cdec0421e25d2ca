//! Authentication of one SSH hop: OpenSSH key files (ed25519, ecdsa, rsa; encrypted ones
//! through the agent or a passphrase), every key of the ssh-agent (`SSH_AUTH_SOCK`), then a
//! password. The failure message lists what was tried; it never contains a secret.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use russh::client::{AuthResult, Handle};
use russh::keys::agent::AgentIdentity;
use russh::keys::agent::client::AgentClient;
use russh::keys::{PrivateKey, PrivateKeyWithHashAlg, PublicKey};

use super::client::Client;
use crate::secret::Secret;
use crate::transport::TransportError;

/// What one hop authenticates with.
pub(super) struct Credentials<'a> {
    pub user: &'a str,
    /// Key files in order of preference; empty means OpenSSH's default files.
    pub key_files: &'a [PathBuf],
    pub password: Option<&'a Secret>,
    pub passphrase: Option<&'a Secret>,
    /// The agent's socket, if any.
    pub agent: Option<&'a Path>,
}

pub(super) async fn authenticate(
    handle: &mut Handle<Client>,
    host: &str,
    creds: &Credentials<'_>,
) -> Result<(), TransportError> {
    let mut tried: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let proto = |e: russh::Error| TransportError::Protocol {
        host: host.to_string(),
        what: "authentication".into(),
        detail: e.to_string(),
    };
    let mut agent = match creds.agent {
        Some(sock) => AgentClient::connect_uds(sock).await.ok(),
        None => None,
    };
    let agent_keys: Vec<PublicKey> = match agent.as_mut() {
        Some(a) => a
            .request_identities()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter_map(|id| match id {
                AgentIdentity::PublicKey { key, .. } => Some(key),
                AgentIdentity::Certificate { .. } => None,
            })
            .collect(),
        None => Vec::new(),
    };

    for path in key_files(creds.key_files) {
        let key = match load_key(&path, creds.passphrase).await {
            Ok(k) => k,
            Err(KeyLoad::Encrypted) => {
                // An encrypted key the agent holds is used through the agent below.
                let in_agent = russh::keys::load_public_key(path.with_extension("pub"))
                    .map(|p| agent_keys.iter().any(|a| a.key_data() == p.key_data()))
                    .unwrap_or(false);
                if !in_agent {
                    notes.push(format!(
                        "`{}` is encrypted: load it into ssh-agent or set \
                         KINIT_SSH_KEY_PASSPHRASE",
                        path.display()
                    ));
                }
                continue;
            }
            Err(KeyLoad::Unreadable(e)) => {
                notes.push(format!("cannot use `{}`: {e}", path.display()));
                continue;
            }
        };
        let hash = rsa_hash(handle, key.algorithm()).await.map_err(proto)?;
        tried.push(format!("key `{}`", path.display()));
        let res = handle
            .authenticate_publickey(creds.user, PrivateKeyWithHashAlg::new(Arc::new(key), hash))
            .await
            .map_err(proto)?;
        if res.success() {
            return Ok(());
        }
    }

    if let Some(agent) = agent.as_mut() {
        for key in &agent_keys {
            let hash = rsa_hash(handle, key.algorithm()).await.map_err(proto)?;
            tried.push(format!("agent key {}", key.algorithm()));
            match handle
                .authenticate_publickey_with(creds.user, key.clone(), hash, agent)
                .await
            {
                Ok(AuthResult::Success) => return Ok(()),
                Ok(AuthResult::Failure { .. }) => {}
                Err(e) => notes.push(format!("ssh-agent: {e}")),
            }
        }
    }

    if let Some(pw) = creds.password {
        tried.push("password".into());
        let res = handle
            .authenticate_password(creds.user, pw.expose())
            .await
            .map_err(proto)?;
        if res.success() {
            return Ok(());
        }
    }

    let mut reason = if tried.is_empty() {
        "no key file, agent key or password to try".to_string()
    } else {
        format!("the server refused {}", tried.join(", "))
    };
    for n in notes {
        reason.push_str("; ");
        reason.push_str(&n);
    }
    Err(TransportError::Auth {
        host: host.to_string(),
        user: creds.user.to_string(),
        reason,
    })
}

/// The signature hash to use with `algorithm`: the best one the server offers for RSA keys,
/// none for every other kind.
async fn rsa_hash(
    handle: &mut Handle<Client>,
    algorithm: russh::keys::Algorithm,
) -> Result<Option<russh::keys::HashAlg>, russh::Error> {
    if !algorithm.is_rsa() {
        return Ok(None);
    }
    Ok(handle.best_supported_rsa_hash().await?.flatten())
}

/// The explicit files, or OpenSSH's defaults that exist.
fn key_files(explicit: &[PathBuf]) -> Vec<PathBuf> {
    if !explicit.is_empty() {
        return explicit.to_vec();
    }
    default_key_files()
}

/// OpenSSH's default key files (`~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`) that exist.
pub(super) fn default_key_files() -> Vec<PathBuf> {
    let Some(home) = std::env::home_dir() else {
        return Vec::new();
    };
    ["id_ed25519", "id_ecdsa", "id_rsa"]
        .iter()
        .map(|n| home.join(".ssh").join(n))
        .filter(|p| p.exists())
        .collect()
}

enum KeyLoad {
    Encrypted,
    Unreadable(String),
}

async fn load_key(path: &Path, passphrase: Option<&Secret>) -> Result<PrivateKey, KeyLoad> {
    let text = tokio::fs::read_to_string(path)
        .await
        .map_err(|e| KeyLoad::Unreadable(e.to_string()))?;
    let passphrase = passphrase.cloned();
    // Decrypting runs bcrypt's key derivation: CPU work kept off the async threads.
    tokio::task::spawn_blocking(move || match russh::keys::decode_secret_key(&text, None) {
        Ok(k) => Ok(k),
        Err(russh::keys::Error::KeyIsEncrypted) => match passphrase {
            Some(p) => russh::keys::decode_secret_key(&text, Some(p.expose()))
                .map_err(|_| KeyLoad::Unreadable("the passphrase does not decrypt it".to_string())),
            None => Err(KeyLoad::Encrypted),
        },
        Err(e) => Err(KeyLoad::Unreadable(e.to_string())),
    })
    .await
    .map_err(|e| KeyLoad::Unreadable(e.to_string()))?
}
