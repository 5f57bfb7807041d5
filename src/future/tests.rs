use super::*;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Wake;

use tokio::sync::oneshot;

/// Counts how often it is woken, so tests can tell a real wake-up from a spurious poll.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll_once<T, E>(
    future: &mut FastFuture<T, E>,
    waker: &Arc<CountingWaker>,
) -> Poll<Result<T, E>> {
    let waker = Waker::from(waker.clone());
    Pin::new(future).poll(&mut Context::from_waker(&waker))
}

#[test]
fn ready_chain_runs_inline_in_order() {
    // Observable without any executor: each closure has run by the time the next line runs.
    let trace = Cell::new(0u32);
    let step = |expected: u32| {
        assert_eq!(trace.get(), expected, "steps run in order, at once");
        trace.set(expected + 1);
    };
    let fut: FastFuture<u32, &str> = FastFuture::ok(1);
    step(0);
    let fut = fut.map(|n| n + 1);
    step(1);
    let fut = fut.and_then(|n| FastFuture::ok(n * 10));
    step(2);
    assert!(fut.is_ready());
    assert_eq!(fut.into_ready().ok(), Some(Ok(20)));
}

#[test]
fn map_does_not_touch_errors_and_map_err_does_not_touch_values() {
    let failed: FastFuture<u32, &str> = FastFuture::err("boom");
    let failed = failed.map(|_| unreachable!("map must skip errors"));
    assert_eq!(
        failed.map_err(str::len).into_ready().ok(),
        Some(Err::<u32, _>(4))
    );

    let fine: FastFuture<u32, &str> = FastFuture::ok(3);
    let fine = fine.map_err(|_: &str| -> usize { unreachable!("map_err must skip values") });
    assert_eq!(fine.into_ready().ok(), Some(Ok(3)));
}

#[test]
fn and_then_short_circuits_on_error() {
    let out: FastFuture<u32, &str> =
        FastFuture::<u32, &str>::err("early").and_then(|_| -> FastFuture<u32, &str> {
            unreachable!("and_then must not run after an error")
        });
    assert_eq!(out.into_ready().ok(), Some(Err("early")));

    let out = FastFuture::<u32, &str>::ok(2)
        .and_then(|n| FastFuture::err(if n == 2 { "two" } else { "other" }));
    assert_eq!(out.into_ready().ok(), Some(Err::<u32, _>("two")));
}

#[test]
fn or_else_handles_errors_and_passes_values() {
    let healed =
        FastFuture::<u32, &str>::err("x").or_else(|e| FastFuture::<u32, ()>::ok(e.len() as u32));
    assert_eq!(healed.into_ready().ok(), Some(Ok(1)));
    let kept =
        FastFuture::<u32, &str>::ok(9).or_else(|_| -> FastFuture<u32, ()> { unreachable!() });
    assert_eq!(kept.into_ready().ok(), Some(Ok(9)));
    let still_failing =
        FastFuture::<u32, &str>::err("x").or_else(|_| FastFuture::<u32, u8>::err(7));
    assert_eq!(still_failing.into_ready().ok(), Some(Err(7)));
}

#[test]
fn recover_turns_errors_into_values() {
    let recovered = FastFuture::<String, &str>::err("bad").recover(|e| format!("recovered {e}"));
    assert_eq!(
        recovered.into_ready().ok(),
        Some(Ok("recovered bad".to_string()))
    );
    let untouched = FastFuture::<String, &str>::ok("fine".into()).recover(|_| unreachable!());
    assert_eq!(untouched.into_ready().ok(), Some(Ok("fine".to_string())));
}

#[test]
fn from_future_that_is_ready_on_first_poll_is_ready() {
    let fut = FastFuture::<u32, ()>::from_future(async { Ok(5) });
    assert!(fut.is_ready());
    assert_eq!(fut.into_ready().ok(), Some(Ok(5)));
}

#[test]
fn pending_chain_resolves_after_wake_ups() {
    let (first_tx, first_rx) = oneshot::channel::<u32>();
    let (second_tx, second_rx) = oneshot::channel::<u32>();
    let ran_map = Arc::new(AtomicUsize::new(0));
    let ran = ran_map.clone();

    let mut chain =
        FastFuture::<u32, &str>::from_future(async move { first_rx.await.map_err(|_| "dropped") })
            .map(move |n| {
                ran.fetch_add(1, Ordering::SeqCst);
                n + 1
            })
            .and_then(move |n| {
                FastFuture::from_future(
                    async move { Ok(n + second_rx.await.map_err(|_| "dropped")?) },
                )
            })
            .map_err(|e| e.len());
    assert!(!chain.is_ready());

    let waker = Arc::new(CountingWaker::default());
    assert!(poll_once(&mut chain, &waker).is_pending());
    assert_eq!(ran_map.load(Ordering::SeqCst), 0, "map waits for its input");

    first_tx.send(10).unwrap();
    assert_eq!(waker.0.load(Ordering::SeqCst), 1, "sending woke the chain");
    assert!(
        poll_once(&mut chain, &waker).is_pending(),
        "second step still waits"
    );
    assert_eq!(ran_map.load(Ordering::SeqCst), 1);

    second_tx.send(100).unwrap();
    assert_eq!(waker.0.load(Ordering::SeqCst), 2);
    assert_eq!(poll_once(&mut chain, &waker), Poll::Ready(Ok(111)));
}

#[test]
fn pending_errors_flow_through_recover() {
    let (tx, rx) = oneshot::channel::<u32>();
    let mut chain =
        FastFuture::<u32, &str>::from_future(async move { rx.await.map_err(|_| "sender dropped") })
            .map(|_| unreachable!("no value arrives"))
            .recover(|e: &str| e.len() as u32);
    let waker = Arc::new(CountingWaker::default());
    assert!(poll_once(&mut chain, &waker).is_pending());
    drop(tx);
    assert_eq!(poll_once(&mut chain, &waker), Poll::Ready(Ok(14)));
}

#[test]
fn boxed_is_never_ready_before_polling() {
    let fut = FastFuture::<u32, ()>::boxed(async { Ok(1) });
    assert!(!fut.is_ready());
    let waker = Arc::new(CountingWaker::default());
    let mut fut = fut.into_ready().unwrap_err();
    assert_eq!(poll_once(&mut fut, &waker), Poll::Ready(Ok(1)));
}

#[test]
fn awaiting_a_ready_value_returns_it_once() {
    let waker = Arc::new(CountingWaker::default());
    let mut fut = FastFuture::<u32, ()>::ok(3);
    assert_eq!(poll_once(&mut fut, &waker), Poll::Ready(Ok(3)));
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = poll_once(&mut fut, &waker);
    }));
    assert!(
        again.is_err(),
        "polling after completion is reported, not silently hung"
    );
}
