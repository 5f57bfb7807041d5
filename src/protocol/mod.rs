//! What gRPC, gRPC-Web, Connect and REST each are: how a request names its protocol and
//! message format ([`Wire`], read from its `content-type` in one place; REST, which any content
//! type may carry, is told by the router from the request's path), and how each protocol frames
//! messages and writes a call's status.
//!
//! Each protocol has one writer of failures, which every answer that fails goes through, whoever
//! makes it (the handler, the router, the transport when a deadline passes or a panic is
//! caught): [`Wire::failure`] for a call that fails before its reply began, [`Wire::ending`]
//! for a reply stream that fails under way. `grpc` writes gRPC's (trailers-only, or trailers),
//! `web` gRPC-Web's (the status in the body's last frame), `connect` Connect's (an HTTP status
//! and a JSON error, or a stream's end-of-stream message), `rest` REST's (an HTTP status and a
//! `google.rpc.Status`, or a stream's last line or event).

pub(crate) mod connect;
pub(crate) mod grpc;
pub(crate) mod http_error;
pub(crate) mod in_band;
pub(crate) mod rest;
pub(crate) mod web;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue};
use tonic::Status;

use crate::body::ResponseBody;

pub(crate) use crate::codec::Format;
use crate::compression::EncodingHeaders;

/// The protocol of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Protocol {
    /// `application/grpc[+proto|+json]`.
    #[default]
    Grpc,
    /// `application/grpc-web[+proto|+json]`: gRPC's framing, trailers in the body.
    GrpcWeb,
    /// `application/grpc-web-text[+proto|+json]`: the same, in base64.
    GrpcWebText,
    /// Connect's unary protocol, `application/proto` and `application/json`: the body is the
    /// bare message, the status the HTTP status (and a JSON error body).
    ConnectUnary,
    /// Connect's streaming protocol, `application/connect+proto` and `+json`: enveloped
    /// messages, the status in an end-of-stream message.
    ConnectStream,
    /// REST transcoding (`google.api.http`): a request the rules of a hosted service match,
    /// bound into a message; the answer is JSON with the status as the HTTP status, a reply
    /// stream lines of JSON, or Server-Sent Events if `events`.
    Rest {
        /// The client asked for `text/event-stream`.
        events: bool,
        /// The format the request message was bound in: JSON, or protobuf for one bound from
        /// the path and the query alone (`service/rest.rs`).
        request: Format,
    },
}

/// A request's protocol and message format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Wire {
    pub(crate) protocol: Protocol,
    pub(crate) format: Format,
}

impl Wire {
    /// What a `content-type` names, `None` for one fastgrpc does not serve.
    ///
    /// Parameters after `;` (such as `charset=utf-8`) are allowed. A codec other than `proto`
    /// and `json` (`application/grpc+thrift`) is one fastgrpc does not serve.
    pub(crate) fn of(content_type: Option<&HeaderValue>) -> Option<Wire> {
        let value = content_type?.as_bytes();
        // What nearly every client sends, before any parsing: gRPC's, then Connect's.
        if value == b"application/grpc" {
            return Some(Wire::default());
        }
        if let Some(wire) = Wire::connect(value) {
            return Some(wire);
        }
        // Whitespace before parameters, or where none follow, is not part of the media type.
        let end = value.iter().position(|&b| b == b';').unwrap_or(value.len());
        let media = value[..end].trim_ascii_end();
        let wire = |protocol, format| Some(Wire { protocol, format });
        if let Some(rest) = media.strip_prefix(b"application/grpc") {
            let (protocol, subtype) = if let Some(rest) = rest.strip_prefix(b"-web-text") {
                (Protocol::GrpcWebText, rest)
            } else if let Some(rest) = rest.strip_prefix(b"-web") {
                (Protocol::GrpcWeb, rest)
            } else {
                (Protocol::Grpc, rest)
            };
            // Another codec (`+thrift`) is one the server does not speak: 415, as for any
            // other content type.
            return match subtype {
                b"" | b"+proto" => wire(protocol, Format::Proto),
                b"+json" => wire(protocol, Format::Json),
                _ => None,
            };
        }
        Wire::connect(media)
    }

    /// What a Connect media type (without parameters) names.
    fn connect(media: &[u8]) -> Option<Wire> {
        let (protocol, format) = match media {
            b"application/proto" => (Protocol::ConnectUnary, Format::Proto),
            b"application/json" => (Protocol::ConnectUnary, Format::Json),
            b"application/connect+proto" => (Protocol::ConnectStream, Format::Proto),
            b"application/connect+json" => (Protocol::ConnectStream, Format::Json),
            _ => return None,
        };
        Some(Wire { protocol, format })
    }

    /// What a request speaks, from its head: a Connect GET's query names its format
    /// (`encoding`), any other request's `content-type` its protocol and format.
    pub(crate) fn of_head(
        method: &http::Method,
        uri: &http::Uri,
        headers: &HeaderMap,
    ) -> Option<Wire> {
        if method == http::Method::GET
            && let Some(query) = uri.query()
        {
            return Wire::of_get(query);
        }
        Wire::of_headers(headers)
    }

    /// What a GET with `query` speaks: Connect's unary protocol if the query names an
    /// `encoding` (JSON if it is `json`; a wrong one is refused when the query is read whole).
    fn of_get(query: &str) -> Option<Wire> {
        let format = match connect::get_encoding(query)? {
            "json" => Format::Json,
            _ => Format::Proto,
        };
        Some(Wire {
            protocol: Protocol::ConnectUnary,
            format,
        })
    }

    /// What the request whose headers are `headers` speaks, as [`Wire::of`] its `content-type`.
    pub(crate) fn of_headers(headers: &http::HeaderMap) -> Option<Wire> {
        Wire::of(crate::metadata::expected_header(headers, &CONTENT_TYPE))
    }

    /// Whether the request carries one bare message, not gRPC's length-prefixed frames.
    pub(crate) fn bare(self) -> bool {
        matches!(
            self.protocol,
            Protocol::ConnectUnary | Protocol::Rest { .. }
        )
    }

    /// The wire of a REST call: JSON messages (the request's until the router binds it in
    /// protobuf, `Call::bound_in_proto`), the reply stream as events if `events`.
    pub(crate) fn rest(events: bool) -> Wire {
        Wire {
            protocol: Protocol::Rest {
                events,
                request: Format::Json,
            },
            format: Format::Json,
        }
    }

    /// The format the request message comes in: the wire's, but for a REST request bound
    /// into protobuf.
    pub(crate) fn request_format(self) -> Format {
        match self.protocol {
            Protocol::Rest { request, .. } => request,
            _ => self.format,
        }
    }

    /// Whether the call is a REST call.
    pub(crate) fn is_rest(self) -> bool {
        matches!(self.protocol, Protocol::Rest { .. })
    }

    /// The headers that carry the request's encoding and those its client accepts; `None`
    /// for a REST call, whose body is bound into its message before the handler reads it and
    /// whose reply is not compressed: no header of the request names an encoding to it.
    pub(crate) fn encoding_headers(self) -> Option<EncodingHeaders> {
        match self.protocol {
            Protocol::ConnectUnary => Some(EncodingHeaders::CONNECT_UNARY),
            Protocol::ConnectStream => Some(EncodingHeaders::CONNECT_STREAM),
            Protocol::Grpc | Protocol::GrpcWeb | Protocol::GrpcWebText => {
                Some(EncodingHeaders::GRPC)
            }
            Protocol::Rest { .. } => None,
        }
    }

    /// Whether the protocol is one of Connect's.
    pub(crate) fn is_connect(self) -> bool {
        matches!(
            self.protocol,
            Protocol::ConnectUnary | Protocol::ConnectStream
        )
    }
}

/// How a reply stream that is under way ends with a status, in a protocol: the data that
/// carries the status, for protocols that put it in the body, and the trailers, for gRPC's.
#[derive(Debug, Default)]
pub(crate) struct Ending {
    pub(crate) data: Option<Bytes>,
    pub(crate) trailers: Option<HeaderMap>,
}

impl Wire {
    /// The whole answer to a call that fails with `status` before its reply began, in the
    /// call's protocol and format.
    pub(crate) fn failure(self, status: &Status) -> http::Response<ResponseBody> {
        match self.protocol {
            Protocol::Grpc => grpc::failure(status, self.format),
            Protocol::GrpcWeb | Protocol::GrpcWebText => web::Web::of(self).failure(status),
            Protocol::ConnectUnary => connect::error_response(status),
            Protocol::ConnectStream => connect::failed_stream(status, self.format),
            Protocol::Rest { .. } => rest::failure(status),
        }
    }

    /// How a reply stream under way ends with `status` (its deadline passed, it panicked).
    pub(crate) fn ending(self, status: &Status) -> Ending {
        match self.protocol {
            Protocol::Grpc => Ending {
                data: None,
                trailers: Some(crate::status::trailers(status, HeaderMap::new())),
            },
            Protocol::GrpcWeb | Protocol::GrpcWebText => Ending {
                data: Some(web::Web::of(self).status_frame(status)),
                trailers: None,
            },
            Protocol::ConnectStream => Ending {
                data: Some(connect::end_stream(Some(status), &HeaderMap::new())),
                trailers: None,
            },
            Protocol::Rest { events, .. } => Ending {
                data: Some(rest::ending(status, events)),
                trailers: None,
            },
            // A unary answer is whole when it goes out: nothing is under way to end.
            Protocol::ConnectUnary => Ending::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(value: &str) -> Option<Wire> {
        Wire::of(Some(&HeaderValue::from_str(value).unwrap()))
    }

    #[test]
    fn content_types_name_protocol_and_format() {
        use Format::*;
        use Protocol::*;
        let cases = [
            ("application/grpc", Grpc, Proto),
            ("application/grpc+proto", Grpc, Proto),
            ("application/grpc+json", Grpc, Json),
            ("application/grpc;charset=utf-8", Grpc, Proto),
            ("application/grpc ", Grpc, Proto),
            ("application/grpc-web-text\t", GrpcWebText, Proto),
            ("application/proto  ", ConnectUnary, Proto),
            ("application/grpc-web", GrpcWeb, Proto),
            ("application/grpc-web+proto", GrpcWeb, Proto),
            ("application/grpc-web+json", GrpcWeb, Json),
            ("application/grpc-web-text", GrpcWebText, Proto),
            ("application/grpc-web-text+proto", GrpcWebText, Proto),
            ("application/grpc-web-text+json", GrpcWebText, Json),
            ("application/proto", ConnectUnary, Proto),
            ("application/json", ConnectUnary, Json),
            ("application/json; charset=utf-8", ConnectUnary, Json),
            ("application/connect+proto", ConnectStream, Proto),
            ("application/connect+json", ConnectStream, Json),
        ];
        for (value, protocol, format) in cases {
            assert_eq!(of(value), Some(Wire { protocol, format }), "{value}");
        }
        for bad in [
            "text/plain",
            "application/grpc+thrift",
            "application/grpcx",
            "application/grpc-web+thrift",
            "application/grpc-webx",
            "application/jsonx",
            "application/connect",
            "application/connect+thrift",
            "application/x-protobuf",
            "",
        ] {
            assert_eq!(of(bad), None, "{bad}");
        }
        assert_eq!(Wire::of(None), None);
    }
}
