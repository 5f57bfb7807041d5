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

/// googleapis' types that `transcoding/v1/echo.proto` uses (`google.api.HttpBody`) and its
/// `Fail` sends (`google.rpc.Status`, `ErrorInfo`), from the protos `fastgrpc-build` bundles.
pub mod google {
    /// `google.api`.
    pub mod api {
        include!(concat!(env!("OUT_DIR"), "/google.api.rs"));
    }
    /// `google.rpc`.
    pub mod rpc {
        include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
    }
    /// `google.protobuf`, as `google/rpc/error_details.proto` imports it.
    pub mod protobuf {
        include!(concat!(env!("OUT_DIR"), "/google.protobuf.rs"));
    }
}

/// `transcoding/v1/echo.proto`: a service with every kind of `google.api.http` binding.
pub mod transcoding {
    /// Version 1.
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/transcoding.v1.rs"));
    }
}

/// `transcoding.v1.Echo` answered with what each call was given: what the example
/// `transcoding_server` and the REST tests serve.
///
/// `Fail` fails with its `code` and `message` and one `google.rpc.ErrorInfo` detail
/// (`ECHO`, `transcoding.v1`); `Watch` sends `count` copies of its request `interval` apart,
/// then fails with `fail_code` if it is not 0; `Download` answers the bytes of `name` as
/// `text/plain`; `Upload` a `Book` with the body's content type as `title` and its length as
/// `pages`. A request whose `name` is `panic` makes `Get` panic. The methods that answer their
/// request as it came send its `x-echo-trailer` metadata back as trailing metadata.
#[derive(Debug, Clone, Copy, Default)]
pub struct TranscodingEcho;

impl transcoding::v1::echo_server::Echo for TranscodingEcho {
    type WatchStream = fastgrpc::BoxStream<transcoding::v1::EchoRequest>;
    type DownloadPiecesStream = fastgrpc::BoxStream<google::api::HttpBody>;

    fn get(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        let request = request.into_inner();
        if request.name.ends_with("/panic") {
            panic!("asked to panic");
        }
        let interval = request.interval;
        async move {
            // A call that takes its `interval` to answer, for deadlines.
            let interval = interval.map(std_duration).unwrap_or_default();
            if !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
            Ok(fastgrpc::Response::new(request))
        }
    }

    fn get_path(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        echo(request)
    }

    fn create(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        echo(request)
    }

    fn update(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        echo(request)
    }

    fn replace(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        echo(request)
    }

    fn delete(
        &self,
        _: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<()> {
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(()))
    }

    fn archive(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        echo(request)
    }

    fn search(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        echo(request)
    }

    fn get_book(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        echo(request)
    }

    fn hidden(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        echo(request)
    }

    fn fail(
        &self,
        request: fastgrpc::Request<transcoding::v1::FailRequest>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::EchoRequest> {
        let request = request.into_inner();
        fastgrpc::FastFuture::err(echo_failure(request.code, &request.message))
    }

    fn watch(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<Self::WatchStream> {
        let request = request.into_inner();
        let copy = request.clone();
        let stream = paced(&request, "watch failed", move |_| copy.clone());
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(stream))
    }

    fn download(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<google::api::HttpBody> {
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(google::api::HttpBody {
            content_type: "text/plain".into(),
            data: request.into_inner().name.into_bytes(),
            extensions: Vec::new(),
        }))
    }

    fn download_pieces(
        &self,
        request: fastgrpc::Request<transcoding::v1::EchoRequest>,
    ) -> impl fastgrpc::RpcFuture<Self::DownloadPiecesStream> {
        let request = request.into_inner();
        let name = request.name.clone();
        let stream = paced(&request, "download failed", move |sent| {
            google::api::HttpBody {
                content_type: if sent == 0 {
                    "text/plain".into()
                } else {
                    String::new()
                },
                data: format!("piece {sent} of {name};").into_bytes(),
                extensions: Vec::new(),
            }
        });
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(stream))
    }

    fn upload(
        &self,
        request: fastgrpc::Request<google::api::HttpBody>,
    ) -> impl fastgrpc::RpcFuture<transcoding::v1::Book> {
        let body = request.into_inner();
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(transcoding::v1::Book {
            title: body.content_type,
            pages: i64::try_from(body.data.len()).unwrap_or(i64::MAX),
            ..Default::default()
        }))
    }
}

/// The stream `Watch` and `DownloadPieces` send: `request.count` items made by `item` from
/// their index, `request.interval` apart, then `failure` with `request.fail_code` unless it
/// is 0.
fn paced<T: Send + 'static>(
    request: &transcoding::v1::EchoRequest,
    failure: &'static str,
    item: impl Fn(u32) -> T + Send + Sync + 'static,
) -> fastgrpc::BoxStream<T> {
    use futures_util::StreamExt as _;
    let interval = request.interval.map(std_duration).unwrap_or_default();
    let (count, fail_code) = (request.count, request.fail_code);
    let item = std::sync::Arc::new(item);
    let items = futures_util::stream::unfold(0, move |sent| {
        let item = std::sync::Arc::clone(&item);
        async move {
            if sent >= count {
                return None;
            }
            if sent > 0 && !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
            Some((Ok(item(sent)), sent + 1))
        }
    });
    let end =
        futures_util::stream::iter((fail_code != 0).then(|| Err(echo_failure(fail_code, failure))));
    Box::pin(items.chain(end))
}

/// A non-negative protobuf duration as the standard library's; zero for a negative one.
fn std_duration(duration: fastgrpc::types::Duration) -> std::time::Duration {
    let seconds = u64::try_from(duration.seconds).unwrap_or(0);
    let nanos = u32::try_from(duration.nanos).unwrap_or(0);
    std::time::Duration::new(seconds, nanos)
}

/// The request's message as the reply, and its `x-echo-trailer` metadata, if any, as
/// trailing metadata.
fn echo<T: Send + 'static>(request: fastgrpc::Request<T>) -> impl fastgrpc::RpcFuture<T> {
    let trailer = request.metadata().get("x-echo-trailer").cloned();
    let mut response = fastgrpc::Response::new(request.into_inner());
    if let Some(value) = trailer {
        let mut trailers = tonic::metadata::MetadataMap::new();
        trailers.insert("x-echo-trailer", value);
        response
            .extensions_mut()
            .insert(fastgrpc::Trailers(trailers));
    }
    fastgrpc::FastFuture::ok(response)
}

/// `code` (`UNKNOWN` if it is none) with `message`, and one `google.rpc.ErrorInfo` detail.
fn echo_failure(code: i32, message: &str) -> fastgrpc::Status {
    use prost::Message as _;
    let info = google::rpc::ErrorInfo {
        reason: "ECHO".into(),
        domain: "transcoding.v1".into(),
        ..Default::default()
    };
    let status = google::rpc::Status {
        code,
        message: message.into(),
        details: vec![fastgrpc::types::Any {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
            value: info.encode_to_vec(),
        }],
    };
    // So that the detail has its JSON form in REST's and Connect's errors.
    google::rpc::register_json_types();
    fastgrpc::Status::with_details(
        fastgrpc::Code::from(code),
        message,
        status.encode_to_vec().into(),
    )
}

/// `count` HTTP rules in the shapes of a large API, each calling `transcoding.v1.Echo`'s `Get`
/// with its path's last variable bound to `name`: `/v1/projects/*/res<i>/{name}`,
/// `/v1/res<i>/{name}`, `/v1/res<i>/{name}/items`, `/v<i>/things/**`, `/v1/res<i>:act`. None
/// matches a path of Echo's own rules, so a server with them answers Echo's paths as without
/// them: what routing costs as an API grows. Their texts live as long as the process (leaked).
pub fn large_api_rules(count: usize) -> &'static [fastgrpc::codegen::rest::Rule] {
    use fastgrpc::codegen::rest::{HttpMethod, Rule, Segment, Template, Variable};
    let get = transcoding::v1::echo_server::HTTP_RULES
        .iter()
        .find(|rule| rule.method == "Get")
        .expect("Echo has Get");
    let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
    let name_at = |at: usize| -> &'static [Variable<'static>] {
        Box::leak(Box::new([Variable {
            field: &["name"],
            start: at,
            end: at + 1,
        }]))
    };
    let rules = (1..=count).map(|index| {
        let resource = leak(format!("res{index}"));
        let (segments, variables, verb): (Vec<Segment<'static>>, _, _) = match index % 5 {
            0 => (
                vec![
                    Segment::Literal("v1"),
                    Segment::Literal("projects"),
                    Segment::Any,
                    Segment::Literal(resource),
                    Segment::Any,
                ],
                name_at(4),
                None,
            ),
            1 => (
                vec![
                    Segment::Literal("v1"),
                    Segment::Literal(resource),
                    Segment::Any,
                ],
                name_at(2),
                None,
            ),
            2 => (
                vec![
                    Segment::Literal("v1"),
                    Segment::Literal(resource),
                    Segment::Any,
                    Segment::Literal("items"),
                ],
                name_at(2),
                None,
            ),
            3 => (
                vec![
                    Segment::Literal(leak(format!("v{index}"))),
                    Segment::Literal("things"),
                    Segment::Rest,
                ],
                &[][..],
                None,
            ),
            _ => (
                vec![Segment::Literal("v1"), Segment::Literal(resource)],
                &[][..],
                Some("act"),
            ),
        };
        Rule {
            http_method: HttpMethod::Get,
            template: Template {
                text: "a large API's rule",
                segments: Box::leak(segments.into_boxed_slice()),
                variables,
                verb,
            },
            ..*get
        }
    });
    Box::leak(rules.collect::<Vec<_>>().into_boxed_slice())
}

/// `service` with more HTTP rules than its protos give it (`extra`, after its own), such as
/// [`large_api_rules`]: for measuring a server whose API is large.
#[derive(Debug, Clone, Copy)]
pub struct WithExtraRules<S> {
    service: S,
    rules: &'static [fastgrpc::codegen::rest::Rule],
}

impl<S: fastgrpc::service::FastService> WithExtraRules<S> {
    pub fn new(service: S, extra: &'static [fastgrpc::codegen::rest::Rule]) -> Self {
        let mut rules = service.http_rules().to_vec();
        rules.extend_from_slice(extra);
        let rules = Box::leak(rules.into_boxed_slice());
        WithExtraRules { service, rules }
    }
}

impl<S: fastgrpc::service::FastService> fastgrpc::service::FastService for WithExtraRules<S> {
    fn call(
        &self,
        request: fastgrpc::codegen::http::Request<fastgrpc::service::RequestBody>,
    ) -> fastgrpc::service::ResponseFuture {
        self.service.call(request)
    }

    fn method_names(&self) -> &'static [&'static str] {
        self.service.method_names()
    }

    fn http_rules(&self) -> &'static [fastgrpc::codegen::rest::Rule] {
        self.rules
    }

    fn max_request_size(&self) -> usize {
        self.service.max_request_size()
    }

    fn accepted_encodings(&self) -> &[fastgrpc::CompressionEncoding] {
        self.service.accepted_encodings()
    }

    fn openapi(&self) -> Option<&'static str> {
        self.service.openapi()
    }

    fn serve(
        &self,
        request: fastgrpc::codegen::http::Request<fastgrpc::service::RequestBody>,
        call: &mut fastgrpc::codegen::Call,
    ) -> fastgrpc::service::ResponseFuture {
        self.service.serve(request, call)
    }
}

impl<S: fastgrpc::service::NamedService> fastgrpc::service::NamedService for WithExtraRules<S> {
    const NAME: &'static str = S::NAME;
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
