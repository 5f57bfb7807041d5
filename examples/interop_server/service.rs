//! `grpc.testing.TestService` as the interop suite expects it; shared by the example binary
//! and the interop tests (which include this file), so both exercise the same code.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use fastgrpc::Trailers;
use fastgrpc::{BoxStream, Code, FastFuture, Request, Response, RpcFuture, Status, Streaming};
use fastgrpc::{CompressionEncoding, MessageCompression, RequestCompressed};
use futures_util::StreamExt;
use tonic::metadata::MetadataMap;

use super::grpc_testing;
use grpc_testing::test_service_server::TestService;
use grpc_testing::{
    EchoStatus, Empty, Payload, ResponseParameters, SimpleRequest, SimpleResponse,
    StreamingInputCallRequest, StreamingInputCallResponse, StreamingOutputCallRequest,
    StreamingOutputCallResponse,
};

/// The id reported for `fill_server_id`.
const SERVER_ID: &str = "fastgrpc-interop";
const ECHO_INITIAL: &str = "x-grpc-test-echo-initial";
const ECHO_TRAILING: &str = "x-grpc-test-echo-trailing-bin";

/// The interop service. Unary answers are computed at once, so they take the inline path.
pub struct Interop;

impl Interop {
    /// The service as the interop suite needs it: gzip and deflate accepted and sent.
    pub fn server() -> grpc_testing::test_service_server::TestServiceServer<Interop> {
        grpc_testing::test_service_server::TestServiceServer::new(Interop)
            .accept_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Deflate)
            .send_compressed(CompressionEncoding::Gzip)
            .send_compressed(CompressionEncoding::Deflate)
    }
}

impl TestService for Interop {
    type StreamingOutputCallStream = BoxStream<StreamingOutputCallResponse>;
    type FullDuplexCallStream = BoxStream<StreamingOutputCallResponse>;
    type HalfDuplexCallStream = BoxStream<StreamingOutputCallResponse>;

    fn empty_call(&self, request: Request<Empty>) -> impl RpcFuture<Empty> {
        FastFuture::ok(with_echoed_metadata(
            request.metadata(),
            Response::new(Empty {}),
        ))
    }

    fn unary_call(&self, request: Request<SimpleRequest>) -> impl RpcFuture<SimpleResponse> {
        let echo = echo_metadata(request.metadata());
        let compressed = request.extensions().get::<RequestCompressed>().is_some();
        let request = request.into_inner();
        let compress = request.response_compressed.is_some_and(|b| b.value);
        let reply = check_compressed(request.expect_compressed.as_ref(), compressed)
            .and_then(|()| unary_reply(request))
            .map(|reply| {
                let mut response = echo.apply(Response::new(reply));
                response
                    .extensions_mut()
                    .insert(MessageCompression::new(compress));
                response
            })
            .map_err(|status| echo.apply_to_status(status));
        FastFuture::ready(reply)
    }

    fn streaming_output_call(
        &self,
        request: Request<StreamingOutputCallRequest>,
    ) -> impl RpcFuture<Self::StreamingOutputCallStream> {
        let request = request.into_inner();
        let mut replies = Replies::default();
        replies.enqueue(request);
        FastFuture::ok(replies.into_response(None))
    }

    async fn streaming_input_call(
        &self,
        request: Request<Streaming<StreamingInputCallRequest>>,
    ) -> Result<Response<StreamingInputCallResponse>, Status> {
        let mut requests = request.into_inner();
        let mut aggregated_payload_size = 0;
        while let Some(request) = requests.message().await? {
            check_compressed(
                request.expect_compressed.as_ref(),
                requests.last_message_compressed(),
            )?;
            aggregated_payload_size += request.payload.map_or(0, |p| p.body.len() as i32);
        }
        Ok(Response::new(StreamingInputCallResponse {
            aggregated_payload_size,
        }))
    }

    fn full_duplex_call(
        &self,
        request: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> impl RpcFuture<Self::FullDuplexCallStream> {
        let echo = echo_metadata(request.metadata());
        let response = Replies::default().into_response(Some(request.into_inner()));
        FastFuture::ok(echo.apply(response))
    }

    async fn half_duplex_call(
        &self,
        request: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> Result<Response<Self::HalfDuplexCallStream>, Status> {
        let mut requests = request.into_inner();
        let mut replies = Replies::default();
        while let Some(request) = requests.message().await? {
            replies.enqueue(request);
        }
        Ok(replies.into_response(None))
    }
}

fn unary_reply(request: SimpleRequest) -> Result<SimpleResponse, Status> {
    if let Some(status) = requested_status(request.response_status.as_ref()) {
        return Err(status);
    }
    let payload = zeros(request.response_size)?;
    Ok(SimpleResponse {
        payload: Some(payload),
        server_id: if request.fill_server_id {
            SERVER_ID.into()
        } else {
            String::new()
        },
        ..Default::default()
    })
}

/// What is still to be answered on a streaming call: replies in order, then maybe a status.
#[derive(Default)]
struct Replies {
    pending: VecDeque<ResponseParameters>,
    status: Option<Status>,
}

impl Replies {
    fn enqueue(&mut self, request: StreamingOutputCallRequest) {
        self.pending.extend(request.response_parameters);
        if let Some(status) = requested_status(request.response_status.as_ref()) {
            self.status.get_or_insert(status);
        }
    }

    /// The replies as a streaming response; with `requests`, more are enqueued as requests
    /// arrive (full duplex), each request's replies sent before the next request is read.
    /// Each reply is compressed or not as its parameters ask.
    fn into_response(
        self,
        requests: Option<Streaming<StreamingOutputCallRequest>>,
    ) -> Response<BoxStream<StreamingOutputCallResponse>> {
        let compression = MessageCompression::new(false);
        if requests.is_none() && self.pending.iter().all(|p| p.interval_us <= 0) {
            // Every reply is known and none waits: a plain iterator, as a handler would write
            // it (and as the streaming benchmark's tonic peer does).
            let switch = compression.clone();
            let replies = futures_util::stream::iter(self.pending)
                .map(move |parameters| reply(&parameters, &switch))
                .chain(futures_util::stream::iter(self.status.map(Err)));
            let mut response = Response::new(replies.boxed());
            response.extensions_mut().insert(compression);
            return response;
        }
        let state = (self, requests, compression.clone());
        let stream =
            futures_util::stream::unfold(state, |(mut replies, mut requests, switch)| async move {
                loop {
                    if let Some(parameters) = replies.pending.pop_front() {
                        if parameters.interval_us > 0 {
                            tokio::time::sleep(Duration::from_micros(
                                parameters.interval_us as u64,
                            ))
                            .await;
                        }
                        let reply = reply(&parameters, &switch);
                        return Some((reply, (replies, requests, switch)));
                    }
                    if let Some(status) = replies.status.take() {
                        return Some((Err(status), (replies, None, switch)));
                    }
                    match requests.as_mut()?.message().await {
                        Ok(Some(request)) => replies.enqueue(request),
                        Ok(None) => return None,
                        Err(status) => return Some((Err(status), (replies, None, switch))),
                    }
                }
            });
        let mut response = Response::new(stream.boxed());
        response.extensions_mut().insert(compression);
        response
    }
}

/// The reply `parameters` ask for, compressed or not as they say.
fn reply(
    parameters: &ResponseParameters,
    switch: &MessageCompression,
) -> Result<StreamingOutputCallResponse, Status> {
    switch.set(parameters.compressed.is_some_and(|b| b.value));
    zeros(parameters.size).map(|payload| StreamingOutputCallResponse {
        payload: Some(payload),
    })
}

/// The metadata the interop suite asks to be echoed back.
struct Echo {
    initial: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>,
    trailing: Option<tonic::metadata::MetadataValue<tonic::metadata::Binary>>,
}

fn echo_metadata(metadata: &MetadataMap) -> Echo {
    Echo {
        initial: metadata.get(ECHO_INITIAL).cloned(),
        trailing: metadata.get_bin(ECHO_TRAILING).cloned(),
    }
}

impl Echo {
    fn apply<T>(&self, mut response: Response<T>) -> Response<T> {
        if let Some(initial) = &self.initial {
            response
                .metadata_mut()
                .insert(ECHO_INITIAL, initial.clone());
        }
        if let Some(trailing) = &self.trailing {
            let mut trailers = MetadataMap::new();
            trailers.insert_bin(ECHO_TRAILING, trailing.clone());
            response.extensions_mut().insert(Trailers(trailers));
        }
        response
    }

    fn apply_to_status(&self, mut status: Status) -> Status {
        if let Some(trailing) = &self.trailing {
            status
                .metadata_mut()
                .insert_bin(ECHO_TRAILING, trailing.clone());
        }
        status
    }
}

fn with_echoed_metadata<T>(metadata: &MetadataMap, response: Response<T>) -> Response<T> {
    echo_metadata(metadata).apply(response)
}

/// `INVALID_ARGUMENT` when a request that says it was sent compressed was not (the interop
/// suite's probe that the server really checks).
fn check_compressed(
    expect: Option<&grpc_testing::BoolValue>,
    compressed: bool,
) -> Result<(), Status> {
    if expect.is_some_and(|b| b.value) && !compressed {
        return Err(Status::invalid_argument(
            "the request was expected to be compressed, and was not",
        ));
    }
    Ok(())
}

/// The status a request asks the server to answer with, if any (code 0 means none).
fn requested_status(echo: Option<&EchoStatus>) -> Option<Status> {
    let echo = echo.filter(|echo| echo.code != 0)?;
    Some(Status::new(Code::from(echo.code), echo.message.clone()))
}

/// A `COMPRESSABLE` payload: `size` zero bytes.
fn zeros(size: i32) -> Result<Payload, Status> {
    let size = usize::try_from(size)
        .map_err(|_| Status::invalid_argument(format!("response size {size} is negative")))?;
    Ok(Payload {
        r#type: grpc_testing::PayloadType::Compressable.into(),
        body: Bytes::from(vec![0; size]),
    })
}
