//! [`LingeringClose`]: a connection's socket, closed as a server must close a
//! connection whose peer may still be writing to it.
//!
//! Closing a socket with unread data makes the kernel answer RST, and a kernel that receives
//! RST drops what its application has not read yet: the end of our last replies. A proxy that
//! goes on opening streams after our GOAWAY (HAProxy does) then loses a reply's trailers; the
//! live test (`deploy/live/`) saw it on both engines. So shutting the socket down half-closes
//! it (FIN, after TLS's close_notify), then reads and drops whatever the peer still sends until
//! it closes too, for at most [`LINGER`]. HTTP/2 connections close through it on a graceful
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
/// enough for a peer that saw our GOAWAY to stop and close, short enough that one that never
/// does holds nothing for long.
pub(crate) const LINGER: Duration = Duration::from_secs(1);

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
}

impl<IO> LingeringClose<IO> {
    pub(crate) fn new(io: IO) -> Self {
        LingeringClose { io, linger: None }
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

    /// Half-closes, then reads and drops until the peer closes or [`LINGER`] passes.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.linger.is_none() {
            ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
            this.linger = Some(Box::pin(tokio::time::sleep(LINGER)));
        }
        let mut scratch = [0u8; SCRATCH];
        let mut drained = false;
        for _ in 0..READS_PER_POLL {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.io).poll_read(cx, &mut buf) {
                // The peer closed (or the connection broke): nothing more can be lost.
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {}
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
    async fn a_peer_that_never_closes_is_given_the_linger_and_no_more() {
        let (_peer, ours) = tokio::io::duplex(64);
        let mut ours = LingeringClose::new(ours);
        let started = tokio::time::Instant::now();
        ours.shutdown().await.unwrap();
        assert_eq!(started.elapsed(), LINGER);
    }
}
