//! Compiles the protos in `proto/` for this crate's tests, benchmarks and examples:
//! fastgrpc servers into `$OUT_DIR`, and tonic's client and server (the peer the tests and
//! benchmarks compare against) into `$OUT_DIR/tonic`. No system `protoc` is needed.

use std::path::PathBuf;

const PROTOS: &[&str] = &["proto/helloworld.proto", "proto/grpc/testing/test.proto"];

fn main() -> std::io::Result<()> {
    fastgrpc_build::configure()
        .bytes([".grpc.testing.Payload.body"])
        .compile_protos(PROTOS, &["proto"])?;

    let tonic_dir =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("tonic");
    std::fs::create_dir_all(&tonic_dir)?;
    tonic_prost_build::configure()
        .out_dir(tonic_dir)
        .compile_fds(fastgrpc_build::file_descriptor_set(PROTOS, &["proto"])?)
}
