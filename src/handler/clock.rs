//! The clock inline calls are timed with, shared between the connection driver (its inline
//! budget) and the `impl` step (adaptive inline), so that a call the driver serves costs one
//! clock read, not one for the budget and two to time its first poll.
//!
//! The driver opens a call with the reading it already has (when its poll started serving, or
//! when the previous call ended); the `impl` step times the first poll from there and leaves
//! its end reading; the driver takes that as the call's end, or reads the clock itself if the
//! call had no `impl` step (an error answer, a hosted tower service).
//!
//! A call's metrics take the same readings: its start, and, for a reply handed back within the
//! driver's poll, the `impl` step's end reading as its end.
//!
//! Invariant: `STARTED` is set only while the driver serves a call on this thread. A call
//! polled anywhere else (a spawned task, a tower layer's worker, tonic's server) finds it empty
//! and reads the clock itself; tasks never run inside the driver's poll, so they cannot see a
//! reading that is not theirs.

use std::cell::Cell;
use std::time::Instant;

thread_local! {
    /// When the call the driver is serving on this thread started, if it is serving one.
    static STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The end reading of the call's first poll, once the `impl` step took one.
    static POLLED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The driver starts serving a call at `now` (a reading it took already).
pub(crate) fn open_call(now: Instant) {
    STARTED.set(Some(now));
    POLLED.set(None);
}

/// The driver has served the call: when it ended, from the `impl` step's reading if it took
/// one, or from the clock.
pub(crate) fn close_call() -> Instant {
    STARTED.set(None);
    POLLED.take().unwrap_or_else(Instant::now)
}

/// When this call started, as far as the driver knows, or now: for the `impl` step, and for
/// the call's metrics.
pub(crate) fn call_started() -> Instant {
    STARTED.get().unwrap_or_else(Instant::now)
}

/// In the `impl` step, after the first poll: now, also left for the driver.
pub(super) fn first_poll_ended() -> Instant {
    let now = Instant::now();
    if STARTED.get().is_some() {
        POLLED.set(Some(now));
    }
    now
}

/// Now, for a call's metrics as it ends: the `impl` step's end reading if the driver is
/// serving the call inline and it took one (the reply is then being handed back, within the
/// same poll), else the clock.
#[cfg(feature = "opentelemetry")]
pub(crate) fn call_ending() -> Instant {
    match (STARTED.get(), POLLED.get()) {
        (Some(_), Some(polled)) => polled,
        _ => Instant::now(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_call_the_driver_serves_is_timed_from_the_drivers_reading_to_the_impl_steps() {
        let opened = Instant::now() - Duration::from_millis(5);
        open_call(opened);
        assert_eq!(call_started(), opened);
        let polled = first_poll_ended();
        assert_eq!(close_call(), polled);
        // Outside the driver, nothing is shared.
        assert!(call_started() > opened + Duration::from_millis(4));
        first_poll_ended();
        open_call(opened);
        assert!(
            close_call() > polled,
            "a call without an impl step reads the clock"
        );
    }

    #[cfg(feature = "opentelemetry")]
    #[test]
    fn a_call_served_inline_ends_at_its_impl_steps_reading() {
        open_call(Instant::now());
        let polled = first_poll_ended();
        assert_eq!(call_ending(), polled);
        close_call();
        assert!(call_ending() > polled, "outside the driver, the clock");
    }
}
