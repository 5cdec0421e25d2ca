//! One authenticated HTTP(S) session to a WinRM endpoint: TLS policy, Basic or NTLM auth,
//! MS-WSMV sealing over HTTP, retries, and turning responses into `soap::Response`s.
//!
//! NTLM authenticates the TCP connection (as HTTP.sys does), so requests are strictly
//! sequential (the per-host actor guarantees it) over the session's one connection
//! (`conn.rs`); when that connection is gone, the next request re-authenticates first. The handshake
//! never carries a SOAP body over HTTP: NEGOTIATE and AUTHENTICATE go with empty bodies, then
//! every body is sealed. A 401 on an established session means the connection was replaced;
//! kinit re-authenticates once and resends. A request whose future was dropped midway
//! (cancellation) leaves the connection state unknown, so it is closed and the next request
//! re-authenticates on a new one.
//!
//! One file: auth, sealing and retry decide together whether a request may be sent again.

use std::time::Duration;

use base64::Engine as _;
use sha2::Digest as _;
use winrm_rs::NtlmSession;

use super::conn::{Conn, ConnError, Reply};
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
    Connect(#[source] std::io::Error),
    #[error("the connection failed")]
    Io(#[source] std::io::Error),
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

    /// The server answered (with an HTTP error status): it reported the request as not
    /// carried out rather than losing it.
    fn answered(&self) -> bool {
        matches!(self, HttpError::Status { .. })
    }
}

/// The NTLM state of the (single) connection.
enum NtlmState {
    None,
    /// Authenticated; `Some` when bodies are sealed (HTTP).
    Ready(Option<Box<NtlmSession>>),
}

impl From<ConnError> for HttpError {
    fn from(e: ConnError) -> Self {
        match e {
            ConnError::Connect(e) => HttpError::Connect(e),
            ConnError::ConnectTimeout(t) => HttpError::Connect(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no connection within {t:?}"),
            )),
            ConnError::Io(e) => HttpError::Io(e),
            ConnError::Timeout(t) => HttpError::Timeout(t),
        }
    }
}

pub struct HttpSession {
    conn: Conn,
    url: String,
    user: String,
    password: Secret,
    auth: WinRmAuth,
    https: bool,
    ntlm: NtlmState,
    /// A request was in flight when its future was dropped.
    dirty: bool,
    /// Whether the current call's SOAP body has been handed to the connection (from then
    /// on a lost connection may mean the shell carried it out).
    body_sent: bool,
    retries: u32,
    backoff: Duration,
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
                 clear text; use HTTPS, NTLM (sealed), or set `kinit_winrm_allow_basic_over_http: true` on the host"
                    .into(),
            ));
        }
        let tls = if https {
            Some(
                super::tls::client_config(o.cert_validation, o.ca_file.as_deref())
                    .map_err(HttpError::Config)?,
            )
        } else {
            None
        };
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let conn = Conn::new(bare, port, o.path.clone(), tls, target.connect_timeout);
        Ok(HttpSession {
            conn,
            url,
            user: target.user.clone().unwrap_or_default(),
            password: target.password.clone().unwrap_or_default(),
            auth: o.auth,
            https,
            ntlm: NtlmState::None,
            dirty: false,
            body_sent: false,
            retries: o.http_retries,
            backoff: o.retry_backoff,
            request_timeout: o.operation_timeout + Duration::from_secs(10),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Send one request and return its parsed response; a SOAP fault is `HttpError::Fault`.
    ///
    /// A failure before the request's body went out (connecting, the NTLM handshake) is
    /// retried for every request; a lost connection after it only for requests that are
    /// safe to send twice (`Request::resend_safe`): the shell may already have run it.
    pub async fn call(&mut self, req: &Request) -> Result<Response, HttpError> {
        let mut attempt = 0;
        loop {
            self.body_sent = false;
            match self.call_once(req).await {
                Err(e)
                    if e.retryable()
                        && attempt < self.retries
                        && (req.resend_safe || !self.body_sent || e.answered()) =>
                {
                    attempt += 1;
                    self.ntlm = NtlmState::None;
                    self.conn.close();
                    // backoff, 2 x backoff, 4 x backoff, ... (capped at 2^10 x).
                    tokio::time::sleep(self.backoff * (1u32 << (attempt - 1).min(10))).await;
                }
                other => return other,
            }
        }
    }

    async fn call_once(&mut self, req: &Request) -> Result<Response, HttpError> {
        if self.dirty {
            self.ntlm = NtlmState::None;
            self.conn.close();
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
                self.body_sent = true;
                let r = self
                    .post(soap.to_vec(), SOAP_TYPE, Some(format!("Basic {token}")))
                    .await?;
                if r.status == 401 {
                    return Err(HttpError::Auth("HTTP 401 to Basic credentials"));
                }
                Ok((r.status, r.ctype, r.body))
            }
            WinRmAuth::Ntlm => {
                if !self.conn.is_open() {
                    // A new connection carries no security context.
                    self.ntlm = NtlmState::None;
                }
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
        self.body_sent = true;
        let r = self.post(body, ctype, None).await?;
        Ok((r.status, r.ctype, r.body))
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
        self.conn.close();
        let Reply {
            status,
            token: challenge,
            ..
        } = self.post(Vec::new(), SOAP_TYPE, Some(auth1)).await?;
        let cert = self.conn.peer_cert().map(<[u8]>::to_vec);
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
        if !self.conn.is_open() {
            // The server closed the connection after its challenge: the context is gone.
            return Err(HttpError::Io(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "the connection closed during the NTLM handshake",
            )));
        }
        self.body_sent = self.https;
        let Reply {
            status,
            ctype,
            body,
            ..
        } = self.post(body, SOAP_TYPE, Some(auth3)).await?;
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
        &mut self,
        body: Vec<u8>,
        ctype: &str,
        authorization: Option<String>,
    ) -> Result<Reply, HttpError> {
        Ok(self
            .conn
            .post(body, ctype, authorization, self.request_timeout)
            .await?)
    }
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
