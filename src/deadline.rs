//! Deadlines: `grpc-timeout` and a [`Deadline`].
//!
//! A gRPC client states how long it will wait for a call in the `grpc-timeout` request header;
//! [`request_timeout`] reads it (strictly, see [`parse_grpc_timeout`]) and combines it with a
//! server-wide default, and a [`Deadline`] is what a handler finds in its request's extensions.
//! How a deadline ends a call is the call's business (`call`).

use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
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
pub(crate) fn deadline_after(now: Instant, timeout: Duration) -> Instant {
    now.checked_add(timeout)
        .or_else(|| now.checked_add(FAR_FUTURE))
        .unwrap_or(now)
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
}
