//! Compiles the protos in this folder for the workspace's tests, benchmarks and examples:
//! fastgrpc servers into `$OUT_DIR`, tonic's client and server (the peer the tests and
//! benchmarks compare against) into `$OUT_DIR/tonic`, and the encoded descriptors (for the
//! reflection service) into `$OUT_DIR/descriptors.bin`. No system `protoc` is needed.

use std::path::PathBuf;

const PROTOS: &[&str] = &[
    "helloworld.proto",
    "grpc/testing/test.proto",
    "jsontest/jsontest.proto",
    "jsontest/proto2.proto",
    "transcoding/v1/echo.proto",
    // `google.rpc.Status` and `ErrorInfo`, the details `transcoding.v1.Echo/Fail` sends
    // (bundled by fastgrpc-build).
    "google/rpc/error_details.proto",
    "google/rpc/status.proto",
];

fn main() -> std::io::Result<()> {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fastgrpc_build::configure()
        .bytes([".grpc.testing.Payload.body"])
        // For the reflection service of the examples.
        .file_descriptor_set_path(out_dir.join("descriptors.bin"))
        .compile_protos(PROTOS, &["."])?;

    let tonic_dir = out_dir.join("tonic");
    std::fs::create_dir_all(&tonic_dir)?;
    tonic_prost_build::configure()
        .out_dir(tonic_dir)
        .compile_fds(fastgrpc_build::file_descriptor_set(PROTOS, &["."])?)
}
