//! A request's header fields, checked as RFC 9113 §8.2 and §8.3 ask, into an `http` request
//! head; and trailers into a `HeaderMap`.
//!
//! The HPACK decoder calls [`RequestHead::field`] for each field as it decodes; the first fault
//! marks the request malformed (a stream error of type PROTOCOL_ERROR, §8.1.1) and the rest of
//! the block is still decoded, for HPACK's sake, but not kept.

use bytes::BytesMut;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Uri};

/// Why a request is malformed.
pub(crate) type Malformed = &'static str;

/// Where a value lies in [`RequestHead::text`].
type Span = std::ops::Range<usize>;

/// A request head being read from its fields.
///
/// Every value is copied once, into one buffer (`text`), and the head's URI parts and header
/// values are slices of it: one allocation for all of them.
#[derive(Default)]
pub(crate) struct RequestHead {
    method: Option<Method>,
    scheme: Option<http::uri::Scheme>,
    authority: Option<Span>,
    path: Option<Span>,
    text: BytesMut,
    /// Regular fields, in order; a recycled vector (see [`RequestHead::with_fields`]).
    fields: Vec<(HeaderName, Span)>,
    content_length: Option<u64>,
    /// A regular field has been seen: pseudo-fields may no longer come.
    regular: bool,
    malformed: Option<Malformed>,
}

/// Whether `name` is a valid lowercase field name: token characters, no uppercase (§8.2.1).
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name.iter().all(|&b| {
            matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'!' | b'#' | b'$' | b'%' | b'&' | b'\''
                | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
        })
}

/// Whether `value` may be a field value: no NUL, CR or LF, and no whitespace at either end
/// (§8.2.1).
fn valid_value(value: &[u8]) -> bool {
    !value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n')
        && !value.first().is_some_and(|&b| b == b' ' || b == b'\t')
        && !value.last().is_some_and(|&b| b == b' ' || b == b'\t')
}

/// Fields that only HTTP/1.1 connections have (§8.2.2).
fn connection_specific(name: &[u8]) -> bool {
    matches!(
        name,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

impl RequestHead {
    /// Takes one decoded field.
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8]) {
        if self.malformed.is_some() {
            return;
        }
        if let Err(why) = self.take(name, value) {
            self.malformed = Some(why);
        }
    }

    fn take(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        if !valid_value(value) {
            return Err("a field value with a forbidden character or edge whitespace");
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            if self.regular {
                return Err("a pseudo-header after a regular field");
            }
            match pseudo {
                b"method" => {
                    if self.method.is_some() {
                        return Err("two :method");
                    }
                    self.method =
                        Some(Method::from_bytes(value).map_err(|_| "an invalid :method")?);
                }
                b"scheme" => {
                    if self.scheme.is_some() {
                        return Err("a pseudo-header twice");
                    }
                    let scheme =
                        http::uri::Scheme::try_from(value).map_err(|_| "an invalid :scheme")?;
                    self.scheme = Some(scheme);
                }
                b"authority" | b"path" => {
                    let span = self.keep(value);
                    let slot = if pseudo == b"path" {
                        &mut self.path
                    } else {
                        &mut self.authority
                    };
                    if slot.replace(span).is_some() {
                        return Err("a pseudo-header twice");
                    }
                }
                _ => return Err("an unknown or response pseudo-header"),
            }
            return Ok(());
        }
        self.regular = true;
        if !valid_name(name) {
            return Err("a field name that is empty, uppercase or not a token");
        }
        if connection_specific(name) {
            return Err("a connection-specific field");
        }
        if name == b"te" && value != b"trailers" {
            return Err("te other than trailers");
        }
        if name == b"content-length" {
            let length = std::str::from_utf8(value)
                .ok()
                .and_then(|text| text.parse::<u64>().ok())
                .ok_or("an invalid content-length")?;
            if self.content_length.is_some_and(|seen| seen != length) {
                return Err("content-length twice, differently");
            }
            self.content_length = Some(length);
        }
        let name = HeaderName::from_bytes(name).map_err(|_| "an invalid field name")?;
        let span = self.keep(value);
        self.fields.push((name, span));
        Ok(())
    }

    /// A head whose regular fields go into `fields` (cleared), a vector kept from an earlier
    /// request so that a request allocates none.
    pub(crate) fn with_fields(mut fields: Vec<(HeaderName, Span)>) -> RequestHead {
        fields.clear();
        RequestHead {
            fields,
            ..RequestHead::default()
        }
    }

    /// Copies a value into the head's buffer.
    fn keep(&mut self, value: &[u8]) -> Span {
        if self.text.capacity() == 0 {
            self.text.reserve(256);
        }
        let start = self.text.len();
        self.text.extend_from_slice(value);
        start..self.text.len()
    }

    /// The request head, once the whole block is decoded, and the fields vector back for the
    /// next request.
    #[allow(clippy::type_complexity)]
    pub(crate) fn finish(
        mut self,
    ) -> (
        Result<(http::request::Parts, Option<u64>), Malformed>,
        Vec<(HeaderName, Span)>,
    ) {
        let mut fields = std::mem::take(&mut self.fields);
        let head = self.build(&mut fields);
        fields.clear();
        (head, fields)
    }

    /// The fields vector back, for a request that is refused or ignored without its head.
    pub(crate) fn into_fields(self) -> Vec<(HeaderName, Span)> {
        self.fields
    }

    /// Builds the head; the names are moved out of `fields`, which is left to be cleared.
    fn build(
        self,
        fields: &mut Vec<(HeaderName, Span)>,
    ) -> Result<(http::request::Parts, Option<u64>), Malformed> {
        if let Some(why) = self.malformed {
            return Err(why);
        }
        let method = self.method.ok_or("no :method")?;
        if method == Method::CONNECT {
            return Err("CONNECT is not served");
        }
        let (Some(scheme), Some(path)) = (self.scheme, self.path) else {
            return Err("no :scheme or no :path");
        };
        if path.is_empty() {
            return Err("an empty :path");
        }
        let text = self.text.freeze();
        let invalid = "an invalid :scheme, :authority or :path";
        let path =
            http::uri::PathAndQuery::from_maybe_shared(text.slice(path)).map_err(|_| invalid)?;
        // Without :authority (it may be left out, RFC 9113 §8.3.1) the URI is the path alone:
        // `http` has no URI with a scheme and no authority.
        let uri = match self.authority {
            Some(authority) => http::uri::Builder::new()
                .scheme(scheme)
                .authority(
                    http::uri::Authority::from_maybe_shared(text.slice(authority))
                        .map_err(|_| invalid)?,
                )
                .path_and_query(path),
            None => http::uri::Builder::new().path_and_query(path),
        };
        let uri: Uri = uri.build().map_err(|_| invalid)?;
        let mut headers = HeaderMap::with_capacity(fields.len());
        for (name, span) in fields.drain(..) {
            let value = HeaderValue::from_maybe_shared(text.slice(span))
                .map_err(|_| "an invalid field value")?;
            headers.append(name, value);
        }
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.method = method;
        parts.uri = uri;
        parts.version = http::Version::HTTP_2;
        parts.headers = headers;
        Ok((parts, self.content_length))
    }
}

/// Trailers of a request: regular fields only (§8.1).
#[derive(Default)]
pub(crate) struct Trailers {
    headers: HeaderMap,
    malformed: Option<Malformed>,
}

impl Trailers {
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8]) {
        if self.malformed.is_some() {
            return;
        }
        if name.starts_with(b":") {
            self.malformed = Some("a pseudo-header in trailers");
            return;
        }
        if !valid_name(name) || !valid_value(value) || connection_specific(name) {
            self.malformed = Some("an invalid trailer field");
            return;
        }
        match (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
            (Ok(name), Ok(value)) => {
                self.headers.append(name, value);
            }
            _ => self.malformed = Some("an invalid trailer field"),
        }
    }

    pub(crate) fn finish(self) -> Result<HeaderMap, Malformed> {
        match self.malformed {
            Some(why) => Err(why),
            None => Ok(self.headers),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(fields: &[(&str, &str)]) -> Result<(http::request::Parts, Option<u64>), Malformed> {
        let mut head = RequestHead::default();
        for (name, value) in fields {
            head.field(name.as_bytes(), value.as_bytes());
        }
        head.finish().0
    }

    const GRPC: [(&str, &str); 5] = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/helloworld.Greeter/SayHello"),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
    ];

    #[test]
    fn a_grpc_request_becomes_a_head() {
        let (parts, length) = head(&GRPC).unwrap();
        assert_eq!(parts.method, Method::POST);
        assert_eq!(parts.uri, "http://localhost/helloworld.Greeter/SayHello");
        assert_eq!(parts.headers["content-type"], "application/grpc");
        assert_eq!(length, None);
    }

    #[test]
    fn malformed_requests_are_refused() {
        let cases: [(&[(&str, &str)], Malformed); 13] = [
            (
                &[("Content-Type", "x")],
                "a field name that is empty, uppercase or not a token",
            ),
            (&[("connection", "close")], "a connection-specific field"),
            (
                &[("transfer-encoding", "chunked")],
                "a connection-specific field",
            ),
            (&[("te", "gzip")], "te other than trailers"),
            (
                &[("x-a", "b"), (":status", "200")],
                "a pseudo-header after a regular field",
            ),
            (
                &[(":status", "200")],
                "an unknown or response pseudo-header",
            ),
            (&[(":path", "/a")], "a pseudo-header twice"),
            (&[(":method", "GET")], "two :method"),
            (
                &[("x-a", " padded")],
                "a field value with a forbidden character or edge whitespace",
            ),
            (
                &[("x-a", "a\nb")],
                "a field value with a forbidden character or edge whitespace",
            ),
            (
                &[("", "empty")],
                "a field name that is empty, uppercase or not a token",
            ),
            (&[("content-length", "ten")], "an invalid content-length"),
            (
                &[("content-length", "1"), ("content-length", "2")],
                "content-length twice, differently",
            ),
        ];
        for (extra, why) in cases {
            let mut fields = GRPC[..4].to_vec();
            fields.extend_from_slice(extra);
            fields.push(GRPC[4]);
            assert_eq!(head(&fields).err(), Some(why), "{extra:?}");
        }
        assert_eq!(head(&GRPC[1..]).err(), Some("no :method"));
        assert_eq!(
            head(&[GRPC[0], GRPC[1]]).err(),
            Some("no :scheme or no :path")
        );
        assert_eq!(
            head(&[(":method", "CONNECT")]).err(),
            Some("CONNECT is not served")
        );
    }

    #[test]
    fn trailers_take_no_pseudo_headers() {
        let mut trailers = Trailers::default();
        trailers.field(b"x-checksum", b"1");
        assert_eq!(trailers.finish().unwrap()["x-checksum"], "1");
        let mut trailers = Trailers::default();
        trailers.field(b":path", b"/");
        assert!(trailers.finish().is_err());
    }
}
