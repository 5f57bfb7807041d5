//! Compiles protobuf's conformance protos (copied into `proto/`, BSD-3-Clause, `proto/LICENSE`)
//! with `fastgrpc-build`, messages only: the request and response the runner speaks, and the
//! test messages whose binary and ProtoJSON forms it judges.

fn main() -> std::io::Result<()> {
    fastgrpc_build::configure()
        .build_server(false)
        .compile_protos(
            &[
                "proto/conformance.proto",
                "proto/test_messages_proto2.proto",
                "proto/test_messages_proto3.proto",
            ],
            &["proto"],
        )
}
