//! A load probe for the shapes h2load cannot measure; `benches/e2e.sh` runs it against
//! `greeter_server` and `tonic_greeter_server`.
//!
//! - `load_probe pipelined --addr HOST:PORT [--calls 64] [--rounds 3]`: each round sends
//!   `--calls` `SayHello` calls at once on a new connection (all in its first write) and prints
//!   when the first, the middle and the last answer arrived.
//! - `load_probe mixed --addr HOST:PORT [--slow 8] [--fast 8] [--seconds 5]`: on one
//!   connection, `--slow` loops call `SayHello` (slow on a server run with `--work-us`) while
//!   `--fast` loops call `grpc.health.v1.Health/Check`; prints the fast calls' latency (p50,
//!   p99) and both rates.
//!
//! Loopback only: every loop is bounded in time and in count.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;

const SAY_HELLO: &str = "/helloworld.Greeter/SayHello";
const HEALTH_CHECK: &str = "/grpc.health.v1.Health/Check";
/// `HelloRequest { name: "world" }` in one gRPC frame.
const HELLO: &[u8] = b"\x00\x00\x00\x00\x07\x0a\x05world";
/// An empty `HealthCheckRequest` (the server's overall health) in one gRPC frame.
const CHECK: &[u8] = b"\x00\x00\x00\x00\x00";
/// No loop makes more calls than this, however fast the server.
const MAX_CALLS_PER_LOOP: usize = 1_000_000;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let mut addr: SocketAddr = "127.0.0.1:50051".parse()?;
    let (mut calls, mut rounds) = (64, 3);
    let (mut slow, mut fast, mut seconds) = (8, 8, 5.0);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => addr = value()?.parse()?,
            "--calls" => calls = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            "--slow" => slow = value()?.parse()?,
            "--fast" => fast = value()?.parse()?,
            "--seconds" => seconds = value()?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !addr.ip().is_loopback() {
        return Err("the probe only loads loopback addresses".into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match mode.as_str() {
            "pipelined" => pipelined(addr, calls, rounds).await,
            "mixed" => mixed(addr, slow, fast, Duration::from_secs_f64(seconds)).await,
            _ => Err("usage: load_probe (pipelined | mixed) --addr HOST:PORT [options]".into()),
        }
    })
}

/// Rounds of `calls` calls sent at once; when their answers came.
async fn pipelined(addr: SocketAddr, calls: usize, rounds: usize) -> Result<(), Error> {
    for round in 1..=rounds {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let (mut client, connection) = h2::client::handshake(tcp).await?;
        let sent = Instant::now();
        let mut answers = Vec::with_capacity(calls);
        for _ in 0..calls {
            answers.push(start_call(&mut client, addr, SAY_HELLO, HELLO)?);
        }
        // Only now does the connection run: its first write carries every call.
        tokio::spawn(connection);
        let arrivals = futures_util::future::join_all(
            answers
                .into_iter()
                .map(|answer| async { answer.await.map(|()| sent.elapsed()) }),
        );
        let mut arrivals = tokio::time::timeout(Duration::from_secs(60), arrivals)
            .await?
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        arrivals.sort();
        let ms = |at: Duration| at.as_secs_f64() * 1e3;
        println!(
            "pipelined round {round}: {calls} calls, first answer {:.1} ms, median {:.1} ms, last {:.1} ms",
            ms(arrivals[0]),
            ms(arrivals[calls / 2]),
            ms(arrivals[calls - 1]),
        );
    }
    Ok(())
}

/// Slow and fast calls at once on one connection: the fast calls' latency.
async fn mixed(addr: SocketAddr, slow: usize, fast: usize, run: Duration) -> Result<(), Error> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let (client, connection) = h2::client::handshake(tcp).await?;
    tokio::spawn(connection);
    let until = Instant::now() + run;
    let loops = |count: usize, path: &'static str, body: &'static [u8]| {
        (0..count)
            .map(|_| tokio::spawn(call_loop(client.clone(), addr, path, body, until)))
            .collect::<Vec<_>>()
    };
    let slow_loops = loops(slow, SAY_HELLO, HELLO);
    let fast_loops = loops(fast, HEALTH_CHECK, CHECK);
    let mut slow_calls = 0;
    for call in slow_loops {
        slow_calls += call.await??.len();
    }
    let mut latencies = Vec::new();
    for call in fast_loops {
        latencies.extend(call.await??);
    }
    latencies.sort();
    if latencies.is_empty() {
        return Err("no fast call completed".into());
    }
    let pick = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize].as_micros();
    let seconds = run.as_secs_f64();
    println!(
        "mixed: fast p50 {} us, p99 {} us, {:.0} fast calls/s, {:.0} slow calls/s",
        pick(0.50),
        pick(0.99),
        latencies.len() as f64 / seconds,
        slow_calls as f64 / seconds,
    );
    Ok(())
}

/// Calls `path` one call after another until `until`; each call's latency.
async fn call_loop(
    mut client: SendRequest<Bytes>,
    addr: SocketAddr,
    path: &'static str,
    body: &'static [u8],
    until: Instant,
) -> Result<Vec<Duration>, Error> {
    let mut latencies = Vec::new();
    while Instant::now() < until && latencies.len() < MAX_CALLS_PER_LOOP {
        client = client.ready().await?;
        let started = Instant::now();
        start_call(&mut client, addr, path, body)?.await?;
        latencies.push(started.elapsed());
    }
    Ok(latencies)
}

/// Queues one call; the returned future completes when its answer (with `grpc-status: 0`)
/// has arrived whole.
fn start_call(
    client: &mut SendRequest<Bytes>,
    addr: SocketAddr,
    path: &'static str,
    body: &'static [u8],
) -> Result<impl Future<Output = Result<(), Error>> + use<>, Error> {
    let request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())?;
    let (response, mut send) = client.send_request(request, false)?;
    send.send_data(Bytes::from_static(body), true)?;
    Ok(async move {
        let (parts, mut body) = response.await?.into_parts();
        while let Some(chunk) = body.data().await {
            let _ = body.flow_control().release_capacity(chunk?.len());
        }
        let trailers = body.trailers().await?.unwrap_or_default();
        let status = trailers
            .get("grpc-status")
            .or_else(|| parts.headers.get("grpc-status"));
        match status.map(|status| status.as_bytes()) {
            Some(b"0") => Ok(()),
            other => Err(format!("{path} answered grpc-status {other:?}").into()),
        }
    })
}
