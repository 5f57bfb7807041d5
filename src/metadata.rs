//! Metadata a handler sends beyond tonic's `Response`: trailing metadata, and the response
//! headers of a call that fails.
//!
//! Request metadata arrives in [`tonic::Request::metadata`] and initial response metadata goes
//! in [`tonic::Response::metadata_mut`], as in tonic. Trailing metadata, sent with the final
//! status, is attached as a [`Trailers`] extension of the response. A failing call's status
//! carries its trailing metadata (`Status::metadata`), and its headers apart if it has any
//! ([`ErrorHeaders`]).

use http::{HeaderMap, HeaderName, HeaderValue};
use tonic::metadata::MetadataMap;

/// Maps of up to this many values are searched by [`header`] name by name first.
const SCAN_LIMIT: usize = 8;

/// The first value of the header `name` in `headers`, as [`HeaderMap::get`] gives it.
///
/// For the gRPC headers a request usually lacks (`grpc-encoding`, often `grpc-timeout`).
/// `HeaderMap::get` hashes the whole name byte by byte, while a request carries few headers
/// and comparing a name with a standard one, or one of another length, is a few instructions:
/// a map of up to `SCAN_LIMIT` values is first scanned for the name, and only looked up by hash
/// if the name is there (the cost of each: docs/BENCHMARKS.md, "Figures behind choices in the
/// code").
pub(crate) fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a HeaderValue> {
    if headers.len() <= SCAN_LIMIT && !headers.keys().any(|key| key == name) {
        return None;
    }
    headers.get(name)
}

/// The first value of the header `name`, which the request is expected to have
/// (`content-type`): a small map is scanned for it, which finds the value itself, without
/// the hashing of a lookup.
pub(crate) fn expected_header<'a>(
    headers: &'a HeaderMap,
    name: &HeaderName,
) -> Option<&'a HeaderValue> {
    if headers.len() <= SCAN_LIMIT {
        return headers
            .iter()
            .find_map(|(key, value)| (key == name).then_some(value));
    }
    headers.get(name)
}

/// The first values of the headers `first` and `second`, as [`header`] finds each, with one
/// scan of a small map for both (a call's two encoding headers, which most requests lack).
pub(crate) fn header_pair<'a>(
    headers: &'a HeaderMap,
    first: &HeaderName,
    second: &HeaderName,
) -> (Option<&'a HeaderValue>, Option<&'a HeaderValue>) {
    let (mut has_first, mut has_second) = (true, true);
    if headers.len() <= SCAN_LIMIT {
        (has_first, has_second) = (false, false);
        for key in headers.keys() {
            has_first |= key == first;
            has_second |= key == second;
        }
    }
    (
        has_first.then(|| headers.get(first)).flatten(),
        has_second.then(|| headers.get(second)).flatten(),
    )
}

/// Trailing metadata to send after the reply (and its final status).
///
/// ```
/// use fastgrpc::Trailers;
/// use tonic::metadata::MetadataMap;
///
/// let mut response = tonic::Response::new(());
/// let mut trailers = MetadataMap::new();
/// trailers.insert("x-checksum", "abc123".parse().unwrap());
/// response.extensions_mut().insert(Trailers(trailers));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Trailers(pub MetadataMap);

impl Trailers {
    /// Takes the trailing metadata out of a response's extensions, if any was set.
    pub(crate) fn take(extensions: &mut http::Extensions) -> Option<http::HeaderMap> {
        extensions
            .remove::<Trailers>()
            .map(|trailers| trailers.0.into_headers())
    }
}

/// The response headers of a call that fails, kept apart from its trailing metadata (the
/// status's own [`metadata`](tonic::Status::metadata)).
///
/// gRPC answers a call that fails before its reply *trailers-only*: one block holding both, as
/// its spec says, so there they merge. Connect keeps them apart: a unary call's headers stay
/// headers and its trailing metadata becomes `trailer-` headers; a stream's headers are the
/// HTTP headers and its trailing metadata goes in its end-of-stream message. A status without
/// them answers Connect with its metadata as headers, as connect-go does.
///
/// They ride in the status as its [`source`](std::error::Error::source), which they replace.
///
/// ```
/// use fastgrpc::{ErrorHeaders, Status};
/// use tonic::metadata::MetadataMap;
///
/// let mut headers = MetadataMap::new();
/// headers.insert("x-request-id", "42".parse().unwrap());
/// let status = ErrorHeaders::attach(Status::not_found("no such book"), headers);
/// assert_eq!(ErrorHeaders::of(&status).unwrap().get("x-request-id").unwrap(), "42");
/// ```
#[derive(Debug, Clone)]
pub struct ErrorHeaders(MetadataMap);

impl ErrorHeaders {
    /// `status` with `headers` as its response headers.
    pub fn attach(mut status: tonic::Status, headers: MetadataMap) -> tonic::Status {
        status.set_source(std::sync::Arc::new(ErrorHeaders(headers)));
        status
    }

    /// The response headers `status` carries apart from its metadata, if it carries any.
    pub fn of(status: &tonic::Status) -> Option<&MetadataMap> {
        std::error::Error::source(status)?
            .downcast_ref::<ErrorHeaders>()
            .map(|headers| &headers.0)
    }
}

impl std::fmt::Display for ErrorHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the response headers of a failed call")
    }
}

impl std::error::Error for ErrorHeaders {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_finds_what_get_finds_in_small_and_large_maps() {
        let name = HeaderName::from_static("grpc-encoding");
        for others in [0, 1, 3, SCAN_LIMIT, SCAN_LIMIT + 5] {
            let mut headers = HeaderMap::new();
            headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("a"));
            for i in 0..others {
                headers.append(
                    HeaderName::try_from(format!("x-other-{i}")).unwrap(),
                    HeaderValue::from_static("b"),
                );
            }
            assert_eq!(header(&headers, &name), None, "{others} others");
            headers.append(name.clone(), HeaderValue::from_static("gzip"));
            headers.append(name.clone(), HeaderValue::from_static("zstd"));
            assert_eq!(
                header(&headers, &name),
                headers.get(&name),
                "{others} others"
            );
            assert_eq!(header(&headers, &name).unwrap(), "gzip");
        }
    }
}
