//! Panics in user code, contained: a panic while a handler's future is polled ends that call
//! with `INTERNAL` and unwinds no further, whoever polls the future (the connection driver, a
//! tower layer's worker such as `Buffer`'s, tonic's server hosting a `ForTonic`).

use std::any::Any;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tonic::Status;

/// What `catch_unwind` hands back: the payload of a caught panic.
pub(crate) type Panic = Box<dyn Any + Send>;

pin_project! {
    /// A handler's future whose panics become `Err(INTERNAL)`.
    ///
    /// After a panic the inner future is never polled again: the wrapper has already returned
    /// its result, and [`FastFuture`](crate::FastFuture) polls nothing twice.
    pub(crate) struct Contained<F> {
        #[pin]
        future: F,
    }
}

impl<F> Contained<F> {
    pub(crate) fn new(future: F) -> Self {
        Contained { future }
    }
}

impl<T, F> Future for Contained<F>
where
    F: Future<Output = Result<T, Status>>,
{
    type Output = Result<T, Status>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.project().future;
        match panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(poll) => poll,
            Err(panic) => Poll::Ready(Err(panic_status(panic))),
        }
    }
}

/// Logs a handler's panic and gives the status the client gets for it. The panic message stays
/// in the server's log: it may tell more than a client should know.
pub(crate) fn panic_status(panic: Panic) -> Status {
    let detail = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload");
    tracing::error!(panic = detail, "a gRPC handler panicked");
    Status::internal("the handler panicked")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    #[test]
    fn a_panicking_poll_becomes_internal_and_a_normal_one_passes_through() {
        let mut cx = Context::from_waker(Waker::noop());
        let mut panicking = std::pin::pin!(Contained::new(async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
            Ok::<u8, Status>(1)
        }));
        match panicking.as_mut().poll(&mut cx) {
            Poll::Ready(Err(status)) => assert_eq!(status.code(), tonic::Code::Internal),
            other => panic!("expected INTERNAL, got {other:?}"),
        }
        let mut fine = std::pin::pin!(Contained::new(async { Ok::<u8, Status>(7) }));
        assert!(matches!(fine.as_mut().poll(&mut cx), Poll::Ready(Ok(7))));
    }
}
