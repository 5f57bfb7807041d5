//! Ordered `map_async` for streams, with a fast path for results that are already ready.
//!
//! [`MapAsyncExt::map_async`] turns every item of a stream into a future, runs up to
//! `parallelism` of those futures at once, and yields their outputs in the order of the items
//! they came from. It is `StreamExt::map` followed by `StreamExt::buffered`, fused into one
//! adapter that knows about futures which are already done; the trait's documentation tells
//! how.
//!
//! # Choices
//!
//! - **Futures must be `Unpin`.** A new future is polled where it stands, before anyone knows
//!   whether it must be kept, and a pending one is then moved into its ring slot: only allowed
//!   for an `Unpin` future. [`FastFuture`](crate::FastFuture) is `Unpin` (a pending one is
//!   already boxed), as are `std::future::Ready`, tokio's `JoinHandle` and channel receivers,
//!   and any `Pin<Box<dyn Future>>`. Readiness is found by polling once, not by asking
//!   `FastFuture::is_ready`, so every `Unpin` future gets the fast path. An `async` block is not
//!   `Unpin`: wrap it in `FastFuture::from_future` (polled once on the spot in a recycled block,
//!   so a ready one still allocates nothing in the steady state) or `Box::pin`. A conversion
//!   trait implemented both for `FastFuture` and for every future is not possible without
//!   specialization (a `FastFuture` *is* a future), and keeping `!Unpin` futures unboxed would
//!   need `unsafe` pinning into ring slots.
//! - **Items are the futures' outputs**, so mapping to `FastFuture<T, E>` yields
//!   `Result<T, E>`. An error is an item like any other: the stream goes on. Stop at the first
//!   error downstream if that is wanted (`futures_util::TryStreamExt`).
//! - **`parallelism` bounds the buffer, done results included.** At most `parallelism` items
//!   have been taken from upstream and not yet yielded, so at most that many futures are alive
//!   and memory stays bounded even when the oldest result is slow. A `parallelism` of 0 would
//!   never make progress and panics when the adapter is built.
//! - **The buffer is built on first need.** Until some future has to wait there are no wakers,
//!   so new futures are first polled with a no-op waker. The first one found pending is polled
//!   again at once with its slot's waker, after the buffer is built: one extra poll in the life
//!   of the stream, in exchange for all-ready streams never allocating.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::stream::{FusedStream, Stream};
use futures_util::task::AtomicWaker;
use pin_project_lite::pin_project;

/// Adds [`map_async`](MapAsyncExt::map_async) to every [`Stream`].
///
/// # The fast path
///
/// Apache Pekko's ordered `mapAsync` makes an observation that fits this crate's idea
/// ("completed futures are not scheduled"): ordering only costs something when a result has to
/// *wait*. If the future made for an item is already complete, no earlier result is still owed
/// downstream, and downstream is asking for an item right now, there is nothing to reorder and
/// nothing to remember: the value can be handed out on the spot.
///
/// That is what happens here. Inside `poll_next`, when the buffer is empty, the new future is
/// polled once where it stands; if it completes, its output is the return value of that same
/// `poll_next`. It never takes a buffer slot, registers no waker and allocates nothing. A stream
/// mapped to [`FastFuture::ok`](crate::FastFuture::ok) (or to
/// [`FastFuture::from_future`](crate::FastFuture::from_future) of an `async` block that does
/// not wait) therefore costs the call to `f` and little else; `buffered` would push every one
/// of those futures through a `FuturesOrdered`, one heap-allocated task each.
///
/// # The buffered path
///
/// A result that is not ready, or a ready one behind results still owed downstream, goes into a
/// ring of `parallelism` slots, oldest first. A slot holds either a future still running or the
/// output of one that finished before those ahead of it. The ring and one waker per ring
/// position are allocated once, when the first future has to wait (so a stream whose futures are
/// all ready never allocates at all); nothing is allocated per item afterwards. A slot's waker
/// sets its position's bit and wakes the task polling the stream, so a wake-up polls only the
/// futures that asked for it, each at most once per `poll_next` (a future that wakes itself to
/// yield does not keep the stream spinning inside one poll). Free slots are refilled from
/// upstream before a finished result is handed out, so `parallelism` futures keep running while
/// finished results drain.
///
pub trait MapAsyncExt: Stream {
    /// Maps each item to a future with `f`, runs up to `parallelism` of them at once, and yields
    /// their outputs in input order.
    ///
    /// A future that is complete when `f` returns it, with no earlier result still owed, is
    /// yielded straight away from the same `poll_next`, without buffering or allocating (see
    /// [`MapAsyncExt`]). Other results wait in a buffer of `parallelism`
    /// slots, allocated once, when the first future has to wait.
    ///
    /// `f` may return a [`FastFuture`](crate::FastFuture) or any other `Unpin` future; wrap an
    /// `async` block in [`FastFuture::from_future`](crate::FastFuture::from_future) or
    /// `Box::pin`. Items are the futures' outputs, so a `FastFuture<T, E>` gives
    /// `Result<T, E>` items, and an error does not end the stream.
    ///
    /// Upstream is polled only while fewer than `parallelism` items are waiting, and never again
    /// once it has ended; the results still buffered then come out in order before the end.
    ///
    /// # Panics
    ///
    /// If `parallelism` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use fastgrpc::FastFuture;
    /// use fastgrpc::stream::MapAsyncExt;
    /// use futures_util::{StreamExt, stream};
    ///
    /// # let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build();
    /// # runtime.unwrap().block_on(async {
    /// let replies: Vec<Result<u32, String>> = stream::iter(1..=6)
    ///     .map_async(4, |n| {
    ///         if n % 3 == 0 {
    ///             // Really waits: buffered, and later results queue up behind it.
    ///             FastFuture::from_future(async move {
    ///                 tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///                 Ok(n * 10)
    ///             })
    ///         } else if n == 5 {
    ///             FastFuture::err(format!("no {n}"))
    ///         } else {
    ///             // Already there: passes straight through when nothing waits ahead of it.
    ///             FastFuture::ok(n * 10)
    ///         }
    ///     })
    ///     .collect()
    ///     .await;
    /// assert_eq!(
    ///     replies,
    ///     [Ok(10), Ok(20), Ok(30), Ok(40), Err("no 5".to_string()), Ok(60)]
    /// );
    /// # });
    /// ```
    ///
    /// Any `Unpin` future works too, with the same fast path:
    ///
    /// ```
    /// use fastgrpc::stream::MapAsyncExt;
    /// use futures_util::{FutureExt, StreamExt, stream};
    ///
    /// let doubled: Vec<u32> = stream::iter([1, 2, 3])
    ///     .map_async(2, |n| std::future::ready(n * 2))
    ///     .collect()
    ///     .now_or_never() // every future was ready, so nothing waited
    ///     .unwrap();
    /// assert_eq!(doubled, [2, 4, 6]);
    /// ```
    fn map_async<F, Fut>(self, parallelism: usize, f: F) -> MapAsync<Self, F, Fut>
    where
        Self: Sized,
        F: FnMut(Self::Item) -> Fut,
        Fut: Future + Unpin,
    {
        MapAsync::new(self, parallelism, f)
    }
}

impl<St: Stream + ?Sized> MapAsyncExt for St {}

pin_project! {
    /// Stream for [`MapAsyncExt::map_async`]: outputs of the mapped futures, in input order.
    ///
    /// ```
    /// use fastgrpc::FastFuture;
    /// use fastgrpc::stream::{MapAsync, MapAsyncExt};
    /// use futures_util::stream::{self, Iter};
    ///
    /// type Ids = std::ops::Range<u64>;
    /// let ok = FastFuture::<u64, ()>::ok;
    /// let mapped: MapAsync<Iter<Ids>, _, FastFuture<u64, ()>> =
    ///     stream::iter(0..3).map_async(8, ok);
    /// assert_eq!(mapped.parallelism(), 8);
    /// ```
    #[must_use = "streams do nothing unless polled"]
    pub struct MapAsync<St, F, Fut>
    where
        Fut: Future,
    {
        #[pin]
        stream: St,
        f: F,
        // Results owed downstream, oldest first. Invariants:
        // - `queue.len() <= parallelism`; the capacity is reserved, exactly, when the first
        //   future waits and is never exceeded, so the deque allocates once and never again;
        // - `queue` is empty while `wakers` is `None`: only a waiting future starts it;
        // - `queue[i]` lives at ring position `(head + i) % parallelism`, and the future in it
        //   is only ever polled with the waker of that position;
        // - every `Slot::Running` future has been polled at least once, and its last poll
        //   returned `Pending`, so it will wake its position's waker when it can progress;
        // - `queue.front()` is never `Slot::Done` when `poll_next` returns `Pending`.
        queue: VecDeque<Slot<Fut>>,
        // Ring position of `queue[0]`.
        head: usize,
        parallelism: usize,
        // Built when the first future has to wait, so a stream whose futures are all ready
        // never allocates.
        wakers: Option<SlotWakers>,
        // Upstream returned `None`; it is never polled again.
        upstream_done: bool,
    }
}

/// One buffered result.
enum Slot<Fut: Future> {
    /// Still running; polled when its position's waker fires.
    Running(Fut),
    /// Finished before some result ahead of it; yielded when it reaches the front.
    Done(Fut::Output),
}

impl<St, F, Fut> MapAsync<St, F, Fut>
where
    St: Stream,
    F: FnMut(St::Item) -> Fut,
    Fut: Future + Unpin,
{
    fn new(stream: St, parallelism: usize, f: F) -> Self {
        assert!(
            parallelism >= 1,
            "map_async: parallelism must be at least 1 (got 0, which could never make progress)"
        );
        MapAsync {
            stream,
            f,
            queue: VecDeque::new(),
            head: 0,
            parallelism,
            wakers: None,
            upstream_done: false,
        }
    }
}

impl<St, F, Fut: Future> MapAsync<St, F, Fut> {
    /// How many results may be outstanding at once.
    pub fn parallelism(&self) -> usize {
        self.parallelism
    }

    /// The upstream stream.
    pub fn get_ref(&self) -> &St {
        &self.stream
    }

    /// The upstream stream, mutably. Taking items from it directly skips them here.
    pub fn get_mut(&mut self) -> &mut St {
        &mut self.stream
    }

    /// The pinned upstream stream, mutably. Taking items from it directly skips them here.
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut St> {
        self.project().stream
    }

    /// The upstream stream; buffered results and running futures are dropped.
    pub fn into_inner(self) -> St {
        self.stream
    }
}

impl<St, F, Fut> Stream for MapAsync<St, F, Fut>
where
    St: Stream,
    F: FnMut(St::Item) -> Fut,
    Fut: Future + Unpin,
{
    type Item = Fut::Output;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        let parallelism = *this.parallelism;

        // 1. Poll the running futures whose wakers fired since the last call. Each is polled
        //    at most once here, so one that wakes itself to yield is polled again on the next
        //    call, not in a loop inside this one. The cost is one atomic load per 64 positions
        //    when nothing was woken, and otherwise follows the number woken.
        if let Some(wakers) = this.wakers.as_ref() {
            for word in 0..wakers.words() {
                let mut woken = wakers.take_woken(word);
                while woken != 0 {
                    let position = word * u64::BITS as usize + woken.trailing_zeros() as usize;
                    woken &= woken - 1;
                    // A position with no running future was woken by the waker of a future
                    // that is gone; its flag is simply dropped.
                    let offset = (position + parallelism - *this.head) % parallelism;
                    if let Some(slot) = this.queue.get_mut(offset)
                        && let Slot::Running(future) = slot
                        && let Poll::Ready(output) =
                            Pin::new(future).poll(&mut wakers.context(position))
                    {
                        *slot = Slot::Done(output);
                    }
                }
            }
        }

        // 2. Take items from upstream while there is room, before handing out anything
        //    buffered: a slot freed by the previous call starts its next future now, so up to
        //    `parallelism` futures keep running while done results drain. A new item's result
        //    can be yielded at once only if nothing is owed ahead of it: the fast path.
        while !*this.upstream_done && this.queue.len() < parallelism {
            match this.stream.as_mut().poll_next(cx) {
                Poll::Ready(Some(item)) => {
                    let mut future = (this.f)(item);
                    // The ring position this future takes if it has to be kept. Polling it with
                    // that position's waker means it can be kept as it is if it is pending.
                    let position = (*this.head + this.queue.len()) % parallelism;
                    let mut poll = match this.wakers.as_ref() {
                        Some(wakers) => Pin::new(&mut future).poll(&mut wakers.context(position)),
                        // Nothing has waited yet, so there are no wakers; none is needed if the
                        // future is ready, which is the case worth making free.
                        None => Pin::new(&mut future).poll(&mut Context::from_waker(Waker::noop())),
                    };
                    if poll.is_pending() && this.wakers.is_none() {
                        // The first future to wait: build the wakers and the buffer now (all
                        // that `map_async` ever allocates), then poll the future again with its
                        // position's waker, so that its wake-up reaches this stream.
                        let wakers = this.wakers.insert(SlotWakers::new(parallelism));
                        this.queue.reserve_exact(parallelism);
                        poll = Pin::new(&mut future).poll(&mut wakers.context(position));
                    }
                    match poll {
                        // Fast path: nothing is owed ahead of it and downstream is asking.
                        Poll::Ready(output) if this.queue.is_empty() => {
                            return Poll::Ready(Some(output));
                        }
                        Poll::Ready(output) => this.queue.push_back(Slot::Done(output)),
                        Poll::Pending => this.queue.push_back(Slot::Running(future)),
                    }
                }
                Poll::Ready(None) => *this.upstream_done = true,
                Poll::Pending => break,
            }
        }

        // 3. The oldest result, if it is done, is the answer.
        if let Some(Slot::Done(_)) = this.queue.front() {
            let output = pop_front_done(this.queue);
            *this.head = (*this.head + 1) % parallelism;
            return Poll::Ready(Some(output));
        }

        if this.queue.is_empty() {
            // No future is running, so no slot waker matters. Upstream, unless it has ended,
            // returned `Pending` and holds `cx`'s waker itself.
            return if *this.upstream_done {
                Poll::Ready(None)
            } else {
                Poll::Pending
            };
        }

        // 4. The front future is still running. Register this task for the running futures'
        //    wake-ups, then look again: a waker that fired after step 1 (or a future that woke
        //    itself while being polled above) may have woken a previously registered task
        //    instead of this one. Registering first and checking second leaves no gap.
        let Some(wakers) = this.wakers.as_ref() else {
            unreachable!("results are buffered only once a future has waited and built wakers")
        };
        wakers.register(cx.waker());
        if wakers.any_woken() {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let queued = self.queue.len();
        if self.upstream_done {
            return (queued, Some(queued));
        }
        // Every upstream item becomes exactly one output.
        let (lower, upper) = self.stream.size_hint();
        (
            lower.saturating_add(queued),
            upper.and_then(|upper| upper.checked_add(queued)),
        )
    }
}

impl<St, F, Fut> FusedStream for MapAsync<St, F, Fut>
where
    St: Stream,
    F: FnMut(St::Item) -> Fut,
    Fut: Future + Unpin,
{
    fn is_terminated(&self) -> bool {
        self.upstream_done && self.queue.is_empty()
    }
}

impl<St, F, Fut> fmt::Debug for MapAsync<St, F, Fut>
where
    St: fmt::Debug,
    Fut: Future,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let running = self
            .queue
            .iter()
            .filter(|slot| matches!(slot, Slot::Running(_)))
            .count();
        f.debug_struct("MapAsync")
            .field("stream", &self.stream)
            .field("parallelism", &self.parallelism)
            .field("running", &running)
            .field("done", &(self.queue.len() - running))
            .field("upstream_done", &self.upstream_done)
            .finish_non_exhaustive()
    }
}

/// Removes the front slot, which the caller has just seen is done, and returns its output.
fn pop_front_done<Fut: Future>(queue: &mut VecDeque<Slot<Fut>>) -> Fut::Output {
    match queue.pop_front() {
        Some(Slot::Done(output)) => output,
        _ => unreachable!("the front slot was just seen to be done"),
    }
}

/// The wakers of the ring positions, and what they share with the stream.
struct SlotWakers {
    shared: Arc<Woken>,
    /// `wakers[p]` wakes on behalf of ring position `p`; made once, cloned by futures.
    wakers: Box<[Waker]>,
}

/// State shared between a [`MapAsync`] and the wakers of its ring positions.
struct Woken {
    /// The task that last returned `Pending` from `poll_next` with futures running.
    task: AtomicWaker,
    /// Bit `p % 64` of `woken[p / 64]`: the future at ring position `p` asked to be polled
    /// again. Set (release) before `task` is woken, and read (acquire) after `task` is
    /// registered, so a wake-up is either seen in the bits or delivered to the new task.
    woken: Box<[AtomicU64]>,
}

/// The waker handed to the future at one ring position.
struct PositionWaker {
    shared: Arc<Woken>,
    position: usize,
}

impl Wake for PositionWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let (word, bit) = (self.position / 64, self.position % 64);
        self.shared.woken[word].fetch_or(1 << bit, Ordering::Release);
        self.shared.task.wake();
    }
}

impl SlotWakers {
    fn new(parallelism: usize) -> Self {
        let shared = Arc::new(Woken {
            task: AtomicWaker::new(),
            woken: (0..parallelism.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        });
        let wakers = (0..parallelism)
            .map(|position| {
                Waker::from(Arc::new(PositionWaker {
                    shared: Arc::clone(&shared),
                    position,
                }))
            })
            .collect();
        SlotWakers { shared, wakers }
    }

    fn context(&self, position: usize) -> Context<'_> {
        Context::from_waker(&self.wakers[position])
    }

    fn register(&self, waker: &Waker) {
        self.shared.task.register(waker);
    }

    /// How many words of woken bits there are.
    fn words(&self) -> usize {
        self.shared.woken.len()
    }

    /// Whether any position was woken since its bit was last taken.
    fn any_woken(&self) -> bool {
        self.shared
            .woken
            .iter()
            .any(|word| word.load(Ordering::Acquire) != 0)
    }

    /// Clears and returns one word of woken bits. A plain load first keeps the common case
    /// (nothing woken, as on the fast path) free of read-modify-write operations.
    fn take_woken(&self, word: usize) -> u64 {
        let bits = &self.shared.woken[word];
        if bits.load(Ordering::Acquire) == 0 {
            0
        } else {
            bits.swap(0, Ordering::Acquire)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::time::Duration;

    use futures_util::stream::{self, StreamExt};

    use crate::FastFuture;

    /// Counts how often it is woken, so tests can tell a wake-up from a spurious poll.
    #[derive(Default)]
    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl CountingWaker {
        fn count(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    /// Polls `stream` through a counting waker.
    struct Probe {
        counter: Arc<CountingWaker>,
        waker: Waker,
    }

    impl Probe {
        fn new() -> Self {
            let counter = Arc::new(CountingWaker::default());
            let waker = Waker::from(Arc::clone(&counter));
            Probe { counter, waker }
        }

        fn poll<S: Stream + Unpin>(&self, stream: &mut S) -> Poll<Option<S::Item>> {
            Pin::new(stream).poll_next(&mut Context::from_waker(&self.waker))
        }

        fn wakes(&self) -> usize {
            self.counter.count()
        }
    }

    /// Runs `stream` to its end like an executor that polls again only after a wake-up, and
    /// fails on a `Pending` that nothing will follow up (a lost wake-up).
    fn drain<S: Stream + Unpin>(mut stream: S) -> Vec<S::Item> {
        let probe = Probe::new();
        let mut items = Vec::new();
        loop {
            let before = probe.wakes();
            match probe.poll(&mut stream) {
                Poll::Ready(Some(item)) => items.push(item),
                Poll::Ready(None) => return items,
                Poll::Pending => assert!(probe.wakes() > before, "Pending and nothing will wake"),
            }
        }
    }

    /// Pending for `polls` polls, waking itself each time (a yield), then ready with `value`.
    struct Yields<T> {
        polls: usize,
        value: Option<T>,
    }

    fn yields<T>(polls: usize, value: T) -> Yields<T> {
        Yields {
            polls,
            value: Some(value),
        }
    }

    impl<T: Unpin> Future for Yields<T> {
        type Output = T;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
            if self.polls == 0 {
                return Poll::Ready(self.value.take().expect("polled after completion"));
            }
            self.polls -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    /// A future that completes when the test opens it, and counts its polls.
    #[derive(Clone, Default)]
    struct Gate(Arc<GateState>);

    #[derive(Default)]
    struct GateState {
        open: AtomicBool,
        polls: AtomicUsize,
        waker: Mutex<Option<Waker>>,
    }

    impl Gate {
        fn open(&self) {
            self.0.open.store(true, Ordering::SeqCst);
            if let Some(waker) = self.0.waker.lock().unwrap().take() {
                waker.wake();
            }
        }

        fn polls(&self) -> usize {
            self.0.polls.load(Ordering::SeqCst)
        }

        fn wait<T: Unpin>(&self, value: T) -> GateFuture<T> {
            GateFuture {
                gate: self.clone(),
                value: Some(value),
            }
        }
    }

    struct GateFuture<T> {
        gate: Gate,
        value: Option<T>,
    }

    impl<T: Unpin> Future for GateFuture<T> {
        type Output = T;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
            let state = &self.gate.0;
            state.polls.fetch_add(1, Ordering::SeqCst);
            *state.waker.lock().unwrap() = Some(cx.waker().clone());
            if state.open.load(Ordering::SeqCst) {
                Poll::Ready(self.value.take().expect("polled after completion"))
            } else {
                Poll::Pending
            }
        }
    }

    #[test]
    fn order_is_kept_with_mixed_ready_and_pending_and_errors_are_items() {
        let mapped = stream::iter(0..60u32).map_async(4, |n| match n % 5 {
            0 => FastFuture::ok(n),
            1 => FastFuture::boxed(yields(3, Ok(n))),
            2 => FastFuture::err(n),
            3 => FastFuture::boxed(yields(1, Err(n))),
            _ => FastFuture::from_future(async move { Ok(n) }),
        });
        let expected: Vec<Result<u32, u32>> = (0..60)
            .map(|n| {
                if n % 5 == 2 || n % 5 == 3 {
                    Err(n)
                } else {
                    Ok(n)
                }
            })
            .collect();
        assert_eq!(drain(mapped), expected);
    }

    #[test]
    fn ready_results_pass_straight_through() {
        let upstream_polls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&upstream_polls);
        let mut mapped = stream::iter(0..100u32)
            .inspect(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
            })
            .map_async(4, FastFuture::<u32, ()>::ok);
        let probe = Probe::new();
        for n in 0..100 {
            assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(Ok(n))));
            // Taken from upstream and yielded in the same call, never buffered.
            assert!(mapped.queue.is_empty());
            assert_eq!(upstream_polls.load(Ordering::SeqCst), n as usize + 1);
        }
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(None));
        assert_eq!(probe.wakes(), 0);
    }

    #[test]
    fn ready_results_behind_a_pending_one_wait_in_order() {
        let gate = Gate::default();
        let first = gate.clone();
        let mut mapped = stream::iter(0..4u32).map_async(3, move |n| {
            if n == 0 {
                FastFuture::boxed(first.wait(Ok(n)))
            } else {
                FastFuture::<u32, ()>::ok(n)
            }
        });
        let probe = Probe::new();

        assert_eq!(probe.poll(&mut mapped), Poll::Pending);
        // 0 runs, 1 and 2 are done behind it, and 3 is not taken: the buffer is full.
        assert_eq!(mapped.queue.len(), 3);
        assert!(matches!(mapped.queue[0], Slot::Running(_)));
        assert!(matches!(mapped.queue[1], Slot::Done(Ok(1))));
        assert!(matches!(mapped.queue[2], Slot::Done(Ok(2))));
        assert_eq!(mapped.get_ref().size_hint(), (1, Some(1)));
        assert_eq!(mapped.size_hint(), (4, Some(4)));
        assert_eq!(probe.wakes(), 0);

        gate.open();
        assert_eq!(probe.wakes(), 1, "opening the gate wakes the stream's task");
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(Ok(0))));
        // The freed slot is filled before a buffered result is handed out. 3 is ready but owed
        // after 1 and 2, so it waits in the buffer instead of taking the fast path.
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(Ok(1))));
        assert!(matches!(mapped.queue.back(), Some(Slot::Done(Ok(3)))));
        for n in 2..4 {
            assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(Ok(n))));
        }
        assert!(mapped.queue.is_empty());
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(None));
    }

    #[test]
    fn parallelism_bound_is_respected() {
        #[derive(Default)]
        struct InFlight {
            now: AtomicUsize,
            max: AtomicUsize,
        }
        /// Counts itself in flight from creation to drop.
        struct Tracked<Fut> {
            inner: Fut,
            counter: Arc<InFlight>,
        }
        impl<Fut> Tracked<Fut> {
            fn new(inner: Fut, counter: &Arc<InFlight>) -> Self {
                let now = counter.now.fetch_add(1, Ordering::SeqCst) + 1;
                counter.max.fetch_max(now, Ordering::SeqCst);
                Tracked {
                    inner,
                    counter: Arc::clone(counter),
                }
            }
        }
        impl<Fut> Drop for Tracked<Fut> {
            fn drop(&mut self) {
                self.counter.now.fetch_sub(1, Ordering::SeqCst);
            }
        }
        impl<Fut: Future + Unpin> Future for Tracked<Fut> {
            type Output = Fut::Output;
            fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
                Pin::new(&mut self.inner).poll(cx)
            }
        }

        for parallelism in [1, 2, 5, 8] {
            let counter = Arc::new(InFlight::default());
            let in_f = Arc::clone(&counter);
            let mapped = stream::iter(0..200usize).map_async(parallelism, move |n| {
                // Long and short waits mixed, so later futures pile up behind earlier ones.
                Tracked::new(yields(n * 7 % 11, n), &in_f)
            });
            assert_eq!(drain(mapped), (0..200).collect::<Vec<_>>());
            assert_eq!(counter.max.load(Ordering::SeqCst), parallelism);
            assert_eq!(counter.now.load(Ordering::SeqCst), 0);
        }
    }

    #[test]
    fn upstream_end_flushes_buffered_results_in_order() {
        let gates: Vec<Gate> = (0..5).map(|_| Gate::default()).collect();
        let handed_out = gates.clone();
        let mut mapped = stream::iter(0..5usize).map_async(8, move |n| handed_out[n].wait(n));
        let probe = Probe::new();

        assert_eq!(probe.poll(&mut mapped), Poll::Pending);
        assert!(mapped.upstream_done);
        assert!(!mapped.is_terminated());
        for gate in gates[1..].iter().rev() {
            gate.open();
            assert_eq!(probe.poll(&mut mapped), Poll::Pending, "0 is still running");
        }
        gates[0].open();
        for n in 0..5 {
            assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(n)));
        }
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(None));
        assert!(mapped.is_terminated());
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(None), "fused");
    }

    #[test]
    fn a_freed_slot_starts_the_next_future_before_results_drain() {
        let gates: Vec<Gate> = (0..6).map(|_| Gate::default()).collect();
        let handed_out = gates.clone();
        let mut mapped = stream::iter(0..6usize).map_async(3, move |n| handed_out[n].wait(n));
        let probe = Probe::new();

        assert_eq!(probe.poll(&mut mapped), Poll::Pending);
        for gate in &gates[..3] {
            gate.open();
        }
        // Each result handed out frees a slot, and the next call starts a future in it first:
        // three keep running although finished results are waiting.
        for n in 0..3 {
            assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(n)));
            let started = gates.iter().filter(|gate| gate.polls() > 0).count();
            assert_eq!(started, 3 + n);
        }
        for gate in &gates[3..] {
            gate.open();
        }
        for n in 3..6 {
            assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(n)));
        }
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(None));
    }

    #[test]
    fn more_than_64_slots_use_several_words_of_wake_bits() {
        // Waits of varying length, so the ring wraps many times with wake-ups in every word.
        let mapped = stream::iter(0..1000usize).map_async(130, |n| yields(n * 7 % 13, n));
        assert_eq!(drain(mapped), (0..1000).collect::<Vec<_>>());

        let gates: Vec<Gate> = (0..200).map(|_| Gate::default()).collect();
        let handed_out = gates.clone();
        let mut mapped = stream::iter(0..200usize).map_async(130, move |n| handed_out[n].wait(n));
        let probe = Probe::new();
        assert_eq!(probe.poll(&mut mapped), Poll::Pending);
        for gate in gates[..130].iter().rev() {
            gate.open();
        }
        let mut output = Vec::new();
        while output.len() < 200 {
            match probe.poll(&mut mapped) {
                Poll::Ready(Some(n)) => output.push(n),
                Poll::Ready(None) => panic!("ended early"),
                // Futures 130.. started as slots freed up; open them as they are waited on.
                Poll::Pending => gates[output.len()].open(),
            }
        }
        assert_eq!(output, (0..200).collect::<Vec<_>>());
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(None));
    }

    #[test]
    fn the_first_future_to_wait_builds_the_buffer() {
        let gate = Gate::default();
        let handed_out = gate.clone();
        let mut mapped = stream::iter(0..3u32).map_async(4, move |n| {
            if n == 1 {
                FastFuture::boxed(handed_out.wait(Ok(n)))
            } else {
                FastFuture::<u32, ()>::ok(n)
            }
        });
        let probe = Probe::new();

        assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(Ok(0))));
        assert!(
            mapped.wakers.is_none(),
            "nothing has waited: nothing is built"
        );
        assert_eq!(mapped.queue.capacity(), 0);

        assert_eq!(probe.poll(&mut mapped), Poll::Pending);
        assert!(mapped.wakers.is_some());
        assert_eq!(mapped.queue.capacity(), 4);
        // Polled with a no-op waker first, then with its slot's waker, which it now holds.
        assert_eq!(gate.polls(), 2);
        gate.open();
        assert_eq!(probe.wakes(), 1);
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(Ok(1))));
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(Ok(2))));
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(None));
    }

    #[test]
    fn only_woken_futures_are_polled_again() {
        let gates: Vec<Gate> = (0..4).map(|_| Gate::default()).collect();
        let handed_out = gates.clone();
        let mut mapped = stream::iter(0..4usize).map_async(4, move |n| handed_out[n].wait(n));
        let probe = Probe::new();

        assert_eq!(probe.poll(&mut mapped), Poll::Pending);
        gates[2].open();
        assert_eq!(probe.poll(&mut mapped), Poll::Pending);
        let polls: Vec<usize> = gates.iter().map(Gate::polls).collect();
        // The first future to wait is polled twice on arrival (see `the_first_future_to_wait_
        // builds_the_buffer`); after that, only the woken one is polled again.
        assert_eq!(polls, [2, 1, 2, 1]);
        // A poll nobody asked for polls no future.
        assert_eq!(probe.poll(&mut mapped), Poll::Pending);
        assert_eq!(gates.iter().map(Gate::polls).sum::<usize>(), 6);
    }

    #[test]
    fn a_future_that_wakes_itself_is_polled_once_per_call() {
        struct Spinner(Arc<AtomicUsize>);
        impl Future for Spinner {
            type Output = ();
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                self.0.fetch_add(1, Ordering::SeqCst);
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
        let polls = Arc::new(AtomicUsize::new(0));
        let spinner_polls = Arc::clone(&polls);
        let mut mapped =
            stream::iter([()]).map_async(1, move |()| Spinner(Arc::clone(&spinner_polls)));
        let probe = Probe::new();
        for call in 1..=3 {
            assert_eq!(probe.poll(&mut mapped), Poll::Pending);
            // Plus one: as the first future to wait it was polled again once the buffer and
            // its waker existed.
            assert_eq!(polls.load(Ordering::SeqCst), call + 1);
            assert!(
                probe.wakes() >= call,
                "a yielding future keeps the task scheduled"
            );
        }
    }

    #[test]
    fn wake_ups_go_to_the_task_that_polled_last() {
        let gate = Gate::default();
        let handed_out = gate.clone();
        let mut mapped = stream::iter([7]).map_async(2, move |n| handed_out.wait(n));
        let (first, second) = (Probe::new(), Probe::new());

        assert_eq!(first.poll(&mut mapped), Poll::Pending);
        assert_eq!(second.poll(&mut mapped), Poll::Pending);
        gate.open();
        assert_eq!((first.wakes(), second.wakes()), (0, 1));
        assert_eq!(second.poll(&mut mapped), Poll::Ready(Some(7)));
        assert_eq!(second.poll(&mut mapped), Poll::Ready(None));
    }

    #[test]
    fn pending_results_resolve_after_wake_ups_from_other_threads() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..32)
            .map(|_| tokio::sync::oneshot::channel::<u32>())
            .unzip();
        // Answer from another thread, in reverse order, with small gaps.
        let answering = std::thread::spawn(move || {
            for (n, sender) in senders.into_iter().enumerate().rev() {
                if n % 8 == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                sender.send(n as u32).unwrap();
            }
        });
        let mut receivers = receivers.into_iter();
        // A oneshot receiver is an ordinary `Unpin` future, not a `FastFuture`.
        let mapped = stream::iter(0..32).map_async(32, move |_| receivers.next().unwrap());
        let got: Vec<u32> = runtime.block_on(async {
            let collecting = tokio::spawn(mapped.map(Result::unwrap).collect());
            tokio::time::timeout(Duration::from_secs(10), collecting)
                .await
                .expect("the stream stalled: a wake-up was lost")
                .unwrap()
        });
        answering.join().unwrap();
        assert_eq!(got, (0..32).collect::<Vec<_>>());
    }

    #[test]
    fn async_blocks_go_through_from_future_or_box_pin() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let from_future = stream::iter(0..10u64).map_async(3, |n| {
            FastFuture::<u64, ()>::from_future(async move {
                if n % 2 == 0 {
                    tokio::task::yield_now().await;
                }
                Ok(n * n)
            })
        });
        let boxed = stream::iter(0..10u64).map_async(3, |n| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(10 - n)).await;
                n * n
            })
        });
        let both = async { (from_future.collect().await, boxed.collect().await) };
        let (a, b): (Vec<_>, Vec<_>) = runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), both)
                .await
                .expect("the stream stalled: a wake-up was lost")
        });
        assert_eq!(a, (0..10).map(|n| Ok(n * n)).collect::<Vec<_>>());
        assert_eq!(b, (0..10).map(|n| n * n).collect::<Vec<_>>());
    }

    #[test]
    fn size_hint_counts_buffered_results() {
        let mut mapped = stream::iter(0..10u32).map_async(4, |n| yields(2, n));
        assert_eq!(mapped.size_hint(), (10, Some(10)));
        let probe = Probe::new();
        assert_eq!(probe.poll(&mut mapped), Poll::Pending);
        assert_eq!(mapped.queue.len(), 4);
        assert_eq!(mapped.size_hint(), (10, Some(10)));
        assert_eq!(probe.poll(&mut mapped), Poll::Ready(Some(0)));
        assert_eq!(mapped.size_hint(), (9, Some(9)));
    }

    #[test]
    #[should_panic(expected = "map_async: parallelism must be at least 1")]
    fn zero_parallelism_panics() {
        let _ = stream::iter([1]).map_async(0, std::future::ready);
    }

    #[test]
    fn debug_shows_the_buffer() {
        let mut mapped = stream::iter(0..3u32).map_async(2, |n| yields(2 * n as usize, n));
        assert_eq!(Probe::new().poll(&mut mapped), Poll::Ready(Some(0)));
        assert_eq!(Probe::new().poll(&mut mapped), Poll::Pending);
        let debug = format!("{mapped:?}");
        assert!(debug.starts_with("MapAsync { stream: Iter"), "{debug}");
        assert!(
            debug.contains("parallelism: 2, running: 2, done: 0"),
            "{debug}"
        );
    }
}
