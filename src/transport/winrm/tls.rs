//! TLS policy for WinRM over HTTPS: the platform's trust store by default, only the
//! certificates of `--winrm-ca-file` when given, or no verification at all when the inventory
//! explicitly opts out (`ansible_winrm_server_cert_validation=ignore`).

use std::path::Path;
use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

/// Build the client configuration; the error text names what is wrong.
pub fn client_config(
    verify: bool,
    ca_file: Option<&Path>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?;
    let config = if !verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth()
    } else if let Some(ca) = ca_file {
        let pem = std::fs::read(ca)
            .map_err(|e| format!("cannot read CA file `{}`: {e}", ca.display()))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("CA file `{}` is not PEM: {e}", ca.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("CA file `{}`: bad certificate: {e}", ca.display()))?;
        }
        if roots.is_empty() {
            return Err(format!("CA file `{}` holds no certificate", ca.display()));
        }
        let inner =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("CA file `{}`: {e}", ca.display()))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(CaFile {
                inner,
                path: ca.display().to_string(),
            }))
            .with_no_client_auth()
    } else {
        let verifier = rustls_platform_verifier::Verifier::new(provider)
            .map_err(|e| format!("cannot load the system trust store: {e}"))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth()
    };
    Ok(Arc::new(config))
}

/// Verification against the roots of a CA file (webpki, as `with_root_certificates`), whose
/// "unknown issuer" names that file: with a cluster's Windows guests, it is the cluster CA,
/// and a refusal means the guest presents a certificate from elsewhere (another cluster's,
/// or a self-signed one made before the guest got its certificate from the config ISO).
#[derive(Debug)]
struct CaFile {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    path: String,
}

impl ServerCertVerifier for CaFile {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|e| match e {
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer) => {
                    rustls::Error::General(format!(
                        "the server's certificate was not issued by a CA in `{}` (UnknownIssuer)",
                        self.path
                    ))
                }
                e => e,
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Accepts any certificate (still checks the handshake signatures, so the session is at least
/// bound to the key the server presented).
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
