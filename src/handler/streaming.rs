//! Client-, server- and bidirectional-streaming calls.
//!
//! They reuse the unary steps where a side is a single message, decode request streams lazily
//! with [`Streaming`], and encode reply streams message by message as the connection polls
//! them (only when the peer's window has room). The handler's future is still polled once
//! in place: a server-streaming call whose method returns its stream at once sends its headers
//! without a task; the stream itself is then pumped by one.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_util::Stream;
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::Status;

use super::unary::{call_with_message, marshal};
use super::{AnswerForm, ContainedStream};
use super::{
    Invoked, MethodConfig, ReplyCodec, RequestHead, ResponseFuture, reply_headers, respond,
};
use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::call::Call;
use crate::codec::Streaming;
use crate::compression::MessageCompression;
use crate::metadata::Trailers;

/// Serves a call with one request and a stream of replies.
pub fn server_streaming<Req, Resp, S, M, F>(
    request: http::Request<RequestBody>,
    call: &mut Call,
    config: MethodConfig<'_>,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + DeserializeOwned + Send + 'static,
    Resp: Message + Serialize + 'static,
    S: Stream<Item = Result<Resp, Status>> + Send + 'static,
    M: FnOnce(tonic::Request<Req>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<S>, Status>> + Send + 'static,
{
    // A REST call's one bound message is the request this method takes.
    if !call.wire_or_grpc().is_rest()
        && let Some(refused) = refuse_bare(call)
    {
        return refused;
    }
    respond(
        config.config,
        AnswerForm::of_streaming(call),
        call_with_message(request, call, config, method)
            .map(|(reply, encoding)| reply.map(move |reply| marshal_stream(reply, encoding))),
    )
}

/// Serves a call with a stream of requests and one reply.
pub fn client_streaming<Req, Resp, M, F>(
    request: http::Request<RequestBody>,
    call: &mut Call,
    config: MethodConfig<'_>,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + DeserializeOwned + Send + 'static,
    Resp: Message + Serialize + Send + 'static,
    M: FnOnce(tonic::Request<Streaming<Req>>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<Resp>, Status>> + Send + 'static,
{
    if let Some(refused) = refuse_bare(call) {
        return refused;
    }
    let form = AnswerForm::of_streaming(call);
    respond(
        config.config,
        form,
        call_with_stream(request, call, config, method).map(|(reply, encoding)| {
            reply.and_then(move |reply| FastFuture::ready(marshal(reply, encoding, form)))
        }),
    )
}

/// Serves a call with a stream of requests and a stream of replies.
pub fn streaming<Req, Resp, S, M, F>(
    request: http::Request<RequestBody>,
    call: &mut Call,
    config: MethodConfig<'_>,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + DeserializeOwned + Send + 'static,
    Resp: Message + Serialize + 'static,
    S: Stream<Item = Result<Resp, Status>> + Send + 'static,
    M: FnOnce(tonic::Request<Streaming<Req>>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<S>, Status>> + Send + 'static,
{
    if let Some(refused) = refuse_bare(call) {
        return refused;
    }
    respond(
        config.config,
        AnswerForm::of_streaming(call),
        call_with_stream(request, call, config, method)
            .map(|(reply, encoding)| reply.map(move |reply| marshal_stream(reply, encoding))),
    )
}

/// The refusal of a Connect unary request (one bare message, its answer one too) or a REST
/// request (one message bound from path, query and body) to a method taking a stream of
/// requests; `None` for any other request.
fn refuse_bare(call: &Call) -> Option<ResponseFuture> {
    call.wire_or_grpc()
        .bare()
        .then(|| FastFuture::ok(crate::protocol::grpc::unary_protocol_for_streaming_method()))
}

/// The steps of every call with a request stream: negotiate the encodings, then `impl` with a
/// lazily decoding [`Streaming`]. Gives the method's reply, still to be marshalled, and the
/// encoding to marshal it with.
fn call_with_stream<Req, T, M, F>(
    request: http::Request<RequestBody>,
    call: &mut Call,
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
    let encodings = settings.negotiate(&parts.headers, call)?;
    let request = encodings.request;
    let messages = Streaming::new(
        body,
        request.max_message_size,
        request.encoding,
        request.decoding,
    )
    .with_idle_timeout(settings.receive_idle_timeout);
    let request = RequestHead::new(parts).into_request(messages);
    Ok((config.invoke(|| method(request), call), encodings.reply))
}

/// The response for a reply stream: headers now, the messages encoded as they are polled (and
/// compressed if the call has an encoding and the handler's switch, if any, is on).
fn marshal_stream<Resp, S>(
    response: tonic::Response<S>,
    codec: ReplyCodec,
) -> http::Response<ResponseBody>
where
    Resp: Message + Serialize + 'static,
    S: Stream<Item = Result<Resp, Status>> + Send + 'static,
{
    let (metadata, messages, mut extensions) = response.into_parts();
    let switch = extensions.get::<MessageCompression>().cloned();
    let frames = EncodedReplies {
        messages: ContainedStream::new(messages),
        codec,
        switch,
        held: None,
        ended: false,
    };
    let trailers = Trailers::take(&mut extensions).unwrap_or_default();
    let mut response = ResponseBody::streaming(Box::pin(frames), trailers)
        .with_headers(reply_headers(metadata, codec));
    *response.extensions_mut() = extensions;
    response
}

/// Messages smaller than this that a reply stream has ready together are encoded into one
/// buffer, of at most this size (the smallest maximum frame size HTTP/2 allows), which the
/// connection sends as one DATA frame: a stream of small messages costs a frame, a write into
/// the connection's buffer and a poll of its body per batch, not per message. A larger (or a
/// compressed) message is handed on in a buffer of its own, never copied.
const BATCH: usize = 16 * 1024;

pin_project_lite::pin_project! {
    /// A reply stream's messages as encoded frames, those ready together in one buffer.
    struct EncodedReplies<S, Resp> {
        #[pin]
        messages: ContainedStream<S>,
        codec: ReplyCodec,
        switch: Option<MessageCompression>,
        // What the stream yielded after a batch was full: the next to hand on.
        held: Option<Result<Resp, Status>>,
        // The stream ended while a batch was being filled.
        ended: bool,
    }
}

impl<S, Resp> Stream for EncodedReplies<S, Resp>
where
    Resp: Message + Serialize + 'static,
    S: Stream<Item = Result<Resp, Status>>,
{
    type Item = Result<bytes::Bytes, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        let first = match this.held.take() {
            Some(next) => next,
            None if *this.ended => return Poll::Ready(None),
            None => match ready!(this.messages.as_mut().poll_next(cx)) {
                Some(next) => next,
                None => return Poll::Ready(None),
            },
        };
        // The first message in the thread's recycled chunk, as a unary reply is: a stream that
        // yields one message at a time allocates nothing for it.
        let first = match first {
            Ok(message) => this.codec.encode(&message, this.switch.as_ref())?,
            Err(status) => return Poll::Ready(Some(Err(status))),
        };
        if first.len() >= BATCH || this.codec.compresses(this.switch.as_ref()) {
            return Poll::Ready(Some(Ok(first)));
        }
        // More ready: the batch takes the first's bytes, and the others are encoded into it.
        let mut batch: Option<bytes::BytesMut> = None;
        loop {
            let next = match this.messages.as_mut().poll_next(cx) {
                Poll::Pending => break,
                Poll::Ready(None) => {
                    *this.ended = true;
                    break;
                }
                Poll::Ready(Some(Err(status))) => {
                    *this.held = Some(Err(status));
                    break;
                }
                Poll::Ready(Some(Ok(message))) => message,
            };
            let batch = batch.get_or_insert_with(|| {
                let mut batch = bytes::BytesMut::with_capacity(BATCH);
                batch.extend_from_slice(&first);
                batch
            });
            let room = BATCH - batch.len();
            match this
                .codec
                .encode_into(&next, this.switch.as_ref(), batch, room)
            {
                Ok(true) => {}
                Ok(false) => {
                    *this.held = Some(Ok(next));
                    break;
                }
                Err(status) => {
                    *this.held = Some(Err(status));
                    break;
                }
            }
        }
        Poll::Ready(Some(Ok(batch.map_or(first, bytes::BytesMut::freeze))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::{CompressionEncoding, EncodingList};
    use futures_util::StreamExt;

    fn codec(encoding: Option<CompressionEncoding>) -> ReplyCodec {
        ReplyCodec {
            format: crate::codec::Format::Proto,
            encoding,
            max_message_size: 4 * 1024 * 1024,
            announce: EncodingList::default(),
        }
    }

    /// Every frame the encoder has ready now, until it is pending or has ended.
    fn ready_frames<S>(
        replies: &mut Pin<Box<EncodedReplies<S, Vec<u8>>>>,
    ) -> Vec<Result<usize, Status>>
    where
        S: Stream<Item = Result<Vec<u8>, Status>>,
    {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut frames = Vec::new();
        while let Poll::Ready(Some(frame)) = replies.as_mut().poll_next(&mut cx) {
            frames.push(frame.map(|frame| frame.len()));
        }
        frames
    }

    fn replies<S>(messages: S, codec: ReplyCodec) -> Pin<Box<EncodedReplies<S, Vec<u8>>>> {
        Box::pin(EncodedReplies {
            messages: ContainedStream::new(messages),
            codec,
            switch: None,
            held: None,
            ended: false,
        })
    }

    /// A `Vec<u8>` message of `len` bytes: a frame of the 5-byte header, the field's tag, its
    /// length as a varint and the bytes (1,000 bytes for 992, 9 for 2).
    fn message(len: usize) -> Result<Vec<u8>, Status> {
        Ok(vec![7; len])
    }

    #[test]
    fn small_messages_ready_together_are_encoded_into_frames_of_at_most_16_kib() {
        let all = futures_util::stream::iter((0..40).map(|_| message(992)));
        let mut encoded = replies(all, codec(None));
        let lengths: Vec<usize> = ready_frames(&mut encoded)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        // 16 frames of 1,000 bytes fit in 16 KiB, a 17th does not.
        assert_eq!(lengths, [16_000, 16_000, 8_000]);
    }

    #[test]
    fn a_large_or_compressed_message_goes_alone_and_order_is_kept() {
        let mixed =
            futures_util::stream::iter([message(2), message(2), message(BATCH), message(2)])
                .chain(futures_util::stream::pending());
        let mut encoded = replies(mixed, codec(None));
        let lengths: Vec<usize> = ready_frames(&mut encoded)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(lengths, [9 + 9, BATCH + 9, 9]);
        let compressed = futures_util::stream::iter([message(2), message(2)]);
        let mut encoded = replies(compressed, codec(Some(CompressionEncoding::ALL[0])));
        assert_eq!(ready_frames(&mut encoded).len(), 2, "one frame each");
    }

    #[test]
    fn an_error_after_batched_messages_comes_after_them() {
        let failing =
            futures_util::stream::iter([message(1), message(1), Err(Status::aborted("stop"))]);
        let mut encoded = replies(failing, codec(None));
        let frames = ready_frames(&mut encoded);
        assert_eq!(frames[0].as_ref().ok(), Some(&16));
        assert_eq!(frames[1].as_ref().unwrap_err().code(), tonic::Code::Aborted);
        assert_eq!(frames.len(), 2);
    }

    #[test]
    fn a_message_above_the_limit_is_resource_exhausted_after_the_batch_before_it() {
        let mut small_limit = codec(None);
        small_limit.max_message_size = 100;
        let oversized = futures_util::stream::iter([message(1), message(1), message(200)]);
        let mut encoded = replies(oversized, small_limit);
        let frames = ready_frames(&mut encoded);
        assert_eq!(frames[0].as_ref().ok(), Some(&16));
        assert_eq!(
            frames[1].as_ref().unwrap_err().code(),
            tonic::Code::ResourceExhausted
        );
    }
}
