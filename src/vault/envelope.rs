//! The Ansible Vault envelope: the `$ANSIBLE_VAULT;<version>;<cipher>[;<vault-id>]` header
//! line and the hexlified body below it, split into salt, HMAC and ciphertext.
//!
//! The body is hex of `hex(salt) \n hex(hmac) \n hex(ciphertext)` (hexlified twice: the format
//! ansible-core's `VaultAES256.encrypt` writes, `parsing/vault/__init__.py`). Format 1.1 has no
//! vault-id; 1.2 adds one (`ansible-vault encrypt --vault-id label@...`). As in Ansible, the
//! header's version is not checked further and a fifth field is ignored.

use super::VaultError;

/// The start of every vaulted text (`is_encrypted` in ansible-core checks only this).
pub const HEADER: &str = "$ANSIBLE_VAULT";

/// Whether `text` is vault-encrypted (a whole file or an inline `!vault` value).
pub fn is_vaulted(text: &[u8]) -> bool {
    text.starts_with(HEADER.as_bytes())
}

/// A parsed envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `1.1` or `1.2`.
    pub version: String,
    /// `AES256` is the only cipher Ansible writes and reads.
    pub cipher: String,
    /// The vault-id label of a 1.2 envelope.
    pub label: Option<String>,
    pub salt: Vec<u8>,
    /// The HMAC-SHA256 of the ciphertext, as stored.
    pub hmac: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

impl Envelope {
    pub fn parse(text: &str) -> Result<Self, VaultError> {
        let mut lines = text.lines();
        let header = lines.next().unwrap_or_default().trim();
        let fields: Vec<&str> = header.split(';').map(str::trim).collect();
        if fields.first() != Some(&HEADER) || fields.len() < 3 {
            return Err(VaultError::Format(
                "the header line is not `$ANSIBLE_VAULT;1.1;AES256`",
            ));
        }
        let label = fields
            .get(3)
            .filter(|l| !l.is_empty())
            .map(|l| l.to_string());
        // Ansible joins the body lines as they are; surrounding spaces (an indented inline
        // value whose indentation YAML kept) are not hex either way, so they are dropped.
        let body: String = lines.map(str::trim).collect();
        let inner = unhex(body.as_bytes())?;
        let mut parts = inner.splitn(3, |b| *b == b'\n');
        let (Some(salt), Some(hmac), Some(ciphertext)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(VaultError::Format(
                "the body does not hold salt, HMAC and ciphertext",
            ));
        };
        Ok(Envelope {
            version: fields[1].to_string(),
            cipher: fields[2].to_string(),
            label,
            salt: unhex(salt)?,
            hmac: unhex(hmac)?,
            ciphertext: unhex(ciphertext)?,
        })
    }
}

impl Envelope {
    /// The envelope's text as ansible-core writes it: the header (`1.2` with a label), then
    /// the hex of `hex(salt)\nhex(hmac)\nhex(ciphertext)` in lines of 80, and a newline.
    pub fn format(&self) -> String {
        let mut out = format!("{HEADER};{};{}", self.version, self.cipher);
        if let Some(l) = &self.label {
            out.push(';');
            out.push_str(l);
        }
        out.push('\n');
        let inner = format!(
            "{}\n{}\n{}",
            hex::encode(&self.salt),
            hex::encode(&self.hmac),
            hex::encode(&self.ciphertext)
        );
        let body = hex::encode(inner);
        for line in body.as_bytes().chunks(80) {
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out
    }
}

fn unhex(b: &[u8]) -> Result<Vec<u8>, VaultError> {
    hex::decode(b).map_err(|_| VaultError::Format("the body is not hexadecimal"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1_2_header_carries_its_label_and_1_1_none() {
        let body = hex::encode("6161\n6262\n6363");
        let e = Envelope::parse(&format!("$ANSIBLE_VAULT;1.2;AES256;dev\n{body}\n")).unwrap();
        assert_eq!(e.label.as_deref(), Some("dev"));
        assert_eq!(
            (e.salt, e.hmac, e.ciphertext),
            (b"aa".to_vec(), b"bb".to_vec(), b"cc".to_vec())
        );
        let e = Envelope::parse(&format!("$ANSIBLE_VAULT;1.1;AES256\n{body}")).unwrap();
        assert_eq!((e.version.as_str(), e.label), ("1.1", None));
    }

    #[test]
    fn broken_envelopes_are_format_errors() {
        for text in [
            "$ANSIBLE_VAULT;1.1\n00",
            "$ANSIBLE_VAULT;1.1;AES256\nzz",
            &format!("$ANSIBLE_VAULT;1.1;AES256\n{}", hex::encode("6161\n6262")),
        ] {
            assert!(
                matches!(Envelope::parse(text), Err(VaultError::Format(_))),
                "{text}"
            );
        }
    }
}
