//! Inline execution that never loses to spawning: a batch of slow calls answers as it goes and
//! lets other connections in, methods that compute for long move to spawned tasks (and come
//! back when cheap), deadlines hold for inline calls, and reset streams are not served.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fastgrpc::transport::ServerStats;
use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server, Status};
use prost::Message;
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{Empty, SimpleRequest, SimpleResponse};
use support::{TestServer, frame, grpc_post, raw_frames, until};
use tokio::io::AsyncWriteExt;

const UNARY: &str = "/grpc.testing.TestService/UnaryCall";
const EMPTY: &str = "/grpc.testing.TestService/EmptyCall";

/// `UnaryCall` computes for `response_size` microseconds (or, with `fill_username`, waits
/// 1 ms on a timer) and counts its runs; `EmptyCall` answers at once.
#[derive(Clone, Default)]
struct Work {
    runs: Arc<AtomicUsize>,
}

impl TestService for Work {
    support::boxed_reply_streams!();

    async fn unary_call(
        &self,
        request: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let request = request.into_inner();
        if request.fill_username {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        busy_for(Duration::from_micros(request.response_size as u64));
        Ok(Response::new(SimpleResponse::default()))
    }

    fn empty_call(&self, _request: Request<Empty>) -> impl RpcFuture<Empty> {
        FastFuture::ok(Response::new(Empty {}))
    }
}

impl Work {
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

/// Computes, without sleeping or yielding, for `duration`.
fn busy_for(duration: Duration) {
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
}

fn work(micros: i32) -> Bytes {
    frame(
        &SimpleRequest {
            response_size: micros,
            ..Default::default()
        }
        .encode_to_vec(),
    )
}

fn waiting() -> Bytes {
    frame(
        &SimpleRequest {
            fill_username: true,
            ..Default::default()
        }
        .encode_to_vec(),
    )
}

/// One answer: its `grpc-status` and when it arrived, counted from when the calls were sent.
type Answer = (String, Duration);

/// These tests time calls that compute: run alone, they do not slow each other down.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Sends `count` calls to `path` with `body` (and `headers`) at once on one new connection;
/// gives the answers in the order they were sent.
///
/// Every request is queued before the client's connection first runs, so its first write
/// carries them all, each body with its headers: the server sees complete requests, as it does
/// from a busy client.
async fn pipelined(
    server: &TestServer,
    path: &str,
    body: Bytes,
    headers: &[(&'static str, &'static str)],
    count: usize,
) -> Vec<Answer> {
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut client, connection) = h2::client::Builder::new()
        .initial_window_size(1 << 20)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    let sent = Instant::now();
    let mut responses = Vec::new();
    for _ in 0..count {
        let mut request = grpc_post(server, path);
        for (name, value) in headers {
            request
                .headers_mut()
                .insert(*name, http::HeaderValue::from_static(value));
        }
        let (response, mut send) = client.send_request(request, false).unwrap();
        send.send_data(body.clone(), true).unwrap();
        responses.push(response);
    }
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let answers = responses.into_iter().map(|response| async move {
        let (parts, mut body) = response.await.unwrap().into_parts();
        while let Some(chunk) = body.data().await {
            let _ = body.flow_control().release_capacity(chunk.unwrap().len());
        }
        let trailers = body.trailers().await.unwrap().unwrap_or_default();
        let status = trailers
            .get("grpc-status")
            .or_else(|| parts.headers.get("grpc-status"))
            .map_or("none", |status| status.to_str().unwrap())
            .to_owned();
        (status, sent.elapsed())
    });
    tokio::time::timeout(
        Duration::from_secs(30),
        futures_util::future::join_all(answers),
    )
    .await
    .expect("every answer within 30 s")
}

/// A server hosting `Work`, and its counts. Calls start inline whatever they cost: what these tests check is how a call that is ready,
/// or waits, is carried, not the cost estimate, which on a loaded machine can spawn a light
/// call (two preempted calls in a row; seen once in 40 runs).
async fn work_server() -> (TestServer, ServerStats) {
    let builder =
        Server::builder().add_service(TestServiceServer::new(Work::default()).run_inline(true));
    let stats = builder.stats();
    (TestServer::start(builder).await, stats)
}

/// One call to `path` with `body` on a new connection; it must succeed.
async fn call_ok(server: &TestServer, path: &str, body: Bytes) {
    let answer = pipelined(server, path, body, &[], 1).await;
    assert_eq!(answer[0].0, "0", "{path}: {answer:?}");
}

fn arrival_range(answers: &[Answer]) -> (Duration, Duration) {
    let first = answers.iter().map(|(_, at)| *at).min().unwrap();
    let last = answers.iter().map(|(_, at)| *at).max().unwrap();
    (first, last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_slow_inline_calls_answers_as_it_goes() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let service = Work::default();
    let server = TestServer::start(
        Server::builder().add_service(TestServiceServer::new(service.clone()).run_inline(true)),
    )
    .await;
    // 24 calls of 3 ms each, all inline on one connection: 72 ms of work in one batch.
    let answers = pipelined(&server, UNARY, work(3_000), &[], 24).await;
    assert!(
        answers.iter().all(|(status, _)| status == "0"),
        "{answers:?}"
    );
    let (first, last) = arrival_range(&answers);
    // Without a budget the first answer leaves with the last, after the whole batch.
    assert!(
        first < last / 4,
        "first answer after {first:?}, last after {last:?}"
    );
    assert_eq!(service.runs(), 24);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_connection_running_slow_inline_calls_lets_other_connections_in() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let service = Work::default();
    let server = Arc::new(
        TestServer::start(
            Server::builder().add_service(TestServiceServer::new(service.clone()).run_inline(true)),
        )
        .await,
    );
    let busy = tokio::spawn({
        let server = Arc::clone(&server);
        async move { pipelined(&server, UNARY, work(3_000), &[], 24).await }
    });
    until("the busy connection's first call runs", || {
        service.runs() > 0
    })
    .await;
    // The same worker serves the busy connection and this one.
    let light = pipelined(&server, EMPTY, Bytes::from_static(&[0; 5]), &[], 1).await;
    let busy = busy.await.unwrap();
    assert_eq!(light[0].0, "0");
    let (_, busy_last) = arrival_range(&busy);
    assert!(
        light[0].1 < busy_last / 3,
        "the light call took {:?}; the busy connection's batch {busy_last:?}",
        light[0].1
    );
    Arc::into_inner(server).unwrap().stop().await;
}

/// On fastgrpc's engine, which reads all a socket has before it starts a call: the h2 engine
/// starts a call whose DATA came in a later segment than its HEADERS in a task (to wait for
/// the body), which on a loaded machine spawns some light calls for a reason that is not
/// adaptive inline's (seen: 7 of 20, in 3 runs of 6, on the h2 engine since before this test
/// was pinned). The limit sits far from both kinds of call (2 ms heavy, a few µs light), and
/// low enough that two heavy calls still cross it (a first long call counts as the limit, the
/// second in full: 250/8 + (2000 - 31)/8 > 250). With
/// the default 25 µs, two light calls in a row preempted on a loaded machine (a debug build,
/// the method's first calls cold) measured over it once in CI and the second light call was
/// spawned. The default's two-strike rule has its own unit tests in `handler::adaptive`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_that_computes_for_long_is_spawned_and_a_light_one_stays_inline() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let builder = Server::builder().add_service(
        TestServiceServer::new(Work::default()).inline_cost_limit(Duration::from_micros(250)),
    );
    let stats = builder.stats();
    let server = TestServer::start(builder).await;

    for _ in 0..10 {
        call_ok(&server, UNARY, work(2_000)).await;
    }
    let heavy_spawned = stats.call_tasks_spawned();
    // The first two calls teach the server what the method costs; at most they run inline.
    assert!(
        heavy_spawned >= 8,
        "{heavy_spawned} of 10 heavy calls spawned"
    );

    for _ in 0..20 {
        call_ok(&server, EMPTY, Bytes::from_static(&[0; 5])).await;
    }
    assert_eq!(
        stats.call_tasks_spawned(),
        heavy_spawned,
        "light calls stayed inline"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_that_became_cheap_comes_back_inline() {
    let _alone = ONE_AT_A_TIME.lock().await;
    // A limit far from both kinds of call (2 ms heavy, a few µs cheap): with the default 25 µs,
    // a cheap call preempted on a loaded machine could measure over it and be spawned.
    let builder = Server::builder().add_service(
        TestServiceServer::new(Work::default()).inline_cost_limit(Duration::from_micros(500)),
    );
    let stats = builder.stats();
    let server = TestServer::start(builder).await;
    for _ in 0..5 {
        call_ok(&server, UNARY, work(2_000)).await;
    }
    let mut spawned_before_last_20 = 0;
    for call in 0..60 {
        if call == 40 {
            spawned_before_last_20 = stats.call_tasks_spawned();
        }
        call_ok(&server, UNARY, work(0)).await;
    }
    assert!(spawned_before_last_20 > 5, "the heavy calls were spawned");
    assert_eq!(
        stats.call_tasks_spawned(),
        spawned_before_last_20,
        "the last 20 cheap calls ran inline"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_call_spawns_no_task_and_a_waiting_one_does() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let (server, stats) = work_server().await;
    for _ in 0..10 {
        call_ok(&server, UNARY, work(0)).await;
    }
    assert_eq!(
        stats.call_tasks_spawned(),
        0,
        "ready calls are answered inline"
    );
    call_ok(&server, UNARY, waiting()).await;
    assert_eq!(stats.call_tasks_spawned(), 1, "a waiting call gets a task");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_call_that_ends_after_its_deadline_is_deadline_exceeded() {
    let _alone = ONE_AT_A_TIME.lock().await;
    for inline in [None, Some(true)] {
        let mut service = TestServiceServer::new(Work::default());
        if let Some(inline) = inline {
            service = service.run_inline(inline);
        }
        let server = TestServer::start(Server::builder().add_service(service)).await;
        let answer = pipelined(&server, UNARY, work(100_000), &[("grpc-timeout", "20m")], 1).await;
        assert_eq!(answer[0].0, "4", "inline {inline:?}: {answer:?}");
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_whose_deadline_passed_while_queued_are_not_run() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let service = Work::default();
    let server = TestServer::start(
        Server::builder().add_service(TestServiceServer::new(service.clone()).run_inline(true)),
    )
    .await;
    // Eight calls of 20 ms each, inline in turn, with 50 ms to live: by the fourth, the
    // deadline of every call still queued has passed.
    let answers = pipelined(&server, UNARY, work(20_000), &[("grpc-timeout", "50m")], 8).await;
    let exceeded = answers.iter().filter(|(status, _)| status == "4").count();
    assert!(exceeded >= 5, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|(status, _)| status == "0" || status == "4"),
        "{answers:?}"
    );
    assert!(service.runs() <= 4, "{} calls ran", service.runs());
    server.stop().await;
}

#[tokio::test]
async fn streams_reset_before_their_call_started_are_not_run() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let service = Work::default();
    let server =
        TestServer::start(Server::builder().add_service(TestServiceServer::new(service.clone())))
            .await;
    let authority = server.addr.to_string();
    // Sixteen calls, each reset right after its request, in one write: the server reads them
    // all before it serves any. Then one call that stays.
    let mut bytes = raw_frames::PREFACE.to_vec();
    for stream in (1..32).step_by(2) {
        bytes.extend(raw_frames::grpc_headers(stream, &authority, UNARY));
        bytes.extend(raw_frames::last_data(stream, &work(0)));
        bytes.extend(raw_frames::cancel(stream));
    }
    bytes.extend(raw_frames::grpc_headers(33, &authority, UNARY));
    bytes.extend(raw_frames::last_data(33, &work(0)));
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(&bytes).await.unwrap();

    // Streams are served in order: once the last one ran, the reset ones were passed over.
    until("the last call runs", || service.runs() > 0).await;
    assert_eq!(service.runs(), 1, "only the call that was not reset ran");
    drop(tcp);
    server.stop().await;
}
