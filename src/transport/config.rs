//! How the server treats each connection: the HTTP/2 settings it announces and the limits on a
//! connection's life (handshake, keepalive, age, shutdown grace).

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::activity::Activity;

/// Settings every connection of a server shares. Defaults are safe for a server facing
/// untrusted clients; each has a `Builder` method.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionConfig {
    pub(crate) initial_stream_window_size: u32,
    pub(crate) initial_connection_window_size: u32,
    pub(crate) max_frame_size: u32,
    pub(crate) max_concurrent_streams: u32,
    pub(crate) max_header_list_size: u32,
    /// How long a new connection may take to complete the HTTP/2 preface and settings.
    pub(crate) handshake_timeout: Duration,
    /// Ping the peer this often, and close the connection if a ping is not answered in time.
    pub(crate) keepalive: Option<Keepalive>,
    /// Send GOAWAY once a connection is this old, so clients reconnect (and balance).
    pub(crate) max_connection_age: Option<Duration>,
    /// Send GOAWAY once a connection has had no outstanding call for this long.
    pub(crate) max_connection_idle: Option<Duration>,
    /// How long calls may go on after GOAWAY (age or shutdown) before the connection is closed.
    pub(crate) drain_grace: Option<Duration>,
    /// How long one poll of a connection may serve calls inline before it sends what is
    /// answered and lets the worker's other tasks run.
    pub(crate) inline_budget: Duration,
    /// Whether HTTP/1.1 connections (gRPC-Web from browsers) are served beside HTTP/2.
    pub(crate) accept_http1: bool,
    /// How long an HTTP/1.1 connection may stay idle between requests.
    pub(crate) http1_idle_timeout: Duration,
    /// How often clients may ping (gRFC A8); enforced by fastgrpc's engine.
    pub(crate) ping_policy: PingPolicy,
}

pub(crate) use crate::http2::{Keepalive, PingPolicy};

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            // Windows of 1 MiB (hyper's defaults): a typical request body arrives in the same
            // read as its headers, so the strict path applies, without waiting for
            // WINDOW_UPDATEs.
            initial_stream_window_size: 1024 * 1024,
            initial_connection_window_size: 1024 * 1024,
            max_frame_size: 16 * 1024,
            // Bounds what one connection can hold (a task, a buffered body, a queued reply per
            // stream); clients queue calls beyond it. The spec asks for at least 100.
            max_concurrent_streams: 1024,
            // hyper's default; h2's own (16 MiB) lets one request pin that much memory.
            max_header_list_size: 16 * 1024,
            handshake_timeout: Duration::from_secs(10),
            keepalive: None,
            max_connection_age: None,
            max_connection_idle: None,
            drain_grace: None,
            // Small against a network round trip, large against a light call (a few
            // microseconds): a batch of light calls fits many times over, and a batch of heavy
            // ones lets its first answers go after about this much work.
            inline_budget: Duration::from_micros(500),
            accept_http1: true,
            // Longer than clients' pools keep an idle connection (Go's 90 s), so that they
            // close it first: one the server closes while a pooled client sends on it costs
            // that client a failed request.
            http1_idle_timeout: Duration::from_secs(120),
            // gRPC's defaults (gRFC A8).
            ping_policy: PingPolicy {
                min_interval: Duration::from_secs(300),
                permit_without_calls: false,
            },
        }
    }
}

impl ConnectionConfig {
    /// What the HTTP/2 engine is told.
    pub(crate) fn engine(&self) -> crate::http2::Config {
        crate::http2::Config {
            max_frame_size: self.max_frame_size,
            max_header_list_size: self.max_header_list_size,
            max_concurrent_streams: self.max_concurrent_streams,
            initial_stream_window_size: self.initial_stream_window_size,
            initial_connection_window_size: self.initial_connection_window_size,
            keepalive: self.keepalive,
            ping_policy: self.ping_policy,
            inline_budget: self.inline_budget,
            drain: crate::http2::DrainTimes {
                shutdown_ping_wait: SHUTDOWN_PING_WAIT,
                final_goaway_wait: FINAL_GOAWAY_WAIT,
                probe: DRAIN_PROBE,
            },
        }
    }
}

/// How a drain ends (the policy `Builder::drain_grace` documents).
///
/// How long a draining connection waits for the peer to acknowledge the PING sent with the first
/// GOAWAY (requests the peer sent before it saw the first GOAWAY have arrived by the
/// acknowledgement; grpc-go's server waits as long): then the engine sends the final GOAWAY
/// anyway, and the drain's own pings start.
pub(crate) const SHUTDOWN_PING_WAIT: Duration = Duration::from_secs(5);

/// How long the final GOAWAY may take to leave before a connection with no stream left is
/// dropped: a peer that does not read can fill the socket's buffer.
pub(crate) const FINAL_GOAWAY_WAIT: Duration = Duration::from_secs(1);

/// Without keepalive, how a draining connection finds that its peer is gone (a vanished client,
/// or one that stopped reading), so calls in flight on it do not hold a shutdown forever: a
/// PING once the shutdown PING's wait is over and then every `interval`, each to be answered
/// within `timeout`. An HTTP/2 client answers pings whatever its application is doing, within
/// milliseconds: 2 s is far beyond that, and bounds how long a vanished peer holds a shutdown.
///
/// Not at once: nginx (1.22) fails a call whose last frame it reads just after a PING when the
/// connection closes right after that call, as a draining one does; in a drain that ends
/// within [`SHUTDOWN_PING_WAIT`] the shutdown PING is the only one sent.
pub(crate) const DRAIN_PROBE: Keepalive = Keepalive {
    interval: Duration::from_secs(10),
    timeout: Duration::from_secs(2),
};

/// Why a connection must drain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DrainReason {
    Shutdown,
    Age,
    Idle,
}

impl DrainReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DrainReason::Shutdown => "the server is shutting down",
            DrainReason::Age => "the connection reached its maximum age",
            DrainReason::Idle => "the connection was idle for too long",
        }
    }
}

/// Why a connection must drain, once it must: the server shuts down, the connection reached
/// its maximum age, or (if its `activity` is followed) it was idle for too long. Never
/// completes while none of those happens.
pub(crate) async fn drain_reason(
    config: &ConnectionConfig,
    activity: Option<&Activity>,
    shutdown: &CancellationToken,
) -> DrainReason {
    let idle = async {
        match activity {
            Some(activity) => activity.idle_for(config.max_connection_idle).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = shutdown.cancelled() => DrainReason::Shutdown,
        () = sleep_for(config.max_connection_age.map(jittered)) => DrainReason::Age,
        () = idle => DrainReason::Idle,
    }
}

/// `drain`, within `grace` if there is one; `None` (logged) if the grace ran out first.
pub(crate) async fn within_grace<F: Future>(
    grace: Option<Duration>,
    drain: F,
) -> Option<F::Output> {
    tokio::select! {
        output = drain => Some(output),
        () = sleep_for(grace) => {
            tracing::debug!("drain grace over; closing the connection with calls in flight");
            None
        }
    }
}

/// Completes after `duration`; never without one.
pub(crate) async fn sleep_for(duration: Option<Duration>) {
    match duration {
        Some(duration) => tokio::time::sleep(duration).await,
        None => std::future::pending().await,
    }
}

/// `age` give or take up to 10%, different for each call: connections opened together (after a
/// deploy, say) are not all sent away at the same moment, as gRPC's connection-management
/// proposal (gRFC A9) recommends.
pub(crate) fn jittered(age: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    // A randomly keyed hash of the current instant: unpredictable enough to spread reconnects,
    // without a dependency on a random number crate.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::UNIX_EPOCH
            .elapsed()
            .unwrap_or_default()
            .as_nanos(),
    );
    let permille = (hasher.finish() % 201) as i64 - 100; // -100..=100, tenths of a percent
    let nanos = age.as_nanos().min(i64::MAX as u128) as i64;
    Duration::from_nanos(nanos.saturating_add(nanos / 1000 * permille).max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_ten_percent_and_varies() {
        let age = Duration::from_secs(300);
        let ages: Vec<_> = (0..200).map(|_| jittered(age)).collect();
        for jittered in &ages {
            assert!(
                *jittered >= Duration::from_secs(270) && *jittered <= Duration::from_secs(330),
                "{jittered:?}"
            );
        }
        let distinct: std::collections::HashSet<_> = ages.iter().collect();
        assert!(
            distinct.len() > 100,
            "only {} distinct ages",
            distinct.len()
        );
        assert_eq!(jittered(Duration::ZERO), Duration::ZERO);
        // Ages beyond what i64 nanoseconds hold (292 years) are cut there first.
        assert!(jittered(Duration::MAX) > Duration::from_secs(250 * 365 * 86_400));
    }
}
