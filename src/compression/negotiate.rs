//! Which encodings a call uses: the request's (`grpc-encoding`, or Connect's
//! `content-encoding`), refused with `UNIMPLEMENTED` when the server does not accept it, and the
//! reply's, chosen from what the client accepts (`grpc-accept-encoding`, `accept-encoding`).

use http::header::{HeaderMap, HeaderName, HeaderValue};
use tonic::Status;
use tonic::metadata::MetadataValue;

use super::CompressionEncoding;

/// The request header naming the encoding of the request's compressed messages.
pub const GRPC_ENCODING: HeaderName = HeaderName::from_static("grpc-encoding");

/// The header listing the encodings a peer can decompress.
pub const GRPC_ACCEPT_ENCODING: HeaderName = HeaderName::from_static("grpc-accept-encoding");

/// The request headers that name a call's message encoding and the encodings its client
/// accepts: gRPC's (and gRPC-Web's), or the Connect protocol's.
#[derive(Debug, Clone, Copy)]
pub struct EncodingHeaders {
    encoding: &'static HeaderName,
    accept: &'static HeaderName,
    /// The accept header is HTTP's, whose entries may carry weights (`gzip;q=0.5`).
    weighted: bool,
}

static GRPC_NAMES: [HeaderName; 2] = [GRPC_ENCODING, GRPC_ACCEPT_ENCODING];
static CONNECT_UNARY_NAMES: [HeaderName; 2] = [
    http::header::CONTENT_ENCODING,
    http::header::ACCEPT_ENCODING,
];
static CONNECT_STREAM_NAMES: [HeaderName; 2] = [
    HeaderName::from_static("connect-content-encoding"),
    HeaderName::from_static("connect-accept-encoding"),
];

impl EncodingHeaders {
    /// `grpc-encoding` and `grpc-accept-encoding`.
    pub const GRPC: EncodingHeaders = EncodingHeaders {
        encoding: &GRPC_NAMES[0],
        accept: &GRPC_NAMES[1],
        weighted: false,
    };
    /// Connect's unary calls: HTTP's `content-encoding` and `accept-encoding`.
    pub const CONNECT_UNARY: EncodingHeaders = EncodingHeaders {
        encoding: &CONNECT_UNARY_NAMES[0],
        accept: &CONNECT_UNARY_NAMES[1],
        weighted: true,
    };
    /// Connect's streaming calls: `connect-content-encoding` and `connect-accept-encoding`.
    pub const CONNECT_STREAM: EncodingHeaders = EncodingHeaders {
        encoding: &CONNECT_STREAM_NAMES[0],
        accept: &CONNECT_STREAM_NAMES[1],
        weighted: false,
    };

    /// The header naming the request's encoding.
    pub fn encoding(self) -> &'static HeaderName {
        self.encoding
    }

    /// The header listing the encodings the client accepts.
    pub fn accept(self) -> &'static HeaderName {
        self.accept
    }
}

/// The encoding of a request's compressed messages, from its `grpc-encoding` header.
///
/// No header, or `identity`, is `Ok(None)`: messages must not be compressed. An encoding in
/// `enabled` is `Ok(Some(_))`. Anything else, including an encoding fastgrpc has but the
/// server did not enable, is `UNIMPLEMENTED` with a message naming what is accepted, and with
/// `grpc-accept-encoding` in the status's metadata, so the trailers-only response carries it
/// as the spec asks (and, as it requires, without the rejected encoding).
pub fn request_encoding(
    headers: &HeaderMap,
    names: EncodingHeaders,
    enabled: &[CompressionEncoding],
) -> Result<Option<CompressionEncoding>, Status> {
    named_encoding(
        crate::metadata::header(headers, names.encoding),
        names,
        enabled,
    )
}

/// The encoding `value` of the request's `names.encoding()` header names, as
/// [`request_encoding`] reads it.
pub(crate) fn named_encoding(
    value: Option<&HeaderValue>,
    names: EncodingHeaders,
    enabled: &[CompressionEncoding],
) -> Result<Option<CompressionEncoding>, Status> {
    let Some(value) = value else {
        return Ok(None);
    };
    let name = value.as_bytes();
    if name.eq_ignore_ascii_case(b"identity") {
        return Ok(None);
    }
    match CompressionEncoding::from_name(name) {
        Some(encoding) if enabled.contains(&encoding) => Ok(Some(encoding)),
        _ => Err(unsupported_encoding(names.encoding, name, enabled)),
    }
}

/// `UNIMPLEMENTED` for a request encoding the server does not accept.
#[cold]
fn unsupported_encoding(
    header: &HeaderName,
    name: &[u8],
    enabled: &[CompressionEncoding],
) -> Status {
    let accepted = accepted_names(enabled);
    let quoted: String = if name.len() <= 32 {
        format!("{:?}", name.escape_ascii().to_string())
    } else {
        format!("of {} bytes", name.len())
    };
    let mut status = Status::unimplemented(format!(
        "request messages are compressed with {header} {quoted}, which this server does \
         not support; it accepts {}",
        accepted.replace(',', ", ")
    ));
    let value = MetadataValue::try_from(accepted).expect("encoding names are valid metadata");
    status.metadata_mut().insert("grpc-accept-encoding", value);
    status
}

/// `identity,` then the names of `enabled`, each once.
pub(crate) fn accepted_names(enabled: &[CompressionEncoding]) -> String {
    let mut names = String::from("identity");
    for (i, encoding) in enabled.iter().enumerate() {
        if !enabled[..i].contains(encoding) {
            names.push(',');
            names.push_str(encoding.as_str());
        }
    }
    names
}

/// The set of encodings a client lists in `grpc-accept-encoding` (or Connect's
/// `accept-encoding` and `connect-accept-encoding`).
///
/// A `Copy` bit set: parsing allocates nothing. Unknown names and `identity` are ignored
/// (every peer accepts uncompressed messages), as are surrounding spaces and tabs and empty
/// entries; names are matched ignoring ASCII case. gRPC's header has no weights: an entry with
/// parameters is no name and is ignored. HTTP's `accept-encoding` (Connect's unary calls) has
/// them (RFC 9110 §12.5.3); they count as far as choosing needs: an encoding weighted `q=0` is
/// refused, and `*` stands for every encoding the value does not name (the server's order
/// still decides among the rest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcceptEncoding {
    bits: u8,
}

impl AcceptEncoding {
    /// The encodings named in one header value.
    pub fn parse(value: &HeaderValue) -> AcceptEncoding {
        let mut accepted = AcceptEncoding::default();
        for name in value.as_bytes().split(|&b| b == b',') {
            if let Some(encoding) = CompressionEncoding::from_name(name.trim_ascii()) {
                accepted.bits |= encoding.bit();
            }
        }
        accepted
    }

    /// The encodings one value of HTTP's `accept-encoding` accepts, weights read.
    pub fn parse_weighted(value: &HeaderValue) -> AcceptEncoding {
        let (mut accepted, mut named, mut any) = (0u8, 0u8, false);
        for entry in value.as_bytes().split(|&b| b == b',') {
            let mut parts = entry.split(|&b| b == b';');
            let name = parts.next().unwrap_or_default().trim_ascii();
            let refused = parts.any(|param| is_zero_weight(param.trim_ascii()));
            if name == b"*" {
                any = !refused;
            } else if let Some(encoding) = CompressionEncoding::from_name(name) {
                named |= encoding.bit();
                if !refused {
                    accepted |= encoding.bit();
                }
            }
        }
        if any {
            let every = CompressionEncoding::ALL
                .iter()
                .fold(0, |bits, e| bits | e.bit());
            accepted |= every & !named;
        }
        AcceptEncoding { bits: accepted }
    }

    /// The encodings named in every `names.accept()` header of `headers` (a header may be
    /// repeated instead of comma-separated); empty if there is none.
    pub fn from_headers(headers: &HeaderMap, names: EncodingHeaders) -> AcceptEncoding {
        let mut accepted = AcceptEncoding::default();
        let parse = match names.weighted {
            true => AcceptEncoding::parse_weighted,
            false => AcceptEncoding::parse,
        };
        for value in headers.get_all(names.accept) {
            accepted.bits |= parse(value).bits;
        }
        accepted
    }

    /// Whether `encoding` is in the set.
    pub fn contains(self, encoding: CompressionEncoding) -> bool {
        self.bits & encoding.bit() != 0
    }

    /// The first of `enabled` (the server's order of preference) that is in the set.
    ///
    /// The server's order decides, not the client's: the spec gives `grpc-accept-encoding` no
    /// order of preference (no q-values), and the server pays for compressing.
    pub fn choose(self, enabled: &[CompressionEncoding]) -> Option<CompressionEncoding> {
        enabled
            .iter()
            .copied()
            .find(|&encoding| self.contains(encoding))
    }
}

/// Whether `param` (one parameter of an accepted encoding) is the weight `q=0`: `0`, or `0.`
/// with up to three zeros (RFC 9110 §12.4.2).
fn is_zero_weight(param: &[u8]) -> bool {
    let Some(weight) = param
        .strip_prefix(b"q=")
        .or_else(|| param.strip_prefix(b"Q="))
    else {
        return false;
    };
    match weight {
        [b'0'] => true,
        [b'0', b'.', zeros @ ..] => zeros.len() <= 3 && zeros.iter().all(|&b| b == b'0'),
        _ => false,
    }
}

/// The encoding for a response's messages: the first of `enabled` that the client lists in
/// `grpc-accept-encoding`, or `None` (send uncompressed) if it lists none of them.
pub fn response_encoding(
    headers: &HeaderMap,
    names: EncodingHeaders,
    enabled: &[CompressionEncoding],
) -> Option<CompressionEncoding> {
    if enabled.is_empty() {
        return None;
    }
    AcceptEncoding::from_headers(headers, names).choose(enabled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    fn request(encoding: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_ENCODING, HeaderValue::from_static(encoding));
        headers
    }

    #[test]
    fn request_encoding_cases() {
        use CompressionEncoding::{Deflate, Gzip};
        let enabled = [Gzip, Deflate];
        assert_eq!(
            request_encoding(&HeaderMap::new(), EncodingHeaders::GRPC, &enabled).unwrap(),
            None
        );
        assert_eq!(
            request_encoding(&request("identity"), EncodingHeaders::GRPC, &enabled).unwrap(),
            None
        );
        assert_eq!(
            request_encoding(&request("identity"), EncodingHeaders::GRPC, &[]).unwrap(),
            None
        );
        assert_eq!(
            request_encoding(&request("gzip"), EncodingHeaders::GRPC, &enabled).unwrap(),
            Some(Gzip)
        );
        assert_eq!(
            request_encoding(&request("deflate"), EncodingHeaders::GRPC, &enabled).unwrap(),
            Some(Deflate)
        );
    }

    #[test]
    fn http_weights_refuse_at_zero_and_a_star_accepts_what_is_not_named() {
        let parse =
            |value: &'static str| AcceptEncoding::parse_weighted(&HeaderValue::from_static(value));
        let gzip = CompressionEncoding::Gzip;
        let deflate = CompressionEncoding::Deflate;
        assert!(parse("gzip;q=0.5").contains(gzip));
        assert!(parse("gzip ; q=1.0, deflate").contains(deflate));
        for refused in [
            "gzip;q=0",
            "gzip; q=0.0",
            "gzip;Q=0.000",
            "deflate, gzip;q=0",
        ] {
            assert!(!parse(refused).contains(gzip), "{refused}");
        }
        assert!(parse("gzip;q=0.001").contains(gzip));
        let star = parse("*");
        assert!(star.contains(gzip) && star.contains(deflate));
        let star_but_gzip = parse("gzip;q=0, *");
        assert!(!star_but_gzip.contains(gzip) && star_but_gzip.contains(deflate));
        assert_eq!(parse("*;q=0"), AcceptEncoding::default());
        assert_eq!(parse("identity;q=1, br"), AcceptEncoding::default());
        // Only HTTP's header is weighted; gRPC's keeps its plain names.
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip;q=0, *"),
        );
        headers.insert(
            GRPC_ACCEPT_ENCODING,
            HeaderValue::from_static("gzip;q=0, *"),
        );
        let connect = AcceptEncoding::from_headers(&headers, EncodingHeaders::CONNECT_UNARY);
        assert!(connect.contains(deflate) && !connect.contains(gzip));
        let grpc = AcceptEncoding::from_headers(&headers, EncodingHeaders::GRPC);
        assert_eq!(grpc, AcceptEncoding::default());
    }

    #[test]
    fn unsupported_request_encoding_lists_what_is_accepted() {
        use CompressionEncoding::{Deflate, Gzip};
        let status =
            request_encoding(&request("br"), EncodingHeaders::GRPC, &[Gzip, Deflate]).unwrap_err();
        assert_eq!(status.code(), Code::Unimplemented);
        assert_eq!(
            status.message(),
            "request messages are compressed with grpc-encoding \"br\", which this server does \
             not support; it accepts identity, gzip, deflate"
        );
        assert_eq!(
            status.metadata().get("grpc-accept-encoding").unwrap(),
            "identity,gzip,deflate"
        );

        // Built in but not enabled: refused, and not listed (the spec: the returned
        // grpc-accept-encoding must not contain the encoding used).
        let status =
            request_encoding(&request("deflate"), EncodingHeaders::GRPC, &[Gzip]).unwrap_err();
        assert_eq!(status.code(), Code::Unimplemented);
        assert_eq!(
            status.metadata().get("grpc-accept-encoding").unwrap(),
            "identity,gzip"
        );
        assert!(
            status.message().ends_with("it accepts identity, gzip"),
            "{status:?}"
        );

        // Nothing enabled.
        let status = request_encoding(&request("gzip"), EncodingHeaders::GRPC, &[]).unwrap_err();
        assert!(
            status.message().ends_with("it accepts identity"),
            "{status:?}"
        );

        // The header reaches the client: it is in the trailers-only response.
        let response = crate::protocol::grpc::status(&status);
        assert_eq!(response.headers()["grpc-accept-encoding"], "identity");
        assert_eq!(response.headers()["grpc-status"], "12");
    }

    #[test]
    fn accepted_names_list_each_once() {
        use CompressionEncoding::{Deflate, Gzip};
        assert_eq!(
            accepted_names(&[Gzip, Gzip, Deflate]),
            "identity,gzip,deflate"
        );
        let all = HeaderValue::try_from(accepted_names(CompressionEncoding::ALL)).unwrap();
        let parsed = AcceptEncoding::parse(&all);
        for &encoding in CompressionEncoding::ALL {
            assert!(parsed.contains(encoding));
        }
    }

    #[test]
    fn accept_encoding_parsing() {
        use CompressionEncoding::{Deflate, Gzip};
        let parse = |v: &'static str| AcceptEncoding::parse(&HeaderValue::from_static(v));
        let gzip_deflate = parse(" gzip ,\tdeflate\t");
        assert!(gzip_deflate.contains(Gzip) && gzip_deflate.contains(Deflate));
        let none = AcceptEncoding::default();
        assert_eq!(parse("identity"), none);
        assert_eq!(parse(""), none);
        assert_eq!(parse(",,, ,"), none);
        assert_eq!(parse("br, snappy, x-custom"), none);
        assert_eq!(parse("snappy,gzip,br"), parse("gzip"));
        assert_eq!(parse("GZip"), parse("gzip"));
        // "gzip;q=1" is not a valid gRPC name; it is ignored rather than half-parsed.
        assert_eq!(parse("gzip;q=1"), none);

        // Repeated headers add up.
        let mut headers = HeaderMap::new();
        headers.append(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        headers.append(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("deflate"));
        let accepted = AcceptEncoding::from_headers(&headers, EncodingHeaders::GRPC);
        assert!(accepted.contains(Gzip) && accepted.contains(Deflate));
        assert_eq!(
            AcceptEncoding::from_headers(&HeaderMap::new(), EncodingHeaders::GRPC),
            none
        );
    }

    #[test]
    fn response_encoding_choice() {
        use CompressionEncoding::{Deflate, Gzip};
        let accepting = |v: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(GRPC_ACCEPT_ENCODING, HeaderValue::from_static(v));
            headers
        };
        // The server's order decides.
        assert_eq!(
            response_encoding(
                &accepting("deflate,gzip"),
                EncodingHeaders::GRPC,
                &[Gzip, Deflate]
            ),
            Some(Gzip)
        );
        assert_eq!(
            response_encoding(
                &accepting("deflate,gzip"),
                EncodingHeaders::GRPC,
                &[Deflate, Gzip]
            ),
            Some(Deflate)
        );
        // Only what both have.
        assert_eq!(
            response_encoding(
                &accepting("identity,deflate"),
                EncodingHeaders::GRPC,
                &[Gzip, Deflate]
            ),
            Some(Deflate)
        );
        // The client accepts nothing the server has: no compression.
        assert_eq!(
            response_encoding(
                &accepting("identity,br"),
                EncodingHeaders::GRPC,
                &[Gzip, Deflate]
            ),
            None
        );
        assert_eq!(
            response_encoding(&accepting("gzip"), EncodingHeaders::GRPC, &[Deflate]),
            None
        );
        assert_eq!(
            response_encoding(&accepting("gzip"), EncodingHeaders::GRPC, &[]),
            None
        );
        assert_eq!(
            response_encoding(&HeaderMap::new(), EncodingHeaders::GRPC, &[Gzip]),
            None
        );
    }
}
