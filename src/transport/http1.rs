//! HTTP/1.1 connections, served with hyper's HTTP/1 server: gRPC-Web calls from browsers and
//! their CORS preflights, through the same services and router as HTTP/2.
//!
//! gRPC itself needs HTTP/2 (its status travels in trailers): a gRPC request over HTTP/1.1 is
//! answered `505 HTTP Version Not Supported` at once. A client that sends its headers too slowly
//! is cut off one to two handshake timeouts after it last did anything, and a connection left
//! idle after the HTTP/1.1 idle timeout (`head_timeout.rs`), so neither holds a connection open
//! for ever.

use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::Body as _;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

use super::ServerState;
use super::beside::{Beside, First};
use super::connect_info::ConnectInfo;
use super::head_timeout::{Answering, HeadWatch, Stall, Watched, Written};
use super::{DrainReason, Started, drain_reason, poll_contained, start_call, within_grace};
use crate::body::{RequestBody, ResponseBody};
use crate::call::{Call, DeadlineBody};
use crate::handler::ResponseFuture;
use crate::protocol::Protocol;

/// Serves `io` over HTTP/1.1 until the peer closes it, the head or idle timeout ends it
/// (`head_timeout.rs`), or it drains: once `shutdown` fires or the connection reaches its
/// maximum age, the answer in progress (if any) goes out, within the drain grace if one is set,
/// and the connection closes.
pub(crate) async fn serve<IO>(
    io: IO,
    connect_info: Option<ConnectInfo>,
    shared: Arc<ServerState>,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let header_timeout = shared.connection.handshake_timeout;
    let idle_timeout = shared.connection.http1_idle_timeout;
    let drain_grace = shared.connection.drain_grace;
    let watch = Arc::new(HeadWatch::default());
    let io = Written::new(io, Arc::clone(&watch));
    let service = hyper::service::service_fn({
        let watch = Arc::clone(&watch);
        let shared = Arc::clone(&shared);
        move |request| Watching {
            answer: answer(&shared, connect_info.as_ref(), &watch, request),
            answering: Some(watch.head_read()),
        }
    });
    // hyper's own header read timeout is off (`head_timeout.rs` says why).
    let mut connection = hyper::server::conn::http1::Builder::new()
        .header_read_timeout(None)
        .serve_connection(TokioIo::new(io), service);
    // One head timeout for the connection's whole life, its drain included: hyper's graceful
    // shutdown waits for a first head it has begun to read, so a client sending one slowly
    // would otherwise hold a shutdown open.
    let mut stalled = pin!(watch.stalled(header_timeout, idle_timeout));
    let serving = async {
        tokio::select! {
            reason = drain_reason(&shared.connection, None, &shutdown) => Side::Drain(reason),
            stall = stalled.as_mut() => Side::Stalled(stall),
        }
    };
    let mut reason = match Beside::new(&mut connection, serving).await {
        First::Main(result) => return log_end(result),
        First::Side(Side::Stalled(stall)) => return log_stalled(stall),
        First::Side(Side::Drain(reason)) => reason,
    };
    if reason == DrainReason::Age && !watch.answering() {
        // Idle: closing now could lose a request already on its way (HTTP/1.1 has no GOAWAY to
        // say which requests were taken). The next answer closes the connection instead, with
        // `connection: close`, as nginx's `keepalive_time` does; until then the head or idle
        // timeout or a shutdown ends it.
        watch.close_after_next_answer();
        let waiting = async {
            tokio::select! {
                () = shutdown.cancelled() => Side::Drain(DrainReason::Shutdown),
                stall = stalled.as_mut() => Side::Stalled(stall),
            }
        };
        reason = match Beside::new(&mut connection, waiting).await {
            First::Main(result) => return log_end(result),
            First::Side(Side::Stalled(stall)) => return log_stalled(stall),
            First::Side(Side::Drain(reason)) => reason,
        };
    }
    // The answer in progress goes out first (with `connection: close` if its head has not),
    // within the drain grace if one is set, as over HTTP/2 (an endless reply stream would
    // otherwise hold the shutdown open); an idle connection closes at once.
    tracing::debug!(reason = reason.as_str(), "draining the HTTP/1.1 connection");
    Pin::new(&mut connection).graceful_shutdown();
    match Beside::new(within_grace(drain_grace, connection), stalled).await {
        First::Main(Some(result)) => log_end(result),
        First::Main(None) => {}
        First::Side(stall) => log_stalled(stall),
    }
}

fn log_end(result: hyper::Result<()>) {
    if let Err(error) = result {
        tracing::debug!(%error, "HTTP/1.1 connection ended with an error");
    }
}

fn log_stalled(stall: Stall) {
    match stall {
        Stall::Head => {
            tracing::debug!("HTTP/1.1 connection closed: no whole request head within the timeout");
        }
        Stall::Idle => tracing::debug!("HTTP/1.1 connection closed: idle for the idle timeout"),
    }
}

/// What ends an HTTP/1.1 connection from outside: a drain (the server shuts down, or the
/// connection reached its maximum age), or the head or idle timeout.
enum Side {
    Drain(DrainReason),
    Stalled(Stall),
}

/// A request body of at most this many bytes (by its `content-length`) is read whole before
/// the call starts, so the call runs as a ready one: answered in the poll that read the body,
/// with no box or task, as over HTTP/2, where a connection reads what the socket has before it
/// starts calls. A larger or chunked body streams to the handler.
const MAX_READ_FIRST: u64 = 64 * 1024;

/// The most of a refused request's body read (and dropped) before the refusal is sent; past
/// it the refusal goes out anyway, and hyper closes the connection.
const MAX_DRAINED: usize = 4 * 1024 * 1024;

pin_project! {
    /// The answer to one request: its body read first if it is small (or refused), then the
    /// service's response. A ready response is taken at the first poll after the body, without
    /// a box. The call's deadline is the dispatcher's once the call starts; while its body is
    /// read first, the timer here starts it when the deadline passes, and the dispatcher then
    /// answers `DEADLINE_EXCEEDED`. A reply stream is held to the deadline by its body
    /// ([`DeadlineBody`]), HTTP/1.1 having no connection timer for it.
    struct Answer {
        stage: Stage,
        #[pin]
        reading_deadline: Option<Sleep>,
        // The connection's watch, told when the request's body has been read to its end.
        watch: Arc<HeadWatch>,
    }
}

/// Where an answer is.
enum Stage {
    /// Reading the request's body, before anything else.
    Reading {
        body: Incoming,
        /// What was read, kept for the call (or dropped, for a refusal).
        read: Read,
        then: Then,
    },
    /// The call, started.
    Calling { answer: ResponseFuture, call: Call },
    /// Answered.
    Done,
}

/// What an answer does once the body is read.
enum Then {
    /// Starts the call with the whole body.
    Call(Waiting),
    /// Sends this refusal; the body was read only so that the client can read the answer.
    Refuse(http::Response<ResponseBody>),
}

/// A call waiting for its body.
struct Waiting {
    shared: Arc<ServerState>,
    connect_info: Option<ConnectInfo>,
    head: http::request::Parts,
    call: Call,
}

/// The body read so far.
#[derive(Default)]
struct Read {
    /// The first chunk, kept as it came (the usual case: a small body in one chunk).
    first: Option<Bytes>,
    /// The chunks joined, once there is a second one.
    joined: BytesMut,
    /// Bytes read in all (for a refusal, which keeps none).
    len: usize,
}

impl Read {
    fn push(&mut self, data: Bytes, keep: bool) {
        self.len += data.len();
        if !keep {
            return;
        }
        match self.first.take() {
            None if self.joined.is_empty() => self.first = Some(data),
            first => {
                if let Some(first) = first {
                    self.joined.extend_from_slice(&first);
                }
                self.joined.extend_from_slice(&data);
            }
        }
    }

    fn into_bytes(self) -> Bytes {
        self.first.unwrap_or_else(|| self.joined.freeze())
    }
}

impl Future for Answer {
    type Output = Result<http::Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        // The stage is matched in place and moved out only when it changes: it is a few
        // hundred bytes, and this runs for every request.
        loop {
            match this.stage {
                Stage::Reading { body, read, then } => {
                    let keep = matches!(then, Then::Call(_));
                    let mut body = Pin::new(body);
                    let ended = match body.as_mut().poll_frame(cx) {
                        Poll::Ready(Some(Ok(frame))) if keep || read.len <= MAX_DRAINED => {
                            if let Ok(data) = frame.into_data() {
                                read.push(data, keep);
                            }
                            // A body of known length ends with its last byte: hyper has
                            // finished reading it, and asking once more would only learn so.
                            let whole = body.is_end_stream();
                            if whole {
                                this.watch.set_unread(false);
                            }
                            whole
                        }
                        Poll::Ready(None) => {
                            this.watch.set_unread(false);
                            true
                        }
                        // The deadline passed first: the call starts, and the dispatcher
                        // answers for it.
                        Poll::Pending if passed(this.reading_deadline.as_mut(), cx) => true,
                        Poll::Pending => return Poll::Pending,
                        // The end, a broken body (whose call then fails as it reads) or, for a
                        // refusal, enough read.
                        _ => true,
                    };
                    if !ended {
                        continue;
                    }
                    let Stage::Reading { read, then, .. } =
                        std::mem::replace(this.stage, Stage::Done)
                    else {
                        unreachable!("the stage matched as Reading just above")
                    };
                    let Waiting {
                        shared,
                        connect_info,
                        head,
                        mut call,
                    } = match then {
                        Then::Refuse(refusal) => return Poll::Ready(Ok(refusal)),
                        Then::Call(waiting) => waiting,
                    };
                    this.reading_deadline.set(None);
                    let body = RequestBody::whole(read.into_bytes());
                    let request = http::Request::from_parts(head, body);
                    match start_call(&shared, connect_info.as_ref(), request, &mut call) {
                        Started::Ready((response, _)) => {
                            return Poll::Ready(Ok(held_to_deadline(response, &call)));
                        }
                        Started::Pending(answer) => *this.stage = Stage::Calling { answer, call },
                    }
                }
                Stage::Calling { answer, call } => {
                    let response = std::task::ready!(poll_contained(answer, call, cx));
                    let response = held_to_deadline(response, call);
                    *this.stage = Stage::Done;
                    return Poll::Ready(Ok(response));
                }
                Stage::Done => panic!("an HTTP/1.1 answer polled after it was given"),
            }
        }
    }
}

/// `response`, its body held to `call`'s deadline.
fn held_to_deadline(
    response: http::Response<ResponseBody>,
    call: &Call,
) -> http::Response<ResponseBody> {
    response.map(|body| DeadlineBody::wrap(body, call))
}

pin_project! {
    /// An answer, counted in progress (for the head timeout) until hyper drops its response's
    /// body.
    struct Watching {
        #[pin]
        answer: Answer,
        answering: Option<Answering>,
    }
}

impl Future for Watching {
    type Output = Result<http::Response<Watched<ResponseBody>>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(mut response) = std::task::ready!(this.answer.poll(cx));
        let answering = this
            .answering
            .take()
            .expect("an HTTP/1.1 answer polled after it was given");
        // A request whose body was not read to its end leaves bytes before the next request's
        // head: hyper closes the connection after this answer, and the client must know not to
        // send another on it.
        if answering.watch().closing() || answering.watch().unread() {
            response.headers_mut().insert(
                http::header::CONNECTION,
                http::HeaderValue::from_static("close"),
            );
        }
        Poll::Ready(Ok(response.map(|body| Watched::new(body, answering))))
    }
}

/// Whether the deadline, if there is one, has passed (registering for it if not).
fn passed(deadline: Pin<&mut Option<Sleep>>, cx: &mut Context<'_>) -> bool {
    deadline
        .as_pin_mut()
        .is_some_and(|deadline| deadline.poll(cx).is_ready())
}

fn answer(
    shared: &Arc<ServerState>,
    connect_info: Option<&ConnectInfo>,
    watch: &Arc<HeadWatch>,
    request: http::Request<Incoming>,
) -> Answer {
    let (mut head, body) = request.into_parts();
    // Until its end is seen, a request's body counts as unread.
    watch.set_unread(!body.is_end_stream());
    let answer = |stage, reading_deadline| Answer {
        stage,
        reading_deadline,
        watch: Arc::clone(watch),
    };
    // Refused at once, but only once the request's body is read: hyper would close the
    // connection under a client still sending it, which then sees a broken pipe, not the answer.
    let refuse = |body, refusal| {
        let then = Then::Refuse(refusal);
        let read = Read::default();
        answer(Stage::Reading { body, read, then }, None)
    };
    let mut call = match Call::read(&mut head, shared.default_timeout) {
        Ok(call) => call,
        Err(refusal) => return refuse(body, *refusal),
    };
    let refusal = match call.wire() {
        // The router's own test, so both transports agree on what gRPC is.
        Some(wire) if wire.protocol == Protocol::Grpc => {
            Some(crate::protocol::http_error::http_version_not_supported())
        }
        // A REST call may have any content type: the router tells.
        None if head.method == http::Method::POST && !shared.service.transcodes() => {
            Some(crate::protocol::http_error::unsupported_media_type())
        }
        _ => None,
    };
    if let Some(refusal) = refusal {
        return refuse(body, refusal);
    }
    // A call's body comes with a POST; a REST call's may come with another method too.
    let small = http_body::Body::size_hint(&body)
        .exact()
        .is_some_and(|len| len <= MAX_READ_FIRST && (len > 0 || head.method == http::Method::POST));
    if small {
        let reading_deadline = call
            .deadline()
            .map(|deadline| tokio::time::sleep_until(deadline.instant()));
        let then = Then::Call(Waiting {
            shared: Arc::clone(shared),
            connect_info: connect_info.cloned(),
            head,
            call,
        });
        let read = Read::default();
        return answer(Stage::Reading { body, read, then }, reading_deadline);
    }
    let body = RequestBody::new(ReadToEnd {
        body,
        watch: Arc::clone(watch),
    });
    let request = http::Request::from_parts(head, body);
    let answer_now = match start_call(shared, connect_info, request, &mut call) {
        Started::Ready((response, _)) => ResponseFuture::ok(held_to_deadline(response, &call)),
        Started::Pending(pending) => pending,
    };
    answer(
        Stage::Calling {
            answer: answer_now,
            call,
        },
        None,
    )
}

pin_project! {
    /// A request body still arriving, which tells the connection's watch when it has been read
    /// to its end.
    struct ReadToEnd {
        #[pin]
        body: Incoming,
        watch: Arc<HeadWatch>,
    }
}

impl http_body::Body for ReadToEnd {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, hyper::Error>>> {
        let mut this = self.project();
        let frame = std::task::ready!(this.body.as_mut().poll_frame(cx));
        if frame.is_none() || this.body.is_end_stream() {
            this.watch.set_unread(false);
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncWriteExt;
    use tokio::time::Instant;

    use super::*;
    use crate::service::{Layers, Router};
    use crate::transport::ServerStats;
    use crate::transport::config::ConnectionConfig;

    fn shared(handshake_timeout: Duration) -> Arc<ServerState> {
        Arc::new(ServerState {
            service: Layers::default().wrap(Router::default(), Default::default(), None),
            connection: ConnectionConfig {
                handshake_timeout,
                ..ConnectionConfig::default()
            },
            default_timeout: None,
            stats: ServerStats::default(),
            connect_info: false,
            #[cfg(feature = "tls")]
            tls: None,
        })
    }

    /// hyper's graceful shutdown waits for a connection's first head once it has begun to read
    /// it; with no drain grace (the default), only the head timeout ends such a connection.
    #[tokio::test(start_paused = true)]
    async fn a_first_head_sent_too_slowly_does_not_hold_a_shutdown_open() {
        let timeout = Duration::from_secs(10);
        // A pipe of 8 bytes: once the head's start is written, the server has read most of it.
        let (mut client, io) = tokio::io::duplex(8);
        let shutdown = CancellationToken::new();
        let served = tokio::spawn(serve(io, None, shared(timeout), shutdown.clone()));
        client
            .write_all(b"POST /grpc.testing.TestService/UnaryCall HTTP/1.1\r\nhost: x\r\n")
            .await
            .unwrap();
        shutdown.cancel();
        let began = Instant::now();
        tokio::time::timeout(10 * timeout, served)
            .await
            .expect("the shutdown is not held open")
            .unwrap();
        assert!(began.elapsed() <= 2 * timeout, "{:?}", began.elapsed());
        drop(client);
    }
}
