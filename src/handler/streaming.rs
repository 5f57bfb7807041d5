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

use super::unary::{call_with_message, marshal};
use super::{Contained, ContainedStream};
use super::{
    Invoked, MethodConfig, ReplyCodec, RequestHead, ResponseFuture, reply_headers, respond,
};
use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::codec::Streaming;
use crate::compression::MessageCompression;
use crate::metadata::Trailers;

/// Serves a call with one request and a stream of replies.
pub fn server_streaming<Req, Resp, S, M, F>(
    request: http::Request<RequestBody>,
    config: MethodConfig<'_>,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + Send + 'static,
    Resp: Message + 'static,
    S: Stream<Item = Result<Resp, Status>> + Send + 'static,
    M: FnOnce(tonic::Request<Req>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<S>, Status>> + Send + 'static,
{
    respond(
        config.config,
        call_with_message(request, config, method)
            .map(|(reply, encoding)| reply.map(move |reply| marshal_stream(reply, encoding))),
    )
}

/// Serves a call with a stream of requests and one reply.
pub fn client_streaming<Req, Resp, M, F>(
    request: http::Request<RequestBody>,
    config: MethodConfig<'_>,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + Send + 'static,
    Resp: Message + Send + 'static,
    M: FnOnce(tonic::Request<Streaming<Req>>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<Resp>, Status>> + Send + 'static,
{
    respond(
        config.config,
        call_with_stream(request, config, method).map(|(reply, encoding)| {
            reply.and_then(move |reply| FastFuture::ready(marshal(reply, encoding)))
        }),
    )
}

/// Serves a call with a stream of requests and a stream of replies.
pub fn streaming<Req, Resp, S, M, F>(
    request: http::Request<RequestBody>,
    config: MethodConfig<'_>,
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
        config.config,
        call_with_stream(request, config, method)
            .map(|(reply, encoding)| reply.map(move |reply| marshal_stream(reply, encoding))),
    )
}

/// The steps of every call with a request stream: negotiate the encodings, then `impl` with a
/// lazily decoding [`Streaming`]. Gives the method's reply, still to be marshalled, and the
/// encoding to marshal it with.
fn call_with_stream<Req, T, M, F>(
    request: http::Request<RequestBody>,
    config: MethodConfig<'_>,
    method: M,
) -> Invoked<T>
where
    T: Send + 'static,
    M: FnOnce(tonic::Request<Streaming<Req>>) -> F,
    F: Future<Output = Result<tonic::Response<T>, Status>> + Send + 'static,
{
    let (parts, body) = request.into_parts();
    let settings = &config.config;
    let encodings = settings.negotiate(&parts.headers)?;
    let messages = Streaming::new(body, settings.max_receive_message_size, encodings.request)
        .with_idle_timeout(settings.receive_idle_timeout);
    let request = RequestHead::new(parts).into_request(messages);
    Ok((
        config.invoke(Contained::new(method(request))),
        encodings.reply,
    ))
}

/// The response for a reply stream: headers now, each message encoded as it is polled (and
/// compressed if the call has an encoding and the handler's switch, if any, is on).
fn marshal_stream<Resp, S>(
    response: tonic::Response<S>,
    codec: ReplyCodec,
) -> http::Response<ResponseBody>
where
    Resp: Message + 'static,
    S: Stream<Item = Result<Resp, Status>> + Send + 'static,
{
    let (metadata, messages, mut extensions) = response.into_parts();
    let switch = extensions.get::<MessageCompression>().cloned();
    let frames = ContainedStream::new(messages)
        .map(move |message| message.and_then(|message| codec.encode(&message, switch.as_ref())));
    let trailers = Trailers::take(&mut extensions);
    let mut response = http::Response::new(ResponseBody::streaming(Box::pin(frames), trailers));
    *response.headers_mut() = reply_headers(metadata, codec);
    *response.extensions_mut() = extensions;
    response
}
