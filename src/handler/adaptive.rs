//! Adaptive inline: each method learns what its calls cost, and those that compute for long
//! start in spawned tasks instead of on the connection's thread.
//!
//! Inline is free speed for a call that answers at once, and a cost for one that computes for
//! long: it holds up the other calls of its connection and keeps them all on one core. So each
//! method keeps a running estimate of its first poll's duration (the part that runs inline),
//! and a call starts inline only while that estimate is within the service's limit. Calls over
//! the limit are spawned, and their first poll, now in the task, is still timed, so a method
//! that becomes cheap drops back under the limit and comes back inline.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use pin_project_lite::pin_project;
use tonic::Status;

use super::HandlerConfig;
use super::contain::Contained;
use crate::FastFuture;
use crate::call::Call;

/// Where a service's calls start: on the connection's thread, inside the poll that received
/// them, or in a spawned task. Set with a generated server's `run_inline`, or per method with
/// `fastgrpc_build`'s `spawn_method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum InlineMode {
    /// Inline while the method's calls are cheap; spawned while their estimated cost is over
    /// the service's `inline_cost_limit` (the default).
    #[default]
    Adaptive,
    /// Always inline, however long calls compute.
    Always,
    /// Always in a spawned task, where any worker thread can run them.
    Never,
}

/// Above this estimated cost per call a method's calls are spawned, by default. A spawned call
/// costs a few microseconds more (a box, a task, a wake-up); past this cost that is a small
/// price for running on any core and not holding up the connection's other calls.
pub(crate) const DEFAULT_INLINE_COST_LIMIT: Duration =
    Duration::from_micros(crate::__default_inline_cost_limit_us!());

/// [`DEFAULT_INLINE_COST_LIMIT`] in microseconds, as a literal, for generated servers' docs
/// (`concat!` takes only literals).
#[doc(hidden)]
#[macro_export]
macro_rules! __default_inline_cost_limit_us {
    () => {
        25
    };
}

/// The running cost estimates of one service's methods, shared by all its calls. A generated
/// server holds one, with a slot per method.
#[derive(Clone)]
pub struct MethodCosts {
    estimates: Arc<[Estimate]>,
}

impl MethodCosts {
    /// Estimates for `methods` methods, all starting at zero (so a method's first call runs
    /// inline).
    pub fn new(methods: usize) -> Self {
        MethodCosts {
            estimates: (0..methods).map(|_| Estimate::default()).collect(),
        }
    }

    /// The estimated cost of one call of method `index`, at a microsecond's resolution.
    ///
    /// # Panics
    /// If the service has no method `index`.
    pub fn estimate(&self, index: usize) -> Duration {
        Duration::from_nanos(self.estimates[index].nanos().into())
    }
}

impl std::fmt::Debug for MethodCosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries((0..self.estimates.len()).map(|index| self.estimate(index)))
            .finish()
    }
}

/// A running average of one method's cost per call, in nanoseconds, and whether its last
/// sample was over the limit (the lowest bit, [`STRUCK`]; a nanosecond is below notice).
#[derive(Debug, Default)]
struct Estimate {
    bits: AtomicU32,
}

/// The bit of an [`Estimate`] that says its last sample was over the limit.
const STRUCK: u32 = 1;

impl Estimate {
    fn nanos(&self) -> u32 {
        self.bits.load(Ordering::Relaxed) & !STRUCK
    }

    /// Folds `sample` into the average with a weight of 1/8. Two strikes make a heavy method:
    /// a sample over `limit` right after one that was not counts only as `limit`, so a single
    /// long call (a light method whose thread was preempted, or charged with the connection's
    /// work) never moves a method to tasks; a second one in a row counts in full, up to 8
    /// times the limit, which takes the average over it. Once the method is cheap again, it
    /// is back under the limit within some 16 calls. (Single long calls of light methods are
    /// common under load, two in a row are not: docs/BENCHMARKS.md.)
    ///
    /// The average is stored only when it moves to another microsecond (1,024 ns step) or the
    /// strike changes: calls of a method that stays under a microsecond read the shared cache
    /// line but never write it, so workers serving the same method do not contend. Lost
    /// updates between threads are harmless for an estimate.
    fn record(&self, sample: Duration, limit: Duration) {
        let old = self.bits.load(Ordering::Relaxed);
        let over = sample > limit;
        let counted = if over && old & STRUCK == 0 {
            limit
        } else {
            sample.min(limit.saturating_mul(8))
        };
        let counted = u32::try_from(counted.as_nanos()).unwrap_or(u32::MAX);
        let average = old & !STRUCK;
        let new = (average - average / 8 + counted / 8) & !STRUCK | u32::from(over);
        if new >> 10 != old >> 10 || (new ^ old) & STRUCK != 0 {
            self.bits.store(new, Ordering::Relaxed);
        }
    }
}

/// What one route of a generated server hands its call chain: the service's settings and the
/// method's cost estimate.
#[derive(Debug, Clone, Copy)]
pub struct MethodConfig<'a> {
    pub(super) config: &'a HandlerConfig,
    /// The service's `config.run_inline`, unless this method overrides it.
    inline: InlineMode,
    costs: &'a MethodCosts,
    index: usize,
    /// The method's proto says `idempotency_level = NO_SIDE_EFFECTS`: Connect may call it
    /// with GET.
    pub(super) no_side_effects: bool,
}

impl HandlerConfig {
    /// The settings of method `index` of a service whose cost estimates are `costs`.
    pub fn method<'a>(&'a self, costs: &'a MethodCosts, index: usize) -> MethodConfig<'a> {
        debug_assert!(index < costs.estimates.len(), "no method {index}");
        MethodConfig {
            config: self,
            inline: self.run_inline,
            costs,
            index,
            no_side_effects: false,
        }
    }
}

impl MethodConfig<'_> {
    /// This method's calls always start in a spawned task (`spawn_method` in `build.rs`).
    pub fn spawned(mut self) -> Self {
        self.inline = InlineMode::Never;
        self
    }

    /// Marks a method whose proto says `option idempotency_level = NO_SIDE_EFFECTS`, which
    /// the Connect protocol may call with GET (a GET to any other method is refused, 405).
    pub fn no_side_effects(mut self) -> Self {
        self.no_side_effects = true;
        self
    }

    /// The `impl` step: the user's method future, its panics contained, polled once on the
    /// spot if it starts inline (a method that answers without waiting is then served with no
    /// task at all), or left unpolled for a spawned task.
    ///
    /// `start` builds the future; it is built where it is polled (for an inline call, the
    /// block `FastFuture::from_fn` polls it in), so that it is not copied on its way there.
    pub(super) fn invoke<T, F>(
        self,
        start: impl FnOnce() -> F,
        call: &mut Call,
    ) -> FastFuture<T, Status>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Status>> + Send + 'static,
    {
        let estimate = &self.costs.estimates[self.index];
        let contained = || Contained::new(start());
        match self.inline {
            InlineMode::Always => FastFuture::from_fn(contained),
            InlineMode::Never => FastFuture::boxed(contained()),
            InlineMode::Adaptive
                if Duration::from_nanos(estimate.nanos().into())
                    > self.config.inline_cost_limit =>
            {
                FastFuture::boxed(Timed {
                    future: contained(),
                    costs: Some((
                        self.costs.clone(),
                        self.index,
                        self.config.inline_cost_limit,
                    )),
                })
            }
            InlineMode::Adaptive => {
                let started = call.started();
                let polled = FastFuture::from_fn(contained);
                let took = call.first_poll_ended().saturating_duration_since(started);
                estimate.record(took, self.config.inline_cost_limit);
                polled
            }
        }
    }
}

/// The `impl` step of a call that is already in a task (its request body was still arriving):
/// the method's future, panics contained, polled once in place.
pub(super) fn invoke_in_place<T, F>(start: impl FnOnce() -> F) -> FastFuture<T, Status>
where
    T: Send + 'static,
    F: Future<Output = Result<T, Status>> + Send + 'static,
{
    FastFuture::from_fn(|| Contained::new(start()))
}

pin_project! {
    /// A spawned call whose first poll is timed into its method's estimate.
    struct Timed<F> {
        #[pin]
        future: F,
        // Taken at the first poll: the estimates, the method's index and its limit.
        costs: Option<(MethodCosts, usize, Duration)>,
    }
}

impl<F: Future> Future for Timed<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let Some((costs, index, limit)) = this.costs.take() else {
            return this.future.poll(cx);
        };
        let start = Instant::now();
        let polled = this.future.poll(cx);
        costs.estimates[index].record(start.elapsed(), limit);
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_long_calls_cross_the_limit_one_does_not_and_cheap_calls_bring_it_back() {
        const LIMIT: Duration = DEFAULT_INLINE_COST_LIMIT;
        let costs = MethodCosts::new(2);
        let estimate = &costs.estimates[0];
        estimate.record(Duration::from_millis(4), LIMIT);
        assert!(
            costs.estimate(0) <= LIMIT / 8,
            "one long call counts as the limit"
        );
        estimate.record(Duration::from_millis(4), LIMIT);
        assert!(costs.estimate(0) > LIMIT, "{:?}", costs.estimate(0));
        // A method long heavy takes a while to come back.
        for _ in 0..30 {
            estimate.record(Duration::from_millis(4), LIMIT);
        }
        let mut calls = 0;
        while costs.estimate(0) > LIMIT {
            estimate.record(Duration::from_micros(1), LIMIT);
            calls += 1;
            assert!(calls < 50, "still {:?}", costs.estimate(0));
        }
        assert!(calls > 10, "came back after {calls} calls");
        assert_eq!(costs.estimate(1), Duration::ZERO, "methods learn apart");
    }

    #[test]
    fn calls_under_a_microsecond_never_store() {
        let costs = MethodCosts::new(1);
        for _ in 0..100 {
            costs.estimates[0].record(Duration::from_nanos(900), DEFAULT_INLINE_COST_LIMIT);
        }
        assert_eq!(costs.estimates[0].nanos(), 0);
        let huge = Duration::from_secs(3600);
        costs.estimates[0].record(huge, Duration::from_secs(1));
        costs.estimates[0].record(huge, Duration::from_secs(1));
        assert!(
            costs.estimates[0].nanos() <= u32::MAX / 4,
            "saturates, never overflows"
        );
    }

    #[test]
    fn long_calls_that_never_come_two_in_a_row_leave_a_light_method_inline() {
        const LIMIT: Duration = DEFAULT_INLINE_COST_LIMIT;
        let costs = MethodCosts::new(1);
        for _ in 0..1_000 {
            costs.estimates[0].record(Duration::from_micros(5), LIMIT);
            costs.estimates[0].record(Duration::from_millis(1), LIMIT);
            assert!(costs.estimate(0) <= LIMIT, "{:?}", costs.estimate(0));
        }
    }

    fn greet(config: MethodConfig<'_>, work: Duration) -> FastFuture<&'static str, Status> {
        config.invoke(
            || async move {
                let start = Instant::now();
                while start.elapsed() < work {
                    std::hint::spin_loop();
                }
                Ok("hello")
            },
            &mut Call::default(),
        )
    }

    #[test]
    fn adaptive_calls_of_a_heavy_method_are_spawned_and_light_ones_stay_inline() {
        let costs = MethodCosts::new(2);
        let config = HandlerConfig::default();
        assert_eq!(config.run_inline, InlineMode::Adaptive);
        let heavy = config.method(&costs, 0);
        let light = config.method(&costs, 1);

        assert!(
            greet(heavy, Duration::from_millis(1)).is_ready(),
            "unknown: inline"
        );
        assert!(
            greet(heavy, Duration::from_millis(1)).is_ready(),
            "one long call is no rule"
        );
        assert!(
            !greet(heavy, Duration::ZERO).is_ready(),
            "learned heavy: spawned"
        );
        for _ in 0..20 {
            assert!(greet(light, Duration::ZERO).is_ready());
        }
        assert!(!greet(config.method(&costs, 1).spawned(), Duration::ZERO).is_ready());
        let always = HandlerConfig {
            run_inline: InlineMode::Always,
            ..config
        };
        assert!(greet(always.method(&costs, 0), Duration::ZERO).is_ready());
    }

    #[tokio::test]
    async fn spawned_calls_keep_teaching_the_estimate() {
        let costs = MethodCosts::new(1);
        let config = HandlerConfig::default();
        let method = config.method(&costs, 0);
        assert!(greet(method, Duration::from_millis(2)).is_ready());
        assert!(greet(method, Duration::from_millis(2)).is_ready());
        let mut spawned = 0;
        loop {
            let call = greet(method, Duration::ZERO);
            if call.is_ready() {
                break;
            }
            assert_eq!(call.await.unwrap(), "hello");
            spawned += 1;
            assert!(spawned < 50, "never came back inline: {costs:?}");
        }
        assert!(spawned >= 1, "back inline after {spawned} spawned calls");
    }
}
