//! The connection's timers: the handshake and SETTINGS-ack deadline, keepalive and drain
//! pings, the deadlines of reply streams, and the grace of streams answered early.
//!
//! Invariant: every timer is re-armed or pushed a year away once it fires, so a poll never sees
//! the same expiry twice.

use std::future::Future;
use std::task::Context;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::drain::Drain;
use super::ping::KEEPALIVE_PING;
use super::streams::End;
use super::{Connection, Ended};
use crate::http2::calls::{Calls, Fields};
use crate::http2::frame::{self, FrameError, Reason};

impl<IO, C> Connection<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Calls,
{
    /// Keepalive and drain pings, the shutdown PING's wait, the settings ack, and the deadlines
    /// of reply streams; `Some` when the connection must end.
    pub(super) fn poll_timers(&mut self, cx: &mut Context<'_>) -> Option<Ended> {
        if self.ack_timer.as_mut().poll(cx).is_ready() {
            if let Some((reason, why)) = self.failed {
                return Some(Ended::Error(format!(
                    "{why} ({reason:?}); its GOAWAY was not taken"
                )));
            }
            match self.drain {
                Drain::Open if !self.settings_seen => {
                    return Some(Ended::Error(
                        "no HTTP/2 preface and SETTINGS in time".into(),
                    ));
                }
                Drain::Open if !self.settings_acked => {
                    self.fail(FrameError::Connection(
                        Reason::SETTINGS_TIMEOUT,
                        "our SETTINGS were not acknowledged",
                    ));
                }
                Drain::Announced => {
                    tracing::debug!("shutdown PING unanswered: sending the final GOAWAY");
                    self.final_goaway();
                    return None;
                }
                Drain::Final if self.streams.is_empty() => {
                    // A peer that does not read can keep the socket's buffer full.
                    return Some(Ended::Error("the final GOAWAY could not be written".into()));
                }
                _ => {}
            }
            self.ack_timer
                .as_mut()
                .reset(Instant::now() + Duration::from_secs(86_400 * 365));
        }
        let probe = match (self.config.keepalive, self.drain) {
            (Some(keepalive), _) => Some((keepalive.interval, keepalive.timeout)),
            (None, Drain::Open) => None,
            (None, _) => Some((
                self.config.drain.probe.interval,
                self.config.drain.probe.timeout,
            )),
        };
        if let Some((_, timeout)) = probe
            && self.ping_timer.as_mut().poll(cx).is_ready()
        {
            if self.ping_outstanding {
                return Some(Ended::Error("a ping went unanswered".into()));
            }
            frame::put_ping(&mut self.out.buf, false, KEEPALIVE_PING);
            self.ping_outstanding = true;
            self.ping_timer.as_mut().reset(Instant::now() + timeout);
            // Registers the timer again.
            let _ = self.ping_timer.as_mut().poll(cx);
        }
        if self.deadline_armed && self.deadline_timer.as_mut().poll(cx).is_ready() {
            self.deadline_armed = false;
            let now = Instant::now();
            let mut next: Option<Instant> = None;
            let mut stopping = std::mem::take(&mut self.waiting);
            stopping.clear();
            for (&id, stream) in self.streams.iter_mut() {
                if let Some(stop_at) = stream.stop_at {
                    if stop_at <= now {
                        stopping.push(id);
                    } else {
                        next = Some(next.map_or(stop_at, |next| next.min(stop_at)));
                    }
                }
                let Some(call) = stream.sending.as_ref().and_then(|sending| sending.call) else {
                    continue;
                };
                let Some(expires) = C::expires(&call) else {
                    continue;
                };
                if expires <= now {
                    // The body is dropped; what it sent stays queued, then the ending.
                    stream.sending = None;
                    let ending = C::deadline_ending(&call);
                    if let Some(data) = ending.data {
                        stream.pending.push_back(data);
                    }
                    stream.pending_end = Some(match ending.trailers {
                        Some(trailers) => End::Trailers(Fields::Map(trailers)),
                        None => End::Data,
                    });
                } else {
                    next = Some(next.map_or(expires, |next| next.min(expires)));
                }
            }
            for &id in &stopping {
                self.stop_sending(id);
            }
            self.waiting = stopping;
            if let Some(next) = next {
                self.arm_deadline(next);
            }
            self.flush_all_pending();
        }
        None
    }

    pub(super) fn arm_deadline(&mut self, at: Instant) {
        if !self.deadline_armed || at < self.deadline_timer.deadline() {
            self.deadline_timer.as_mut().reset(at);
            self.deadline_armed = true;
        }
    }
}
