//! MS-WSMV 2.2.9.1 message encryption over HTTP: SOAP bodies sealed with the NTLM session
//! and framed as `multipart/encrypted`.
//!
//! The NTLM sign/seal keys and RC4 streams come from winrm-rs's public `NtlmSession`, which
//! is correct; its own HTTP framing is not (a CRLF before the closing boundary, plaintext on
//! the AUTHENTICATE leg, unsealed replays), so the framing lives here. The payload is followed
//! directly by `--Encrypted Boundary--`, as pywinrm and Windows Server 2025 require.

use winrm_rs::NtlmSession;

pub const CONTENT_TYPE: &str = "multipart/encrypted;protocol=\"application/HTTP-SPNEGO-session-encrypted\";boundary=\"Encrypted Boundary\"";
const BOUNDARY: &[u8] = b"--Encrypted Boundary";
const PROTOCOL: &[u8] = b"application/HTTP-SPNEGO-session-encrypted";
const STREAM_HEADER: &[u8] = b"\tContent-Type: application/octet-stream\r\n";
/// An NTLM message signature (version, checksum, sequence number).
const SIGNATURE_LEN: usize = 16;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("encrypted response is not MS-WSMV multipart/encrypted: {0}")]
    Framing(&'static str),
    #[error("encrypted response failed NTLM verification: {0}")]
    Verify(String),
}

/// Seal `soap` into a `multipart/encrypted` body (send it with `CONTENT_TYPE`).
pub fn seal(session: &mut NtlmSession, soap: &[u8]) -> Vec<u8> {
    let sealed = session.seal(soap);
    let mut body = Vec::with_capacity(sealed.len() + 256);
    body.extend_from_slice(BOUNDARY);
    body.extend_from_slice(b"\r\n\tContent-Type: ");
    body.extend_from_slice(PROTOCOL);
    body.extend_from_slice(
        b"\r\n\tOriginalContent: type=application/soap+xml;charset=UTF-8;Length=",
    );
    body.extend_from_slice(soap.len().to_string().as_bytes());
    body.extend_from_slice(b"\r\n");
    body.extend_from_slice(BOUNDARY);
    body.extend_from_slice(b"\r\n");
    body.extend_from_slice(STREAM_HEADER);
    body.extend_from_slice(&(SIGNATURE_LEN as u32).to_le_bytes());
    body.extend_from_slice(&sealed);
    body.extend_from_slice(BOUNDARY);
    body.extend_from_slice(b"--\r\n");
    body
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The SOAP text inside a sealed response body.
pub fn unseal(session: &mut NtlmSession, body: &[u8]) -> Result<Vec<u8>, SealError> {
    let rest = body
        .strip_prefix(BOUNDARY)
        .ok_or(SealError::Framing("no opening boundary"))?;
    let second = find(rest, BOUNDARY).ok_or(SealError::Framing("one part only"))?;
    let header = &rest[..second];
    let length: usize = find(header, b"Length=")
        .map(|at| &header[at + 7..])
        .and_then(|tail| {
            let digits = tail.iter().take_while(|b| b.is_ascii_digit()).count();
            std::str::from_utf8(&tail[..digits]).ok()?.parse().ok()
        })
        .ok_or(SealError::Framing("no OriginalContent length"))?;
    let part = &rest[second + BOUNDARY.len()..];
    let part = part
        .strip_prefix(b"\r\n")
        .and_then(|p| p.strip_prefix(STREAM_HEADER))
        .ok_or(SealError::Framing("no octet-stream part"))?;
    let end = find(part, b"--Encrypted Boundary--").ok_or(SealError::Framing("no end"))?;
    let payload = &part[..end];
    if payload.len() < 4 {
        return Err(SealError::Framing("short payload"));
    }
    let sig_len = u32::from_le_bytes(payload[..4].try_into().unwrap()) as usize;
    if sig_len != SIGNATURE_LEN || payload.len() < 4 + sig_len {
        return Err(SealError::Framing("bad signature length"));
    }
    let plain = session
        .unseal(&payload[4..])
        .map_err(|e| SealError::Verify(e.to_string()))?;
    if plain.len() != length {
        return Err(SealError::Framing("length differs from OriginalContent"));
    }
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Client and server sessions mirror each other when their roles are swapped, which the
    /// public `NtlmSession` cannot do; so this checks framing on the client's own output.
    #[test]
    fn sealed_body_has_strict_framing() {
        let mut s = NtlmSession::from_auth(&[7; 16]);
        let body = seal(&mut s, b"<s:Envelope/>");
        assert!(body.ends_with(b"--Encrypted Boundary--\r\n"));
        assert!(!body.ends_with(b"\r\n--Encrypted Boundary--\r\n"));
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("Length=13\r\n"));
        assert!(
            !text.contains("<s:Envelope/>"),
            "plaintext leaked into the sealed body"
        );
    }

    #[test]
    fn unseal_rejects_garbage_without_panicking() {
        let mut s = NtlmSession::from_auth(&[7; 16]);
        assert!(unseal(&mut s, b"").is_err());
        assert!(unseal(&mut s, b"--Encrypted Boundary\r\nx").is_err());
        let mut other = NtlmSession::from_auth(&[8; 16]);
        let body = seal(&mut other, b"hello");
        assert!(unseal(&mut s, &body).is_err());
    }
}
