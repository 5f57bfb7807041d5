//! PINGs: the payloads of our own two kinds, and the policy a client's pings are held to
//! (gRFC A8: strikes for pings too soon, GOAWAY `too_many_pings` past them).
//!
//! Invariant: HEADERS or DATA we send clear the strikes, as in grpc-go.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::Connection;
use crate::http2::calls::Calls;
use crate::http2::frame::{FrameError, Reason};

/// The payloads of our two kinds of PING.
pub(super) const SHUTDOWN_PING: [u8; 8] = *b"fgshutdn";

pub(super) const KEEPALIVE_PING: [u8; 8] = *b"fgkeepal";

/// The client's pings against the server's policy (`transport::config::PingPolicy`).
pub(super) struct PingStrikes {
    pub(super) last: Option<Instant>,
    pub(super) strikes: u8,
    /// We sent HEADERS or DATA since the last ping: the next one is fine.
    pub(super) reset: bool,
}

/// Strikes allowed before `too_many_pings` (gRFC A8; grpc-go's `maxPingStrikes`).
pub(super) const MAX_PING_STRIKES: u8 = 2;

/// Without calls, and without `permit_without_calls`, a client may still ping this often
/// (grpc-go's `defaultPingTimeout`).
pub(super) const IDLE_PING_INTERVAL: Duration = Duration::from_secs(2 * 60 * 60);

impl<IO, C> Connection<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Calls,
{
    /// Counts a client's ping against the policy; too many too soon end the connection.
    pub(super) fn police_ping(&mut self) -> Result<(), FrameError> {
        let policy = self.config.ping_policy;
        let now = Instant::now();
        let last = self.pings.last.replace(now);
        if std::mem::take(&mut self.pings.reset) {
            self.pings.strikes = 0;
            return Ok(());
        }
        let allowed = if self.streams.is_empty() && !policy.permit_without_calls {
            IDLE_PING_INTERVAL
        } else {
            policy.min_interval
        };
        if last.is_some_and(|last| now.duration_since(last) < allowed) {
            self.pings.strikes += 1;
        }
        if self.pings.strikes > MAX_PING_STRIKES {
            return Err(FrameError::Connection(
                Reason::ENHANCE_YOUR_CALM,
                "too_many_pings",
            ));
        }
        Ok(())
    }
}
