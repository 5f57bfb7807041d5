//! The engine's settings: plain values, chosen by the layer above (the transport builds them
//! from the server's `Builder`).

use std::time::Duration;

/// What one connection is allowed and announces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    /// The largest frame we accept (our SETTINGS_MAX_FRAME_SIZE).
    pub(crate) max_frame_size: u32,
    /// The largest header list we accept, decoded (our SETTINGS_MAX_HEADER_LIST_SIZE).
    pub(crate) max_header_list_size: u32,
    /// Streams the client may have open at once (our SETTINGS_MAX_CONCURRENT_STREAMS).
    pub(crate) max_concurrent_streams: u32,
    /// Our flow-control windows, per stream and for the connection.
    pub(crate) initial_stream_window_size: u32,
    pub(crate) initial_connection_window_size: u32,
    /// Our keepalive pings, if any.
    pub(crate) keepalive: Option<Keepalive>,
    /// How often the client may ping.
    pub(crate) ping_policy: PingPolicy,
    /// How long one poll may serve calls before it sends what is answered and yields.
    pub(crate) inline_budget: Duration,
    /// How a drain ends.
    pub(crate) drain: DrainTimes,
}

/// HTTP/2 keepalive pings: one every `interval`, each to be answered within `timeout`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keepalive {
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
}

/// The pings a client may send (gRFC A8, as grpc-go and gRPC's C core enforce it): at most one
/// per `min_interval`, and, unless `permit_without_calls`, none while it has no call open
/// (beyond one every two hours). A ping that comes too soon is a strike; the third ends the
/// connection with GOAWAY `ENHANCE_YOUR_CALM` and debug data `too_many_pings`. Sending a
/// response's headers or data clears the strikes, as in grpc-go (a client measuring the
/// bandwidth pings as data arrives).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PingPolicy {
    pub(crate) min_interval: Duration,
    pub(crate) permit_without_calls: bool,
}

/// The timings of a drain (their reasons are where the transport sets them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DrainTimes {
    /// How long the shutdown PING may go unanswered before the final GOAWAY goes anyway.
    pub(crate) shutdown_ping_wait: Duration,
    /// How long a GOAWAY that ends the connection may take to leave.
    pub(crate) final_goaway_wait: Duration,
    /// Without keepalive, the pings that find a draining connection's peer gone.
    pub(crate) probe: Keepalive,
}
