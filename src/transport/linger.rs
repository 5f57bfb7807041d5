//! [`LingeringClose`]: a connection's socket, closed as a server must close a
//! connection whose peer may still be writing to it.
//!
//! Closing a socket with unread data makes the kernel answer RST, and a kernel that receives
//! RST drops what its application has not read yet: the end of our last replies. A proxy that
//! goes on opening streams after our GOAWAY (HAProxy does) then loses a reply's trailers; the
//! live test (`deploy/live/`) saw it on both engines. A client still writing a request body
//! that was answered before it was read (a message over the limit) sees its writes fail
//! before it reads the answer. So shutting the socket down half-closes it (FIN, after TLS's
//! close_notify), then reads and drops whatever the peer still sends until it closes too, for
//! at most [`LINGER`] and [`LINGER_BYTES`]. HTTP/2 connections close through it on a graceful
//! end, and HTTP/1.1 connections when hyper ends one (after an answer that said
//! `connection: close`, say).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// How long a closed connection goes on reading (and dropping) what its peer still sends: long
/// enough for a peer that saw our GOAWAY to stop and close, or for a client to finish sending
/// a body answered early, short enough that one that never does holds nothing for long.
pub(crate) const LINGER: Duration = Duration::from_secs(1);

/// The most a closed connection reads (and drops) of what its peer still sends: what a client
/// can have on its way when our answer reaches it (Linux lets a socket's send buffer grow to
/// 4 MiB), and as much as HTTP/1.1 reads of a refused body before it answers. A peer that
/// floods is then closed on after a few milliseconds of reading, not after a second's, which
/// on loopback is hundreds of MiB.
pub(crate) const LINGER_BYTES: usize = 4 * 1024 * 1024;

/// Reads at most this much at a time while lingering, on the stack; nothing is kept.
const SCRATCH: usize = 4096;

/// Reads per poll while lingering, so a peer that floods cannot hold the thread.
const READS_PER_POLL: usize = 16;

/// A connection's socket whose shutdown lingers (see the module's docs).
#[derive(Debug)]
pub(crate) struct LingeringClose<IO> {
    io: IO,
    /// Set once the socket is half-closed: when lingering ends.
    linger: Option<Pin<Box<Sleep>>>,
    /// Bytes read and dropped since the socket was half-closed.
    dropped: usize,
}

impl<IO> LingeringClose<IO> {
    pub(crate) fn new(io: IO) -> Self {
        LingeringClose {
            io,
            linger: None,
            dropped: 0,
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for LingeringClose<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for LingeringClose<IO> {
    write_through_to_io!();

    /// Half-closes, then reads and drops until the peer closes, [`LINGER`] passes or
    /// [`LINGER_BYTES`] have been read.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.linger.is_none() {
            ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
            this.linger = Some(Box::pin(tokio::time::sleep(LINGER)));
        }
        let mut scratch = [0u8; SCRATCH];
        let mut drained = false;
        for _ in 0..READS_PER_POLL {
            let room = SCRATCH.min(LINGER_BYTES - this.dropped);
            if room == 0 {
                // As much as a close reads: the socket closes under a peer still sending.
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut scratch[..room]);
            match Pin::new(&mut this.io).poll_read(cx, &mut buf) {
                // The peer closed (or the connection broke): nothing more can be lost.
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => this.dropped += buf.filled().len(),
                Poll::Pending => {
                    drained = true;
                    break;
                }
            }
        }
        if !drained {
            // More to read: come back, after the thread's other work.
            cx.waker().wake_by_ref();
        }
        let linger = this.linger.as_mut().expect("set above");
        linger.as_mut().poll(cx).map(Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn shutdown_reads_what_the_peer_still_sends_until_it_closes() {
        // A pipe of 64 bytes: the peer's 3,200 can only all go in if the closing side reads.
        let (peer, ours) = tokio::io::duplex(64);
        let mut ours = LingeringClose::new(ours);
        let (mut peer_read, mut peer_write) = tokio::io::split(peer);
        let started = tokio::time::Instant::now();
        let peer = tokio::spawn(async move {
            for _ in 0..100 {
                peer_write.write_all(&[1; 32]).await.unwrap();
            }
            peer_write.shutdown().await.unwrap();
            let mut seen = Vec::new();
            peer_read.read_to_end(&mut seen).await.unwrap();
            seen
        });
        ours.write_all(b"the end of a reply").await.unwrap();
        ours.shutdown().await.unwrap();
        assert!(started.elapsed() < LINGER, "ended when the peer closed");
        assert_eq!(peer.await.unwrap(), b"the end of a reply");
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_never_stops_sending_is_read_up_to_the_byte_bound_and_no_more() {
        let capacity = 64 * 1024;
        let (mut peer, ours) = tokio::io::duplex(capacity);
        let mut ours = LingeringClose::new(ours);
        // Writes until the closing side is dropped (or far past the bound, then keeps the pipe
        // open); how much it wrote.
        let peer = tokio::spawn(async move {
            let mut written = 0;
            while written < 4 * LINGER_BYTES && peer.write_all(&[1; 1000]).await.is_ok() {
                written += 1000;
            }
            (written, peer)
        });
        let started = tokio::time::Instant::now();
        ours.shutdown().await.unwrap();
        assert!(started.elapsed() < LINGER, "ended by the byte bound");
        drop(ours);
        // What the closing side read, plus at most the pipe's capacity and one write.
        let (written, _peer) = peer.await.unwrap();
        assert!(
            (LINGER_BYTES..=LINGER_BYTES + capacity + 1000).contains(&written),
            "{written}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_never_closes_is_given_the_linger_and_no_more() {
        let (_peer, ours) = tokio::io::duplex(64);
        let mut ours = LingeringClose::new(ours);
        let started = tokio::time::Instant::now();
        ours.shutdown().await.unwrap();
        assert_eq!(started.elapsed(), LINGER);
    }
}
