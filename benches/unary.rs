//! One strict unary call, in process (no sockets), through fastgrpc and through tonic.
//!
//! Every row from row 1 on serves `helloworld.HelloRequest { name: "world" }`, whose body has
//! fully arrived (one uncompressed frame, [`FRAME`]), with the same handler logic (the reply
//! message is `format!("Hello {name}!")`), and, from row 3 on, collects the whole response: the
//! message frame and the trailers. Row 0 only encodes that reply.
//!
//! | row | what is timed |
//! |---|---|
//! | `encode_reply` | `codec::encode` of the reply `HelloReply { message: "Hello world!" }`, the frame dropped at once (as h2 drops it once written) |
//! | `unmarshal_strict` | `codec::decode_unary` only |
//! | `unmarshal_strict_chained` | decode, reply, encode and recover as a hand-built `FastFuture` chain, value taken with `into_ready` |
//! | `generated_unary_fast` | our generated `GreeterServer`, handler returning `FastFuture::ok`, called through `FastService::call`; response taken with `into_ready`, body collected |
//! | `generated_unary_async` | the same with an `async fn` handler that awaits nothing |
//! | `generated_unary_pending` | the same with an `async fn` handler that really waits once (`tokio::task::yield_now`); the pending response future is driven by `block_on` on a current-thread runtime |
//! | `routes_fast` | the same handler through the server's whole dispatch (`Builder::into_dispatcher`: method and content-type checks, routing by service name), as the connection driver calls it |
//! | `routes_intercepted` | the same with an interceptor that lets every call through (`GreeterServer::with_interceptor`) |
//! | `routes_layered` | the same with one server-wide tower layer that does nothing (`tower_layer::Identity`): the cost of the layered stack itself |
//! | `tonic_unary` | tonic 0.14's generated `GreeterServer` (`#[tonic::async_trait]` handler) as a `tower::Service`: `poll_ready`, `call`, `block_on` of its future on a current-thread runtime, body collected |
//!
//! The request is built outside the timing (criterion's `iter_batched`): for fastgrpc an
//! `http::Request<RequestBody::whole(frame)>`, for tonic an
//! `http::Request<tonic::body::Body::new(Full::new(frame))>`, with the same headers. What a row
//! returns (the collected frame and trailers) is dropped outside the timing too. Both sides
//! collect the body with the same loop, `http_body::Body::poll_frame` with a no-op waker until the
//! trailers arrive (tonic's body is ready once its response future is), so no collecting
//! machinery is charged to either side.
//!
//! Before timing, each row serves one request and checks it: the decoded reply is
//! `"Hello world!"` and the trailers carry `grpc-status: 0` (row 0 checks the frame's length,
//! rows 1 and 2 the decoded request and the encoded reply), and the pending row checks its response future was really
//! pending. Then, after a few warm-up requests, one request per row is served with the counting
//! allocator of `tests/support/alloc.rs` on, on this thread (which is also the thread `block_on`
//! runs the pending and tonic futures on), and a line like
//! `generated_unary_fast: 6 allocations, 123 bytes per request` is printed. Bytes are what the
//! allocator was asked for (a `realloc` counts its new size), not what stays live. The counting
//! allocator stays installed while timing; when not counting it costs a thread-local read per
//! allocation, on both sides.
//!
//! Run: `cargo bench --bench unary` (about 30 s: warm-up 1 s, measurement 3 s, 50 samples per
//! row).
//!
//! Instruction counts: with `FASTGRPC_BENCH_ITERS=N` in the environment the binary skips
//! criterion and serves `N` requests through the row named by `ROW` (after one checked
//! request), then prints the allocation line for that row. Run it under callgrind for two `N` and
//! take the difference, so one-time costs cancel:
//!
//! ```text
//! cargo bench --bench unary --no-run   # prints the path of target/release/deps/unary-<hash>
//! FASTGRPC_BENCH_ITERS=1000 ROW=tonic_unary valgrind --tool=callgrind \
//!     --callgrind-out-file=/tmp/cg.1000 target/release/deps/unary-<hash>
//! FASTGRPC_BENCH_ITERS=2000 ROW=tonic_unary valgrind --tool=callgrind \
//!     --callgrind-out-file=/tmp/cg.2000 target/release/deps/unary-<hash>
//! # instructions per request: (Ir(2000) - Ir(1000)) / 1000, Ir from each run's "Collected" line
//! ```
//!
//! That difference includes building each request. To count only what the timed rows time,
//! add `--toggle-collect='*Case>::serve'` (every row's serving step is a non-inlined
//! `Case::serve`).

#[path = "../tests/support/alloc.rs"]
mod alloc;

use std::convert::Infallible;
use std::hint::black_box;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use criterion::{BatchSize, Criterion};
use fastgrpc::internals::codec::{self, DEFAULT_MAX_RECEIVE_MESSAGE_SIZE, Format};
use fastgrpc::service::FastService;
use fastgrpc::service::RequestBody;
use fastgrpc::{FastFuture, Request, Response, RpcFuture, Status};
use http::HeaderMap;
use prost::Message;
use tonic::codegen::Service;

#[global_allocator]
static ALLOCATOR: alloc::CountingAllocator = alloc::CountingAllocator;

use protos::helloworld as pb;
use protos::tonic_pb::helloworld as tonic_pb;

const PATH: &str = "/helloworld.Greeter/SayHello";

/// `HelloRequest { name: "world" }` as one uncompressed gRPC frame (checked in `main`).
const FRAME: &[u8] = b"\x00\x00\x00\x00\x07\x0a\x05world";

/// The handler logic every row shares.
fn greeting(name: &str) -> String {
    format!("Hello {name}!")
}

struct FastGreeter;

impl pb::greeter_server::Greeter for FastGreeter {
    fn say_hello(&self, request: Request<pb::HelloRequest>) -> impl RpcFuture<pb::HelloReply> {
        let message = greeting(&request.into_inner().name);
        FastFuture::ok(Response::new(pb::HelloReply { message }))
    }
}

struct AsyncGreeter;

impl pb::greeter_server::Greeter for AsyncGreeter {
    async fn say_hello(
        &self,
        request: Request<pb::HelloRequest>,
    ) -> Result<Response<pb::HelloReply>, Status> {
        let message = greeting(&request.into_inner().name);
        Ok(Response::new(pb::HelloReply { message }))
    }
}

struct PendingGreeter;

impl pb::greeter_server::Greeter for PendingGreeter {
    async fn say_hello(
        &self,
        request: Request<pb::HelloRequest>,
    ) -> Result<Response<pb::HelloReply>, Status> {
        tokio::task::yield_now().await;
        let message = greeting(&request.into_inner().name);
        Ok(Response::new(pb::HelloReply { message }))
    }
}

struct TonicGreeter;

#[tonic::async_trait]
impl tonic_pb::greeter_server::Greeter for TonicGreeter {
    async fn say_hello(
        &self,
        request: Request<tonic_pb::HelloRequest>,
    ) -> Result<Response<tonic_pb::HelloReply>, Status> {
        let message = greeting(&request.into_inner().name);
        Ok(Response::new(tonic_pb::HelloReply { message }))
    }
}

/// A collected response: the one message frame and the trailers.
struct Reply {
    frame: Bytes,
    trailers: HeaderMap,
}

impl Reply {
    fn check(&self) {
        let reply = pb::HelloReply::decode(self.frame.slice(codec::FRAME_HEADER_LEN..))
            .expect("the reply frame decodes");
        assert_eq!(reply.message, "Hello world!");
        assert_eq!(
            self.trailers.get("grpc-status").map(|v| v.as_bytes()),
            Some(&b"0"[..]),
            "trailers: {:?}",
            self.trailers
        );
    }
}

/// Polls `body` with a no-op waker until its trailers; it must never be pending and must hold
/// exactly one data frame.
fn collect<B>(body: B) -> Reply
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    let mut body = std::pin::pin!(body);
    let mut cx = Context::from_waker(Waker::noop());
    let mut frame = None;
    loop {
        match body.as_mut().poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(next))) => match next.into_data() {
                Ok(data) => {
                    assert!(frame.is_none(), "a second data frame");
                    frame = Some(data);
                }
                Err(next) => {
                    return Reply {
                        frame: frame.expect("a data frame before the trailers"),
                        trailers: next.into_trailers().expect("data or trailers"),
                    };
                }
            },
            other => panic!("unexpected body state {other:?}"),
        }
    }
}

fn fast_request() -> http::Request<RequestBody> {
    http::Request::post(PATH)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(RequestBody::whole(Bytes::from_static(FRAME)))
        .unwrap()
}

fn tonic_request() -> http::Request<tonic::body::Body> {
    http::Request::post(PATH)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(tonic::body::Body::new(http_body_util::Full::new(
            Bytes::from_static(FRAME),
        )))
        .unwrap()
}

fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// One row: an input built outside the timing, and the serving step that is timed.
trait Case {
    const NAME: &'static str;
    type Input;
    type Output;

    fn setup() -> Self::Input;
    fn serve(&mut self, input: Self::Input) -> Self::Output;
    /// Panics unless `output` is the right answer.
    fn check(output: &Self::Output);
}

/// Row 0: encoding a reply frame only. The frame is dropped inside the timing (h2 drops it once
/// written); the message is handed back, so freeing its string is not timed.
struct EncodeReply;

impl Case for EncodeReply {
    const NAME: &'static str = "encode_reply";
    type Input = pb::HelloReply;
    type Output = (pb::HelloReply, Result<usize, Status>);

    fn setup() -> pb::HelloReply {
        pb::HelloReply {
            message: greeting("world"),
        }
    }

    #[inline(never)]
    fn serve(&mut self, reply: pb::HelloReply) -> Self::Output {
        let len = codec::encode(&reply).map(|frame| frame.len());
        (reply, len)
    }

    fn check((reply, len): &Self::Output) {
        assert_eq!(*len.as_ref().unwrap(), 5 + reply.encoded_len());
    }
}

/// Row 1: decoding only.
struct UnmarshalStrict;

impl Case for UnmarshalStrict {
    const NAME: &'static str = "unmarshal_strict";
    type Input = Bytes;
    type Output = Result<pb::HelloRequest, Status>;

    fn setup() -> Bytes {
        Bytes::from_static(FRAME)
    }

    #[inline(never)]
    fn serve(&mut self, body: Bytes) -> Self::Output {
        codec::decode_unary::<pb::HelloRequest>(
            body,
            DEFAULT_MAX_RECEIVE_MESSAGE_SIZE,
            None,
            Format::Proto,
        )
    }

    fn check(output: &Self::Output) {
        assert_eq!(output.as_ref().unwrap().name, "world");
    }
}

/// Row 2: decode, reply, encode and recover as a `FastFuture` chain built by hand.
struct UnmarshalStrictChained;

impl Case for UnmarshalStrictChained {
    const NAME: &'static str = "unmarshal_strict_chained";
    type Input = Bytes;
    type Output = Result<Bytes, Status>;

    fn setup() -> Bytes {
        Bytes::from_static(FRAME)
    }

    #[inline(never)]
    fn serve(&mut self, body: Bytes) -> Self::Output {
        let ready = FastFuture::ready(codec::decode_unary::<pb::HelloRequest>(
            body,
            DEFAULT_MAX_RECEIVE_MESSAGE_SIZE,
            None,
            Format::Proto,
        ))
        .and_then(|request| {
            FastFuture::ok(pb::HelloReply {
                message: greeting(&request.name),
            })
        })
        .map(|reply| codec::encode(&reply))
        // The handler turns a failure into a trailers-only response; here it stays a value.
        .recover(Err)
        .into_ready();
        let Ok(result) = ready.expect("every step is ready");
        result
    }

    fn check(output: &Self::Output) {
        let frame = output.as_ref().unwrap();
        let reply = pb::HelloReply::decode(frame.slice(codec::FRAME_HEADER_LEN..)).unwrap();
        assert_eq!(reply.message, "Hello world!");
    }
}

/// Rows 3, 4 and 6 to 8: a service whose answer is ready at once, called through
/// `FastService::call`. They differ only in the service: the generated server alone (with a
/// `FastFuture` or an `async fn` handler), or behind the server's whole dispatch, bare or with
/// middleware that lets every call through (to price the middleware itself).
struct Ready<K: ReadyRow> {
    service: K::Service,
}

/// What a [`Ready`] row calls.
trait ReadyRow {
    const NAME: &'static str;
    type Service: FastService;
    fn service() -> Self::Service;
}

/// Row 3.
struct GeneratedFast;
/// Row 4.
struct GeneratedAsync;
/// Row 6.
struct RoutesFast;
/// Row 7.
struct RoutesIntercepted;
/// Row 8.
struct RoutesLayered;

/// The rows' services keep the default, adaptive inline, with a limit so high that no call is
/// ever moved to a task: under callgrind every call runs some 50 times slower and would
/// otherwise be (rightly) judged heavy. The instructions are those of the default path.
const NEVER_HEAVY: Duration = Duration::from_secs(3600);

fn pass(request: Request<()>) -> Result<Request<()>, Status> {
    Ok(request)
}

impl ReadyRow for GeneratedFast {
    const NAME: &'static str = "generated_unary_fast";
    type Service = pb::greeter_server::GreeterServer<FastGreeter>;
    fn service() -> Self::Service {
        pb::greeter_server::GreeterServer::new(FastGreeter).inline_cost_limit(NEVER_HEAVY)
    }
}

impl ReadyRow for GeneratedAsync {
    const NAME: &'static str = "generated_unary_async";
    type Service = pb::greeter_server::GreeterServer<AsyncGreeter>;
    fn service() -> Self::Service {
        pb::greeter_server::GreeterServer::new(AsyncGreeter).inline_cost_limit(NEVER_HEAVY)
    }
}

impl ReadyRow for RoutesFast {
    const NAME: &'static str = "routes_fast";
    type Service = fastgrpc::service::Dispatcher;
    fn service() -> Self::Service {
        fastgrpc::Server::builder()
            .add_service(GeneratedFast::service())
            .into_dispatcher()
    }
}

impl ReadyRow for RoutesIntercepted {
    const NAME: &'static str = "routes_intercepted";
    type Service = fastgrpc::service::Dispatcher;
    fn service() -> Self::Service {
        fastgrpc::Server::builder()
            .add_service(fastgrpc::service::Intercepted::new(
                GeneratedFast::service(),
                pass,
            ))
            .into_dispatcher()
    }
}

impl ReadyRow for RoutesLayered {
    const NAME: &'static str = "routes_layered";
    type Service = fastgrpc::service::Dispatcher;
    fn service() -> Self::Service {
        fastgrpc::Server::builder()
            .layer(tower_layer::Identity::new())
            .add_service(GeneratedFast::service())
            .into_dispatcher()
    }
}

impl<K: ReadyRow> Ready<K> {
    fn new() -> Self {
        Ready {
            service: K::service(),
        }
    }
}

impl<K: ReadyRow> Case for Ready<K> {
    const NAME: &'static str = K::NAME;
    type Input = http::Request<RequestBody>;
    type Output = Reply;

    fn setup() -> Self::Input {
        fast_request()
    }

    #[inline(never)]
    fn serve(&mut self, request: Self::Input) -> Reply {
        let response = FastService::call(&self.service, request)
            .into_ready()
            .expect("a strict call to a ready handler is ready");
        let Ok(response) = response;
        collect(response.into_body())
    }

    fn check(output: &Reply) {
        output.check();
    }
}

/// Row 5: our generated server with a handler that waits once.
struct GeneratedPending {
    server: pb::greeter_server::GreeterServer<PendingGreeter>,
    runtime: tokio::runtime::Runtime,
}

impl Case for GeneratedPending {
    const NAME: &'static str = "generated_unary_pending";
    type Input = http::Request<RequestBody>;
    /// The reply, and whether the response future was pending.
    type Output = (Reply, bool);

    fn setup() -> Self::Input {
        fast_request()
    }

    #[inline(never)]
    fn serve(&mut self, request: Self::Input) -> Self::Output {
        let response = FastService::call(&self.server, request);
        let pending = !response.is_ready();
        let Ok(response) = self.runtime.block_on(response);
        (collect(response.into_body()), pending)
    }

    fn check((reply, pending): &Self::Output) {
        assert!(
            *pending,
            "the handler waits, so the response future is pending"
        );
        reply.check();
    }
}

/// Row 6: tonic's generated server as a `tower::Service`.
struct TonicUnary {
    server: tonic_pb::greeter_server::GreeterServer<TonicGreeter>,
    runtime: tokio::runtime::Runtime,
}

impl Case for TonicUnary {
    const NAME: &'static str = "tonic_unary";
    type Input = http::Request<tonic::body::Body>;
    type Output = Reply;

    fn setup() -> Self::Input {
        tonic_request()
    }

    #[inline(never)]
    fn serve(&mut self, request: Self::Input) -> Reply {
        let mut cx = Context::from_waker(Waker::noop());
        let ready = Service::<Self::Input>::poll_ready(&mut self.server, &mut cx);
        assert!(matches!(ready, Poll::Ready(Ok(()))));
        let response: Result<_, Infallible> = self.runtime.block_on(self.server.call(request));
        let Ok(response) = response;
        collect(response.into_body())
    }

    fn check(output: &Reply) {
        output.check();
    }
}

/// Serves and checks one request, then prints the allocations of one warmed-up request.
fn check_and_count<C: Case>(case: &mut C) {
    C::check(&case.serve(C::setup()));
    for _ in 0..10 {
        black_box(case.serve(C::setup()));
    }
    let input = C::setup();
    let (output, allocations, bytes) = alloc::count_allocations_and_bytes(|| case.serve(input));
    C::check(&output);
    println!(
        "{}: {allocations} allocations, {bytes} bytes per request",
        C::NAME
    );
}

fn bench_case<C: Case>(c: &mut Criterion, case: &mut C) {
    c.bench_function(C::NAME, |b| {
        b.iter_batched(C::setup, |input| case.serve(input), BatchSize::SmallInput)
    });
}

/// `FASTGRPC_BENCH_ITERS` mode: one checked request, then `iterations` more.
fn iterate<C: Case>(case: &mut C, iterations: u64) {
    C::check(&case.serve(C::setup()));
    for _ in 0..iterations {
        let input = C::setup();
        drop(black_box(case.serve(black_box(input))));
    }
    check_and_count(case);
}

struct Cases {
    encode: EncodeReply,
    unmarshal: UnmarshalStrict,
    chained: UnmarshalStrictChained,
    fast: Ready<GeneratedFast>,
    async_fn: Ready<GeneratedAsync>,
    pending: GeneratedPending,
    routed: Ready<RoutesFast>,
    intercepted: Ready<RoutesIntercepted>,
    layered: Ready<RoutesLayered>,
    tonic: TonicUnary,
}

impl Cases {
    fn new() -> Self {
        Cases {
            encode: EncodeReply,
            unmarshal: UnmarshalStrict,
            chained: UnmarshalStrictChained,
            fast: Ready::new(),
            async_fn: Ready::new(),
            pending: GeneratedPending {
                server: pb::greeter_server::GreeterServer::new(PendingGreeter),
                runtime: current_thread_runtime(),
            },
            routed: Ready::new(),
            intercepted: Ready::new(),
            layered: Ready::new(),
            tonic: TonicUnary {
                server: tonic_pb::greeter_server::GreeterServer::new(TonicGreeter),
                runtime: current_thread_runtime(),
            },
        }
    }
}

fn main() {
    let expected = codec::encode(&pb::HelloRequest {
        name: "world".into(),
    })
    .unwrap();
    assert_eq!(expected, FRAME, "FRAME is the encoded request");

    let mut cases = Cases::new();

    if let Ok(iterations) = std::env::var("FASTGRPC_BENCH_ITERS") {
        let iterations: u64 = iterations
            .parse()
            .expect("FASTGRPC_BENCH_ITERS is a number");
        let row = std::env::var("ROW").unwrap_or_default();
        match row.as_str() {
            EncodeReply::NAME => iterate(&mut cases.encode, iterations),
            UnmarshalStrict::NAME => iterate(&mut cases.unmarshal, iterations),
            UnmarshalStrictChained::NAME => iterate(&mut cases.chained, iterations),
            GeneratedFast::NAME => iterate(&mut cases.fast, iterations),
            GeneratedAsync::NAME => iterate(&mut cases.async_fn, iterations),
            GeneratedPending::NAME => iterate(&mut cases.pending, iterations),
            RoutesFast::NAME => iterate(&mut cases.routed, iterations),
            RoutesIntercepted::NAME => iterate(&mut cases.intercepted, iterations),
            RoutesLayered::NAME => iterate(&mut cases.layered, iterations),
            TonicUnary::NAME => iterate(&mut cases.tonic, iterations),
            other => panic!(
                "ROW={other:?}: expected one of encode_reply, unmarshal_strict, \
                 unmarshal_strict_chained, \
                 generated_unary_fast, generated_unary_async, generated_unary_pending, \
                 routes_fast, routes_intercepted, routes_layered, tonic_unary"
            ),
        }
        return;
    }

    check_and_count(&mut cases.encode);
    check_and_count(&mut cases.unmarshal);
    check_and_count(&mut cases.chained);
    check_and_count(&mut cases.fast);
    check_and_count(&mut cases.async_fn);
    check_and_count(&mut cases.pending);
    check_and_count(&mut cases.routed);
    check_and_count(&mut cases.intercepted);
    check_and_count(&mut cases.layered);
    check_and_count(&mut cases.tonic);

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
        .configure_from_args();
    bench_case(&mut criterion, &mut cases.encode);
    bench_case(&mut criterion, &mut cases.unmarshal);
    bench_case(&mut criterion, &mut cases.chained);
    bench_case(&mut criterion, &mut cases.fast);
    bench_case(&mut criterion, &mut cases.async_fn);
    bench_case(&mut criterion, &mut cases.pending);
    bench_case(&mut criterion, &mut cases.routed);
    bench_case(&mut criterion, &mut cases.intercepted);
    bench_case(&mut criterion, &mut cases.layered);
    bench_case(&mut criterion, &mut cases.tonic);
    criterion.final_summary();
}
