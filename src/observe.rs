//! What the server observes of each call, where the router serves it as a gRPC call (after
//! gRPC-Web is translated): its span (`tracing`, named and attributed as OpenTelemetry's RPC
//! conventions have it), and with the `opentelemetry` feature and a meter provider, its
//! metrics (gRFC A66, `metrics`). A call with neither (no subscriber wants the span, no
//! provider) is not observed at all: [`Observed::start`] gives `None` and the call goes by
//! untouched.
//!
//! A call ends once, with the status its client got: when its reply's status is known (a unary
//! reply, a trailers-only answer, a reply stream's trailers), or when it is dropped first:
//! `INTERNAL` if the drop comes from a panic in the handler or its stream (the transport
//! answers that), `DEADLINE_EXCEEDED` if its deadline has passed (the transport answers that),
//! `CANCELLED` otherwise (the client reset the stream or went away). A reply that comes after
//! the deadline counts as `DEADLINE_EXCEEDED`, since the transport replaces it with that.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use http_body::Body as _;
use tonic::Code;
use tracing::Span;

use crate::body::{RequestBody, ResponseBody, Watch};
use crate::call::Call;
use crate::deadline::{self, Deadline};
use crate::future::FastFuture;
use crate::handler::ResponseFuture;
#[cfg(feature = "opentelemetry")]
use crate::metrics::CallMeter;
use crate::status::{code_of, status_in};

/// One call, observed until it ends.
pub(crate) struct Observed {
    span: Span,
    #[cfg(feature = "opentelemetry")]
    meter: Option<CallMeter>,
    deadline: Option<Deadline>,
    /// When the call ended, if it ended where the connection timed it: a reply handed back in
    /// the poll that started it ends at the handler's reading after its first poll.
    ended_at: Option<Instant>,
    /// Set while the handler or its reply stream runs: a drop while it is still set comes from
    /// a panic there.
    busy: bool,
    ended: bool,
}

impl Observed {
    /// Starts observing `request` (with `meter`, its metrics if the server records them):
    /// `None` when nothing is to be observed.
    pub(crate) fn start(
        request: &mut http::Request<RequestBody>,
        call: &Call,
        #[cfg(feature = "opentelemetry")] mut meter: Option<CallMeter>,
    ) -> Option<Observed> {
        let span = call_span(request);
        #[cfg(feature = "opentelemetry")]
        let metered = meter.is_some();
        #[cfg(not(feature = "opentelemetry"))]
        let metered = false;
        if span.is_disabled() && !metered {
            return None;
        }
        #[cfg(feature = "opentelemetry")]
        if let Some(meter) = &mut meter {
            // A Connect unary body is one bare message; every other request is gRPC's frames.
            let bare = call.wire_or_grpc().bare();
            let framing = crate::metrics::Framing::of_request(bare);
            match request.body().as_whole() {
                Some(body) => meter.received_whole(body, framing),
                None => request
                    .body_mut()
                    .count_into(framing, meter.received_stream()),
            }
        }
        Some(Observed {
            span,
            #[cfg(feature = "opentelemetry")]
            meter,
            deadline: call.deadline(),
            ended_at: None,
            busy: false,
            ended: false,
        })
    }

    /// Runs `call` (the handler, or a poll of it or of its reply stream) inside the call's
    /// span, marked busy: a panic in it leaves the mark, and the drop then ends the call
    /// `INTERNAL`.
    pub(crate) fn run<T>(&mut self, call: impl FnOnce() -> T) -> T {
        self.busy = true;
        let result = match self.span.is_disabled() {
            true => call(),
            false => self.span.in_scope(call),
        };
        self.busy = false;
        result
    }

    /// Counts `data`, a piece of the reply body.
    pub(crate) fn sent(&mut self, #[allow(unused_variables)] data: &[u8]) {
        #[cfg(feature = "opentelemetry")]
        if let Some(meter) = &mut self.meter {
            meter.sent(data);
        }
    }

    /// Ends the call with `code` (the status in a reply's head or trailers); later calls do
    /// nothing.
    pub(crate) fn end(&mut self, code: Code) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let code = if deadline::expired(self.deadline) {
            Code::DeadlineExceeded
        } else {
            code
        };
        self.span.record("rpc.grpc.status_code", code as i32);
        #[cfg(feature = "opentelemetry")]
        if let Some(meter) = &self.meter {
            meter.end(code, self.ended_at.unwrap_or_else(Instant::now));
        }
    }

    /// Ends the call with the status in `trailers` (`UNKNOWN` if they have none).
    pub(crate) fn end_with(&mut self, trailers: Option<&http::HeaderMap>) {
        self.end(code_of(trailers.and_then(status_in)));
    }
}

impl Watch for Observed {
    fn poll_in_scope(
        &mut self,
        poll: &mut dyn FnMut()
            -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, tonic::Status>>>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, tonic::Status>>> {
        self.run(poll)
    }

    fn sent(&mut self, data: &[u8]) {
        Observed::sent(self, data);
    }

    fn end(&mut self, code: Code) {
        Observed::end(self, code);
    }

    fn end_with(&mut self, trailers: Option<&http::HeaderMap>) {
        Observed::end_with(self, trailers);
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let code = if self.busy || std::thread::panicking() {
            Code::Internal
        } else if deadline::expired(self.deadline) {
            Code::DeadlineExceeded
        } else {
            Code::Cancelled
        };
        self.end(code);
    }
}

impl std::fmt::Debug for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observed")
            .field("span", &self.span)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

/// The span of a call: `grpc.server` with OpenTelemetry's RPC attributes (`otel.name` is the
/// name `tracing-opentelemetry` gives the exported span), at `DEBUG` level for target
/// `fastgrpc::call`, as tower-http's `TraceLayer` has its spans: an application logging at
/// `INFO` pays nothing for them. Its fields are computed only if a subscriber wants it. With the
/// `opentelemetry` feature, the client's trace context (`traceparent`, through the
/// propagator installed with `opentelemetry::global::set_text_map_propagator`) becomes its
/// parent.
fn call_span(request: &http::Request<RequestBody>) -> Span {
    use tracing::field::Empty;
    let span = tracing::debug_span!(
        target: "fastgrpc::call",
        "grpc.server",
        otel.name = Empty,
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = Empty,
        rpc.method = Empty,
        rpc.grpc.status_code = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let path = request.uri().path();
    let name = path.strip_prefix('/').unwrap_or(path);
    let (service, method) = name.split_once('/').unwrap_or((name, ""));
    span.record("otel.name", name);
    span.record("rpc.service", service);
    span.record("rpc.method", method);
    #[cfg(feature = "opentelemetry")]
    parent_from(&span, request.headers());
    span
}

/// Makes the trace context the client sent in `headers` the parent of `span`.
#[cfg(feature = "opentelemetry")]
fn parent_from(span: &Span, headers: &http::HeaderMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    struct Headers<'a>(&'a http::HeaderMap);
    impl opentelemetry::propagation::Extractor for Headers<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|value| value.to_str().ok())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(http::HeaderName::as_str).collect()
        }
    }
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&Headers(headers))
    });
    let _ = span.set_parent(parent);
}

/// `response`, observed by `observed`: ended at once if the reply is whole (a unary reply, a
/// trailers-only answer), else when the reply stream ends; a pending response is observed as
/// it runs, and ended as dropped if it never completes.
///
/// `polled` is the handler's clock reading after its first poll, where the connection timed
/// the call: a ready reply ended then.
pub(crate) fn observed(
    response: ResponseFuture,
    mut observed: Observed,
    polled: Option<Instant>,
) -> ResponseFuture {
    match response.into_ready() {
        Ok(Ok(response)) => {
            if response.body().is_whole() {
                // Ended now, not when a stream ends later.
                observed.ended_at = polled;
            }
            FastFuture::ok(observe_reply(response, observed))
        }
        Ok(Err(never)) => match never {},
        Err(pending) => FastFuture::boxed(Pending {
            response: pending,
            observed: Some(observed),
        }),
    }
}

fn observe_reply(
    mut response: http::Response<ResponseBody>,
    mut observed: Observed,
) -> http::Response<ResponseBody> {
    // A trailers-only answer has its status in the head, and no body.
    if response.body().is_end_stream() {
        observed.end(code_of(status_in(response.headers())));
    } else {
        response.body_mut().observe(observed);
    }
    response
}

pin_project_lite::pin_project! {
    /// A pending response and its observed call.
    struct Pending {
        #[pin]
        response: ResponseFuture,
        observed: Option<Observed>,
    }
}

impl Future for Pending {
    type Output = Result<http::Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let observed = this.observed.as_mut().expect("polled after completion");
        let mut response = this.response;
        let result = ready!(observed.run(|| response.as_mut().poll(cx)));
        let observed = this.observed.take().expect("polled after completion");
        Poll::Ready(result.map(|response| observe_reply(response, observed)))
    }
}
