//! Compiles the suite's protos (`proto/`, copied from connectrpc/conformance v1.0.5 with their
//! Apache-2.0 licence): the `ConformanceService` as a fastgrpc server, and the messages the
//! runner writes to the server's stdin and reads from its stdout.

fn main() -> std::io::Result<()> {
    fastgrpc_build::compile_protos(
        &[
            "connectrpc/conformance/v1/service.proto",
            "connectrpc/conformance/v1/server_compat.proto",
        ],
        &["proto"],
    )
}
