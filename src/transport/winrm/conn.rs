//! The one TCP (or TLS) connection a WinRM session talks over.
//!
//! NTLM over HTTP authenticates the connection, not the request (HTTP.sys keeps the security
//! context per TCP connection), so the handshake legs and every later request must share one
//! connection. A pooling client cannot promise that: hyper-util returns a finished HTTP/1
//! connection to its pool from a separately spawned task and races the pool checkout against
//! a new connect, so on a loaded machine the next request regularly went out on a second
//! connection, which the server answers with 401. kinit therefore owns exactly one
//! connection per session and opens another only after the first is gone; the caller sees
//! that through [`Conn::is_open`] and re-authenticates.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, WWW_AUTHENTICATE};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

/// One answer: status, content type, body and the token of a `WWW-Authenticate:
/// Negotiate|NTLM` header.
pub struct Reply {
    pub status: u16,
    pub ctype: String,
    pub body: Vec<u8>,
    pub token: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("cannot open a connection")]
    Connect(#[source] std::io::Error),
    #[error("no connection within {0:?}")]
    ConnectTimeout(Duration),
    #[error("the connection failed")]
    Io(#[source] std::io::Error),
    #[error("no response within {0:?}")]
    Timeout(Duration),
}

pub struct Conn {
    host: String,
    port: u16,
    path: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    connect_timeout: Duration,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// DER of the server certificate of the current TLS connection (channel binding).
    peer_cert: Option<Vec<u8>>,
}

impl Conn {
    pub fn new(
        host: String,
        port: u16,
        path: String,
        tls: Option<Arc<rustls::ClientConfig>>,
        connect_timeout: Duration,
    ) -> Self {
        Conn {
            host,
            port,
            path,
            tls,
            connect_timeout,
            sender: None,
            peer_cert: None,
        }
    }

    /// Whether the current connection is still usable (an authenticated context lives on).
    pub fn is_open(&self) -> bool {
        self.sender.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Drop the connection (its state is unknown, or a fresh one is wanted).
    pub fn close(&mut self) {
        self.sender = None;
        self.peer_cert = None;
    }

    pub fn peer_cert(&self) -> Option<&[u8]> {
        self.peer_cert.as_deref()
    }

    /// POST `body` on the current connection, opening one first if there is none. Any
    /// failure drops the connection: its HTTP framing is no longer trustworthy.
    pub async fn post(
        &mut self,
        body: Vec<u8>,
        ctype: &str,
        authorization: Option<String>,
        timeout: Duration,
    ) -> Result<Reply, ConnError> {
        if !self.is_open() {
            self.connect().await?;
        }
        let result = tokio::time::timeout(timeout, self.round_trip(body, ctype, authorization))
            .await
            .unwrap_or(Err(ConnError::Timeout(timeout)));
        if result.is_err() {
            self.close();
        }
        result
    }

    async fn round_trip(
        &mut self,
        body: Vec<u8>,
        ctype: &str,
        authorization: Option<String>,
    ) -> Result<Reply, ConnError> {
        let io = |e: hyper::Error| ConnError::Io(std::io::Error::other(e));
        let sender = self
            .sender
            .as_mut()
            .ok_or_else(|| ConnError::Io(std::io::ErrorKind::NotConnected.into()))?;
        sender.ready().await.map_err(io)?;
        let host = if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        };
        let mut rb = hyper::Request::post(self.path.as_str())
            .header(HOST, host)
            .header(CONTENT_TYPE, ctype);
        if let Some(a) = authorization {
            rb = rb.header(AUTHORIZATION, a);
        }
        let req = rb
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ConnError::Io(std::io::Error::other(e)))?;
        let resp = sender.send_request(req).await.map_err(io)?;
        let status = resp.status().as_u16();
        let headers = resp.headers();
        let ctype = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let token = headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|v| {
                v.strip_prefix("Negotiate ")
                    .or_else(|| v.strip_prefix("NTLM "))
                    .map(|t| t.trim().to_string())
            });
        let body = resp.into_body().collect().await.map_err(io)?.to_bytes();
        Ok(Reply {
            status,
            ctype,
            body: body.to_vec(),
            token,
        })
    }

    async fn connect(&mut self) -> Result<(), ConnError> {
        self.close();
        let addr = (self.host.as_str(), self.port);
        let tcp = tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| ConnError::ConnectTimeout(self.connect_timeout))?
            .map_err(ConnError::Connect)?;
        tcp.set_nodelay(true).map_err(ConnError::Connect)?;
        let sender = match &self.tls {
            None => handshake(tcp).await?,
            Some(config) => {
                let name = ServerName::try_from(self.host.clone()).map_err(|e| {
                    ConnError::Connect(std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
                })?;
                let tls = tokio_rustls::TlsConnector::from(config.clone()).connect(name, tcp);
                let stream = tokio::time::timeout(self.connect_timeout, tls)
                    .await
                    .map_err(|_| ConnError::ConnectTimeout(self.connect_timeout))?
                    .map_err(ConnError::Connect)?;
                self.peer_cert = stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .map(|c| c.as_ref().to_vec());
                handshake(stream).await?
            }
        };
        self.sender = Some(sender);
        Ok(())
    }
}

async fn handshake<S>(stream: S) -> Result<SendRequest<Full<Bytes>>, ConnError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| ConnError::Connect(std::io::Error::other(e)))?;
    // The connection task ends when the sender is dropped or the peer closes.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}
