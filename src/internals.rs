//! The internals that this repository's fuzz oracles (`fuzz-oracles/`) and benchmarks check
//! or time one by one: parsers and single steps of a call that the public API only shows
//! whole. Not a stable API, and not for users: hidden, like [`codegen`](crate::codegen), and
//! re-exports but for one constructor, so that no logic lives here.

/// gRPC message framing: the unary decode and encode steps, a request stream's decoder, and
/// messages as ProtoJSON.
pub mod codec {
    pub use crate::codec::Format;
    pub use crate::codec::json::{DecodeOptions, decode as decode_json, write as write_json};
    pub use crate::codec::{
        DEFAULT_MAX_RECEIVE_MESSAGE_SIZE, FRAME_HEADER_LEN, decode_unary, encode, encode_reply,
    };
    use crate::service::RequestBody;
    use crate::{CompressionEncoding, Streaming};

    /// The messages of `body` as a server's handler sees them: at most `max_message_size`
    /// bytes each, decompressed with `encoding`.
    pub fn streaming<M>(
        body: RequestBody,
        max_message_size: usize,
        encoding: Option<CompressionEncoding>,
    ) -> Streaming<M> {
        Streaming::new(
            body,
            max_message_size,
            encoding,
            crate::codec::Format::Proto,
        )
    }
}

/// Message compression and the `grpc-encoding` / `grpc-accept-encoding` negotiation.
pub mod compression {
    pub use crate::compression::{
        AcceptEncoding, EncodingHeaders, GRPC_ACCEPT_ENCODING, GRPC_ENCODING, compress, decompress,
        request_encoding, response_encoding,
    };
}

/// `grpc-timeout` parsing.
pub mod deadline {
    pub use crate::deadline::{GRPC_TIMEOUT, parse_grpc_timeout, request_timeout};
}

/// A trailers-only response carrying a status.
pub mod response {
    pub use crate::protocol::grpc::status;
}

/// The HTTP/2 engine's frame parser.
pub mod frame {
    pub use crate::http2::frame::{Frame, FrameError, HEAD_LEN, Head, Reason, Settings, parse};
}

/// The HTTP/2 engine's HPACK decoder and encoder.
pub mod hpack {
    pub use crate::http2::hpack::{CompressionError, Decoded, Decoder, Encoder, Indexing};
}

/// REST transcoding's steps: the matcher of paths, the query parser and the binding of a
/// request's path, query and body into its JSON object.
pub mod rest {
    pub use crate::rest::{
        BindOptions, Binding, Found, Lookup, MAX_PATH_SEGMENTS, MAX_QUERY_LEN, MAX_QUERY_PARAMS,
        QueryParam, RouteError, Routes, TemplateError, parse_query, request_json, request_proto,
    };
}
