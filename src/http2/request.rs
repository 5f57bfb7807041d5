//! A request's header fields, checked as RFC 9113 §8.2 and §8.3 ask, into an `http` request
//! head; and trailers into a `HeaderMap`.
//!
//! The HPACK decoder calls [`RequestHead::field`] for each field as it decodes; the first fault
//! marks the request malformed (a stream error of type PROTOCOL_ERROR, §8.1.1) and the rest of
//! the block is still decoded, for HPACK's sake, but not kept.

use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Uri};

/// Why a request is malformed.
pub(crate) type Malformed = &'static str;

/// Where a value lies in [`RequestHead::text`].
type Span = std::ops::Range<usize>;

/// A regular field's value kept for the head: one of the connection's recent values, or a
/// part of the head's own buffer.
enum Kept {
    Recent(usize),
    Text(Span),
}

/// `:path` or `:authority` kept for the head: the same as in the last request's URI, or a
/// part of the head's own buffer.
enum UriPart {
    AsLast,
    Text(Span),
}

/// The most values a connection remembers from its last request.
const RECENT_VALUES: usize = 16;

/// A request whose values take more than this is not remembered: what the recent values keep
/// alive stays small.
const RECENT_TEXT_LIMIT: usize = 1024;

/// What a connection's request heads hand on to the next: the vector of regular fields, and
/// the values of the last request.
///
/// A client's calls repeat most of their values (the path, `content-type`, `user-agent`,
/// `te`), so a value equal to one of the last request's is shared with it (a reference count)
/// instead of copied and checked again, and a URI equal to the last one is that one: a head
/// with no new value allocates nothing.
#[derive(Default)]
pub(crate) struct Reused {
    fields: Vec<(HeaderName, Kept)>,
    recent: Vec<HeaderValue>,
    /// The next request's `recent`, filled while a head is built (kept for its room).
    next: Vec<HeaderValue>,
    /// The last request's URI.
    uri: Option<Uri>,
}

/// A request head being read from its fields.
///
/// A value the last request had is shared with it; any other is copied once, into one buffer
/// (`text`), and the head's URI parts and header values are slices of it: at most one
/// allocation for all of them.
pub(crate) struct RequestHead<'r> {
    method: Option<Method>,
    scheme: Option<http::uri::Scheme>,
    authority: Option<UriPart>,
    path: Option<UriPart>,
    text: BytesMut,
    /// Regular fields, in order (in `reused.fields`), and the recent values: the connection's,
    /// borrowed (a head is decoded and built in one go).
    reused: &'r mut Reused,
    content_length: Option<u64>,
    /// A regular field has been seen: pseudo-fields may no longer come.
    regular: bool,
    malformed: Option<Malformed>,
}

/// Whether `name` is a valid lowercase field name: token characters, no uppercase (§8.2.1).
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| LOWERCASE_TOKEN[b as usize])
}

/// The bytes a lowercase field name may hold (RFC 9110 §5.6.2 `tchar`, less `A`-`Z`), as a
/// table: one lookup per byte.
const LOWERCASE_TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = matches!(b as u8, b'a'..=b'z' | b'0'..=b'9' | b'!' | b'#' | b'$' | b'%'
            | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~');
        b += 1;
    }
    table
};

/// Whether `value` may be a field value: no NUL, CR or LF, and no whitespace at either end
/// (§8.2.1).
fn valid_value(value: &[u8]) -> bool {
    !value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n')
        && !value.first().is_some_and(|&b| b == b' ' || b == b'\t')
        && !value.last().is_some_and(|&b| b == b' ' || b == b'\t')
}

/// `value`, if it may be a field value (a value equal to one already checked is not checked
/// again).
fn checked(value: &[u8]) -> Result<&[u8], Malformed> {
    if valid_value(value) {
        Ok(value)
    } else {
        Err("a field value with a forbidden character or edge whitespace")
    }
}

/// Fields that only HTTP/1.1 connections have (§8.2.2).
fn connection_specific(name: &[u8]) -> bool {
    matches!(
        name,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

impl<'r> RequestHead<'r> {
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
        if let Some(pseudo) = name.strip_prefix(b":") {
            if self.regular {
                return Err("a pseudo-header after a regular field");
            }
            match pseudo {
                b"method" => {
                    checked(value)?;
                    if self.method.is_some() {
                        return Err("two :method");
                    }
                    self.method =
                        Some(Method::from_bytes(value).map_err(|_| "an invalid :method")?);
                }
                b"scheme" => {
                    checked(value)?;
                    if self.scheme.is_some() {
                        return Err("a pseudo-header twice");
                    }
                    let scheme =
                        http::uri::Scheme::try_from(value).map_err(|_| "an invalid :scheme")?;
                    self.scheme = Some(scheme);
                }
                b"authority" | b"path" => {
                    let last = self.reused.uri.as_ref();
                    let as_last = if pseudo == b"path" {
                        last.and_then(Uri::path_and_query)
                            .is_some_and(|path| path.as_str().as_bytes() == value)
                    } else {
                        last.and_then(Uri::authority)
                            .is_some_and(|authority| authority.as_str().as_bytes() == value)
                    };
                    let part = if as_last {
                        UriPart::AsLast
                    } else {
                        UriPart::Text(self.copy(checked(value)?))
                    };
                    let slot = if pseudo == b"path" {
                        &mut self.path
                    } else {
                        &mut self.authority
                    };
                    if slot.replace(part).is_some() {
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
        let kept = match self.reused.recent.iter().position(|recent| recent == value) {
            Some(index) => Kept::Recent(index),
            None => Kept::Text(self.copy(checked(value)?)),
        };
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
        self.reused.fields.push((name, kept));
        Ok(())
    }

    /// A head that reuses what the connection's last head handed on.
    /// Whether the block had a request's pseudo-fields: it opens a request, not trailers.
    pub(crate) fn has_pseudo_fields(&self) -> bool {
        self.method.is_some()
            || self.scheme.is_some()
            || self.authority.is_some()
            || self.path.is_some()
    }

    pub(crate) fn reusing(reused: &'r mut Reused) -> RequestHead<'r> {
        reused.fields.clear();
        RequestHead {
            method: None,
            scheme: None,
            authority: None,
            path: None,
            text: BytesMut::new(),
            reused,
            content_length: None,
            regular: false,
            malformed: None,
        }
    }

    /// Copies a value into the head's buffer.
    fn copy(&mut self, value: &[u8]) -> Span {
        if self.text.capacity() == 0 {
            self.text.reserve(256);
        }
        let start = self.text.len();
        self.text.extend_from_slice(value);
        start..self.text.len()
    }

    /// The request head, once the whole block is decoded. (A request refused or ignored
    /// without its head just drops its `RequestHead`: what the next one reuses stays.)
    pub(crate) fn finish(self) -> Result<(http::request::Parts, Option<u64>), Malformed> {
        self.build()
    }

    /// Builds the head; the names are moved out of `reused.fields`, and this request's values
    /// become the recent ones.
    fn build(self) -> Result<(http::request::Parts, Option<u64>), Malformed> {
        let reused = self.reused;
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
        let remember = self.text.len() <= RECENT_TEXT_LIMIT;
        let text = self.text.freeze();
        let uri = uri(reused.uri.as_ref(), scheme, self.authority, path, &text)?;
        reused.next.clear();
        let mut headers = HeaderMap::with_capacity(reused.fields.len());
        for (name, kept) in reused.fields.drain(..) {
            let value = match kept {
                Kept::Recent(index) => reused.recent[index].clone(),
                Kept::Text(span) => HeaderValue::from_maybe_shared(text.slice(span))
                    .map_err(|_| "an invalid field value")?,
            };
            if remember && reused.next.len() < RECENT_VALUES {
                reused.next.push(value.clone());
            }
            headers.append(name, value);
        }
        if remember {
            std::mem::swap(&mut reused.recent, &mut reused.next);
            reused.uri = Some(uri.clone());
        }
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.method = method;
        parts.uri = uri;
        parts.version = http::Version::HTTP_2;
        parts.headers = headers;
        Ok((parts, self.content_length))
    }
}

/// The request's URI: the last request's if scheme, authority and path are the same, else one
/// built from them.
fn uri(
    last: Option<&Uri>,
    scheme: http::uri::Scheme,
    authority: Option<UriPart>,
    path: UriPart,
    text: &Bytes,
) -> Result<Uri, Malformed> {
    let invalid = "an invalid :scheme, :authority or :path";
    if let (Some(last), UriPart::AsLast) = (last, &path) {
        let same = match &authority {
            Some(UriPart::AsLast) => last.scheme() == Some(&scheme),
            Some(UriPart::Text(_)) => false,
            None => last.authority().is_none(),
        };
        if same {
            return Ok(last.clone());
        }
    }
    // A part that is as in the last URI while another is not (rare): copied from it.
    let bytes = |part: UriPart, of_last: fn(&Uri) -> Option<&str>| match part {
        UriPart::Text(span) => text.slice(span),
        UriPart::AsLast => Bytes::copy_from_slice(
            last.and_then(of_last)
                .expect("only a part the last URI has is as in it")
                .as_bytes(),
        ),
    };
    let path = bytes(path, |uri| uri.path_and_query().map(|path| path.as_str()));
    if path.is_empty() {
        return Err("an empty :path");
    }
    let path = http::uri::PathAndQuery::from_maybe_shared(path).map_err(|_| invalid)?;
    // Without :authority (it may be left out, RFC 9113 §8.3.1) the URI is the path alone:
    // `http` has no URI with a scheme and no authority.
    let uri = match authority {
        Some(authority) => {
            let authority = bytes(authority, |uri| uri.authority().map(|a| a.as_str()));
            http::uri::Builder::new()
                .scheme(scheme)
                .authority(http::uri::Authority::from_maybe_shared(authority).map_err(|_| invalid)?)
                .path_and_query(path)
        }
        None => http::uri::Builder::new().path_and_query(path),
    };
    uri.build().map_err(|_| invalid)
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
        let mut reused = Reused::default();
        let mut head = RequestHead::reusing(&mut reused);
        for (name, value) in fields {
            head.field(name.as_bytes(), value.as_bytes());
        }
        head.finish()
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

    fn reusing(mut reused: Reused, fields: &[(&str, &str)]) -> (http::request::Parts, Reused) {
        let mut head = RequestHead::reusing(&mut reused);
        for (name, value) in fields {
            head.field(name.as_bytes(), value.as_bytes());
        }
        let parts = head.finish().unwrap().0;
        (parts, reused)
    }

    fn content_type(parts: &http::request::Parts) -> *const u8 {
        parts.headers["content-type"].as_bytes().as_ptr()
    }

    #[test]
    fn a_value_the_last_request_had_is_shared_not_copied() {
        let (first, reused) = reusing(Reused::default(), &GRPC);
        let (second, reused) = reusing(reused, &GRPC);
        assert_eq!(second.uri, "http://localhost/helloworld.Greeter/SayHello");
        assert_eq!(content_type(&first), content_type(&second));
        assert_eq!(first.uri.path().as_ptr(), second.uri.path().as_ptr());
        // A new value is the request's own; the others are still shared.
        let mut changed = GRPC;
        changed[4] = ("content-type", "application/grpc+proto");
        let (third, reused) = reusing(reused, &changed);
        assert_eq!(third.headers["content-type"], "application/grpc+proto");
        assert_ne!(content_type(&third), content_type(&first));
        assert_eq!(third.uri.path().as_ptr(), first.uri.path().as_ptr());
        // Only the last request's values are remembered.
        let (fourth, _) = reusing(reused, &GRPC);
        assert_eq!(fourth.headers["content-type"], "application/grpc");
        assert_ne!(content_type(&fourth), content_type(&first));
    }

    #[test]
    fn a_uri_is_the_last_one_only_if_all_its_parts_are() {
        let (first, reused) = reusing(Reused::default(), &GRPC);
        let mut other_host = GRPC;
        other_host[3] = (":authority", "example.com");
        let (second, reused) = reusing(reused, &other_host);
        assert_eq!(second.uri, "http://example.com/helloworld.Greeter/SayHello");
        let mut other_scheme = other_host;
        other_scheme[1] = (":scheme", "https");
        let (third, reused) = reusing(reused, &other_scheme);
        assert_eq!(third.uri, "https://example.com/helloworld.Greeter/SayHello");
        // Without :authority, the path alone (the last URI's path, copied out of it).
        let (fourth, reused) = reusing(reused, &[GRPC[0], GRPC[1], GRPC[2], GRPC[4]]);
        assert_eq!(fourth.uri, "/helloworld.Greeter/SayHello");
        assert!(fourth.uri.authority().is_none());
        let (fifth, _) = reusing(reused, &GRPC);
        assert_eq!(fifth.uri, first.uri);
    }

    #[test]
    fn what_is_remembered_is_bounded() {
        let many: Vec<(String, String)> = (0..RECENT_VALUES + 4)
            .map(|i| (format!("x-{i}"), format!("v{i}")))
            .collect();
        let mut fields: Vec<(&str, &str)> = GRPC.to_vec();
        fields.extend(many.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        let (_, reused) = reusing(Reused::default(), &fields);
        assert_eq!(reused.recent.len(), RECENT_VALUES);
        // A request whose values are big is not remembered: the last small one still is.
        let big = "b".repeat(RECENT_TEXT_LIMIT);
        let (small, reused) = reusing(reused, &GRPC);
        let mut with_big = GRPC.to_vec();
        with_big.push(("x-big", &big));
        let (_, reused) = reusing(reused, &with_big);
        let (after, reused) = reusing(reused, &GRPC);
        assert_eq!(content_type(&after), content_type(&small));
        assert!(reused.recent.iter().all(|value| value.len() < big.len()));
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
