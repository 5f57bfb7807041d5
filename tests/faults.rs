//! Faults, in handlers and clients, each checked three ways: the client that still listens gets
//! the right status, nothing is left behind (the server's task and connection counts return to
//! zero, and live heap memory stays flat over many rounds), and the server keeps serving.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use fastgrpc::service::{FastService, ForTonic};
use fastgrpc::transport::ServerStats;
use fastgrpc::{Code, FastFuture, Request, Response, RpcFuture, Server, Status};
use futures_util::StreamExt;
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{Payload, StreamingOutputCallRequest, StreamingOutputCallResponse};
use support::pb::helloworld::greeter_server::{Greeter, GreeterServer};
use support::pb::helloworld::{HelloReply, HelloRequest};
use support::tonic_pb::grpc_testing as client_testing;
use support::tonic_pb::grpc_testing::test_service_client::TestServiceClient;
use support::tonic_pb::helloworld::greeter_client::GreeterClient;
use support::{TestServer, channel, hello, until, until_shown};

/// Counts the bytes and the allocations live on the heap, over all threads.
struct LiveBytes;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static LIVE_ALLOCATIONS: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System`; the counter is a plain atomic.
unsafe impl GlobalAlloc for LiveBytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        LIVE_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        LIVE_ALLOCATIONS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LiveBytes = LiveBytes;

const PANIC: &str = "the handler was asked to panic";

/// Hundreds of panics are expected here: keep them out of the output, but not others.
fn quiet_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&PANIC) {
                default_hook(info);
            }
        }));
    });
}

/// Handlers that hang: how many started, and how many the server dropped since.
static HANGS_STARTED: AtomicUsize = AtomicUsize::new(0);
static HANGS_DROPPED: AtomicUsize = AtomicUsize::new(0);

/// Counts a hanging handler from its start until the server drops it.
struct Hanging;

impl Hanging {
    fn start() -> Hanging {
        HANGS_STARTED.fetch_add(1, Ordering::SeqCst);
        Hanging
    }
}

impl Drop for Hanging {
    fn drop(&mut self) {
        HANGS_DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

/// `panic` panics, `hang` never answers, `error` fails, anything else is greeted.
struct Faulty;

impl Greeter for Faulty {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        match request.into_inner().name.as_str() {
            "panic" => std::panic::panic_any(PANIC),
            "hang" => {
                let _hanging = Hanging::start();
                std::future::pending().await
            }
            "error" => Err(Status::failed_precondition("asked to fail")),
            name => Ok(Response::new(HelloReply {
                message: format!("Hello {name}!"),
            })),
        }
    }
}

/// Two replies, then: an error (`response_status` set), a panic in the stream (`payload` set),
/// or the end of a stream whose producer went away (the sender of a channel dropped mid-way).
struct FaultyStreams;

impl TestService for FaultyStreams {
    support::boxed_reply_streams!();

    fn streaming_output_call(
        &self,
        request: Request<StreamingOutputCallRequest>,
    ) -> impl RpcFuture<Self::StreamingOutputCallStream> {
        let request = request.into_inner();
        if request.payload.is_some() {
            let replies = futures_util::stream::iter(0..3).map(|n| {
                if n == 2 {
                    std::panic::panic_any(PANIC);
                }
                Ok(StreamingOutputCallResponse {
                    payload: Some(Payload::default()),
                })
            });
            return FastFuture::ok(Response::new(replies.boxed()));
        }
        let fail = request.response_status.is_some();
        let (replies, stream) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            for _ in 0..2 {
                let reply = StreamingOutputCallResponse {
                    payload: Some(Payload::default()),
                };
                let _ = replies.send(Ok(reply)).await;
                tokio::task::yield_now().await;
            }
            if fail {
                let _ = replies
                    .send(Err(Status::aborted("failed mid-stream")))
                    .await;
            }
            // Dropping `replies` here ends the stream.
        });
        let stream = tokio_stream::wrappers::ReceiverStream::new(stream);
        FastFuture::ok(Response::new(stream.boxed()))
    }
}

/// Waits (bounded) until the server holds no task finishing a call and `connections`
/// connections.
async fn settles(stats: &ServerStats, connections: usize) {
    until_shown(
        || {
            format!(
                "{} call tasks and {} connections, {connections} expected",
                stats.call_tasks(),
                stats.connections()
            )
        },
        || stats.call_tasks() == 0 && stats.connections() == connections,
    )
    .await;
}

/// One round of every fault; checks each status.
async fn faults_round(server: &TestServer, channel: &tonic::transport::Channel) {
    let mut greeter = GreeterClient::new(channel.clone());

    let panicked = greeter.say_hello(hello("panic")).await.unwrap_err();
    assert_eq!(panicked.code(), Code::Internal, "{panicked:?}");

    let failed = greeter.say_hello(hello("error")).await.unwrap_err();
    assert_eq!(failed.code(), Code::FailedPrecondition);

    // tonic's client would race the deadline with a timer of its own: send the header raw.
    let hung = support::raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/SayHello",
        &[("content-type", "application/grpc"), ("grpc-timeout", "5m")],
        support::frame(&prost::Message::encode_to_vec(&HelloRequest {
            name: "hang".into(),
        })),
    )
    .await;
    assert_eq!(hung.grpc_status(), Some("4"), "{hung:?}");

    let mut streams = TestServiceClient::new(channel.clone());
    let failing = client_testing::StreamingOutputCallRequest {
        response_status: Some(client_testing::EchoStatus::default()),
        ..Default::default()
    };
    let replies: Vec<_> = streams
        .streaming_output_call(failing)
        .await
        .unwrap()
        .into_inner()
        .collect()
        .await;
    assert_eq!(replies.len(), 3);
    assert_eq!(replies[2].as_ref().unwrap_err().code(), Code::Aborted);

    let ended: Vec<_> = streams
        .streaming_output_call(client_testing::StreamingOutputCallRequest::default())
        .await
        .unwrap()
        .into_inner()
        .collect()
        .await;
    assert_eq!(ended.len(), 2);
    assert!(ended.iter().all(Result::is_ok));

    // A client that goes away mid-call: its connection closes under a hanging handler, which
    // the server then drops.
    let started = HANGS_STARTED.load(Ordering::SeqCst);
    let gone = channel_to(server).await;
    let call = tokio::spawn(async move { GreeterClient::new(gone).say_hello(hello("hang")).await });
    until("the hanging handler runs", || {
        HANGS_STARTED.load(Ordering::SeqCst) > started
    })
    .await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    until("the server drops every hanging handler", || {
        HANGS_DROPPED.load(Ordering::SeqCst) == HANGS_STARTED.load(Ordering::SeqCst)
    })
    .await;
}

async fn channel_to(server: &TestServer) -> tonic::transport::Channel {
    channel(server).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_leave_no_task_connection_or_memory_behind_and_the_server_serves_on() {
    quiet_expected_panics();
    let builder = Server::builder()
        .add_service(GreeterServer::new(Faulty))
        .add_service(TestServiceServer::new(FaultyStreams));
    let stats = builder.stats();
    let server = TestServer::start(builder).await;
    let channel = channel(&server).await;

    // Warm up: first-use allocations (pools, caches, thread-locals) are not leaks.
    for _ in 0..20 {
        faults_round(&server, &channel).await;
    }
    settles(&stats, 1).await;

    // A leak grows with the calls; buffers and caches filling do not. What is live after a
    // round moves by whole read buffers: a 32 KiB buffer (a connection's, on one side or the
    // other of the loopback) is live after about half the rounds, and after a few rounds two
    // are, or none. So bytes and allocations are sampled after every round of three batches,
    // and each batch is summed up by what its samples show most often.
    // - Allocations: a buffer is one of them, so a batch's median count moves by a few at
    //   most. A leak of one allocation in every fourth call grows it by more than the bound.
    // - Bytes, for a collection that grows without allocating more often (a table that never
    //   forgets a stream): the least live of a batch. Buffers move it by 32 KiB between
    //   batches (seen in most runs), by two buffers at worst; the bound is three.
    const ROUNDS: usize = 100;
    let mut batches = Vec::new();
    for _ in 0..3 {
        let mut bytes = Vec::with_capacity(ROUNDS);
        let mut allocations = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            faults_round(&server, &channel).await;
            settles(&stats, 1).await;
            bytes.push(LIVE.load(Ordering::Relaxed));
            allocations.push(LIVE_ALLOCATIONS.load(Ordering::Relaxed));
        }
        allocations.sort_unstable();
        let least_bytes = *bytes.iter().min().unwrap();
        batches.push((allocations[ROUNDS / 2], least_bytes));
    }
    let (first, last) = (batches[0], batches[2]);
    let calls = 7 * ROUNDS as isize * 2;
    assert!(
        last.0 - first.0 < calls / 4,
        "live allocations grew by {} over {calls} calls (median per batch): {batches:?}",
        last.0 - first.0
    );
    assert!(
        last.1 - first.1 < 96 * 1024,
        "live heap grew by {} bytes over {calls} calls (least per batch): {batches:?}",
        last.1 - first.1
    );

    let reply = GreeterClient::new(channel.clone())
        .say_hello(hello("after"))
        .await
        .unwrap();
    assert_eq!(reply.get_ref().message, "Hello after!");
    drop(channel);
    server.stop().await;
    assert_eq!((stats.connections(), stats.call_tasks()), (0, 0));
}

/// Calls `SayHello("panic")` and then `SayHello("after")` three times over `channel`: each
/// panic must end its own call with INTERNAL, and the next call must be served.
async fn panics_end_only_their_calls(channel: tonic::transport::Channel) {
    let mut greeter = GreeterClient::new(channel);
    for _ in 0..3 {
        let panicked = greeter.say_hello(hello("panic")).await.unwrap_err();
        assert_eq!(panicked.code(), Code::Internal, "{panicked:?}");
        let reply = greeter.say_hello(hello("after")).await.unwrap();
        assert_eq!(reply.get_ref().message, "Hello after!");
    }
}

#[tokio::test]
async fn a_panic_behind_a_buffer_layer_ends_only_its_call() {
    // Buffer calls the service from its worker task: a panic escaping `call` would kill the
    // worker and every later call with it.
    quiet_expected_panics();
    let server = TestServer::start(Server::builder().add_layered_service(
        GreeterServer::new(Faulty),
        tower::buffer::BufferLayer::new(16),
    ))
    .await;
    panics_end_only_their_calls(channel(&server).await).await;
    server.stop().await;
}

#[tokio::test]
async fn a_panic_in_a_service_mounted_in_tonic_ends_only_its_call() {
    quiet_expected_panics();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let tonic_server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(ForTonic::new(GreeterServer::new(Faulty)))
            .add_service(ForTonic::new(TestServiceServer::new(FaultyStreams)))
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                async {
                    let _ = stopped.await;
                },
            ),
    );
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    panics_end_only_their_calls(channel.clone()).await;
    // A reply stream that panics after two replies: they arrive, then INTERNAL.
    let panicking = client_testing::StreamingOutputCallRequest {
        payload: Some(client_testing::Payload::default()),
        ..Default::default()
    };
    let replies: Vec<_> = TestServiceClient::new(channel)
        .streaming_output_call(panicking)
        .await
        .unwrap()
        .into_inner()
        .collect()
        .await;
    assert_eq!(replies.len(), 3, "{replies:?}");
    let ended = replies[2].as_ref().unwrap_err();
    assert_eq!(
        (ended.code(), ended.message()),
        (Code::Internal, "the handler panicked")
    );
    let _ = stop.send(());
    tonic_server.await.unwrap().unwrap();
}

#[test]
fn a_panic_through_into_dispatcher_is_an_internal_answer() {
    quiet_expected_panics();
    let dispatcher = Server::builder()
        .add_service(GreeterServer::new(Faulty))
        .into_dispatcher();
    let message = prost::Message::encode_to_vec(&HelloRequest {
        name: "panic".into(),
    });
    let request = http::Request::post("/helloworld.Greeter/SayHello")
        .header("content-type", "application/grpc")
        .body(fastgrpc::service::RequestBody::whole(support::frame(
            &message,
        )))
        .unwrap();
    let response = dispatcher
        .call(request)
        .into_ready()
        .expect("answered at once")
        .unwrap();
    assert_eq!(response.headers()["grpc-status"], "13");
}
