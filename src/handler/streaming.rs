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
use super::{
    Encodings, HandlerConfig, RequestHead, ResponseFuture, message_encoding, reply_headers, respond,
};
use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::codec::{self, Streaming};
use crate::compression::{CompressionEncoding, MessageCompression};
use crate::metadata::Trailers;

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
    let head = RequestHead::new(parts);
    let config = *config;
    respond(config.negotiate(&head.headers).map(|encodings| {
        unmarshal::<Req>(body, config.max_receive_message_size, encodings.request)
            .and_then(move |decoded| config.invoke(method(decoded.into_request(head))))
            .map(move |response| marshal_stream(response, encodings.response))
    }))
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
    respond(
        streaming_request(request, config).map(|(request, encodings)| {
            config
                .invoke(method(request))
                .and_then(move |response| FastFuture::ready(marshal(response, encodings.response)))
        }),
    )
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
    respond(
        streaming_request(request, config).map(|(request, encodings)| {
            config
                .invoke(method(request))
                .map(move |response| marshal_stream(response, encodings.response))
        }),
    )
}

/// The request stream a handler reads, and the call's negotiated encodings.
fn streaming_request<Req>(
    request: http::Request<RequestBody>,
    config: &HandlerConfig,
) -> Result<(tonic::Request<Streaming<Req>>, Encodings), Status> {
    let (parts, body) = request.into_parts();
    let encodings = config.negotiate(&parts.headers)?;
    let messages = Streaming::new(body, config.max_receive_message_size, encodings.request)
        .with_idle_timeout(config.receive_idle_timeout);
    Ok((RequestHead::new(parts).into_request(messages), encodings))
}

/// The response for a reply stream: headers now, each message encoded as it is polled (and
/// compressed if the call has an encoding and the handler's switch, if any, is on).
fn marshal_stream<Resp, S>(
    response: tonic::Response<S>,
    encoding: Option<CompressionEncoding>,
) -> http::Response<ResponseBody>
where
    Resp: Message + 'static,
    S: Stream<Item = Result<Resp, Status>> + Send + 'static,
{
    let (metadata, messages, mut extensions) = response.into_parts();
    let switch = extensions.get::<MessageCompression>().cloned();
    let frames = messages.map(move |message| {
        let encoding = message_encoding(encoding, switch.as_ref());
        message.and_then(|message| codec::encode_with(&message, encoding))
    });
    let trailers = Trailers::take(&mut extensions);
    let mut response = http::Response::new(ResponseBody::streaming(Box::pin(frames), trailers));
    *response.headers_mut() = reply_headers(metadata, encoding);
    *response.extensions_mut() = extensions;
    response
}
