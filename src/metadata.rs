//! Metadata a handler sends beyond tonic's `Response`: trailing metadata.
//!
//! Request metadata arrives in [`tonic::Request::metadata`] and initial response metadata goes
//! in [`tonic::Response::metadata_mut`], as in tonic. Trailing metadata, sent with the final
//! status, is attached as a [`Trailers`] extension of the response.

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
