//! [`FastFuture`]: a result that is either already here or still to come.
//!
//! Most gRPC calls can be answered the moment they arrive: the request body is whole, the
//! handler answers without waiting, and encoding the reply is plain computation. Scheduling
//! such a call through an executor (boxing its future, spawning a task, waking it) costs more
//! than the call. A `FastFuture` remembers whether its value is already there. While it is,
//! every combinator runs its closure at once, on the calling thread, without allocating; only
//! a step that is really pending moves the rest of the chain into an ordinary boxed future.

#[allow(unsafe_code)]
mod slot;

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use self::slot::Slot;

/// The future a generated trait method returns: a reply or a status.
///
/// Implement a method as an `async fn`, or spell the return type `impl RpcFuture<Reply>` and
/// return a [`FastFuture`] when the answer needs no waiting:
///
/// ```
/// use fastgrpc::{FastFuture, Response, RpcFuture};
///
/// fn answer(name: String) -> impl RpcFuture<String> {
///     FastFuture::ok(Response::new(format!("Hello {name}!")))
/// }
/// # let _ = answer("you".into());
/// ```
pub trait RpcFuture<T>: Future<Output = Result<tonic::Response<T>, tonic::Status>> + Send {}

impl<T, F> RpcFuture<T> for F where
    F: Future<Output = Result<tonic::Response<T>, tonic::Status>> + Send
{
}

/// A boxed, sendable future: what [`FastFuture`] falls back to when a step is pending.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A future of `Result<T, E>` that knows when its value is already available.
///
/// Build one with [`FastFuture::ok`], [`FastFuture::err`] or [`FastFuture::ready`] when the
/// value is at hand, or with [`FastFuture::from_future`] from any future (which is polled once
/// on the spot). Chain steps with [`map`](Self::map), [`and_then`](Self::and_then),
/// [`map_err`](Self::map_err), [`or_else`](Self::or_else) and [`recover`](Self::recover):
/// on a ready value they run immediately; on a pending one they are chained onto the future.
/// Take a ready value out with [`into_ready`](Self::into_ready), or `.await` it like any
/// future.
///
/// ```
/// use fastgrpc::FastFuture;
///
/// let reply: FastFuture<String, &str> = FastFuture::ok(20)
///     .map(|n| n + 1)
///     .and_then(|n| FastFuture::ok(n * 2))
///     .map(|n| format!("answer: {n}"));
/// // Nothing was scheduled: the value is already there.
/// assert_eq!(reply.into_ready().ok(), Some(Ok("answer: 42".to_string())));
/// ```
#[must_use = "a FastFuture does nothing with its value unless it is consumed"]
pub struct FastFuture<T, E = tonic::Status> {
    state: State<T, E>,
}

enum State<T, E> {
    /// The value is here. `poll` hands it out once.
    Ready(Result<T, E>),
    /// The value is still being computed.
    Pending(BoxFuture<Result<T, E>>),
    /// `poll` returned the ready value; polling again is a caller bug.
    Taken,
}

impl<T, E> FastFuture<T, E> {
    /// A successful, already-available value.
    pub const fn ok(value: T) -> Self {
        Self::ready(Ok(value))
    }

    /// A failure, already known.
    pub const fn err(error: E) -> Self {
        Self::ready(Err(error))
    }

    /// An already-available result.
    pub const fn ready(result: Result<T, E>) -> Self {
        FastFuture {
            state: State::Ready(result),
        }
    }

    /// Wraps `future` without polling it: the result is always treated as pending.
    ///
    /// Use this for work that must not run on the caller's thread (a CPU-heavy handler, say);
    /// [`from_future`](Self::from_future) is the usual constructor.
    pub fn boxed<F>(future: F) -> Self
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
    {
        FastFuture {
            state: State::Pending(Box::pin(future)),
        }
    }

    /// Polls `future` once, right now, and keeps the value if it is already done.
    ///
    /// A future that completes on its first poll (an `async fn` that never really waits, say)
    /// yields a ready `FastFuture` without any allocation in the steady state. One that is not
    /// done is kept, unmoved, in a box and finishes when the `FastFuture` is awaited. The first
    /// poll uses a no-op waker; whoever awaits the result polls again with a real one.
    ///
    /// Unlike most Rust futures this constructor is eager: the future's code up to its first
    /// `.await` that waits runs inside this call.
    pub fn from_future<F>(future: F) -> Self
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
    {
        Self::from_fn(|| future)
    }

    /// [`from_future`](Self::from_future) of the future `make` builds, which is built where it
    /// is polled.
    pub(crate) fn from_fn<F>(make: impl FnOnce() -> F) -> Self
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
    {
        let mut slot = Slot::new_with(make);
        match slot.poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(result) => Self::ready(result),
            Poll::Pending => FastFuture {
                state: State::Pending(slot.into_box()),
            },
        }
    }

    /// Whether the result is already available (so `into_ready` returns it).
    pub fn is_ready(&self) -> bool {
        matches!(self.state, State::Ready(_))
    }

    /// Takes the result out if it is already available, or gives the `FastFuture` back.
    pub fn into_ready(self) -> Result<Result<T, E>, Self> {
        match self.state {
            State::Ready(result) => Ok(result),
            state => Err(FastFuture { state }),
        }
    }
}

impl<T, E> FastFuture<T, E>
where
    T: Send + 'static,
    E: Send + 'static,
{
    /// Transforms a successful value; runs `f` at once if the value is ready.
    pub fn map<U, F>(self, f: F) -> FastFuture<U, E>
    where
        U: Send + 'static,
        F: FnOnce(T) -> U + Send + 'static,
    {
        self.then_inline(move |result| FastFuture::ready(result.map(f)))
    }

    /// Transforms a failure; runs `f` at once if the error is ready.
    pub fn map_err<E2, F>(self, f: F) -> FastFuture<T, E2>
    where
        E2: Send + 'static,
        F: FnOnce(E) -> E2 + Send + 'static,
    {
        self.then_inline(move |result| FastFuture::ready(result.map_err(f)))
    }

    /// Continues a successful value with another step that may itself be ready or pending.
    pub fn and_then<U, F>(self, f: F) -> FastFuture<U, E>
    where
        U: Send + 'static,
        F: FnOnce(T) -> FastFuture<U, E> + Send + 'static,
    {
        self.then_inline(move |result| match result {
            Ok(value) => f(value),
            Err(error) => FastFuture::err(error),
        })
    }

    /// Handles a failure with another step that may itself be ready or pending.
    pub fn or_else<E2, F>(self, f: F) -> FastFuture<T, E2>
    where
        E2: Send + 'static,
        F: FnOnce(E) -> FastFuture<T, E2> + Send + 'static,
    {
        self.then_inline(move |result| match result {
            Ok(value) => FastFuture::ok(value),
            Err(error) => f(error),
        })
    }

    /// Turns a failure into a value, so the result can no longer fail.
    pub fn recover<F>(self, f: F) -> FastFuture<T, Infallible>
    where
        F: FnOnce(E) -> T + Send + 'static,
    {
        self.then_inline(move |result| FastFuture::ok(result.unwrap_or_else(f)))
    }

    /// The one place a step is attached: at once on a ready result, after the future otherwise.
    ///
    /// Inlined, and the pending case kept apart: a ready chain then becomes straight-line code
    /// in its caller, and its values are not copied from one step's frame to the next.
    #[inline]
    fn then_inline<U, E2, F>(self, step: F) -> FastFuture<U, E2>
    where
        U: Send + 'static,
        E2: Send + 'static,
        F: FnOnce(Result<T, E>) -> FastFuture<U, E2> + Send + 'static,
    {
        match self.state {
            State::Ready(result) => step(result),
            State::Pending(future) => Self::then_later(future, step),
            State::Taken => panic!("FastFuture used after it completed"),
        }
    }

    /// `step` after `future`, as one boxed future.
    #[inline(never)]
    fn then_later<U, E2, F>(future: BoxFuture<Result<T, E>>, step: F) -> FastFuture<U, E2>
    where
        U: Send + 'static,
        E2: Send + 'static,
        F: FnOnce(Result<T, E>) -> FastFuture<U, E2> + Send + 'static,
    {
        FastFuture::boxed(async move { step(future.await).await })
    }
}

impl<T, E> Future for FastFuture<T, E> {
    type Output = Result<T, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            State::Pending(future) => future.as_mut().poll(cx),
            State::Ready(_) => match std::mem::replace(&mut self.state, State::Taken) {
                State::Ready(result) => Poll::Ready(result),
                _ => unreachable!("state was just matched as Ready"),
            },
            State::Taken => panic!("FastFuture polled after completion"),
        }
    }
}

// The boxed future is pinned on the heap and the ready value is never pinned, so a
// `FastFuture` itself may move freely.
impl<T, E> Unpin for FastFuture<T, E> {}

impl<T, E> From<Result<T, E>> for FastFuture<T, E> {
    fn from(result: Result<T, E>) -> Self {
        Self::ready(result)
    }
}

impl<T: fmt::Debug, E: fmt::Debug> fmt::Debug for FastFuture<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            State::Ready(result) => f.debug_tuple("FastFuture::Ready").field(result).finish(),
            State::Pending(_) => f.write_str("FastFuture::Pending"),
            State::Taken => f.write_str("FastFuture::Taken"),
        }
    }
}

#[cfg(test)]
mod tests;
