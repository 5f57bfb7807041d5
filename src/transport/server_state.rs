//! What every connection of a server shares: the service it calls, the connection settings,
//! the counts, and TLS. The `Builder` makes one; every transport reads it.

use std::time::Duration;

use super::ServerStats;
use super::config::ConnectionConfig;
#[cfg(feature = "tls")]
use super::tls;
use crate::service::Dispatcher;

/// See the module docs.
#[derive(Debug)]
pub(crate) struct ServerState {
    /// The router, behind the server-wide layers if there are any.
    pub(crate) service: Dispatcher,
    pub(crate) connection: ConnectionConfig,
    /// Deadline of calls whose client sets none (or a later one).
    pub(crate) default_timeout: Option<Duration>,
    pub(crate) stats: ServerStats,
    /// Whether each request gets the [`ConnectInfo`](super::ConnectInfo) of its connection.
    pub(crate) connect_info: bool,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<tls::Acceptor>,
}
