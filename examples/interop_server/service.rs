//! `grpc.testing.TestService` as the interop suite expects it; shared by the example binary
//! and the interop tests (which include this file), so both exercise the same code.

use bytes::Bytes;
use fastgrpc::{Code, FastFuture, Request, Response, RpcFuture, Status};

use crate::grpc_testing;
use grpc_testing::test_service_server::TestService;
use grpc_testing::{EchoStatus, Empty, Payload, SimpleRequest, SimpleResponse};

/// The id reported for `fill_server_id`.
const SERVER_ID: &str = "fastgrpc-interop";

/// The interop service. Every answer is computed at once, so calls take the inline path.
pub struct Interop;

impl TestService for Interop {
    fn empty_call(&self, _request: Request<Empty>) -> impl RpcFuture<Empty> {
        FastFuture::ok(Response::new(Empty {}))
    }

    fn unary_call(&self, request: Request<SimpleRequest>) -> impl RpcFuture<SimpleResponse> {
        FastFuture::ready(unary_call(request.into_inner()).map(Response::new))
    }
}

fn unary_call(request: SimpleRequest) -> Result<SimpleResponse, Status> {
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
