//! Ansible Vault: decrypting `$ANSIBLE_VAULT;1.1;AES256` files and `!vault` values with the
//! secrets of `--vault-password-file`, `--vault-id` and `--ask-vault-pass`.
//!
//! - `envelope`: the header and hexlified body; `cipher`: PBKDF2 → AES-256-CTR + HMAC-SHA256.
//! - `secrets`: where passwords come from (files, scripts, the terminal) and in which order.
//!
//! `!vault` values inside YAML documents are decrypted by `crate::yaml` as it reads them.
//!
//! The secrets of a run are installed once (`install`), before anything is loaded, and every
//! loader (playbooks, vars files, inventories, `-e @file`, `copy`/`template` sources) asks
//! `current()`: Ansible's `DataLoader` carries them the same way to every file it reads, and a
//! run has exactly one set. A vaulted file is decrypted when it is read, as Ansible does. An
//! inline `!vault` value is decrypted when its document is read too (Ansible 2.19 waits until
//! the value is used), so a value nothing uses still needs its secret.

pub mod cipher;
pub mod envelope;
pub mod secrets;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, RwLock};

use crate::secret::Secret;

pub use envelope::{Envelope, HEADER, is_vaulted};
pub use secrets::{SecretError, SecretSources, load_secrets};

/// The vault-id of a secret given without a label, and of a 1.1 envelope
/// (ansible-core's `DEFAULT_VAULT_IDENTITY`).
pub const DEFAULT_ID: &str = "default";

/// The plaintexts of the inline `!vault` values read in this run, for the `vault_encrypted`
/// test. ansible-core tags a decrypted value with where it came from and the tag follows the
/// text through templating; kinit's values are plain data, so a text counts as vaulted when it
/// is the plaintext of a `!vault` value this run decrypted (the same text written in the
/// clear elsewhere counts too).
static VAULTED_TEXTS: LazyLock<RwLock<HashSet<String>>> = LazyLock::new(Default::default);

/// Note `plaintext` as the value of a `!vault` value.
pub fn remember_vaulted_text(plaintext: &str) {
    let mut texts = VAULTED_TEXTS.write().unwrap_or_else(|e| e.into_inner());
    if !texts.contains(plaintext) {
        texts.insert(plaintext.to_string());
    }
}

/// Whether `text` is the plaintext of a `!vault` value read in this run.
pub fn is_vaulted_text(text: &str) -> bool {
    VAULTED_TEXTS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .contains(text)
}

/// Why vaulted text did not decrypt. The texts of the first two are Ansible's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultError {
    #[error("Attempting to decrypt but no vault secrets found")]
    NoSecrets,
    #[error("Decryption failed (no vault secrets were found that could decrypt)")]
    NoMatch,
    #[error("vault format error: {0}")]
    Format(&'static str),
    #[error("vault cipher `{0}` is not supported (Ansible Vault has AES256)")]
    Cipher(String),
    #[error("the decrypted vault content is not UTF-8 text")]
    NotUtf8,
}

/// A `VaultError` with the file (and, for a `!vault` value, the line) it happened in.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}{}: {reason}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct DecryptError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub reason: VaultError,
}

/// The secrets of a run, in the order they are tried, each with its vault-id.
#[derive(Debug, Clone, Default)]
pub struct Vault {
    secrets: Vec<(String, Secret)>,
    /// `vault_id_match`: only the secrets of the envelope's own vault-id are tried.
    id_match: bool,
}

impl Vault {
    pub fn new(secrets: Vec<(String, Secret)>) -> Self {
        Self {
            secrets,
            id_match: false,
        }
    }

    /// With `on`, a vault is opened only by the secrets whose vault-id is its label (a 1.1
    /// envelope's is `default`), as ansible-core's `vault_id_match`.
    pub fn matching_ids_only(mut self, on: bool) -> Self {
        self.id_match = on;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// The passwords, for the redaction layer.
    pub fn passwords(&self) -> impl Iterator<Item = &Secret> {
        self.secrets.iter().map(|(_, s)| s)
    }

    /// Decrypt vaulted `text`. The secrets whose vault-id is the envelope's (`default` for a
    /// 1.1 envelope) are tried first, then all the others, in order: ansible-core's
    /// `VaultLib.decrypt_and_get_vault_id` with `vault_id_match` off (its default). The label
    /// is only a hint: it is not covered by the HMAC. With `vault_id_match` on, only the
    /// label's secrets are tried.
    pub fn decrypt(&self, text: &str) -> Result<Vec<u8>, VaultError> {
        let env = Envelope::parse(text)?;
        if env.cipher != "AES256" {
            return Err(VaultError::Cipher(env.cipher));
        }
        if self.secrets.is_empty() {
            return Err(VaultError::NoSecrets);
        }
        if self.id_match {
            // ansible-core's `decrypt_and_get_vault_id`: the label (`default` for a 1.1
            // envelope, `parse_vaulttext_envelope`) is the only candidate.
            let label = env.label.as_deref().unwrap_or(DEFAULT_ID);
            return self
                .secrets
                .iter()
                .filter(|(id, _)| id == label)
                .find_map(|(_, s)| cipher::decrypt(&env, s.expose().as_bytes()).ok())
                .ok_or(VaultError::NoMatch);
        }
        let label = env.label.as_deref().unwrap_or(DEFAULT_ID);
        let matching = self.secrets.iter().filter(|(id, _)| id == label);
        let others = self.secrets.iter().filter(|(id, _)| id != label);
        matching
            .chain(others)
            .find_map(|(_, s)| cipher::decrypt(&env, s.expose().as_bytes()).ok())
            .ok_or(VaultError::NoMatch)
    }

    /// Decrypt vaulted `text` into UTF-8 text.
    pub fn decrypt_text(&self, text: &str) -> Result<String, VaultError> {
        String::from_utf8(self.decrypt(text)?).map_err(|_| VaultError::NotUtf8)
    }
}

static CURRENT: RwLock<Option<Arc<Vault>>> = RwLock::new(None);

/// Make `vault` the secrets every loader uses from now on.
pub fn install(vault: Vault) {
    *CURRENT.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(vault));
}

/// The installed secrets (none before `install`).
pub fn current() -> Arc<Vault> {
    CURRENT
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

/// A file's text as loaders read it: decrypted when it is vaulted, as it is otherwise.
pub fn file_text(path: &Path, text: String) -> Result<String, DecryptError> {
    if !is_vaulted(text.as_bytes()) {
        return Ok(text);
    }
    current()
        .decrypt_text(&text)
        .map_err(|reason| DecryptError {
            file: path.to_path_buf(),
            line: None,
            reason,
        })
}

/// A file's bytes, decrypted when they are vaulted (`copy`'s `decrypt`).
pub fn file_bytes(path: &Path, bytes: Vec<u8>) -> Result<Vec<u8>, DecryptError> {
    if !is_vaulted(&bytes) {
        return Ok(bytes);
    }
    let fail = |reason| DecryptError {
        file: path.to_path_buf(),
        line: None,
        reason,
    };
    let text = std::str::from_utf8(&bytes).map_err(|_| fail(VaultError::Format("not text")))?;
    current().decrypt(text).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ansible-vault encrypt_string --vault-id dev@pw short` (password `kinit-vault-pw`).
    const DEV: &str = "$ANSIBLE_VAULT;1.2;AES256;dev
62653137656566326634323061313863373633636532303866353438346561343833316137313061
3339396234363831353937356666323633633433646336300a336337323966393966303238613134
34643137303361363137333636373431646265343339653330396331633737396333356363373031
6263333863356430660a616633363335333262353563356564343561356664386537383466316530
3638";

    fn vault(pairs: &[(&str, &str)]) -> Vault {
        Vault::new(
            pairs
                .iter()
                .map(|(id, pw)| (id.to_string(), Secret::new(*pw)))
                .collect(),
        )
    }

    #[test]
    fn any_secret_opens_any_label_and_the_matching_label_is_tried_first() {
        for v in [
            vault(&[("prod", "nope"), ("dev", "kinit-vault-pw")]),
            vault(&[("other", "kinit-vault-pw")]),
        ] {
            assert_eq!(v.decrypt_text(DEV).unwrap(), "short");
        }
    }

    /// ansible-core's `vault_id_match`: only the label's secrets; a 1.1 envelope's label is
    /// `default`.
    #[test]
    fn with_id_match_only_the_labels_secrets_are_tried() {
        let right = vault(&[("prod", "nope"), ("dev", "kinit-vault-pw")]).matching_ids_only(true);
        assert_eq!(right.decrypt_text(DEV).unwrap(), "short");
        let other = vault(&[("other", "kinit-vault-pw")]).matching_ids_only(true);
        assert_eq!(other.decrypt_text(DEV), Err(VaultError::NoMatch));
        let (_, text) = DEV.split_once('\n').unwrap();
        let v11 = format!("$ANSIBLE_VAULT;1.1;AES256\n{text}");
        let default = vault(&[("default", "kinit-vault-pw")]).matching_ids_only(true);
        assert_eq!(default.decrypt_text(&v11).unwrap(), "short");
        let dev = vault(&[("dev", "kinit-vault-pw")]);
        assert_eq!(dev.decrypt_text(&v11).unwrap(), "short");
        assert_eq!(
            dev.matching_ids_only(true).decrypt_text(&v11),
            Err(VaultError::NoMatch)
        );
    }

    #[test]
    fn no_secret_and_no_matching_secret_are_ansibles_errors() {
        assert_eq!(Vault::default().decrypt(DEV), Err(VaultError::NoSecrets));
        assert_eq!(
            vault(&[("dev", "wrong")]).decrypt(DEV),
            Err(VaultError::NoMatch)
        );
        let err = DecryptError {
            file: "group_vars/all.yml".into(),
            line: Some(3),
            reason: VaultError::NoMatch,
        };
        assert_eq!(
            err.to_string(),
            "group_vars/all.yml:3: Decryption failed (no vault secrets were found that could decrypt)"
        );
    }

    #[test]
    fn another_cipher_is_refused() {
        let text = DEV.replace("AES256", "AES");
        assert_eq!(
            vault(&[("dev", "kinit-vault-pw")]).decrypt(&text),
            Err(VaultError::Cipher("AES".into()))
        );
    }
}
