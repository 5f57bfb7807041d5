//! Client-, server- and bidirectional-streaming calls.
//!
//! They reuse the unary steps where a side is a single message, decode request streams lazily
//! with [`Streaming`], and encode reply streams message by message as the connection driver
//! polls them (only when the peer's window has room). The handler's future is still polled once
//! in place: a server-streaming call whose method returns its stream at once sends its headers
//! without a task; the stream itself is then pumped by one.

use std::future::Future;

use futures_util::{Stream, StreamExt};
use prost::Message;
use tonic::Status;

use super::unary::{marshal, unmarshal};
use super::{HandlerConfig, ResponseFuture, tonic_request};
use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::codec::{self, Streaming};
use crate::metadata::Trailers;
use crate::status;

/// Serves a call with one request and a stream of replies.
pub fn server_streaming<Req, Resp, S, M, F>(
    request: http::Request<RequestBody>,
    config: &HandlerConfig,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + Send + 'static,
    Resp: Message + 'static,
    S: Stream<Item = Result<Resp, Status>> + Send + 'static,
    M: FnOnce(tonic::Request<Req>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<S>, Status>> + Send + 'static,
{
    let (parts, body) = request.into_parts();
    unmarshal::<Req>(body, config.max_receive_message_size)
        .and_then(move |message| FastFuture::from_future(method(tonic_request(parts, message))))
        .map(marshal_stream)
        .recover(|status| status::response(&status))
}

/// Serves a call with a stream of requests and one reply.
pub fn client_streaming<Req, Resp, M, F>(
    request: http::Request<RequestBody>,
    config: &HandlerConfig,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + Send + 'static,
    Resp: Message + Send + 'static,
    M: FnOnce(tonic::Request<Streaming<Req>>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<Resp>, Status>> + Send + 'static,
{
    FastFuture::from_future(method(streaming_request(request, config)))
        .and_then(|response| FastFuture::ready(marshal(response)))
        .recover(|status| status::response(&status))
}

/// Serves a call with a stream of requests and a stream of replies.
pub fn streaming<Req, Resp, S, M, F>(
    request: http::Request<RequestBody>,
    config: &HandlerConfig,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + Send + 'static,
    Resp: Message + 'static,
    S: Stream<Item = Result<Resp, Status>> + Send + 'static,
    M: FnOnce(tonic::Request<Streaming<Req>>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<S>, Status>> + Send + 'static,
{
    FastFuture::from_future(method(streaming_request(request, config)))
        .map(marshal_stream)
        .recover(|status| status::response(&status))
}

fn streaming_request<Req>(
    request: http::Request<RequestBody>,
    config: &HandlerConfig,
) -> tonic::Request<Streaming<Req>> {
    let (parts, body) = request.into_parts();
    tonic_request(parts, Streaming::new(body, config.max_receive_message_size))
}

/// The response for a reply stream: headers now, each message encoded as it is polled.
fn marshal_stream<Resp, S>(response: tonic::Response<S>) -> http::Response<ResponseBody>
where
    Resp: Message + 'static,
    S: Stream<Item = Result<Resp, Status>> + Send + 'static,
{
    let (metadata, messages, mut extensions) = response.into_parts();
    let frames = messages.map(|message| message.and_then(|message| codec::encode(&message)));
    let trailers = Trailers::take(&mut extensions);
    let mut response = http::Response::new(ResponseBody::streaming(Box::pin(frames), trailers));
    *response.headers_mut() = status::ok_headers(metadata.into_headers());
    *response.extensions_mut() = extensions;
    response
}
