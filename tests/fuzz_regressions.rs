//! Replays the fuzz targets' regression corpus (`fuzz/corpus/<target>/`) without libFuzzer, so
//! every `cargo test` checks the inputs the fuzzers found interesting, and any crash input once
//! added there, with the same logic the fuzz targets run (the `fastgrpc-fuzz-oracles` crate).

use std::path::Path;

use fastgrpc_fuzz_oracles as oracles;

/// Runs `target` on every file of `fuzz/corpus/<name>/`, naming the input that fails.
fn replay(name: &str, target: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(name);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs in {}", dir.display());
    for input in &inputs {
        let data = std::fs::read(input).unwrap();
        if std::panic::catch_unwind(|| target(&data)).is_err() {
            panic!("{name} fails on {} ({data:?})", input.display());
        }
    }
}

#[test]
fn decode_unary() {
    replay("decode_unary", oracles::decode_unary);
}

#[test]
fn streaming_decode() {
    replay("streaming_decode", oracles::streaming_decode);
}

#[test]
fn headers() {
    replay("headers", oracles::headers);
}

#[test]
fn unary_call() {
    replay("unary_call", oracles::unary_call);
}

#[test]
fn route() {
    replay("route", oracles::route);
}

#[test]
fn json_decode() {
    replay("json_decode", oracles::json_decode);
}

#[test]
fn connect_call() {
    replay("connect_call", oracles::connect_call);
}

#[test]
fn http2_frame_corpus() {
    replay("http2_frame", oracles::http2_frame);
}

#[test]
fn hpack_decode_corpus() {
    replay("hpack_decode", oracles::hpack_decode);
}

#[test]
fn http2_connection_corpus() {
    replay("http2_connection", oracles::http2_connection);
}

#[test]
fn rest_template() {
    replay("rest_template", oracles::rest_template);
}

#[test]
fn rest_query() {
    replay("rest_query", oracles::rest_query);
}
