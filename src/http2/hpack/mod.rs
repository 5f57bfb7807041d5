//! HPACK (RFC 7541): the header compression of HTTP/2, one concept per file.
//!
//! - `huffman`: the Huffman code, decoded four bits at a time;
//! - `table`: the static table and the decoder's dynamic table;
//! - `decoder`: header blocks to fields, bounded as it reads;
//! - `encoder`: the fields a gRPC server sends, cached in the client's table where it pays.

mod decoder;
mod encoder;
mod huffman;
mod table;

pub use decoder::{CompressionError, Decoded, Decoder};
pub(crate) use encoder::DEFAULT_TABLE_SIZE;
pub use encoder::{Encoder, Indexing};

#[cfg(test)]
mod tests;
