//! [`Streaming`]: a stream of request messages, decoded lazily as the body arrives.
//!
//! gRPC frames do not line up with HTTP/2 DATA frames: one DATA frame may carry several
//! messages, and one message may span many DATA frames. `Streaming` keeps what has arrived in a
//! [`FrameBuffer`] and decodes a message as soon as its last byte is there. While every frame
//! sits inside one received chunk, messages are decoded straight from that chunk, without
//! copying; only a frame split across chunks is joined into a buffer.

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures_util::Stream;
use http_body::Body;
use prost::Message;
use tonic::Status;

use serde::de::DeserializeOwned;

use super::{Decoding, FRAME_HEADER_LEN, FrameHeader, decode_message};
use crate::body::RequestBody;
use crate::compression::CompressionEncoding;
use crate::stream::{IdleTimeout, idle_timeout_status};

/// Received bytes not yet decoded.
///
/// Invariant: at most one of `chunk` and `joined` holds bytes. `chunk` is a received buffer
/// used in place; once a frame straddles two chunks, the rest moves to `joined`.
#[derive(Default)]
struct FrameBuffer {
    chunk: Bytes,
    joined: BytesMut,
}

impl FrameBuffer {
    fn push(&mut self, data: Bytes) {
        if self.chunk.is_empty() && self.joined.is_empty() {
            self.chunk = data;
        } else {
            if !self.chunk.is_empty() {
                self.joined.extend_from_slice(&self.chunk);
                self.chunk.clear();
            }
            self.joined.extend_from_slice(&data);
        }
    }

    fn is_empty(&self) -> bool {
        self.chunk.is_empty() && self.joined.is_empty()
    }

    /// The next whole frame, if it has fully arrived.
    fn next_frame(
        &mut self,
        max_message_size: usize,
    ) -> Result<Option<(FrameHeader, Bytes)>, Status> {
        let buffered: &[u8] = if self.joined.is_empty() {
            &self.chunk
        } else {
            &self.joined
        };
        if buffered.len() < FRAME_HEADER_LEN {
            return Ok(None);
        }
        let header = FrameHeader::parse(buffered, max_message_size)?;
        if buffered.len() < FRAME_HEADER_LEN + header.len {
            return Ok(None);
        }
        let payload = if self.joined.is_empty() {
            self.chunk.advance(FRAME_HEADER_LEN);
            self.chunk.split_to(header.len)
        } else {
            self.joined.advance(FRAME_HEADER_LEN);
            self.joined.split_to(header.len).freeze()
        };
        Ok(Some((header, payload)))
    }
}

/// A stream of request messages, decoded as they arrive.
///
/// Yields `Ok(message)` per message and ends with `None` when the client finishes sending.
/// A malformed frame, an oversized message or a broken stream yields one `Err` and ends it.
pub struct Streaming<T> {
    body: RequestBody,
    buffer: FrameBuffer,
    max_message_size: usize,
    /// The request's `grpc-encoding`, for compressed messages.
    encoding: Option<CompressionEncoding>,
    /// How the messages are read: protobuf, or JSON (`application/grpc+json`, ...).
    decoding: Decoding,
    /// Whether the last message yielded arrived compressed.
    last_compressed: bool,
    /// Fails the stream when the client goes quiet; reset in place on every chunk received.
    idle: Option<IdleTimeout>,
    /// Set once the stream has ended or failed; nothing is yielded after it.
    done: bool,
    _message: PhantomData<fn() -> T>,
}

impl<T> Streaming<T> {
    /// Decodes messages of at most `max_message_size` bytes from `body`, decompressing those
    /// flagged compressed with `encoding` (the request's `grpc-encoding`), as `decoding` says.
    pub(crate) fn new(
        body: RequestBody,
        max_message_size: usize,
        encoding: Option<CompressionEncoding>,
        decoding: impl Into<Decoding>,
    ) -> Self {
        Streaming {
            body,
            buffer: FrameBuffer::default(),
            max_message_size,
            encoding,
            decoding: decoding.into(),
            last_compressed: false,
            idle: None,
            done: false,
            _message: PhantomData,
        }
    }
}

impl<T> Streaming<T> {
    /// Fails the stream with `DEADLINE_EXCEEDED` when the client sends nothing for `timeout`
    /// while the handler waits for a message (`None`: no such limit). The timer is one
    /// object per call, created at the first wait and moved in place after each message.
    pub(crate) fn with_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle = timeout.map(IdleTimeout::new);
        self
    }

    /// Whether the last message yielded arrived compressed.
    pub fn last_message_compressed(&self) -> bool {
        self.last_compressed
    }
}

impl<T: Message + Default + DeserializeOwned + 'static> Streaming<T> {
    /// The next message, `None` when the client has finished sending.
    pub async fn message(&mut self) -> Result<Option<T>, Status> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx))
            .await
            .transpose()
    }

    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, Status>>> {
        loop {
            if let Some((header, payload)) = self.buffer.next_frame(self.max_message_size)? {
                self.last_compressed = header.compressed;
                let message = decode_message(
                    header,
                    payload,
                    self.encoding,
                    self.max_message_size,
                    self.decoding,
                );
                return Poll::Ready(Some(message));
            }
            let frame = match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Ready(frame) => frame,
                Poll::Pending => return self.poll_idle(cx),
            };
            match frame {
                Some(Ok(frame)) => {
                    // Request trailers carry nothing gRPC defines; only data matters.
                    if let Ok(data) = frame.into_data() {
                        // Any data is activity: a large message arriving slowly is not silence.
                        if let Some(idle) = &mut self.idle {
                            idle.reset();
                        }
                        self.buffer.push(data);
                    }
                }
                Some(Err(status)) => return Poll::Ready(Some(Err(status))),
                None if self.buffer.is_empty() => return Poll::Ready(None),
                None => {
                    return Poll::Ready(Some(Err(Status::internal(
                        "truncated request message: the stream ended inside a frame",
                    ))));
                }
            }
        }
    }
}

impl<T> Streaming<T> {
    /// While waiting for the body: the idle timeout's verdict, if one is set.
    fn poll_idle(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, Status>>> {
        let Some(idle) = &mut self.idle else {
            return Poll::Pending;
        };
        ready!(idle.poll_expired(cx));
        Poll::Ready(Some(Err(idle_timeout_status(idle.duration()))))
    }
}

impl<T: Message + Default + DeserializeOwned + 'static> Stream for Streaming<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let item = ready!(self.poll_message(cx));
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        Poll::Ready(item)
    }
}

impl<T> fmt::Debug for Streaming<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Streaming")
            .field("body", &self.body)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    use crate::codec::{Format, encode};

    fn frames(messages: &[&str]) -> Vec<u8> {
        messages
            .iter()
            .flat_map(|m| encode(&m.to_string()).unwrap().to_vec())
            .collect()
    }

    /// Feeds `data` through a FrameBuffer in chunks of `chunk` bytes, decoding as it goes.
    fn decode_chunked(data: &[u8], chunk: usize, limit: usize) -> Result<Vec<String>, Status> {
        let mut buffer = FrameBuffer::default();
        let mut out = Vec::new();
        for piece in data.chunks(chunk) {
            buffer.push(Bytes::copy_from_slice(piece));
            while let Some((header, payload)) = buffer.next_frame(limit)? {
                out.push(decode_message(
                    header,
                    payload,
                    None,
                    limit,
                    Format::Proto.into(),
                )?);
            }
        }
        assert!(buffer.is_empty(), "nothing left over");
        Ok(out)
    }

    #[test]
    fn frames_split_and_packed_arbitrarily_decode_in_order() {
        let messages = ["a", "", "hello world", &"x".repeat(300), "z"];
        let data = frames(&messages);
        for chunk in [1, 2, 5, 6, 7, 64, data.len()] {
            assert_eq!(
                decode_chunked(&data, chunk, 1024).unwrap(),
                messages,
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn message_at_the_limit_passes_and_over_it_fails() {
        let at_limit = "x".repeat(100);
        let len = at_limit.to_string().encoded_len();
        let data = frames(&[&at_limit]);
        assert_eq!(decode_chunked(&data, 7, len).unwrap(), [at_limit.as_str()]);
        let error = decode_chunked(&data, 7, len - 1).unwrap_err();
        assert_eq!(error.code(), tonic::Code::ResourceExhausted);
    }

    #[test]
    fn whole_frames_in_one_chunk_are_not_copied() {
        let data = Bytes::from(frames(&["first", "second"]));
        let start = data.as_ptr() as usize;
        let mut buffer = FrameBuffer::default();
        buffer.push(data);
        let (_, first) = buffer.next_frame(1024).unwrap().unwrap();
        assert_eq!(
            first.as_ptr() as usize,
            start + FRAME_HEADER_LEN,
            "sliced in place"
        );
    }

    #[tokio::test]
    async fn streaming_ends_with_an_error_on_a_truncated_last_frame() {
        let mut data = frames(&["ok"]);
        data.extend_from_slice(&[0, 0, 0, 0, 9, 1, 2]);
        let mut stream = Streaming::<String>::new(
            RequestBody::whole(Bytes::from(data)),
            1024,
            None,
            Format::Proto,
        );
        assert_eq!(stream.message().await.unwrap().as_deref(), Some("ok"));
        let error = stream.message().await.unwrap_err();
        assert_eq!(error.code(), tonic::Code::Internal);
        assert!(stream.next().await.is_none(), "nothing after an error");
    }
}
