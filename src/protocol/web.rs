//! gRPC-Web (`PROTOCOL-WEB.md` in the gRPC repository) served beside gRPC on the same port.
//!
//! A gRPC-Web request is a gRPC request with another `content-type`, and, in the `-text`
//! variants, a base64-encoded body; its answer carries the trailers as the body's last frame
//! (flag `0x80`, then the trailers as HTTP/1 header lines), since browsers cannot read HTTP
//! trailers. So the router turns a gRPC-Web request into a gRPC one (the services see no
//! difference), and turns the service's response back: `content-type`, trailers moved into
//! the body, and base64 for `-text`. A call whose answer is ready is still answered inline: the
//! connection sends the translated body's frames in the same poll.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::{BufMut, Bytes, BytesMut};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue};
use http_body::{Body, Frame};
use tonic::Status;

use super::in_band::{InBand, in_band};
use crate::body::{RequestBody, ResponseBody};
use crate::protocol::{Format, Protocol, Wire};
use crate::status;

/// Which of gRPC-Web's encodings a call uses, and its messages' format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Web {
    /// `application/grpc-web-text`: the body in base64.
    text: bool,
    /// `+proto` (or none) or `+json`.
    format: Format,
}

/// The flag of the frame that carries the trailers.
const TRAILERS_FLAG: u8 = 0x80;

impl Web {
    /// The gRPC-Web encoding of a request whose wire is gRPC-Web's.
    pub(crate) fn of(wire: Wire) -> Web {
        Web {
            text: wire.protocol == Protocol::GrpcWebText,
            format: wire.format,
        }
    }

    fn content_type(self) -> HeaderValue {
        HeaderValue::from_static(match (self.text, self.format) {
            (false, Format::Proto) => "application/grpc-web+proto",
            (false, Format::Json) => "application/grpc-web+json",
            (true, Format::Proto) => "application/grpc-web-text+proto",
            (true, Format::Json) => "application/grpc-web-text+json",
        })
    }

    /// The `content-type` of the request as gRPC.
    fn grpc_content_type(self) -> HeaderValue {
        match self.format {
            Format::Proto => status::GRPC_CONTENT_TYPE,
            Format::Json => status::GRPC_JSON_CONTENT_TYPE,
        }
    }

    /// The request as gRPC: `content-type: application/grpc`, and the body decoded from base64
    /// for `-text` (at once when it is whole, as it arrives otherwise).
    pub(crate) fn grpc_request(
        self,
        request: http::Request<RequestBody>,
    ) -> Result<http::Request<RequestBody>, Status> {
        let (mut parts, body) = request.into_parts();
        parts.headers.insert(CONTENT_TYPE, self.grpc_content_type());
        let body = if !self.text {
            body
        } else {
            match body.into_whole() {
                Ok(text) => {
                    let mut decoder = Base64Decoder::default();
                    let decoded = decoder.decode(&text)?;
                    decoder.finish()?;
                    RequestBody::whole(decoded)
                }
                Err(body) => RequestBody::new(Base64Body {
                    inner: body,
                    decoder: Base64Decoder::default(),
                }),
            }
        };
        Ok(http::Request::from_parts(parts, body))
    }

    /// The service's gRPC response as gRPC-Web: its `content-type`, and a body that ends with
    /// the trailers frame (base64-encoded throughout for `-text`). A trailers-only response
    /// stays one: its status is in the headers, where gRPC-Web clients read it too.
    pub(crate) fn web_response(
        self,
        response: http::Response<ResponseBody>,
    ) -> http::Response<ResponseBody> {
        let (mut parts, body) = response.into_parts();
        parts.headers.insert(CONTENT_TYPE, self.content_type());
        let body = if body.is_end_stream() {
            body
        } else {
            in_band(body, self)
        };
        http::Response::from_parts(parts, body)
    }
    /// The answer to a call that fails with `status` before its reply: trailers-only, as gRPC's,
    /// with gRPC-Web's `content-type` (its clients read the status from the head).
    pub(crate) fn failure(self, status: &Status) -> http::Response<ResponseBody> {
        let mut response = super::grpc::status(status);
        response
            .headers_mut()
            .insert(CONTENT_TYPE, self.content_type());
        response
    }

    /// The last frame of a reply stream that ends with `status`: the trailers frame, in base64
    /// for `-text`.
    pub(crate) fn status_frame(self, status: &Status) -> Bytes {
        let trailers = crate::status::trailers(status, HeaderMap::new());
        self.data(trailers_frame(&trailers))
    }
}

/// gRPC-Web's in-band trailers: a frame of flag `0x80`, and for `-text` every frame in base64
/// (each padded on its own, as gRPC-Web clients expect).
impl InBand for Web {
    fn data(&self, data: Bytes) -> Bytes {
        if self.text {
            Bytes::from(BASE64.encode(&data))
        } else {
            data
        }
    }

    fn trailers(&self, trailers: &HeaderMap) -> Bytes {
        trailers_frame(trailers)
    }
}

/// The frame that carries `trailers`: flag `0x80`, length, then `name:value\r\n` lines.
fn trailers_frame(trailers: &HeaderMap) -> Bytes {
    let block_len: usize = trailers
        .iter()
        .map(|(name, value)| name.as_str().len() + 1 + value.len() + 2)
        .sum();
    let mut frame = BytesMut::with_capacity(5 + block_len);
    frame.put_u8(TRAILERS_FLAG);
    frame.put_u32(u32::try_from(block_len).unwrap_or(u32::MAX));
    for (name, value) in trailers {
        frame.put_slice(name.as_str().as_bytes());
        frame.put_u8(b':');
        frame.put_slice(value.as_bytes());
        frame.put_slice(b"\r\n");
    }
    frame.freeze()
}

/// Decodes base64 that may arrive in pieces of any length, and may be several padded
/// encodings one after another (as clients and proxies send chunk by chunk): every group of
/// four characters is decoded on its own terms, padded or not.
#[derive(Default)]
struct Base64Decoder {
    /// Characters of a group not yet complete (fewer than four).
    pending: BytesMut,
}

impl Base64Decoder {
    /// What `text` completes, decoded; keeps a trailing partial group for the next piece.
    fn decode(&mut self, text: &[u8]) -> Result<Bytes, Status> {
        self.pending.extend_from_slice(text);
        let whole = self.pending.len() / 4 * 4;
        let groups = self.pending.split_to(whole);
        let mut decoded = Vec::with_capacity(whole / 4 * 3);
        let mut start = 0;
        while start < groups.len() {
            // Up to and including the next padded group, or to the end: one run of base64.
            let end = groups[start..]
                .chunks(4)
                .position(|group| group.contains(&b'='))
                .map_or(groups.len(), |padded| start + (padded + 1) * 4);
            BASE64
                .decode_vec(&groups[start..end], &mut decoded)
                .map_err(|error| {
                    Status::internal(format!("invalid base64 in a grpc-web-text body: {error}"))
                })?;
            start = end;
        }
        Ok(Bytes::from(decoded))
    }

    /// The end of the body: a partial group left over is an error.
    fn finish(&self) -> Result<(), Status> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(Status::internal(
                "a grpc-web-text body ended inside a base64 group",
            ))
        }
    }
}

/// A `-text` request body that arrives in pieces, decoded as it comes.
struct Base64Body {
    inner: RequestBody,
    decoder: Base64Decoder,
}

impl Body for Base64Body {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        loop {
            let this = &mut *self;
            return match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(text) => match this.decoder.decode(&text) {
                        // A piece shorter than a group decodes to nothing yet.
                        Ok(decoded) if decoded.is_empty() => continue,
                        Ok(decoded) => Poll::Ready(Some(Ok(Frame::data(decoded)))),
                        Err(status) => Poll::Ready(Some(Err(status))),
                    },
                    Err(frame) => Poll::Ready(Some(Ok(frame))),
                },
                Some(Err(status)) => Poll::Ready(Some(Err(status))),
                None => match this.decoder.finish() {
                    Ok(()) => Poll::Ready(None),
                    Err(status) => Poll::Ready(Some(Err(status))),
                },
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_name_the_request_s_encoding_and_format() {
        for (request, answer, grpc) in [
            (
                "application/grpc-web",
                "application/grpc-web+proto",
                "application/grpc",
            ),
            (
                "application/grpc-web+json",
                "application/grpc-web+json",
                "application/grpc+json",
            ),
            (
                "application/grpc-web-text",
                "application/grpc-web-text+proto",
                "application/grpc",
            ),
            (
                "application/grpc-web-text+json",
                "application/grpc-web-text+json",
                "application/grpc+json",
            ),
        ] {
            let wire = Wire::of(Some(&HeaderValue::from_static(request))).unwrap();
            let web = Web::of(wire);
            assert_eq!(web.content_type(), answer);
            assert_eq!(web.grpc_content_type(), grpc);
        }
    }

    #[test]
    fn base64_in_pieces_and_in_padded_runs_decodes_whole() {
        let message = b"hello, grpc-web!";
        // Two encodings one after the other, each padded, split at every possible point.
        let joined = format!(
            "{}{}",
            BASE64.encode(&message[..5]),
            BASE64.encode(&message[5..])
        );
        for split in 0..=joined.len() {
            let mut decoder = Base64Decoder::default();
            let mut decoded = decoder
                .decode(&joined.as_bytes()[..split])
                .unwrap()
                .to_vec();
            decoded.extend_from_slice(&decoder.decode(&joined.as_bytes()[split..]).unwrap());
            decoder.finish().unwrap();
            assert_eq!(decoded, message, "split at {split}");
        }
    }

    #[test]
    fn bad_base64_and_a_cut_group_are_errors() {
        let mut decoder = Base64Decoder::default();
        assert!(decoder.decode(b"AAA*").is_err());
        let mut decoder = Base64Decoder::default();
        decoder.decode(b"AAAAAA").unwrap();
        assert!(decoder.finish().is_err());
    }

    #[test]
    fn trailers_become_the_last_frame() {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        trailers.insert("x-kept", HeaderValue::from_static("yes"));
        let frame = trailers_frame(&trailers);
        assert_eq!(frame[0], TRAILERS_FLAG);
        let len = u32::from_be_bytes(frame[1..5].try_into().unwrap()) as usize;
        assert_eq!(&frame[5..], b"grpc-status:0\r\nx-kept:yes\r\n");
        assert_eq!(len, frame.len() - 5);
    }
}
