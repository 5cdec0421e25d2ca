//! The byte stream an inner SSH connection runs over when it is tunnelled through a jump
//! host's direct-tcpip channel.
//!
//! russh writes each batch of packets and then flushes. Passing every small write straight
//! to the channel turns it into its own channel-data message, which the jump host's sshd
//! writes to its forwarded TCP socket separately; a second small segment then waits for the
//! first one's (delayed) ACK. Buffering until the flush sends each batch as one message.

use tokio::io::{AsyncRead, AsyncWrite, BufWriter};

/// Large enough for a batch of small packets; bigger writes pass straight through.
const BATCH: usize = 64 * 1024;

pub(super) fn coalesce<S: AsyncRead + AsyncWrite>(inner: S) -> BufWriter<S> {
    BufWriter::with_capacity(BATCH, inner)
}
