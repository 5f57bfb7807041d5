//! The workspace's test protos, compiled once for the integration tests, benchmarks and
//! examples: fastgrpc's generated servers, tonic's generated clients and servers for the same
//! messages, and the encoded descriptors. Not published.

#![allow(missing_docs, unreachable_pub)]

/// `helloworld.proto`: the Greeter service, as fastgrpc generates it.
pub mod helloworld {
    include!(concat!(env!("OUT_DIR"), "/helloworld.rs"));
}

/// `grpc/testing/test.proto`: the gRPC interop services, as fastgrpc generates them.
pub mod grpc_testing {
    include!(concat!(env!("OUT_DIR"), "/grpc.testing.rs"));
}

/// `jsontest/jsontest.proto`: every kind of field ProtoJSON maps, and a service echoing them.
pub mod jsontest {
    include!(concat!(env!("OUT_DIR"), "/jsontest.rs"));

    /// `jsontest/proto2.proto`: proto2's presence, required fields, closed enums, groups and
    /// extensions.
    pub mod proto2 {
        include!(concat!(env!("OUT_DIR"), "/jsontest.proto2.rs"));
    }
}

/// `jsontest.JsonTest` answered by echoing each request: what the Connect tests, the interop
/// server's JSON and GET cases and the fuzz oracles serve.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonEcho;

impl jsontest::json_test_server::JsonTest for JsonEcho {
    fn echo(
        &self,
        request: fastgrpc::Request<jsontest::Scalars>,
    ) -> impl fastgrpc::RpcFuture<jsontest::Scalars> {
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(request.into_inner()))
    }

    fn echo_well_known(
        &self,
        request: fastgrpc::Request<jsontest::WellKnown>,
    ) -> impl fastgrpc::RpcFuture<jsontest::WellKnown> {
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(request.into_inner()))
    }

    fn ping(&self, _: fastgrpc::Request<()>) -> impl fastgrpc::RpcFuture<()> {
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(()))
    }
}

/// googleapis' types that `transcoding/v1/echo.proto` uses (`google.api.HttpBody`), from the
/// protos `fastgrpc-build` bundles.
pub mod google {
    /// `google.api`.
    pub mod api {
        include!(concat!(env!("OUT_DIR"), "/google.api.rs"));
    }
}

/// `transcoding/v1/echo.proto`: a service with every kind of `google.api.http` binding.
pub mod transcoding {
    /// Version 1.
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/transcoding.v1.rs"));
    }
}

/// The same protos as tonic generates them: its clients, and its servers as a peer.
pub mod tonic_pb {
    /// `helloworld.proto`, by tonic.
    pub mod helloworld {
        include!(concat!(env!("OUT_DIR"), "/tonic/helloworld.rs"));
    }
    /// `grpc/testing/test.proto`, by tonic.
    pub mod grpc_testing {
        include!(concat!(env!("OUT_DIR"), "/tonic/grpc.testing.rs"));
    }
}

/// Every proto of this crate as an encoded `FileDescriptorSet`, for the reflection service.
pub const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/descriptors.bin"));
