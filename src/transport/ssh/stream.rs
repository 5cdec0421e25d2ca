//! The byte stream an inner SSH connection runs over when it is tunnelled through a jump
//! host's direct-tcpip channel.
//!
//! russh writes each batch of packets and then flushes; buffering until that flush sends
//! each batch as one channel-data message instead of one per write. On its own this did not
//! remove the 45 ms per exec channel seen through a jump host: that stall is on the ACK side
//! (see `QuickAck`), measured by `ssh::speed::ms_per_command`.

use tokio::io::{AsyncRead, AsyncWrite, BufWriter};

/// Large enough for a batch of small packets; bigger writes pass straight through.
const BATCH: usize = 64 * 1024;

pub(super) fn coalesce<S: AsyncRead + AsyncWrite>(inner: S) -> BufWriter<S> {
    BufWriter::with_capacity(BATCH, inner)
}

/// The first hop's TCP stream, re-arming `TCP_QUICKACK` after every read.
///
/// Jump hosts' sshd forwards a guest's packets to us on a socket with Nagle on (sshd sets
/// `TCP_NODELAY` only for interactive sessions): its second small write waits for our ACK of
/// the first, and Linux delays that ACK up to 40 ms when we have nothing to send. Acking at
/// once removes that stall; it costs a few extra empty ACK segments.
pub(super) struct QuickAck {
    inner: tokio::net::TcpStream,
    enabled: bool,
}

impl QuickAck {
    pub fn new(inner: tokio::net::TcpStream, enabled: bool) -> Self {
        Self { inner, enabled }
    }
}

impl AsyncRead for QuickAck {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if self.enabled && buf.filled().len() > before {
            // Linux-only and best effort: on failure the connection works, only slower.
            let _ = socket2::SockRef::from(&self.inner).set_tcp_quickack(true);
        }
        r
    }
}

impl AsyncWrite for QuickAck {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
