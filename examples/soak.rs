//! A bounded soak run: mixed load against `interop_server` in a child process, reporting calls
//! served, outcomes by status, and the server's resident memory over time.
//!
//! ```text
//! cargo build --release --example interop_server --example soak
//! target/release/examples/soak --seconds 60
//! ```
//!
//! Exits non-zero if any call ends in an outcome the mix does not expect.
//!
//! Options: `--seconds N` (default 30), `--workers N` concurrent client tasks (default 8),
//! `--server PATH` (default `target/release/examples/interop_server`). Loopback only; every
//! loop is bounded by the time limit and by a cap on calls per worker.
//!
//! The mix, per call: 70% unary (large payloads now and then), 5% unary asking for an error
//! status, 10% server streaming, 5% full-duplex ping-pong, 5% a stream cancelled after its
//! first reply, 5% a malformed request body over raw HTTP/2.

pub use protos::tonic_pb::grpc_testing;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use grpc_testing::test_service_client::TestServiceClient;
use grpc_testing::{
    EchoStatus, Payload, ResponseParameters, SimpleRequest, StreamingOutputCallRequest,
};
use tonic::transport::Channel;

const MAX_CALLS_PER_WORKER: u64 = 10_000_000;

type Outcomes = Arc<Mutex<BTreeMap<String, u64>>>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut seconds = 30u64;
    let mut workers = 8usize;
    let mut server = "target/release/examples/interop_server".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--seconds" => seconds = value()?.parse()?,
            "--workers" => workers = value()?.parse()?,
            "--server" => server = value()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let port = free_port()?;
    let mut child = Command::new(&server)
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|error| format!("cannot start {server} (build it first): {error}"))?;
    let result = tokio::runtime::Runtime::new()?.block_on(soak(&child, port, seconds, workers));
    let _ = child.kill();
    let _ = child.wait();
    result
}

async fn soak(
    child: &Child,
    port: u16,
    seconds: u64,
    workers: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let channel = connect(addr).await?;
    let outcomes: Outcomes = Arc::default();
    // Warm up, so the first RSS figure is the server's steady state, not its empty start.
    run_worker(
        channel.clone(),
        addr,
        0,
        2_000,
        Instant::now() + Duration::from_secs(10),
        outcomes.clone(),
    )
    .await;
    outcomes.lock().unwrap().clear();
    let start_rss = rss_kib(child.id());
    println!("server RSS after warm-up: {start_rss} KiB");

    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for worker in 0..workers {
        let channel = connect(addr).await?;
        tasks.push(tokio::spawn(run_worker(
            channel,
            addr,
            worker as u64,
            MAX_CALLS_PER_WORKER,
            until,
            outcomes.clone(),
        )));
    }
    let mut samples = Vec::new();
    while Instant::now() < until {
        tokio::time::sleep(
            Duration::from_secs(5).min(until.saturating_duration_since(Instant::now())),
        )
        .await;
        samples.push((started.elapsed().as_secs(), rss_kib(child.id())));
    }
    for task in tasks {
        task.await?;
    }
    let end_rss = rss_kib(child.id());
    let outcomes = outcomes.lock().unwrap();
    let total: u64 = outcomes.values().sum();
    println!(
        "{total} calls in {seconds} s ({:.0}/s) with {workers} workers",
        total as f64 / seconds as f64
    );
    for (outcome, count) in outcomes.iter() {
        println!("  {outcome:<40} {count}");
    }
    println!("server RSS (KiB) every 5 s: {samples:?}");
    println!("server RSS: {start_rss} KiB after warm-up, {end_rss} KiB at the end");
    // Every call of the mix has one right outcome; any other is a failure of the server (an
    // honest call cut off, a hang the client's 10 s timeout ended, a wrong status).
    const EXPECTED: [&str; 6] = [
        "full duplex: OK",
        "malformed body (raw HTTP/2): Internal",
        "server streaming: OK",
        "stream cancelled after one reply: OK",
        "unary asking for FAILED_PRECONDITION: FailedPrecondition",
        "unary: OK",
    ];
    let unexpected: u64 = outcomes
        .iter()
        .filter(|(outcome, _)| !EXPECTED.contains(&outcome.as_str()))
        .map(|(_, count)| count)
        .sum();
    if unexpected > 0 {
        return Err(
            format!("{unexpected} calls ended in an outcome the mix does not expect").into(),
        );
    }
    Ok(())
}

async fn connect(addr: SocketAddr) -> Result<Channel, Box<dyn std::error::Error>> {
    for _ in 0..100 {
        match tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
            .timeout(Duration::from_secs(10))
            .connect()
            .await
        {
            Ok(channel) => return Ok(channel),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    Err("the server did not start".into())
}

/// Runs the mix until `until` or `max_calls`, recording each call's outcome.
async fn run_worker(
    channel: Channel,
    addr: SocketAddr,
    seed: u64,
    max_calls: u64,
    until: Instant,
    outcomes: Outcomes,
) {
    let mut client = TestServiceClient::new(channel);
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for _ in 0..max_calls {
        if Instant::now() >= until {
            break;
        }
        // xorshift: enough randomness for a mix, no dependency.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let outcome = match rng % 100 {
            0..70 => {
                unary(
                    &mut client,
                    if rng.is_multiple_of(50) {
                        256 * 1024
                    } else {
                        64
                    },
                )
                .await
            }
            70..75 => failing_unary(&mut client).await,
            75..85 => server_stream(&mut client).await,
            85..90 => ping_pong(&mut client).await,
            90..95 => cancelled_stream(&mut client).await,
            _ => malformed(addr).await,
        };
        *outcomes.lock().unwrap().entry(outcome).or_default() += 1;
    }
}

fn label(kind: &str, result: Result<(), tonic::Status>) -> String {
    match result {
        Ok(()) => format!("{kind}: OK"),
        Err(status) => format!("{kind}: {:?}", status.code()),
    }
}

async fn unary(client: &mut TestServiceClient<Channel>, size: i32) -> String {
    let request = SimpleRequest {
        response_size: size,
        payload: Some(Payload {
            r#type: 0,
            body: vec![0; size as usize],
        }),
        ..Default::default()
    };
    label("unary", client.unary_call(request).await.map(|_| ()))
}

async fn failing_unary(client: &mut TestServiceClient<Channel>) -> String {
    let request = SimpleRequest {
        response_status: Some(EchoStatus {
            code: 9,
            message: "asked to fail".into(),
        }),
        ..Default::default()
    };
    label(
        "unary asking for FAILED_PRECONDITION",
        client.unary_call(request).await.map(|_| ()),
    )
}

fn parameters(sizes: &[i32]) -> StreamingOutputCallRequest {
    StreamingOutputCallRequest {
        response_parameters: sizes
            .iter()
            .map(|&size| ResponseParameters {
                size,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

async fn server_stream(client: &mut TestServiceClient<Channel>) -> String {
    let result = async {
        let mut replies = client
            .streaming_output_call(parameters(&[100, 2_000, 10, 30_000]))
            .await?
            .into_inner();
        while replies.message().await?.is_some() {}
        Ok(())
    };
    label("server streaming", result.await)
}

async fn ping_pong(client: &mut TestServiceClient<Channel>) -> String {
    let requests = tokio_stream::iter([parameters(&[10]), parameters(&[20]), parameters(&[30])]);
    let result = async {
        let mut replies = client.full_duplex_call(requests).await?.into_inner();
        while replies.message().await?.is_some() {}
        Ok(())
    };
    label("full duplex", result.await)
}

async fn cancelled_stream(client: &mut TestServiceClient<Channel>) -> String {
    let result = async {
        let mut replies = client
            .streaming_output_call(parameters(&[100; 50]))
            .await?
            .into_inner();
        replies.message().await?;
        Ok(())
        // Dropping `replies` here resets the stream: a cancellation.
    };
    label("stream cancelled after one reply", result.await)
}

/// A frame that declares 100 bytes and carries 3, over raw HTTP/2: the server answers INTERNAL.
async fn malformed(addr: SocketAddr) -> String {
    let result = async {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let (client, conn) = h2::client::handshake(tcp)
            .await
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client
            .ready()
            .await
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let request =
            http::Request::post(format!("http://{addr}/grpc.testing.TestService/UnaryCall"))
                .header("content-type", "application/grpc")
                .body(())
                .expect("a valid request head");
        let (response, mut send) = client
            .send_request(request, false)
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        send.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 100, 1, 2, 3]), true)
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let response = response
            .await
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        match tonic::Status::from_header_map(response.headers()) {
            Some(status) if status.code() != tonic::Code::Ok => Err(status),
            _ => Ok(()),
        }
    };
    label("malformed body (raw HTTP/2)", result.await)
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Resident set size of a process, from /proc (0 where there is no /proc).
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}
