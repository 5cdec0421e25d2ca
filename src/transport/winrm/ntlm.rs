//! The NTLMv2 client handshake (MS-NLMP): NEGOTIATE, CHALLENGE parsing and AUTHENTICATE with
//! key exchange, MIC and TLS channel binding. The result is the exported session key that
//! message sealing (`seal.rs`) derives its keys from.
//!
//! Written here because winrm-rs 1.1.2 keeps its message builders crate-private; its public
//! `NtlmSession` (sign/seal keys and RC4 streams from an exported key) is used by `seal.rs`.
//!
//! One file: the three messages share the wire layout and the key derivation of MS-NLMP.

use hmac::{KeyInit, Mac};
use md4::Digest as _;

type HmacMd5 = hmac::Hmac<md5::Md5>;

const SIGNATURE: &[u8; 8] = b"NTLMSSP\0";

const UNICODE: u32 = 0x0000_0001;
const REQUEST_TARGET: u32 = 0x0000_0004;
const SIGN: u32 = 0x0000_0010;
const SEAL: u32 = 0x0000_0020;
const NTLM: u32 = 0x0000_0200;
const ALWAYS_SIGN: u32 = 0x0000_8000;
const EXTENDED_SESSION_SECURITY: u32 = 0x0008_0000;
const TARGET_INFO: u32 = 0x0080_0000;
const VERSION: u32 = 0x0200_0000;
const KEY_128: u32 = 0x2000_0000;
const KEY_EXCH: u32 = 0x4000_0000;
const KEY_56: u32 = 0x8000_0000;

/// What kinit asks for: NTLMv2 with extended session security, 128-bit keys and key
/// exchange, which is what sealing (`NtlmSession`) assumes.
const CLIENT_FLAGS: u32 = UNICODE
    | REQUEST_TARGET
    | SIGN
    | SEAL
    | NTLM
    | ALWAYS_SIGN
    | EXTENDED_SESSION_SECURITY
    | TARGET_INFO
    | VERSION
    | KEY_128
    | KEY_EXCH
    | KEY_56;

/// Flags the server must grant for sealing to be possible.
const REQUIRED_FLAGS: u32 = EXTENDED_SESSION_SECURITY | KEY_128 | KEY_EXCH | SEAL | SIGN;

const AV_EOL: u16 = 0;
const AV_FLAGS: u16 = 6;
const AV_TIMESTAMP: u16 = 7;
const AV_CHANNEL_BINDINGS: u16 = 10;
/// MsvAvFlags bit: the AUTHENTICATE message carries a MIC.
const AV_FLAG_MIC: u32 = 0x2;

/// Windows 10 build 19041, NTLM revision 15: a version field servers accept.
const OS_VERSION: [u8; 8] = [10, 0, 0x61, 0x4a, 0, 0, 0, 15];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NtlmError {
    #[error("malformed NTLM challenge: {0}")]
    BadChallenge(&'static str),
    #[error("the server refused NTLM message encryption (negotiated flags {0:#010x})")]
    NoSealing(u32),
}

/// Who authenticates. The user is `DOMAIN\user`, `user@domain` (sent as is, domain empty) or
/// a bare local user.
pub struct Identity<'a> {
    pub user: &'a str,
    pub domain: &'a str,
    pub password: &'a str,
}

impl<'a> Identity<'a> {
    pub fn parse(login: &'a str, password: &'a str) -> Self {
        match login.split_once('\\') {
            Some((domain, user)) => Identity {
                user,
                domain,
                password,
            },
            None => Identity {
                user: login,
                domain: "",
                password,
            },
        }
    }
}

/// The NEGOTIATE (type 1) message.
pub fn negotiate() -> Vec<u8> {
    let mut m = Vec::with_capacity(40);
    m.extend_from_slice(SIGNATURE);
    m.extend_from_slice(&1u32.to_le_bytes());
    m.extend_from_slice(&CLIENT_FLAGS.to_le_bytes());
    m.extend_from_slice(&[0; 16]); // empty domain and workstation fields
    m.extend_from_slice(&OS_VERSION);
    m
}

/// The parts of a CHALLENGE (type 2) message the client needs.
#[derive(Debug)]
pub struct Challenge {
    pub flags: u32,
    pub server_challenge: [u8; 8],
    pub target_info: Vec<u8>,
}

fn field(msg: &[u8], at: usize) -> Result<&[u8], NtlmError> {
    let hdr = msg
        .get(at..at + 8)
        .ok_or(NtlmError::BadChallenge("truncated header"))?;
    let len = u16::from_le_bytes([hdr[0], hdr[1]]) as usize;
    let off = u32::from_le_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]) as usize;
    msg.get(off..off + len)
        .ok_or(NtlmError::BadChallenge("field outside the message"))
}

pub fn parse_challenge(msg: &[u8]) -> Result<Challenge, NtlmError> {
    if msg.len() < 48 || &msg[..8] != SIGNATURE {
        return Err(NtlmError::BadChallenge("not an NTLMSSP message"));
    }
    if msg[8..12] != 2u32.to_le_bytes() {
        return Err(NtlmError::BadChallenge("not a CHALLENGE message"));
    }
    let flags = u32::from_le_bytes(msg[20..24].try_into().unwrap());
    if flags & REQUIRED_FLAGS != REQUIRED_FLAGS {
        return Err(NtlmError::NoSealing(flags));
    }
    Ok(Challenge {
        flags,
        server_challenge: msg[24..32].try_into().unwrap(),
        target_info: field(msg, 40)?.to_vec(),
    })
}

/// AV pairs as (id, value), without the terminating MsvAvEOL.
fn av_pairs(mut info: &[u8]) -> Result<Vec<(u16, Vec<u8>)>, NtlmError> {
    let mut out = Vec::new();
    while info.len() >= 4 {
        let id = u16::from_le_bytes([info[0], info[1]]);
        let len = u16::from_le_bytes([info[2], info[3]]) as usize;
        if id == AV_EOL {
            return Ok(out);
        }
        let value = info
            .get(4..4 + len)
            .ok_or(NtlmError::BadChallenge("truncated target info"))?;
        out.push((id, value.to_vec()));
        info = &info[4 + len..];
    }
    Err(NtlmError::BadChallenge("target info without MsvAvEOL"))
}

fn hmac_md5(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    let mut mac = HmacMd5::new_from_slice(key).expect("HMAC takes any key length");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

fn utf16le(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// NTOWFv2 (MS-NLMP 3.3.2).
pub fn ntowf_v2(id: &Identity<'_>) -> [u8; 16] {
    let nt_hash: [u8; 16] = md4::Md4::digest(utf16le(id.password)).into();
    let who = utf16le(&(id.user.to_uppercase() + id.domain));
    hmac_md5(&nt_hash, &[&who])
}

/// RC4, used once here to wrap the random session key (`NtlmSession` has its own streams).
pub fn rc4(key: &[u8], data: &mut [u8]) {
    let mut s: [u8; 256] = std::array::from_fn(|i| i as u8);
    let mut j = 0u8;
    for i in 0..256 {
        j = j.wrapping_add(s[i]).wrapping_add(key[i % key.len()]);
        s.swap(i, j as usize);
    }
    let (mut i, mut j) = (0u8, 0u8);
    for b in data {
        i = i.wrapping_add(1);
        j = j.wrapping_add(s[i as usize]);
        s.swap(i as usize, j as usize);
        *b ^= s[(s[i as usize].wrapping_add(s[j as usize])) as usize];
    }
}

/// MD5 of a `gss_channel_bindings_struct` carrying only application data
/// (`tls-server-end-point:` + the certificate hash, RFC 5929).
pub fn channel_binding_hash(application_data: &[u8]) -> [u8; 16] {
    let mut s = vec![0u8; 16]; // initiator and acceptor address type and length: all zero
    s.extend_from_slice(&(application_data.len() as u32).to_le_bytes());
    s.extend_from_slice(application_data);
    md5::Md5::digest(&s).into()
}

/// Per-handshake randomness, injectable for tests.
pub struct Nonces {
    pub client_challenge: [u8; 8],
    pub session_key: [u8; 16],
    /// FILETIME, used only when the server sent no MsvAvTimestamp.
    pub now_filetime: u64,
}

impl Nonces {
    pub fn random() -> Self {
        let mut r = [0u8; 24];
        getrandom::fill(&mut r).expect("the OS random source works");
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Nonces {
            client_challenge: r[..8].try_into().unwrap(),
            session_key: r[8..].try_into().unwrap(),
            now_filetime: (unix.as_secs() + 11_644_473_600) * 10_000_000
                + u64::from(unix.subsec_nanos() / 100),
        }
    }
}

pub struct Authenticate {
    pub message: Vec<u8>,
    pub exported_session_key: [u8; 16],
}

/// The AUTHENTICATE (type 3) message for `challenge_msg`, answering `negotiate_msg`.
pub fn authenticate(
    id: &Identity<'_>,
    negotiate_msg: &[u8],
    challenge_msg: &[u8],
    challenge: &Challenge,
    cbt: Option<[u8; 16]>,
    nonces: &Nonces,
) -> Result<Authenticate, NtlmError> {
    let mut pairs = av_pairs(&challenge.target_info)?;
    let server_time = pairs
        .iter()
        .find(|(id, v)| *id == AV_TIMESTAMP && v.len() == 8)
        .map(|(_, v)| u64::from_le_bytes(v[..8].try_into().unwrap()));
    // With a server timestamp the MIC is required (MS-NLMP 3.1.5.1.2).
    let with_mic = server_time.is_some();
    if with_mic {
        match pairs.iter_mut().find(|(id, _)| *id == AV_FLAGS) {
            Some((_, v)) if v.len() == 4 => {
                let f = u32::from_le_bytes(v[..4].try_into().unwrap()) | AV_FLAG_MIC;
                *v = f.to_le_bytes().to_vec();
            }
            _ => pairs.push((AV_FLAGS, AV_FLAG_MIC.to_le_bytes().to_vec())),
        }
    }
    if let Some(hash) = cbt {
        pairs.retain(|(id, _)| *id != AV_CHANNEL_BINDINGS);
        pairs.push((AV_CHANNEL_BINDINGS, hash.to_vec()));
    }
    let mut info = Vec::new();
    for (id, v) in &pairs {
        info.extend_from_slice(&id.to_le_bytes());
        info.extend_from_slice(&(v.len() as u16).to_le_bytes());
        info.extend_from_slice(v);
    }
    info.extend_from_slice(&[0; 4]); // MsvAvEOL

    let key = ntowf_v2(id);
    let mut temp = vec![1, 1, 0, 0, 0, 0, 0, 0];
    temp.extend_from_slice(&server_time.unwrap_or(nonces.now_filetime).to_le_bytes());
    temp.extend_from_slice(&nonces.client_challenge);
    temp.extend_from_slice(&[0; 4]);
    temp.extend_from_slice(&info);
    temp.extend_from_slice(&[0; 4]);
    let proof = hmac_md5(&key, &[&challenge.server_challenge, &temp]);
    let mut nt_response = proof.to_vec();
    nt_response.extend_from_slice(&temp);
    let lm_response = if with_mic {
        vec![0; 24]
    } else {
        let mut lm = hmac_md5(
            &key,
            &[&challenge.server_challenge, &nonces.client_challenge],
        )
        .to_vec();
        lm.extend_from_slice(&nonces.client_challenge);
        lm
    };
    let key_exchange_key = hmac_md5(&key, &[&proof]);
    let exported = nonces.session_key;
    let mut encrypted_key = exported;
    rc4(&key_exchange_key, &mut encrypted_key);

    let flags = challenge.flags & CLIENT_FLAGS;
    let domain = utf16le(id.domain);
    let user = utf16le(id.user);
    let payload: [&[u8]; 6] = [
        &lm_response,
        &nt_response,
        &domain,
        &user,
        &[],
        &encrypted_key,
    ];
    const HEADER: usize = 88;
    let mut msg = Vec::with_capacity(HEADER + payload.iter().map(|p| p.len()).sum::<usize>());
    msg.extend_from_slice(SIGNATURE);
    msg.extend_from_slice(&3u32.to_le_bytes());
    let mut offset = HEADER;
    for p in payload {
        msg.extend_from_slice(&(p.len() as u16).to_le_bytes());
        msg.extend_from_slice(&(p.len() as u16).to_le_bytes());
        msg.extend_from_slice(&(offset as u32).to_le_bytes());
        offset += p.len();
    }
    msg.extend_from_slice(&flags.to_le_bytes());
    msg.extend_from_slice(&OS_VERSION);
    msg.extend_from_slice(&[0; 16]); // MIC, filled in below
    for p in payload {
        msg.extend_from_slice(p);
    }
    if with_mic {
        let mic = hmac_md5(&exported, &[negotiate_msg, challenge_msg, &msg]);
        msg[72..88].copy_from_slice(&mic);
    }
    Ok(Authenticate {
        message: msg,
        exported_session_key: exported,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ntowf_v2_matches_ms_nlmp_4_2_4() {
        let id = Identity {
            user: "User",
            domain: "Domain",
            password: "Password",
        };
        assert_eq!(
            hex::encode(ntowf_v2(&id)),
            "0c868a403bfd7a93a3001ef22ef02e3f"
        );
    }

    #[test]
    fn rc4_matches_the_classic_vector() {
        let mut data = *b"Plaintext";
        rc4(b"Key", &mut data);
        assert_eq!(hex::encode(data), "bbf316e8d940af0ad3");
    }

    #[test]
    fn identity_splits_down_level_logons_only() {
        let id = Identity::parse("CORP\\alice", "pw");
        assert_eq!((id.domain, id.user), ("CORP", "alice"));
        let id = Identity::parse("alice@corp.example", "pw");
        assert_eq!((id.domain, id.user), ("", "alice@corp.example"));
    }

    #[test]
    fn challenge_without_sealing_is_refused() {
        let mut msg = vec![0u8; 48];
        msg[..8].copy_from_slice(SIGNATURE);
        msg[8] = 2;
        msg[20..24].copy_from_slice(&(NTLM | UNICODE).to_le_bytes());
        assert!(matches!(
            parse_challenge(&msg),
            Err(NtlmError::NoSealing(_))
        ));
        assert!(parse_challenge(&msg[..20]).is_err());
    }
}
