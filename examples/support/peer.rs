//! What the benchmarks' peer servers share: their two flags (`--addr HOST:PORT`,
//! `--workers N`) and the tokio runtime those flags make.

use std::error::Error;
use std::net::SocketAddr;

/// A peer's command line: where it listens (`default_addr` unless `--addr`) and the runtime
/// it runs on (`--workers` worker threads, or one per core).
pub fn runtime_from_args(
    default_addr: &str,
) -> Result<(SocketAddr, tokio::runtime::Runtime), Box<dyn Error>> {
    let mut addr: SocketAddr = default_addr.parse()?;
    let mut workers = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => addr = value()?.parse()?,
            "--workers" => workers = Some(value()?.parse::<usize>()?),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        runtime.worker_threads(workers);
    }
    Ok((addr, runtime.enable_all().build()?))
}
