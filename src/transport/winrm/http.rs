//! One authenticated HTTP(S) session to a WinRM endpoint: TLS policy, Basic or NTLM auth,
//! MS-WSMV sealing over HTTP, retries, and turning responses into `soap::Response`s.
//!
//! NTLM authenticates the TCP connection (as HTTP.sys does), so requests are strictly
//! sequential (the per-host actor guarantees it) over a pool of one connection. The handshake
//! never carries a SOAP body over HTTP: NEGOTIATE and AUTHENTICATE go with empty bodies, then
//! every body is sealed. A 401 on an established session means the connection was replaced;
//! kinit re-authenticates once and resends. A request whose future was dropped midway
//! (cancellation) leaves the connection state unknown, so the next request re-authenticates.

use std::time::Duration;

use base64::Engine as _;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use sha2::Digest as _;
use winrm_rs::NtlmSession;

use super::ntlm::{self, Identity, Nonces, NtlmError};
use super::seal::{self, SealError};
use super::soap::{self, Fault, ParseError, Request, Response};
use crate::secret::Secret;
use crate::transport::HostTarget;
use crate::transport::target::{WinRmAuth, WinRmScheme};

const SOAP_TYPE: &str = "application/soap+xml;charset=UTF-8";

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot open a connection")]
    Connect(#[source] reqwest::Error),
    #[error("the connection failed")]
    Io(#[source] reqwest::Error),
    #[error("no response within {0:?}")]
    Timeout(Duration),
    #[error("credentials rejected ({0})")]
    Auth(&'static str),
    #[error("HTTP {status} from the WinRM service{hint}")]
    Status { status: u16, hint: &'static str },
    #[error(transparent)]
    Ntlm(#[from] NtlmError),
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("{0}")]
    Fault(Fault),
    #[error("the response answers another request (RelatesTo mismatch)")]
    RelatesTo,
    #[error("invalid WinRM settings: {0}")]
    Config(String),
}

impl HttpError {
    /// Failures where the request most likely never reached the shell: worth another try on
    /// a fresh connection.
    fn retryable(&self) -> bool {
        match self {
            HttpError::Connect(_) | HttpError::Io(_) => true,
            HttpError::Status { status, .. } => matches!(status, 500 | 502 | 503 | 504),
            _ => false,
        }
    }
}

/// The NTLM state of the (single) connection.
enum NtlmState {
    None,
    /// Authenticated; `Some` when bodies are sealed (HTTP).
    Ready(Option<Box<NtlmSession>>),
}

pub struct HttpSession {
    client: reqwest::Client,
    url: String,
    user: String,
    password: Secret,
    auth: WinRmAuth,
    https: bool,
    ntlm: NtlmState,
    /// A request was in flight when its future was dropped.
    dirty: bool,
    retries: u32,
    request_timeout: Duration,
}

impl HttpSession {
    pub fn new(target: &HostTarget) -> Result<Self, HttpError> {
        let o = &target.winrm;
        let https = o.scheme == WinRmScheme::Https;
        let port = target.port.unwrap_or(if https { 5986 } else { 5985 });
        let host = if target.address.contains(':') && !target.address.starts_with('[') {
            format!("[{}]", target.address)
        } else {
            target.address.clone()
        };
        let scheme = if https { "https" } else { "http" };
        let url = format!("{scheme}://{host}:{port}{}", o.path);
        if o.auth == WinRmAuth::Basic && !https && !o.allow_basic_over_http {
            return Err(HttpError::Config(
                "Basic auth over plain HTTP would send the password and every command in \
                 clear text; use HTTPS, NTLM (sealed), or set allow_basic_over_http"
                    .into(),
            ));
        }
        let mut b = reqwest::Client::builder()
            .connect_timeout(target.connect_timeout)
            .pool_max_idle_per_host(1)
            .tcp_nodelay(true)
            .http1_only()
            .redirect(reqwest::redirect::Policy::none())
            .tls_info(true);
        if https {
            if !o.cert_validation {
                b = b.tls_danger_accept_invalid_certs(true);
            } else if let Some(ca) = &o.ca_file {
                let pem = std::fs::read(ca).map_err(|e| {
                    HttpError::Config(format!("cannot read CA file `{}`: {e}", ca.display()))
                })?;
                let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                    HttpError::Config(format!("CA file `{}` is not PEM: {e}", ca.display()))
                })?;
                if certs.is_empty() {
                    return Err(HttpError::Config(format!(
                        "CA file `{}` holds no certificate",
                        ca.display()
                    )));
                }
                b = b.tls_certs_only(certs);
            }
        }
        let client = b
            .build()
            .map_err(|e| HttpError::Config(format!("TLS setup failed: {e}")))?;
        Ok(HttpSession {
            client,
            url,
            user: target.user.clone().unwrap_or_default(),
            password: target.password.clone().unwrap_or_default(),
            auth: o.auth,
            https,
            ntlm: NtlmState::None,
            dirty: false,
            retries: o.http_retries,
            request_timeout: o.operation_timeout + Duration::from_secs(10),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Send one request and return its parsed response; a SOAP fault is `HttpError::Fault`.
    pub async fn call(&mut self, req: &Request) -> Result<Response, HttpError> {
        let mut attempt = 0;
        loop {
            match self.call_once(req).await {
                Err(e) if e.retryable() && attempt < self.retries => {
                    attempt += 1;
                    self.ntlm = NtlmState::None;
                    tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                }
                other => return other,
            }
        }
    }

    async fn call_once(&mut self, req: &Request) -> Result<Response, HttpError> {
        if self.dirty {
            self.ntlm = NtlmState::None;
        }
        self.dirty = true;
        let result = self.exchange(req.xml.as_bytes()).await;
        self.dirty = false;
        let (status, ctype, body) = result?;
        let body = match &mut self.ntlm {
            NtlmState::Ready(Some(session)) if ctype.starts_with("multipart/encrypted") => {
                seal::unseal(session, &body)?
            }
            _ => body,
        };
        interpret(status, &body, &req.message_id)
    }

    /// One request/response, authenticating as needed. Returns status, content type, body.
    async fn exchange(&mut self, soap: &[u8]) -> Result<(u16, String, Vec<u8>), HttpError> {
        match self.auth {
            WinRmAuth::Basic => {
                let token = base64::engine::general_purpose::STANDARD.encode(format!(
                    "{}:{}",
                    self.user,
                    self.password.expose()
                ));
                let resp = self.post(soap.to_vec(), SOAP_TYPE, Some(format!("Basic {token}")));
                let (status, ctype, body, _) = read(resp.await?).await?;
                if status == 401 {
                    return Err(HttpError::Auth("HTTP 401 to Basic credentials"));
                }
                Ok((status, ctype, body))
            }
            WinRmAuth::Ntlm => {
                let fresh = matches!(self.ntlm, NtlmState::None);
                if fresh && let Some(done) = self.handshake(soap).await? {
                    return Ok(done);
                }
                let r = self.send_authenticated(soap).await?;
                if r.0 != 401 {
                    return Ok(r);
                }
                if fresh {
                    return Err(HttpError::Auth("HTTP 401 right after NTLM authentication"));
                }
                // The server forgot this connection (replaced or timed out): once more.
                self.ntlm = NtlmState::None;
                if let Some(done) = self.handshake(soap).await? {
                    return Ok(done);
                }
                let r = self.send_authenticated(soap).await?;
                if r.0 == 401 {
                    return Err(HttpError::Auth("HTTP 401 right after NTLM authentication"));
                }
                Ok(r)
            }
        }
    }

    async fn send_authenticated(
        &mut self,
        soap: &[u8],
    ) -> Result<(u16, String, Vec<u8>), HttpError> {
        let (body, ctype) = match &mut self.ntlm {
            NtlmState::Ready(Some(session)) => (seal::seal(session, soap), seal::CONTENT_TYPE),
            _ => (soap.to_vec(), SOAP_TYPE),
        };
        let (status, ctype, body, _) = read(self.post(body, ctype, None).await?).await?;
        Ok((status, ctype, body))
    }

    /// NTLM handshake on the current connection. Over HTTPS the AUTHENTICATE leg carries
    /// `soap` and its response is returned; over HTTP it carries nothing and `None` is
    /// returned, the caller then sends `soap` sealed.
    async fn handshake(
        &mut self,
        soap: &[u8],
    ) -> Result<Option<(u16, String, Vec<u8>)>, HttpError> {
        let negotiate = ntlm::negotiate();
        let b64 = base64::engine::general_purpose::STANDARD;
        let auth1 = format!("Negotiate {}", b64.encode(&negotiate));
        let resp = self.post(Vec::new(), SOAP_TYPE, Some(auth1)).await?;
        let cert = resp
            .extensions()
            .get::<reqwest::tls::TlsInfo>()
            .and_then(|t| t.peer_certificate().map(<[u8]>::to_vec));
        let (status, _, _, challenge) = read(resp).await?;
        if status != 401 {
            return Err(HttpError::Status {
                status,
                hint: " to the NTLM NEGOTIATE message (is NTLM/Negotiate enabled?)",
            });
        }
        let challenge_msg = challenge
            .and_then(|h| b64.decode(h).ok())
            .ok_or(HttpError::Auth("no NTLM challenge in the 401 response"))?;
        let parsed = ntlm::parse_challenge(&challenge_msg)?;
        let cbt = cert.as_deref().map(|der| {
            let mut data = b"tls-server-end-point:".to_vec();
            data.extend_from_slice(&certificate_hash(der));
            ntlm::channel_binding_hash(&data)
        });
        let id = Identity::parse(&self.user, self.password.expose());
        let auth = ntlm::authenticate(
            &id,
            &negotiate,
            &challenge_msg,
            &parsed,
            cbt,
            &Nonces::random(),
        )?;
        let auth3 = format!("Negotiate {}", b64.encode(&auth.message));
        let body = if self.https {
            soap.to_vec()
        } else {
            Vec::new()
        };
        let (status, ctype, body, _) = read(self.post(body, SOAP_TYPE, Some(auth3)).await?).await?;
        if status == 401 {
            return Err(HttpError::Auth("HTTP 401 to the NTLM AUTHENTICATE message"));
        }
        if self.https {
            self.ntlm = NtlmState::Ready(None);
            return Ok(Some((status, ctype, body)));
        }
        if !(200..300).contains(&status) {
            return Err(HttpError::Status {
                status,
                hint: " to the NTLM AUTHENTICATE message",
            });
        }
        self.ntlm = NtlmState::Ready(Some(Box::new(NtlmSession::from_auth(
            &auth.exported_session_key,
        ))));
        Ok(None)
    }

    async fn post(
        &self,
        body: Vec<u8>,
        ctype: &str,
        authorization: Option<String>,
    ) -> Result<reqwest::Response, HttpError> {
        let mut rb = self
            .client
            .post(&self.url)
            .timeout(self.request_timeout)
            .header(CONTENT_TYPE, ctype)
            .body(body);
        if let Some(a) = authorization {
            rb = rb.header(AUTHORIZATION, a);
        }
        rb.send().await.map_err(|e| self.classify(e))
    }

    fn classify(&self, e: reqwest::Error) -> HttpError {
        if e.is_timeout() {
            HttpError::Timeout(self.request_timeout)
        } else if e.is_connect() {
            HttpError::Connect(e.without_url())
        } else {
            HttpError::Io(e.without_url())
        }
    }
}

/// Status, content type, body and the NTLM token of a `WWW-Authenticate: Negotiate` header.
async fn read(
    resp: reqwest::Response,
) -> Result<(u16, String, Vec<u8>, Option<String>), HttpError> {
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let token = resp
        .headers()
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            v.strip_prefix("Negotiate ")
                .or_else(|| v.strip_prefix("NTLM "))
                .map(|t| t.trim().to_string())
        });
    let body = resp.bytes().await.map_err(|e| {
        if e.is_timeout() {
            HttpError::Timeout(Duration::ZERO)
        } else {
            HttpError::Io(e.without_url())
        }
    })?;
    Ok((status, ctype, body.to_vec(), token))
}

fn interpret(status: u16, body: &[u8], message_id: &str) -> Result<Response, HttpError> {
    if status == 401 {
        return Err(HttpError::Auth("HTTP 401"));
    }
    if body.is_empty() || !(status == 200 || status == 500 || status == 400) {
        return Err(HttpError::Status {
            status,
            hint: match status {
                500 if body.is_empty() => " with an empty body (a plaintext body refused?)",
                _ => "",
            },
        });
    }
    let r = soap::parse(body)?;
    if let Some(f) = r.fault {
        return Err(HttpError::Fault(f));
    }
    if status != 200 {
        return Err(HttpError::Status { status, hint: "" });
    }
    if r.relates_to.as_deref().is_some_and(|id| id != message_id) {
        return Err(HttpError::RelatesTo);
    }
    Ok(r)
}

/// RFC 5929 `tls-server-end-point` hash: SHA-256, or the certificate's own hash when it is
/// signed with SHA-384 or SHA-512 (matched by signature-algorithm OID bytes).
fn certificate_hash(der: &[u8]) -> Vec<u8> {
    const SHA384_OIDS: [&[u8]; 2] = [
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c],
        &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03],
    ];
    const SHA512_OIDS: [&[u8]; 2] = [
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d],
        &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04],
    ];
    let has = |oids: [&[u8]; 2]| {
        oids.iter()
            .any(|oid| der.windows(oid.len()).any(|w| w == *oid))
    };
    if has(SHA512_OIDS) {
        sha2::Sha512::digest(der).to_vec()
    } else if has(SHA384_OIDS) {
        sha2::Sha384::digest(der).to_vec()
    } else {
        sha2::Sha256::digest(der).to_vec()
    }
}
