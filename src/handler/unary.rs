//! The unary call chain: `unmarshal -> impl -> marshal -> recover` on [`FastFuture`].
//!
//! When the request body is whole and the user's method answers without waiting, each step
//! runs at once on the caller's thread and the finished response comes back ready: no box, no
//! task, no waker. The first step that is really pending turns the rest of the chain into one
//! ordinary future, with the same result.

use std::future::Future;

use bytes::Buf;
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::Status;

use super::adaptive::invoke_in_place;
use super::{
    AnswerForm, Invoked, MethodConfig, ReplyCodec, RequestCodec, RequestHead, ResponseFuture,
    reply_headers, respond,
};
use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::call::Call;
use crate::codec::{self, Streaming};
use crate::compression::{CompressionEncoding, MessageCompression, RequestCompressed};
use crate::http2::Fields;
use crate::metadata::Trailers;
use crate::{spare_maps, status};

/// Serves one unary call: decodes the request, calls `method`, encodes its reply.
///
/// `method` is the user's implementation, already bound to the service instance; it receives a
/// [`tonic::Request`] carrying the request metadata and extensions.
pub fn unary<Req, Resp, M, F>(
    request: http::Request<RequestBody>,
    call: &mut Call,
    config: MethodConfig<'_>,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + DeserializeOwned + Send + 'static,
    Resp: Message + Serialize + Send + 'static,
    M: FnOnce(tonic::Request<Req>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<Resp>, Status>> + Send + 'static,
{
    // Only Connect sends GET, and only to methods without side effects.
    if request.method() == http::Method::GET && !config.no_side_effects {
        return FastFuture::ok(crate::protocol::grpc::get_for_method_with_side_effects());
    }
    // Taken before anything can fail: once taken, every answer is in the form asked for.
    let form = AnswerForm::of_unary(call);
    respond(
        config.config,
        form,
        call_with_message(request, call, config, method).map(|(reply, encoding)| {
            reply.and_then(move |reply| FastFuture::ready(marshal(reply, encoding, form)))
        }),
    )
}

/// The steps of every call with a single request message: negotiate the encodings, then
/// `unmarshal -> impl`. Gives the method's reply, still to be marshalled, and the encoding to
/// marshal it with.
pub(super) fn call_with_message<Req, T, M, F>(
    request: http::Request<RequestBody>,
    call: &mut Call,
    method_config: MethodConfig<'_>,
    method: M,
) -> Invoked<T>
where
    Req: Message + Default + DeserializeOwned + Send + 'static,
    T: Send + 'static,
    M: FnOnce(tonic::Request<Req>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<T>, Status>> + Send + 'static,
{
    let (parts, body) = request.into_parts();
    let head = RequestHead::new(parts);
    let config = &method_config.config;
    let encodings = config.negotiate(&head.headers, call)?;
    let decoded = unmarshal::<Req>(body, encodings.request);
    let reply = match decoded.into_ready() {
        Ok(Ok(decoded)) => method_config.invoke(|| method(decoded.into_request(head)), call),
        Ok(Err(status)) => FastFuture::err(status),
        // The call waits for its body, so it is spawned already.
        Err(pending) => {
            pending.and_then(move |decoded| invoke_in_place(|| method(decoded.into_request(head))))
        }
    };
    Ok((reply, encodings.reply))
}

/// Decodes the request at once when its body is whole. Otherwise reads the rest: a bare
/// message (Connect) up to the limit, or a stream of frames (so an oversized frame is refused
/// as soon as its header arrives) that must hold exactly one message.
fn unmarshal<M: Message + Default + DeserializeOwned + Send + 'static>(
    body: RequestBody,
    codec: RequestCodec,
) -> FastFuture<Decoded<M>, Status> {
    match body.into_whole() {
        Ok(data) => FastFuture::ready(Decoded::new(data, codec)),
        Err(body) if codec.bare => FastFuture::boxed(async move {
            let data = codec::collect_bare(body, codec.max_message_size).await?;
            Decoded::new(data, codec)
        }),
        Err(body) => FastFuture::boxed(async move {
            let mut messages =
                Streaming::<M>::new(body, codec.max_message_size, codec.encoding, codec.decoding);
            let message = messages
                .message()
                .await?
                .ok_or_else(codec::missing_message)?;
            let compressed = codec
                .encoding
                .filter(|_| messages.last_message_compressed());
            if messages.message().await?.is_some() {
                return Err(codec::extra_message());
            }
            Ok(Decoded {
                message,
                compressed,
            })
        }),
    }
}

/// A decoded request message, and the encoding it arrived compressed with, if any.
struct Decoded<M> {
    message: M,
    compressed: Option<CompressionEncoding>,
}

impl<M: Message + Default + DeserializeOwned + 'static> Decoded<M> {
    fn new(data: bytes::Bytes, codec: RequestCodec) -> Result<Self, Status> {
        let RequestCodec {
            bare,
            decoding,
            encoding,
            max_message_size,
        } = codec;
        if bare {
            // A bare message is compressed whenever the request names an encoding.
            let message = codec::decode_bare(data, max_message_size, encoding, decoding)?;
            return Ok(Decoded {
                message,
                compressed: encoding,
            });
        }
        let compressed = encoding.filter(|_| data.first() == Some(&1));
        let message = codec::decode_unary(data, max_message_size, encoding, decoding)?;
        Ok(Decoded {
            message,
            compressed,
        })
    }

    /// The request a handler sees for this message.
    fn into_request(self, mut head: RequestHead) -> tonic::Request<M> {
        if let Some(encoding) = self.compressed {
            head.extensions.insert(RequestCompressed(encoding));
        }
        head.into_request(self.message)
    }
}

/// Encodes a reply into the complete HTTP response, in `form`: gRPC's headers, one message
/// and trailers; Connect's headers and bare message; or REST's.
pub(super) fn marshal<M: Message + Serialize + 'static>(
    response: tonic::Response<M>,
    codec: ReplyCodec,
    form: AnswerForm,
) -> Result<http::Response<ResponseBody>, Status> {
    let (metadata, message, mut extensions) = response.into_parts();
    let mut frame = codec.encode(&message, extensions.get::<MessageCompression>())?;
    let trailers = Trailers::take(&mut extensions);
    let mut response = match form {
        AnswerForm::Grpc(_) => {
            let trailers = match trailers {
                Some(metadata) => Fields::Map(status::ok_trailers(metadata)),
                None => Fields::Fixed(&status::OK_TRAILERS),
            };
            ResponseBody::unary(frame, trailers).with_headers(reply_headers(metadata, codec))
        }
        AnswerForm::Connect(_) => {
            let compressed = frame.first() == Some(&1);
            frame.advance(codec::FRAME_HEADER_LEN);
            let mut headers = spare_maps::or_spare(status::sanitized(metadata.into_headers()));
            if let Some(accepted) = codec.announce.accept_header() {
                headers.insert(http::header::ACCEPT_ENCODING, accepted);
            }
            let encoding = codec.encoding.filter(|_| compressed);
            let trailers = trailers.map(status::sanitized);
            crate::protocol::connect::unary_answer(
                headers,
                frame,
                codec.format,
                encoding.map(CompressionEncoding::header_value),
                trailers.as_ref(),
            )
        }
        // A REST call negotiates no compression (its wire names no encoding headers): the
        // metadata is the headers, trailing metadata more headers, the bare JSON message the
        // body.
        AnswerForm::Rest => {
            if frame.first() != Some(&0) {
                return Err(Status::internal("a REST reply cannot be compressed"));
            }
            frame.advance(codec::FRAME_HEADER_LEN);
            let headers = spare_maps::or_spare(status::sanitized(metadata.into_headers()));
            let trailers = trailers.map(status::sanitized);
            crate::protocol::rest::reply(headers, trailers.as_ref(), frame, None)
        }
    };
    *response.extensions_mut() = extensions;
    Ok(response)
}
