//! Deadlines (`grpc-timeout`) and idle timeouts that reset in place.
//!
//! A client states how long it will wait for a call in the `grpc-timeout` request header;
//! [`request_timeout`] reads it (strictly, see [`parse_grpc_timeout`]) and combines it with a
//! server-wide default, and a [`Deadline`] is what a handler finds in its request's extensions.
//!
//! Streams need a second kind of limit: how long the server waits for the *next* message of a
//! client stream. [`IdleTimeout`] is that timer, one per call, and [`WithIdleTimeout`] puts it
//! around a stream. The timer is a single boxed [`Sleep`] created at the first wait and moved
//! in place ever after (`Sleep::reset`), so a stream of any length costs one allocation for its
//! timer, not one per message.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tonic::Status;

/// The request header carrying the client's timeout.
pub const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// The spec's `TimeoutValue` is "at most 8 digits".
const MAX_TIMEOUT_DIGITS: usize = 8;

/// Where a deadline too far away to represent is put instead: about 30 years from now, as
/// tokio does for a `sleep` whose deadline would overflow `Instant`.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// Parses a `grpc-timeout` value: 1 to 8 ASCII digits followed by one unit, `H` (hours),
/// `M` (minutes), `S` (seconds), `m` (milliseconds), `u` (microseconds) or `n` (nanoseconds).
///
/// `0` is accepted (the spec says "positive", but grpc-go, grpc-core and tonic all accept it)
/// and means the deadline has already passed. The largest value, `99999999H`, is about 11,400
/// years and fits a [`Duration`] exactly; [`Deadline::after`] saturates when such a timeout
/// would overflow the clock. Parsing never allocates unless the value is malformed.
///
/// # A malformed value is an error
///
/// Anything else (empty, no digits, more than 8 digits, a sign, a space, a unit that is not
/// one of the six) is refused with `INTERNAL` and a message saying what is wrong. The spec
/// (`PROTOCOL-HTTP2.md`) gives only the grammar, not what a server does with a value outside
/// it, and the implementations differ:
///
/// - grpc-go's server fails the call with `INTERNAL: malformed grpc-timeout: ...`
///   (`internal/transport/http2_server.go`, `decodeTimeout` in `http_util.go`, which also
///   rejects more than 8 digits);
/// - grpc-core logs "Ignoring bad timeout value" and serves the call with no deadline;
/// - tonic's `GrpcTimeout` layer (`try_parse_grpc_timeout`) logs at `trace` level and serves
///   the call with no deadline (or the server's own timeout).
///
/// fastgrpc follows grpc-go. Ignoring the header silently turns a call that was meant to be
/// bounded into an unbounded one on the server, and the client's bug stays invisible: the
/// client does enforce its own deadline, so it sees `DEADLINE_EXCEEDED` while the server keeps
/// working for nobody. Every mainstream client (grpc-go, grpc-java, grpc-core, tonic) encodes
/// timeouts that parse here, so only a broken client or proxy is affected, and it gets a
/// message saying why. A server that prefers tonic's leniency can write
/// `request_timeout(headers, default).unwrap_or(default)`.
pub fn parse_grpc_timeout(value: &HeaderValue) -> Result<Duration, Status> {
    let bytes = value.as_bytes();
    let Some((&unit, digits)) = bytes.split_last() else {
        return Err(malformed(bytes, "the value is empty"));
    };
    if digits.is_empty() {
        return Err(malformed(bytes, "no digits before the unit"));
    }
    if digits.len() > MAX_TIMEOUT_DIGITS {
        return Err(malformed(bytes, "more than 8 digits"));
    }
    let mut n: u64 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return Err(malformed(
                bytes,
                "the value must be ASCII digits then a unit",
            ));
        }
        // At most 8 digits: n < 10^8, no overflow possible.
        n = n * 10 + u64::from(digit - b'0');
    }
    let duration = match unit {
        b'H' => Duration::from_secs(n.saturating_mul(3600)),
        b'M' => Duration::from_secs(n.saturating_mul(60)),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => {
            return Err(malformed(bytes, "the unit must be one of H, M, S, m, u, n"));
        }
    };
    Ok(duration)
}

/// The `INTERNAL` status for a malformed `grpc-timeout`, quoting the value if it is short.
#[cold]
fn malformed(value: &[u8], reason: &str) -> Status {
    // The value comes from the client; quote it only when it is short enough to be useful.
    if value.len() <= 16 {
        Status::internal(format!(
            "malformed grpc-timeout {:?}: {reason}",
            value.escape_ascii().to_string()
        ))
    } else {
        Status::internal(format!(
            "malformed grpc-timeout ({} bytes): {reason}",
            value.len()
        ))
    }
}

/// How long the server gives a call: the client's `grpc-timeout` and the server's default,
/// whichever is shorter; `None` when neither is set (the spec: "If Timeout is omitted a server
/// should assume an infinite timeout").
///
/// A malformed `grpc-timeout` is an error; see [`parse_grpc_timeout`] for why.
pub fn request_timeout(
    headers: &HeaderMap,
    server_default: Option<Duration>,
) -> Result<Option<Duration>, Status> {
    let client = match crate::metadata::header(headers, &GRPC_TIMEOUT) {
        Some(value) => Some(parse_grpc_timeout(value)?),
        None => None,
    };
    Ok(match (client, server_default) {
        (Some(client), Some(server)) => Some(client.min(server)),
        (client, server) => client.or(server),
    })
}

/// The instant by which a call must finish, as handlers see it in the request's extensions.
///
/// The server computes it once from the `grpc-timeout` header (and the server's own timeout,
/// if shorter) when the call arrives, and inserts it into the request's extensions; a call
/// without a deadline has none there.
///
/// When the deadline passes, the server drops the call (its handler future or reply stream)
/// and ends the stream with the status `DEADLINE_EXCEEDED`. The spec (`PROTOCOL-HTTP2.md`)
/// allows resetting the stream with `CANCEL` instead; a status also tells clients that do not
/// enforce the deadline themselves (tonic's streaming bodies, raw HTTP/2 peers) what happened.
///
/// ```
/// use std::time::Duration;
/// use fastgrpc::Deadline;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut request = tonic::Request::new(());
/// request.extensions_mut().insert(Deadline::after(Duration::from_secs(5)));
///
/// // In the handler:
/// if let Some(deadline) = request.extensions().get::<Deadline>() {
///     assert!(deadline.remaining() <= Duration::from_secs(5));
///     assert!(!deadline.is_expired());
/// }
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline(pub Instant);

impl Deadline {
    /// The deadline `timeout` from now; a timeout too large for the clock saturates to about
    /// 30 years from now instead of overflowing.
    pub fn after(timeout: Duration) -> Deadline {
        Deadline(deadline_after(Instant::now(), timeout))
    }

    /// The instant itself, for `tokio::time::sleep_until` or `timeout_at`.
    pub fn instant(self) -> Instant {
        self.0
    }

    /// Time left before the deadline; zero once it has passed.
    pub fn remaining(self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    /// Whether the deadline has passed.
    pub fn is_expired(self) -> bool {
        self.0 <= Instant::now()
    }
}

/// `now + timeout`, saturating to [`FAR_FUTURE`] rather than overflowing `Instant`.
fn deadline_after(now: Instant, timeout: Duration) -> Instant {
    now.checked_add(timeout)
        .or_else(|| now.checked_add(FAR_FUTURE))
        .unwrap_or(now)
}

/// How long to wait for activity (the next message of a stream) before giving up.
///
/// One `IdleTimeout` serves a whole call. It allocates nothing when created; the first
/// [`poll_expired`](IdleTimeout::poll_expired) boxes one [`Sleep`], and that `Sleep` is moved
/// in place ([`Sleep::reset`]) ever after: no allocation per message, and no new timer
/// registration.
///
/// # When the countdown runs
///
/// The countdown covers only the time spent *waiting*: it starts at the first
/// `poll_expired` after a [`reset`](IdleTimeout::reset) (or ever), and `reset` marks activity
/// and stops it. Time the consumer spends not polling, busy with the previous message, does
/// not count. That matters for HTTP/2: a consumer that is not reading does not release flow
/// control window, so the peer may be unable to send; blaming the peer for that would be
/// wrong.
///
/// # What a message costs
///
/// `reset` clears a field. The wait that follows reads the clock once and notes its deadline,
/// but leaves the timer where it is: the timer only ever runs early (each wait's deadline is
/// later than the last), so when it fires before the current deadline, `poll_expired` moves
/// it to that deadline then, in place, and keeps waiting. A busy stream thus moves its timer
/// about once per `duration`, not once per message, and still expires exactly `duration`
/// after the wait began (to the timer's millisecond).
///
/// `poll_expired` must be called from within a tokio runtime with the time driver enabled,
/// like any tokio timer.
///
/// ```
/// use std::time::Duration;
/// use fastgrpc::stream::IdleTimeout;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut idle = IdleTimeout::new(Duration::from_secs(10));
/// // Waiting for a message: the countdown starts at the first poll.
/// let started = tokio::time::Instant::now();
/// std::future::poll_fn(|cx| idle.poll_expired(cx)).await;
/// assert_eq!(started.elapsed(), Duration::from_secs(10));
/// # }
/// ```
#[derive(Debug)]
pub struct IdleTimeout {
    duration: Duration,
    /// Boxed so it can stay pinned while `IdleTimeout` moves; created at the first wait.
    /// Invariant: its deadline is at most `expires` while a wait is running.
    sleep: Option<Pin<Box<Sleep>>>,
    /// When the running wait times out; `None` between a `reset` and the next wait.
    expires: Option<Instant>,
}

impl IdleTimeout {
    /// An idle timer of `duration`. Allocates nothing and needs no runtime until polled.
    pub const fn new(duration: Duration) -> IdleTimeout {
        IdleTimeout {
            duration,
            sleep: None,
            expires: None,
        }
    }

    /// The idle duration.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Records activity: the countdown stops, and the next wait starts a fresh one.
    pub fn reset(&mut self) {
        self.expires = None;
    }

    /// Polls while waiting for activity; `Ready` once `duration` has passed since the wait
    /// began without a [`reset`](IdleTimeout::reset). Stays `Ready` until reset.
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let expires = *self
            .expires
            .get_or_insert_with(|| deadline_after(Instant::now(), self.duration));
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(expires)));
        // Each wait's deadline is `now + duration`, later than the one before, so the timer
        // (set for an earlier wait) can only be early, never late.
        debug_assert!(sleep.deadline() <= expires);
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if sleep.deadline() >= expires {
                return Poll::Ready(());
            }
            // Fired for an earlier wait: move it to this one's deadline, in place (same
            // allocation, same timer entry), and poll again to wait for that.
            sleep.as_mut().reset(expires);
        }
    }
}

pin_project! {
    /// A stream that fails with `DEADLINE_EXCEEDED` when its next item takes longer than an idle
    /// timeout to arrive.
    ///
    /// Every item, `Ok` or `Err`, counts as activity and resets the timer (in place, see
    /// [`IdleTimeout`]). On a timeout the stream yields one
    /// `Err(Status::deadline_exceeded(..))` and then ends; so does it after the inner stream ends.
    /// Without a timeout (`new(stream, None)`) it passes items through and allocates nothing.
    ///
    /// # Why `DEADLINE_EXCEEDED`
    ///
    /// gRPC itself has no per-message receive timeout (its deadline covers the whole call; grpc-go
    /// issue 445: "the scope of context is rpc ... instead of a particular message"), so there is
    /// no status the other implementations send for this; the choice follows the meaning of the
    /// codes in grpc's `doc/statuscodes.md`. `DEADLINE_EXCEEDED` is "the deadline expired before
    /// the operation could complete", which is what happened: a time limit on the call ran out,
    /// and the status (sent in trailers) reaches the client as is. `CANCELLED` is "the operation
    /// was cancelled, typically by the caller", and here the caller cancelled nothing: a client
    /// would read it as its own doing. tonic's `Server::timeout` does answer `CANCELLED`, but for a
    /// timeout on the whole call, mirroring the spec's `RST_STREAM(CANCEL)` for an expired client
    /// deadline, where the client's own clock turns it into `DEADLINE_EXCEEDED`; an idle timeout
    /// fires while the client's deadline is still ahead, so no such translation would happen.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fastgrpc::stream::WithIdleTimeout;
    /// use futures_util::StreamExt;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// // Two messages, then a client that goes quiet.
    /// let messages = futures_util::stream::iter([Ok(1), Ok(2)]).chain(futures_util::stream::pending());
    /// let mut stream = WithIdleTimeout::new(messages, Some(Duration::from_secs(30)));
    ///
    /// assert_eq!(stream.next().await.unwrap().unwrap(), 1);
    /// assert_eq!(stream.next().await.unwrap().unwrap(), 2);
    /// let error = stream.next().await.unwrap().unwrap_err();
    /// assert_eq!(error.code(), tonic::Code::DeadlineExceeded);
    /// assert!(stream.next().await.is_none());
    /// # }
    /// ```
    #[derive(Debug)]
    #[must_use = "streams do nothing unless polled"]
    pub struct WithIdleTimeout<S> {
        #[pin]
        inner: S,
        idle: Option<IdleTimeout>,
        done: bool,
    }
}

impl<S> WithIdleTimeout<S> {
    /// Wraps `inner`; `None` means no idle timeout.
    pub fn new(inner: S, idle_timeout: Option<Duration>) -> WithIdleTimeout<S> {
        WithIdleTimeout {
            inner,
            idle: idle_timeout.map(IdleTimeout::new),
            done: false,
        }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Unwraps the stream.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, T> Stream for WithIdleTimeout<S>
where
    S: Stream<Item = Result<T, Status>>,
{
    type Item = Result<T, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let (inner, idle, done) = (this.inner, this.idle, this.done);
        if *done {
            return Poll::Ready(None);
        }
        // The stream first: an item that is already there wins over a timer that has expired
        // meanwhile, since the peer did deliver in time.
        match inner.poll_next(cx) {
            Poll::Ready(Some(item)) => {
                if let Some(idle) = idle {
                    idle.reset();
                }
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                *done = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let Some(idle) = idle else {
                    return Poll::Pending;
                };
                match idle.poll_expired(cx) {
                    Poll::Ready(()) => {
                        *done = true;
                        Poll::Ready(Some(Err(idle_timeout_status(idle.duration()))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let (_, upper) = self.inner.size_hint();
        // A timeout may add one error item.
        let extra = usize::from(self.idle.is_some());
        (0, upper.and_then(|upper| upper.checked_add(extra)))
    }
}

/// The status a stream ends with when its next message is late; see [`WithIdleTimeout`].
#[cold]
pub(crate) fn idle_timeout_status(duration: Duration) -> Status {
    Status::deadline_exceeded(format!(
        "no message received for {duration:?} (the server's idle timeout)"
    ))
}

/// The status of a call whose deadline passed first.
pub(crate) fn exceeded() -> Status {
    Status::deadline_exceeded("the call's deadline passed before it completed")
}

/// Whether the call has a deadline and it has passed: then it is not started, and a response
/// that came after it is replaced by `DEADLINE_EXCEEDED`, whether it was answered inline or
/// from a task (the client has stopped waiting, or is about to). Reads the clock only for a
/// call with a deadline.
pub(crate) fn expired(deadline: Option<Deadline>) -> bool {
    deadline.is_some_and(Deadline::is_expired)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use tonic::Code;

    fn parse(value: &str) -> Result<Duration, Status> {
        parse_grpc_timeout(&HeaderValue::from_str(value).unwrap())
    }

    fn parse_err(value: &str) -> Status {
        let error = parse(value).unwrap_err();
        assert_eq!(error.code(), Code::Internal, "{value:?}");
        assert!(
            error.message().starts_with("malformed grpc-timeout"),
            "{error:?}"
        );
        error
    }

    #[test]
    fn every_unit() {
        assert_eq!(parse("2H").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse("3M").unwrap(), Duration::from_secs(180));
        assert_eq!(parse("4S").unwrap(), Duration::from_secs(4));
        assert_eq!(parse("5m").unwrap(), Duration::from_millis(5));
        assert_eq!(parse("6u").unwrap(), Duration::from_micros(6));
        assert_eq!(parse("7n").unwrap(), Duration::from_nanos(7));
    }

    #[test]
    fn zero_and_leading_zeros_are_accepted() {
        assert_eq!(parse("0S").unwrap(), Duration::ZERO);
        assert_eq!(parse("00000010m").unwrap(), Duration::from_millis(10));
    }

    #[test]
    fn eight_digits_are_accepted_and_nine_are_not() {
        assert_eq!(parse("99999999S").unwrap(), Duration::from_secs(99_999_999));
        let error = parse_err("123456789S");
        assert!(error.message().contains("more than 8 digits"), "{error:?}");
        // Leading zeros count as digits too.
        parse_err("000000001S");
    }

    #[test]
    fn malformed_values_say_what_is_wrong() {
        let cases = [
            ("", "the value is empty"),
            ("S", "no digits before the unit"),
            ("100", "the unit must be one of"),
            ("10s", "the unit must be one of"),
            ("10X", "the unit must be one of"),
            ("1.5S", "ASCII digits then a unit"),
            ("+5S", "ASCII digits then a unit"),
            ("-5S", "ASCII digits then a unit"),
            (" 5S", "ASCII digits then a unit"),
            ("5 S", "ASCII digits then a unit"),
            ("S5", "ASCII digits then a unit"),
            ("5SS", "ASCII digits then a unit"),
        ];
        for (value, reason) in cases {
            let error = parse_err(value);
            assert!(
                error.message().contains(reason),
                "{value:?}: {:?} lacks {reason:?}",
                error.message()
            );
        }
    }

    #[test]
    fn non_ascii_values_are_malformed() {
        let value = HeaderValue::from_bytes(b"5\xffS").unwrap();
        assert_eq!(
            parse_grpc_timeout(&value).unwrap_err().code(),
            Code::Internal
        );
    }

    #[test]
    fn long_values_are_not_echoed() {
        let value = "1".repeat(100) + "S";
        let error = parse_err(&value);
        assert!(error.message().contains("(101 bytes)"), "{error:?}");
        assert!(!error.message().contains("1111"), "{error:?}");
    }

    #[tokio::test]
    async fn largest_timeout_saturates_instead_of_overflowing() {
        let largest = parse("99999999H").unwrap();
        assert_eq!(largest, Duration::from_secs(99_999_999 * 3600));
        let deadline = Deadline::after(largest);
        assert!(deadline.remaining() > Duration::from_secs(20 * 365 * 86_400));
        assert!(!deadline.is_expired());
        // Even a Duration far beyond any header value saturates.
        let deadline = Deadline::after(Duration::MAX);
        assert!(deadline.remaining() >= FAR_FUTURE - Duration::from_secs(1));
        // And the idle timer accepts it too.
        let mut idle = IdleTimeout::new(Duration::MAX);
        let waker = futures_util::task::noop_waker();
        assert!(
            idle.poll_expired(&mut Context::from_waker(&waker))
                .is_pending()
        );
    }

    fn headers(timeout: Option<&'static str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(timeout) = timeout {
            headers.insert(GRPC_TIMEOUT, HeaderValue::from_static(timeout));
        }
        headers
    }

    #[test]
    fn client_timeout_and_server_default_the_smaller_wins() {
        let secs = Duration::from_secs;
        let cases = [
            (None, None, None),
            (None, Some(secs(30)), Some(secs(30))),
            (Some("5S"), None, Some(secs(5))),
            (Some("5S"), Some(secs(30)), Some(secs(5))),
            (Some("1M"), Some(secs(30)), Some(secs(30))),
            (Some("30S"), Some(secs(30)), Some(secs(30))),
            (Some("0n"), Some(secs(30)), Some(Duration::ZERO)),
        ];
        for (header, default, expected) in cases {
            assert_eq!(
                request_timeout(&headers(header), default).unwrap(),
                expected,
                "{header:?} with {default:?}"
            );
        }
    }

    #[test]
    fn malformed_client_timeout_is_an_error_even_with_a_default() {
        let error =
            request_timeout(&headers(Some("soon")), Some(Duration::from_secs(1))).unwrap_err();
        assert_eq!(error.code(), Code::Internal);
    }

    #[tokio::test(start_paused = true)]
    async fn deadline_counts_down() {
        let deadline = Deadline::after(Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(deadline.remaining(), Duration::from_secs(6));
        tokio::time::advance(Duration::from_secs(6)).await;
        assert!(deadline.is_expired());
        assert_eq!(deadline.remaining(), Duration::ZERO);
    }

    fn poll_idle(idle: &mut IdleTimeout) -> Poll<()> {
        let waker = futures_util::task::noop_waker();
        idle.poll_expired(&mut Context::from_waker(&waker))
    }

    #[tokio::test(start_paused = true)]
    async fn idle_timeout_fires_after_the_duration_of_waiting() {
        let mut idle = IdleTimeout::new(Duration::from_secs(10));
        let started = Instant::now();
        std::future::poll_fn(|cx| idle.poll_expired(cx)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        // Stays expired until reset.
        assert!(poll_idle(&mut idle).is_ready());
    }

    #[tokio::test(start_paused = true)]
    async fn reset_restarts_the_countdown_in_place() {
        let start = Instant::now();
        let mut idle = IdleTimeout::new(Duration::from_secs(10));
        assert!(poll_idle(&mut idle).is_pending());
        let sleep: *const Sleep = &**idle.sleep.as_ref().unwrap();

        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(poll_idle(&mut idle).is_pending());
        idle.reset();
        assert!(poll_idle(&mut idle).is_pending());
        // The timer is not moved yet: still set for the first wait.
        let timer = |idle: &IdleTimeout| idle.sleep.as_ref().unwrap().deadline();
        assert_eq!(timer(&idle) - start, Duration::from_secs(10));

        // It fires for the first wait, and is moved to the second wait's deadline, in place.
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(
            poll_idle(&mut idle).is_pending(),
            "10 s in, 1 s since reset"
        );
        assert_eq!(timer(&idle) - start, Duration::from_secs(19));
        assert!(std::ptr::eq(sleep, &**idle.sleep.as_ref().unwrap()));

        tokio::time::advance(Duration::from_secs(8)).await;
        assert!(
            poll_idle(&mut idle).is_pending(),
            "18 s in, 9 s since reset"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(poll_idle(&mut idle).is_ready());

        // An expired timer can be reset and reused.
        idle.reset();
        assert!(poll_idle(&mut idle).is_pending());
        assert!(std::ptr::eq(sleep, &**idle.sleep.as_ref().unwrap()));
    }

    #[tokio::test(start_paused = true)]
    async fn time_not_spent_waiting_does_not_count() {
        let mut idle = IdleTimeout::new(Duration::from_secs(10));
        idle.reset();
        // The consumer is busy for longer than the timeout without polling.
        tokio::time::advance(Duration::from_secs(60)).await;
        assert!(poll_idle(&mut idle).is_pending());
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(poll_idle(&mut idle).is_ready());
    }

    #[tokio::test(start_paused = true)]
    async fn stream_items_reset_the_timer_and_silence_ends_it() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Result<u32, Status>>();
        let messages = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let mut stream = WithIdleTimeout::new(messages, Some(Duration::from_secs(10)));
        let started = Instant::now();

        let sender = tokio::spawn(async move {
            // Gaps just under the timeout, several times: each message resets the timer.
            for n in 0..5 {
                tokio::time::sleep(Duration::from_secs(9)).await;
                tx.send(Ok(n)).unwrap();
            }
            // An error item is activity too.
            tokio::time::sleep(Duration::from_secs(9)).await;
            tx.send(Err(Status::not_found("x"))).unwrap();
            // Then silence, with the channel still open.
            std::future::pending::<()>().await;
        });

        for n in 0..5 {
            assert_eq!(stream.next().await.unwrap().unwrap(), n);
        }
        assert_eq!(
            stream.next().await.unwrap().unwrap_err().code(),
            Code::NotFound
        );
        let error = stream.next().await.unwrap().unwrap_err();
        assert_eq!(error.code(), Code::DeadlineExceeded);
        assert!(error.message().contains("10s"), "{error:?}");
        assert_eq!(started.elapsed(), Duration::from_secs(6 * 9 + 10));
        // Ends after the timeout, without polling the inner stream again.
        assert!(stream.next().await.is_none());
        assert_eq!(stream.size_hint(), (0, Some(0)));
        sender.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn ready_item_wins_over_an_expired_timer() {
        let mut polls = 0;
        let messages = futures_util::stream::poll_fn(move |_cx| {
            polls += 1;
            // Pending on the first poll, then an item is there.
            if polls == 1 {
                Poll::Pending
            } else {
                Poll::Ready(Some(Ok::<_, Status>(polls)))
            }
        });
        let mut stream = Box::pin(WithIdleTimeout::new(messages, Some(Duration::from_secs(1))));
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(stream.as_mut().poll_next(&mut cx).is_pending());
        tokio::time::advance(Duration::from_secs(5)).await;
        // The timer has expired, but the item arrived: the item is delivered.
        assert!(matches!(
            stream.as_mut().poll_next(&mut cx),
            Poll::Ready(Some(Ok(2)))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_timeout_items_pass_through_and_there_is_no_timer() {
        let messages = futures_util::stream::iter([Ok(1), Err(Status::aborted("a")), Ok(3)])
            .chain(futures_util::stream::pending());
        let mut stream = WithIdleTimeout::new(messages, None);
        assert_eq!(stream.next().await.unwrap().unwrap(), 1);
        assert_eq!(
            stream.next().await.unwrap().unwrap_err().code(),
            Code::Aborted
        );
        assert_eq!(stream.next().await.unwrap().unwrap(), 3);
        // Hours of silence: no timeout.
        let waker = futures_util::task::noop_waker();
        tokio::time::advance(Duration::from_secs(86_400)).await;
        assert!(
            Pin::new(&mut stream)
                .poll_next(&mut Context::from_waker(&waker))
                .is_pending()
        );
        assert!(stream.idle.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn stream_end_passes_through() {
        let messages = futures_util::stream::iter([Ok::<_, Status>(1)]);
        let mut stream = WithIdleTimeout::new(messages, Some(Duration::from_secs(1)));
        assert_eq!(stream.next().await.unwrap().unwrap(), 1);
        assert!(stream.next().await.is_none());
        assert!(stream.next().await.is_none());
    }
}
