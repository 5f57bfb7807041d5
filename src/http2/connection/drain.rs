//! The graceful drain: GOAWAY with 2^31-1 and a PING, then the final GOAWAY naming the last
//! stream, then the close once no stream is left.
//!
//! Invariant: the drain only moves forward (`Open`, `Announced`, `Final`); after the final
//! GOAWAY no new stream starts, and no stream half-closed (local) is kept waiting for a client
//! that may never end it.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::Connection;
use super::ping::SHUTDOWN_PING;
use crate::http2::calls::Calls;
use crate::http2::frame::{self, Reason};

/// The drain, once it has begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Drain {
    Open,
    /// The first GOAWAY (2^31-1) and the shutdown PING went out at `since`.
    Announced,
    /// The final GOAWAY went out: no new stream; close once the last ends.
    Final,
}

impl<IO, C> Connection<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Calls,
{
    /// Starts a graceful shutdown: GOAWAY with 2^31-1 and a PING; the final GOAWAY follows its
    /// ack (or the drain's `shutdown_ping_wait`), and the connection closes once its streams end.
    pub(crate) fn graceful_shutdown(&mut self) {
        if self.drain != Drain::Open {
            return;
        }
        frame::put_goaway(
            &mut self.out.buf,
            frame::MAX_STREAM_ID,
            Reason::NO_ERROR,
            b"",
        );
        frame::put_ping(&mut self.out.buf, false, SHUTDOWN_PING);
        self.drain = Drain::Announced;
        let now = Instant::now();
        self.ack_timer
            .as_mut()
            .reset(now + self.config.drain.shutdown_ping_wait);
        if self.config.keepalive.is_none() {
            // The drain's own liveness checks start once the shutdown PING's wait is over.
            self.ping_outstanding = false;
            self.ping_timer
                .as_mut()
                .reset(now + self.config.drain.shutdown_ping_wait);
        }
    }

    /// Sends the final GOAWAY now; the connection closes once no stream is left.
    pub(super) fn final_goaway(&mut self) {
        if self.drain == Drain::Final {
            return;
        }
        frame::put_goaway(&mut self.out.buf, self.last_stream, Reason::NO_ERROR, b"");
        self.drain = Drain::Final;
        self.stop_answered_streams();
        self.ack_timer
            .as_mut()
            .reset(Instant::now() + self.config.drain.final_goaway_wait);
    }
}
