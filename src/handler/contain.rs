//! Panics in user code, contained: a panic while a handler's future or reply stream is polled
//! ends that call with `INTERNAL` and unwinds no further, whoever polls it (the connection, a
//! tower layer's worker such as `Buffer`'s, tonic's server hosting a `ForTonic`).

use std::any::Any;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
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

pin_project! {
    /// A handler's reply stream whose panic becomes a last item `Err(INTERNAL)`; the stream
    /// then ends, and the inner stream is never polled again.
    pub(crate) struct ContainedStream<S> {
        #[pin]
        stream: Option<S>,
    }
}

impl<S> ContainedStream<S> {
    pub(crate) fn new(stream: S) -> Self {
        ContainedStream {
            stream: Some(stream),
        }
    }
}

impl<T, S> Stream for ContainedStream<S>
where
    S: Stream<Item = Result<T, Status>>,
{
    type Item = Result<T, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut stream = self.project().stream;
        let Some(inner) = stream.as_mut().as_pin_mut() else {
            return Poll::Ready(None);
        };
        match panic::catch_unwind(AssertUnwindSafe(|| inner.poll_next(cx))) {
            Ok(poll) => poll,
            Err(panic) => {
                stream.set(None);
                Poll::Ready(Some(Err(panic_status(panic))))
            }
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

    #[test]
    fn a_panicking_stream_ends_with_internal_after_its_items() {
        use futures_util::StreamExt;
        let items = futures_util::stream::iter([1, 2, 3]).map(|n: u8| {
            if n == 3 {
                panic!("boom");
            }
            Ok::<u8, Status>(n)
        });
        let mut contained = ContainedStream::new(items);
        let mut cx = Context::from_waker(Waker::noop());
        let mut polled = Vec::new();
        while let Poll::Ready(Some(item)) = contained.poll_next_unpin(&mut cx) {
            polled.push(item.map_err(|status| status.code()));
        }
        assert_eq!(polled, [Ok(1), Ok(2), Err(tonic::Code::Internal)]);
        assert!(matches!(
            contained.poll_next_unpin(&mut cx),
            Poll::Ready(None)
        ));
    }
}
