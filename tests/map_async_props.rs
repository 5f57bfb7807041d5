//! Property tests of `map_async`: any mix of ready and pending futures, any parallelism, and the
//! output is the input mapped in order, with never more than `parallelism` items in flight.
//!
//! Two drivers. The first polls by hand, only after a wake-up, and completes "gate" futures in
//! an order the test chooses, so it checks wake-ups exactly: a `Pending` with nothing left to
//! wake the stream is a failure. The second runs on a multi-threaded tokio runtime with yields,
//! timers and spawned tasks, so wake-ups come from other threads at arbitrary times.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use fastgrpc::FastFuture;
use fastgrpc::stream::MapAsyncExt;
use futures_util::stream::{self, Stream, StreamExt};
use proptest::prelude::*;

use support::futures as test_futures;

use test_futures::{CountingWaker, InFlight, Tracked};

/// The expected output for input `n`: an error for a failing kind, `3n` otherwise.
fn model(n: u32, fails: bool) -> Result<u32, u32> {
    if fails { Err(n) } else { Ok(n * 3) }
}

// ---------------------------------------------------------------------------------------------
// Hand-driven: exact wake-up checks.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Ready when `f` returns it.
    Ready,
    /// Ready with an error.
    Fail,
    /// Pending for this many polls, waking itself each time.
    Yields(usize),
    /// Pending until the driver opens it.
    Gate,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Ready),
        1 => Just(Kind::Fail),
        2 => (1..4usize).prop_map(Kind::Yields),
        3 => Just(Kind::Gate),
    ]
}

#[derive(Default)]
struct GateState {
    open: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

/// An ordinary `Unpin` future (not a `FastFuture`), so this driver covers that path.
enum TestFuture {
    Ready(Option<Result<u32, u32>>),
    Yields(usize, Option<Result<u32, u32>>),
    Gate(Arc<GateState>, Option<Result<u32, u32>>),
}

impl Future for TestFuture {
    type Output = Result<u32, u32>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut *self {
            TestFuture::Ready(value) => Poll::Ready(value.take().expect("polled after done")),
            TestFuture::Yields(0, value) => Poll::Ready(value.take().expect("polled after done")),
            TestFuture::Yields(polls, _) => {
                *polls -= 1;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            TestFuture::Gate(gate, value) => {
                *gate.waker.lock().unwrap() = Some(cx.waker().clone());
                if gate.open.load(Ordering::SeqCst) {
                    Poll::Ready(value.take().expect("polled after done"))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

/// Runs `map_async(parallelism)` over `kinds`, opening gates as `choices` say; returns the
/// output. Fails on a lost wake-up or on more than `parallelism` items in flight.
fn drive_by_hand(
    kinds: &[Kind],
    parallelism: usize,
    choices: &[(bool, usize)],
) -> Vec<Result<u32, u32>> {
    let in_flight = Arc::new(InFlight::default());
    // Gates handed out and not yet opened; each belongs to a future that is still running.
    let closed: Rc<RefCell<Vec<Arc<GateState>>>> = Rc::default();
    let taken = Rc::new(RefCell::new(0usize));

    let mapped = {
        let kinds = kinds.to_vec();
        let closed = Rc::clone(&closed);
        let taken = Rc::clone(&taken);
        let in_flight = Arc::clone(&in_flight);
        stream::iter(0..kinds.len() as u32).map_async(parallelism, move |n| {
            *taken.borrow_mut() += 1;
            let value = Some(model(n, matches!(kinds[n as usize], Kind::Fail)));
            let future = match kinds[n as usize] {
                Kind::Ready | Kind::Fail => TestFuture::Ready(value),
                Kind::Yields(polls) => TestFuture::Yields(polls, value),
                Kind::Gate => {
                    let gate = Arc::<GateState>::default();
                    closed.borrow_mut().push(Arc::clone(&gate));
                    TestFuture::Gate(gate, value)
                }
            };
            Tracked::new(future, &in_flight)
        })
    };
    let mut mapped = Box::pin(mapped);

    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut cx = Context::from_waker(&waker);
    let wakes = || counter.0.load(Ordering::SeqCst);
    let open = |index: usize| {
        let gate = closed.borrow_mut().swap_remove(index);
        gate.open.store(true, Ordering::SeqCst);
        if let Some(waker) = gate.waker.lock().unwrap().take() {
            waker.wake();
        }
    };

    let mut output = Vec::new();
    let mut choices = choices.iter().cycle();
    loop {
        let before = wakes();
        let poll = mapped.as_mut().poll_next(&mut cx);
        let yielded = output.len() + usize::from(matches!(poll, Poll::Ready(Some(_))));
        assert!(
            *taken.borrow() - yielded <= parallelism,
            "{} taken from upstream, {yielded} yielded",
            taken.borrow()
        );
        match poll {
            Poll::Ready(Some(item)) => output.push(item),
            Poll::Ready(None) => break,
            Poll::Pending if wakes() > before => {}
            Poll::Pending => {
                // Nothing woke the stream, so only a gate can: every future left must be one.
                let count = closed.borrow().len();
                assert!(
                    count > 0,
                    "Pending, and nothing left that could wake the stream"
                );
                let before_open = wakes();
                open(choices.next().map_or(0, |&(_, index)| index) % count);
                assert!(
                    wakes() > before_open,
                    "opening a running gate must wake the stream"
                );
                continue;
            }
        }
        // Sometimes open a gate while the stream is not waiting, so results finish out of order.
        if let Some(&(true, index)) = choices.next() {
            let count = closed.borrow().len();
            if count > 0 {
                open(index % count);
            }
        }
    }
    assert!(closed.borrow().is_empty());
    assert!(in_flight.max.load(Ordering::SeqCst) <= parallelism);
    assert_eq!(in_flight.now.load(Ordering::SeqCst), 0);
    assert_eq!(
        mapped.as_mut().poll_next(&mut cx),
        Poll::Ready(None),
        "fused"
    );
    output
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn hand_driven_output_is_input_mapped_in_order(
        kinds in prop::collection::vec(kind(), 0..40),
        parallelism in 1..=8usize,
        choices in prop::collection::vec((any::<bool>(), any::<usize>()), 1..16),
    ) {
        let expected: Vec<_> = kinds
            .iter()
            .enumerate()
            .map(|(n, kind)| model(n as u32, matches!(kind, Kind::Fail)))
            .collect();
        prop_assert_eq!(drive_by_hand(&kinds, parallelism, &choices), expected);
    }
}

// ---------------------------------------------------------------------------------------------
// On a tokio runtime: yields, timers, and tasks on other threads.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum TokioKind {
    Ready,
    Fail,
    /// `tokio::task::yield_now` this many times.
    YieldNow(usize),
    /// Sleep this many milliseconds.
    Sleep(u64),
    /// Answered by a task spawned on the runtime after sleeping this many milliseconds.
    Spawned(u64),
}

fn tokio_kind() -> impl Strategy<Value = TokioKind> {
    prop_oneof![
        3 => Just(TokioKind::Ready),
        1 => Just(TokioKind::Fail),
        2 => (1..4usize).prop_map(TokioKind::YieldNow),
        1 => (0..3u64).prop_map(TokioKind::Sleep),
        1 => (0..3u64).prop_map(TokioKind::Spawned),
    ]
}

fn map_on_tokio(kinds: &[TokioKind], parallelism: usize) -> (Vec<Result<u32, u32>>, usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let in_flight = Arc::new(InFlight::default());
    let counter = Arc::clone(&in_flight);
    let kinds = kinds.to_vec();
    let output = runtime.block_on(async move {
        let mapped = stream::iter(0..kinds.len() as u32).map_async(parallelism, move |n| {
            let kind = kinds[n as usize];
            let value = model(n, matches!(kind, TokioKind::Fail));
            let future = match kind {
                TokioKind::Ready | TokioKind::Fail => FastFuture::ready(value),
                TokioKind::YieldNow(times) => FastFuture::from_future(async move {
                    for _ in 0..times {
                        tokio::task::yield_now().await;
                    }
                    value
                }),
                TokioKind::Sleep(ms) => FastFuture::from_future(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    value
                }),
                TokioKind::Spawned(ms) => {
                    let task = tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        value
                    });
                    FastFuture::from_future(async move { task.await.unwrap() })
                }
            };
            Tracked::new(future, &counter)
        });
        // Run the stream in a task of its own, so it may move between worker threads. A lost
        // wake-up would hang; the timeout turns it into a failure.
        let collecting = tokio::spawn(mapped.collect::<Vec<_>>());
        tokio::time::timeout(Duration::from_secs(10), collecting)
            .await
            .expect("the stream stalled: a wake-up was lost")
            .unwrap()
    });
    assert_eq!(in_flight.now.load(Ordering::SeqCst), 0);
    (output, in_flight.max.load(Ordering::SeqCst))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn on_tokio_output_is_input_mapped_in_order(
        kinds in prop::collection::vec(tokio_kind(), 0..24),
        parallelism in 1..=8usize,
    ) {
        let expected: Vec<_> = kinds
            .iter()
            .enumerate()
            .map(|(n, kind)| model(n as u32, matches!(kind, TokioKind::Fail)))
            .collect();
        let (output, max_in_flight) = map_on_tokio(&kinds, parallelism);
        prop_assert_eq!(output, expected);
        prop_assert!(max_in_flight <= parallelism, "{} futures in flight", max_in_flight);
    }
}

/// The first driver's check, on fixed inputs that fill every slot behind a slow first result.
#[test]
fn results_behind_a_slow_first_one_stay_in_order() {
    let mut kinds = vec![Kind::Gate];
    kinds.extend([Kind::Ready, Kind::Yields(2), Kind::Fail, Kind::Gate].repeat(10));
    for parallelism in 1..=8 {
        let output = drive_by_hand(&kinds, parallelism, &[(false, 0)]);
        let expected: Vec<_> = (0..kinds.len())
            .map(|n| model(n as u32, matches!(kinds[n], Kind::Fail)))
            .collect();
        assert_eq!(output, expected);
    }
}
