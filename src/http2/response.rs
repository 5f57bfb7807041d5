//! A response's head and trailers onto the wire through the HPACK encoder: no map is built,
//! the fields go straight from the `HeaderMap` the service returned, which is then given back
//! to the thread's spare maps for the next reply (`crate::spare_maps`).

use http::{HeaderMap, StatusCode};

use super::calls::Fields;
use super::hpack::{Encoder, Indexing};
use crate::spare_maps;

/// Fields that gRPC servers send with the same value on nearly every response: worth a place in
/// the client's table. Anything else is never indexed.
fn indexing(name: &http::HeaderName) -> Indexing {
    match name.as_str() {
        "content-type" | "grpc-status" | "grpc-encoding" | "grpc-accept-encoding" => {
            Indexing::Cache
        }
        _ => Indexing::Never,
    }
}

/// Fields that HTTP/2 forbids (RFC 9113 §8.2.2): a hosted service may still set them; they are
/// left out rather than sent.
fn connection_specific(name: &http::HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
    )
}

/// Encodes a response head: `:status`, then the headers.
pub(crate) fn encode_head(
    encoder: &mut Encoder,
    status: StatusCode,
    headers: HeaderMap,
    dst: &mut Vec<u8>,
) {
    encoder.begin_block(dst);
    encoder.status(status.as_u16(), dst);
    encode_fields(encoder, &headers, dst);
    spare_maps::give_back(headers);
}

/// Encodes trailers.
pub(crate) fn encode_trailers(encoder: &mut Encoder, trailers: Fields, dst: &mut Vec<u8>) {
    encoder.begin_block(dst);
    match trailers {
        Fields::Map(map) => {
            encode_fields(encoder, &map, dst);
            spare_maps::give_back(map);
        }
        Fields::Fixed(fields) => {
            for (name, value) in fields {
                encoder.field(
                    name.as_str().as_bytes(),
                    value.as_bytes(),
                    indexing(name),
                    dst,
                );
            }
        }
    }
}

fn encode_fields(encoder: &mut Encoder, headers: &HeaderMap, dst: &mut Vec<u8>) {
    for (name, value) in headers {
        if connection_specific(name) {
            continue;
        }
        encoder.field(
            name.as_str().as_bytes(),
            value.as_bytes(),
            indexing(name),
            dst,
        );
    }
}
