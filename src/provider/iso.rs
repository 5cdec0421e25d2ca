//! Building an ISO image on the hypervisor (cloud-init seeds, Windows config ISOs).
//!
//! The ISO is made by `genisoimage` on the hypervisor, or `xorriso -as mkisofs` where only
//! xorriso is installed (`cloud-localds` is itself a wrapper around genisoimage, so kinit
//! does not need it). File contents travel on the command's stdin as a tar archive, never in
//! the command text, so secrets in them (a Windows password) cannot show up in a process
//! list or a log of commands.
//!
//! Idempotency: the image carries kinit's fingerprint of its contents as its ISO 9660
//! application id, read back from the primary volume descriptor with `dd`. Same fingerprint,
//! nothing to do.

use sha2::{Digest, Sha256};

use super::ProviderError;
use crate::transport::quote;

/// Byte offset of the application id in an ISO 9660 image: the primary volume descriptor
/// starts at sector 16 (2048-byte sectors), the field at offset 574 in it.
const APP_ID_OFFSET: usize = 16 * 2048 + 574;
const APP_ID_PREFIX: &str = "KINIT_";

#[derive(Debug, Clone)]
pub struct IsoImage {
    /// Where the image goes on the hypervisor.
    pub path: String,
    /// ISO 9660 volume id (`cidata` for a NoCloud seed).
    pub volume_id: String,
    pub files: Vec<(String, Vec<u8>)>,
}

impl IsoImage {
    /// The application id that marks an image built from exactly these contents.
    pub fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.volume_id.as_bytes());
        for (name, data) in &self.files {
            h.update((name.len() as u64).to_le_bytes());
            h.update(name.as_bytes());
            h.update((data.len() as u64).to_le_bytes());
            h.update(data);
        }
        // Upper case: ISO 9660 "a-characters" have no lower-case letters.
        format!("{APP_ID_PREFIX}{}", hex::encode_upper(h.finalize()))
    }

    /// POSIX sh that prints the application id of the existing image (nothing when absent).
    pub fn probe_script(&self) -> String {
        format!(
            "[ -f {p} ] && dd if={p} bs=1 skip={APP_ID_OFFSET} count={n} 2>/dev/null || true",
            p = quote::sh(&self.path),
            n = APP_ID_PREFIX.len() + 64,
        )
    }

    /// Whether `probe_output` shows the image is already up to date.
    pub fn is_current(&self, probe_output: &str) -> bool {
        probe_output.trim() == self.fingerprint()
    }

    /// POSIX sh that unpacks the tar archive on stdin and builds the image, replacing any
    /// old one atomically.
    pub fn build_script(&self) -> String {
        let argv = |tool: &str| {
            format!(
                "{tool} -quiet -output \"$tmp\" -volid {v} -appid {a} -joliet -rock \"$d\"",
                v = quote::sh(&self.volume_id),
                a = quote::sh(&self.fingerprint()),
            )
        };
        format!(
            "set -e\n\
             out={out}\n\
             d=$(mktemp -d)\n\
             tmp=\"$out.kinit-tmp\"\n\
             trap 'rm -rf \"$d\" \"$tmp\"' EXIT\n\
             tar -x -f - -C \"$d\"\n\
             mkdir -p \"$(dirname \"$out\")\"\n\
             if command -v genisoimage >/dev/null 2>&1; then {g}\n\
             elif command -v xorriso >/dev/null 2>&1; then {x}\n\
             else echo 'neither genisoimage nor xorriso is installed' >&2; exit 127; fi\n\
             mv -f \"$tmp\" \"$out\"\n",
            out = quote::sh(&self.path),
            g = argv("genisoimage"),
            x = argv("xorriso -as mkisofs"),
        )
    }

    /// The files as a tar archive, for the build script's stdin.
    pub fn tar(&self) -> Result<Vec<u8>, ProviderError> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in &self.files {
            check_file_name(name)?;
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            b.append_data(&mut header, name, data.as_slice())
                .map_err(ProviderError::Pack)?;
        }
        b.into_inner().map_err(ProviderError::Pack)
    }
}

fn check_file_name(name: &str) -> Result<(), ProviderError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(ProviderError::Invalid {
            field: "file name",
            value: name.to_string(),
            expected: "a plain file name (letters, digits, `-`, `_`, `.`)",
        })
    }
}
