//! Metadata a handler sends beyond tonic's `Response`: trailing metadata.
//!
//! Request metadata arrives in [`tonic::Request::metadata`] and initial response metadata goes
//! in [`tonic::Response::metadata_mut`], as in tonic. Trailing metadata, sent with the final
//! status, is attached as a [`Trailers`] extension of the response.

use tonic::metadata::MetadataMap;

/// Trailing metadata to send after the reply (and its final status).
///
/// ```
/// use fastgrpc::metadata::Trailers;
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
    /// Takes the trailing metadata out of a response's extensions, empty if none was set.
    pub(crate) fn take(extensions: &mut http::Extensions) -> http::HeaderMap {
        extensions
            .remove::<Trailers>()
            .map(|trailers| trailers.0.into_headers())
            .unwrap_or_default()
    }
}
