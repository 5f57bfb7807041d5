//! How the server treats each connection: the HTTP/2 settings it announces and the limits on a
//! connection's life (handshake, keepalive, age, shutdown grace).

use std::time::Duration;

/// Settings every connection of a server shares. Defaults are safe for a server facing
/// untrusted clients; each has a `Builder` method.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionConfig {
    pub(crate) initial_stream_window_size: u32,
    pub(crate) initial_connection_window_size: u32,
    pub(crate) max_frame_size: u32,
    pub(crate) max_concurrent_streams: u32,
    pub(crate) max_header_list_size: u32,
    pub(crate) data_frame_budget: usize,
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
}

/// HTTP/2 keepalive pings: one every `interval`, each to be answered within `timeout`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keepalive {
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
}

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
            // h2 closes a connection whose small DATA frames pile up unread beyond this
            // budget. Its default (half the connection window: about 2,000 frames of tiny
            // messages) is crossed by one socket read from a client streaming small messages,
            // each in its own frame as gRPC clients send them. 4 MiB allows about 16,000 such
            // frames in flight, some 2 MB of buffered frames per connection at worst.
            data_frame_budget: 4 * 1024 * 1024,
            handshake_timeout: Duration::from_secs(10),
            keepalive: None,
            max_connection_age: None,
            max_connection_idle: None,
            drain_grace: None,
        }
    }
}

impl ConnectionConfig {
    pub(crate) fn h2_builder(&self) -> h2::server::Builder {
        let mut builder = h2::server::Builder::new();
        builder
            .initial_window_size(self.initial_stream_window_size)
            .initial_connection_window_size(self.initial_connection_window_size)
            .max_frame_size(self.max_frame_size)
            .max_concurrent_streams(self.max_concurrent_streams)
            .max_header_list_size(self.max_header_list_size)
            .data_frame_budget(self.data_frame_budget);
        builder
    }
}
