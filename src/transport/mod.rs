//! Transports and what a server knows of a connection: what a handler may learn of it
//! ([`ConnectInfo`], [`Address`];
//! [`Connected`] for transports of your own), TLS with the `tls` feature (`TlsConfig`), and
//! live counts of what a server holds ([`ServerStats`]).

// Inside: the accept loop every transport shares (`incoming`), telling HTTP/2 from HTTP/1.1 by
// a connection's first bytes (`sniff`), TLS, HTTP/1.1 through hyper (`http1`; HTTP/2 is
// `crate::http2`), connection settings and limits (`config`), connection and task counts
// (`activity`), what handlers may learn of a connection (`connect_info`), and how every
// transport starts a call and enforces its deadline (`call`); connections of both versions
// close their sockets through `linger`.

// The `AsyncWrite` methods of a socket wrapper that writes straight through to its `io` field:
// all but `poll_shutdown`, which each wrapper defines. Its callers import `io`, `Pin`, `Context`
// and `Poll`.
macro_rules! write_through_to_io {
    () => {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.io).poll_write(cx, buf)
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
        }

        fn is_write_vectored(&self) -> bool {
            self.io.is_write_vectored()
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_flush(cx)
        }
    };
}

mod activity;
mod beside;
mod call;
pub(crate) mod config;
mod connect_info;
mod head_timeout;
mod http1;
mod http2;
pub(crate) mod incoming;
mod linger;
mod server_state;
mod sniff;
#[cfg(feature = "tls")]
pub(crate) mod tls;

pub(crate) use self::activity::Activity;
pub use self::activity::ServerStats;
pub(crate) use self::call::{Started, finish_call, poll_contained, start_call};
pub(crate) use self::config::{DrainReason, drain_reason, within_grace};
pub use self::connect_info::{Address, ConnectInfo, Connected};
pub(crate) use self::server_state::ServerState;
#[cfg(feature = "tls")]
pub use self::tls::{TlsConfig, TlsError};
/// The rustls the `tls` feature serves with, to build a [`TlsConfig`]'s alternative, a
/// `rustls::ServerConfig` of your own, with the same version.
#[cfg(feature = "tls")]
pub use tokio_rustls::rustls;
