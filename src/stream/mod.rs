//! Stream adapters for handlers: an idle limit on a request stream ([`WithIdleTimeout`]), and
//! ordered `map_async` ([`MapAsyncExt`]).

mod idle;
mod map_async;

pub(crate) use self::idle::idle_timeout_status;
pub use self::idle::{IdleTimeout, WithIdleTimeout};
pub use self::map_async::{MapAsync, MapAsyncExt};
