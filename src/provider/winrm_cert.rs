//! The cluster's WinRM certificate authority and the Windows guests' WinRM certificates.
//!
//! kinit reaches a Windows guest by its IP address over HTTPS and verifies the certificate it
//! presents. A certificate the guest makes for itself (`New-SelfSignedCertificate`) can never
//! pass that check: nothing trusts it, and it names no IP address (rustls/webpki and OpenSSL
//! match an IP only against an IP subjectAltName, never the common name). So each cluster
//! has its own CA in its state folder, made once: `winrm-ca.pem` (what the cluster inventory
//! trusts for its Windows nodes, `ansible_winrm_ca_trust_path`) and `winrm-ca.key` (0600).
//!
//! Each Windows guest's certificate is issued by it for the guest's IP, computer name and FQDN
//! (serverAuth) and kept in `winrm/<computer name>.pfx` (the key and certificate as PKCS#12,
//! 0600), `.pem` (the certificate alone, for the user) and `.json` (what it was issued for).
//! It is reused while it was issued by the same CA for the same names and is not expired, so
//! the config ISO that carries it, and the ISO's fingerprint, stay the same from run to run.
//!
//! The PKCS#12 is encrypted (PBES2 with AES-256-CBC, HMAC-SHA-256 MAC: what Windows Server
//! 2019 and later import) with the Windows administrator password, which the answer file on
//! the same ISO carries anyway: the ISO holds no second secret. RSA-2048 keys throughout, the
//! kind every Windows TLS stack (HTTP.sys serves WinRM) takes from a PKCS#12 without a
//! provider choice.
//!
//! One file: the CA and the leaf certificates share the key type, validity and storage rules
//! above.

use std::fs;
use std::net::IpAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_RSA_SHA256, RsaKeySize, SanType, SerialNumber,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::secret::Secret;

pub const CA_CERT: &str = "winrm-ca.pem";
pub const CA_KEY: &str = "winrm-ca.key";
/// Folder of the guests' certificates, inside the state folder.
pub const LEAF_DIR: &str = "winrm";

const CA_YEARS: i64 = 20;
const LEAF_YEARS: i64 = 5;

/// Parallel guests of one run may ask for the CA at once; the cluster lock keeps other kinit
/// processes out.
static CA_MAKING: Mutex<()> = Mutex::new(());

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot {action} `{}`", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot {action}: {detail}")]
    Crypto {
        action: &'static str,
        detail: String,
    },
    #[error(
        "the cluster's WinRM CA is incomplete: `{}` exists without `{}` (or the other way round); \
         restore the missing file, or remove both to make a new CA (every Windows guest then \
         needs a new config ISO and a reinstall to be trusted)",
        cert.display(), key.display()
    )]
    HalfCa { cert: PathBuf, key: PathBuf },
    #[error("the cluster's WinRM CA `{}` does not exist yet (`kinit run` makes it)", path.display())]
    NoCa { path: PathBuf },
}

fn crypto(action: &'static str) -> impl FnOnce(rcgen::Error) -> CertError {
    move |e| CertError::Crypto {
        action,
        detail: e.to_string(),
    }
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CertError {
    let path = path.to_path_buf();
    move |source| CertError::Io {
        action,
        path,
        source,
    }
}

/// Make the CA in `dir` when it has none. True when made.
pub fn ensure_ca(dir: &Path) -> Result<bool, CertError> {
    let _guard = CA_MAKING.lock().unwrap_or_else(|e| e.into_inner());
    let (cert, key) = (dir.join(CA_CERT), dir.join(CA_KEY));
    match (cert.exists(), key.exists()) {
        (true, true) => return Ok(false),
        (false, false) => {}
        _ => return Err(CertError::HalfCa { cert, key }),
    }
    let cluster = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let signing = new_key()?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "kinit");
    dn.push(DnType::CommonName, format!("kinit {cluster} WinRM CA"));
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.use_authority_key_identifier_extension = false;
    validity(&mut params, CA_YEARS)?;
    let ca = params
        .self_signed(&signing)
        .map_err(crypto("sign the WinRM CA"))?;
    // The key first: a certificate on file always has its key.
    write_atomic(&key, signing.serialize_pem().as_bytes(), 0o600)?;
    write_atomic(&cert, ca.pem().as_bytes(), 0o644)?;
    Ok(true)
}

/// What a guest's certificate is issued for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeafRequest {
    /// The computer name: the certificate's common name and its file name.
    pub name: String,
    pub ip: IpAddr,
    /// DNS names (the computer name, the FQDN).
    pub dns: Vec<String>,
}

/// A certificate the cluster CA issued, and its key (no `Debug`: the key is never printed).
pub struct Issued {
    pub cert_pem: String,
    pub cert_der: Vec<u8>,
    /// PKCS#8.
    pub key_der: Vec<u8>,
    pub key_pem: Secret,
    /// Seconds since the epoch.
    pub not_after: i64,
}

/// What `winrm/<name>.json` records.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Record {
    #[serde(flatten)]
    request: LeafRequest,
    /// SHA-256 of the issuing CA's certificate (PEM text).
    ca_sha256: String,
    not_after: i64,
}

/// Issue a certificate for `req` from the CA in `dir` (nothing is stored).
pub fn issue(dir: &Path, req: &LeafRequest) -> Result<Issued, CertError> {
    let issuer = load_ca(dir)?;
    let signing = new_key()?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, req.name.clone());
    params.distinguished_name = dn;
    params.subject_alt_names = vec![SanType::IpAddress(req.ip)];
    for d in &req.dns {
        let name = d
            .clone()
            .try_into()
            .map_err(crypto("name the WinRM certificate"))?;
        params.subject_alt_names.push(SanType::DnsName(name));
    }
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let not_after = validity(&mut params, LEAF_YEARS)?;
    let cert = params
        .signed_by(&signing, &issuer)
        .map_err(crypto("sign the WinRM certificate"))?;
    Ok(Issued {
        cert_pem: cert.pem(),
        cert_der: cert.der().to_vec(),
        key_der: signing.serialize_der(),
        key_pem: Secret::new(signing.serialize_pem()),
        not_after,
    })
}

/// The key and certificate as PKCS#12, encrypted with `password`.
pub fn pkcs12(issued: &Issued, password: &Secret) -> Result<Vec<u8>, CertError> {
    let p12 = |e: p12_keystore::error::Error| CertError::Crypto {
        action: "write the WinRM certificate as PKCS#12",
        detail: e.to_string(),
    };
    let key = p12_keystore::PrivateKey::from_der(&issued.key_der).map_err(p12)?;
    let cert = p12_keystore::Certificate::from_der(&issued.cert_der).map_err(p12)?;
    let key_id = Sha256::digest(&issued.cert_der).to_vec();
    let chain = p12_keystore::PrivateKeyChain::new(key_id, key, [cert]);
    let mut store = p12_keystore::KeyStore::new();
    store.add_entry(
        "kinit WinRM",
        p12_keystore::KeyStoreEntry::PrivateKeyChain(chain),
    );
    store
        .writer(password.expose())
        .encryption_algorithm(p12_keystore::EncryptionAlgorithm::PbeWithHmacSha256AndAes256)
        .mac_algorithm(p12_keystore::MacAlgorithm::HmacSha256)
        .write()
        .map_err(p12)
}

/// The guest's PKCS#12 (encrypted with `password`): the one in `dir/winrm/` when it was issued
/// by the current CA for `req`, is not expired and opens with `password`; otherwise a new one,
/// stored there when `store` (not in check mode).
pub fn guest_pkcs12(
    dir: &Path,
    req: &LeafRequest,
    password: &Secret,
    store: bool,
) -> Result<Vec<u8>, CertError> {
    let leaves = dir.join(LEAF_DIR);
    let pfx_path = leaves.join(format!("{}.pfx", req.name));
    let record_path = leaves.join(format!("{}.json", req.name));
    let ca_sha256 = hex::encode(Sha256::digest(read_ca_cert(dir)?.as_bytes()));
    let now = now_secs();
    let recorded: Option<Record> = fs::read(&record_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if let Some(r) = recorded
        && r.request == *req
        && r.ca_sha256 == ca_sha256
        && r.not_after > now
        && let Ok(pfx) = fs::read(&pfx_path)
        && p12_keystore::KeyStore::from_pkcs12(
            &pfx,
            password.expose(),
            p12_keystore::Pkcs12ImportPolicy::Strict,
        )
        .is_ok()
    {
        return Ok(pfx);
    }
    let issued = issue(dir, req)?;
    let pfx = pkcs12(&issued, password)?;
    if store {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&leaves)
            .map_err(io("create", &leaves))?;
        write_atomic(&pfx_path, &pfx, 0o600)?;
        write_atomic(
            &leaves.join(format!("{}.pem", req.name)),
            issued.cert_pem.as_bytes(),
            0o644,
        )?;
        let record = Record {
            request: req.clone(),
            ca_sha256,
            not_after: issued.not_after,
        };
        let text = serde_json::to_string_pretty(&record).unwrap_or_default();
        write_atomic(&record_path, format!("{text}\n").as_bytes(), 0o644)?;
    }
    Ok(pfx)
}

fn read_ca_cert(dir: &Path) -> Result<String, CertError> {
    let path = dir.join(CA_CERT);
    match fs::read_to_string(&path) {
        Ok(s) => Ok(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(CertError::NoCa { path }),
        Err(e) => Err(io("read", &path)(e)),
    }
}

fn load_ca(dir: &Path) -> Result<Issuer<'static, KeyPair>, CertError> {
    let cert = read_ca_cert(dir)?;
    let key_path = dir.join(CA_KEY);
    let key = match fs::read_to_string(&key_path) {
        Ok(k) => Secret::new(k),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CertError::HalfCa {
                cert: dir.join(CA_CERT),
                key: key_path,
            });
        }
        Err(e) => return Err(io("read", &key_path)(e)),
    };
    let key = KeyPair::from_pem(key.expose()).map_err(crypto("read the WinRM CA key"))?;
    Issuer::from_ca_cert_pem(&cert, key).map_err(crypto("read the WinRM CA certificate"))
}

fn new_key() -> Result<KeyPair, CertError> {
    KeyPair::generate_rsa_for(&PKCS_RSA_SHA256, RsaKeySize::_2048)
        .map_err(crypto("make an RSA key"))
}

/// From a day ago (clocks differ) for `years`, with a random positive 128-bit serial.
/// Returns the end, in seconds since the epoch.
fn validity(params: &mut CertificateParams, years: i64) -> Result<i64, CertError> {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(1);
    params.not_after = now + time::Duration::days(365 * years);
    let mut serial = [0u8; 16];
    getrandom::fill(&mut serial).map_err(|e| CertError::Crypto {
        action: "draw a serial number",
        detail: e.to_string(),
    })?;
    serial[0] &= 0x7f;
    serial[0] |= 0x01;
    params.serial_number = Some(SerialNumber::from(serial.to_vec()));
    Ok(params.not_after.unix_timestamp())
}

fn now_secs() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// A temp file beside `path`, then a rename (`crate::atomic`): never half a file, and the mode
/// is set before any byte of a key is written.
fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CertError> {
    crate::atomic::write(path, bytes, mode).map_err(io("write", path))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn req(ip: &str) -> LeafRequest {
        LeafRequest {
            name: "compute-01".into(),
            ip: ip.parse().unwrap(),
            dns: vec![
                "compute-01".into(),
                "compute-01.k8scluster.kubeinit.local".into(),
            ],
        }
    }

    #[test]
    fn ca_made_once_key_private() {
        let d = tempfile::tempdir().unwrap();
        assert!(ensure_ca(d.path()).unwrap());
        let cert = fs::read(d.path().join(CA_CERT)).unwrap();
        assert!(!ensure_ca(d.path()).unwrap());
        assert_eq!(fs::read(d.path().join(CA_CERT)).unwrap(), cert);
        let mode = |f: &str| fs::metadata(d.path().join(f)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(CA_KEY), 0o600);
        assert_eq!(mode(CA_CERT), 0o644);
        fs::remove_file(d.path().join(CA_KEY)).unwrap();
        let err = ensure_ca(d.path()).unwrap_err();
        assert!(matches!(err, CertError::HalfCa { .. }), "{err}");
    }

    #[test]
    fn guest_certificate_reused_until_its_names_change() {
        let d = tempfile::tempdir().unwrap();
        let pw = Secret::new("Kn1t-Secret");
        let err = guest_pkcs12(d.path(), &req("10.0.0.2"), &pw, true).unwrap_err();
        assert!(matches!(err, CertError::NoCa { .. }), "{err}");
        ensure_ca(d.path()).unwrap();
        // Check mode stores nothing.
        guest_pkcs12(d.path(), &req("10.0.0.2"), &pw, false).unwrap();
        assert!(!d.path().join(LEAF_DIR).exists());
        let first = guest_pkcs12(d.path(), &req("10.0.0.2"), &pw, true).unwrap();
        let pfx = d.path().join(LEAF_DIR).join("compute-01.pfx");
        assert_eq!(
            fs::metadata(&pfx).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            guest_pkcs12(d.path(), &req("10.0.0.2"), &pw, true).unwrap(),
            first
        );
        // Another address, or another password: a new certificate.
        let moved = guest_pkcs12(d.path(), &req("10.0.0.3"), &pw, true).unwrap();
        assert_ne!(moved, first);
        let other_pw = guest_pkcs12(d.path(), &req("10.0.0.3"), &Secret::new("x"), true).unwrap();
        assert_ne!(other_pw, moved);
        // The PKCS#12 opens with its password only and holds the key and the certificate.
        let store = p12_keystore::KeyStore::from_pkcs12(
            &other_pw,
            "x",
            p12_keystore::Pkcs12ImportPolicy::Strict,
        )
        .unwrap();
        let (_, chain) = store.private_key_chain().unwrap();
        assert_eq!(chain.certs().len(), 1);
        assert!(
            p12_keystore::KeyStore::from_pkcs12(
                &other_pw,
                "Kn1t-Secret",
                p12_keystore::Pkcs12ImportPolicy::Strict
            )
            .is_err()
        );
    }
}
