//! The HPACK encoder, for the headers a gRPC server sends.
//!
//! A server sends the same few fields on nearly every response: `:status: 200`,
//! `content-type: application/grpc`, `grpc-status: 0`, `grpc-accept-encoding`. Those the
//! caller marks as worth caching are inserted into the client's dynamic table the first time
//! and sent as a one-byte index after that (as gRPC's C core does); everything else (messages,
//! custom metadata) goes as a literal that is never indexed, so a client cannot grow or churn
//! our table. Strings are Huffman-coded when that is shorter.
//!
//! The encoder mirrors the entries it inserted, so it always knows their indices and when the
//! client's decoder has evicted them.

use std::collections::VecDeque;

use super::huffman;
use super::table::{STATIC, field_size};

/// The table size a peer's decoder starts with (RFC 9113 §6.5.2), and the most this encoder
/// ever uses, whatever the peer allows: a handful of fields fit many times over.
pub(crate) const DEFAULT_TABLE_SIZE: usize = 4096;

/// A field the encoder inserted into the client's table: name and value.
type Inserted = (Box<[u8]>, Box<[u8]>);

/// One connection's HPACK encoder of response headers and trailers: what it inserted in the
/// client's dynamic table, and the cached encodings of the fields gRPC sends.
#[derive(Debug)]
pub struct Encoder {
    /// What we inserted and the client still holds, oldest first.
    entries: VecDeque<Inserted>,
    size: usize,
    max_size: usize,
    /// Size updates owed to the client at the start of the next block (§4.2): the smallest
    /// size since the last block, and the current one.
    pending_update: Option<(usize, usize)>,
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder {
            entries: VecDeque::new(),
            size: 0,
            max_size: DEFAULT_TABLE_SIZE,
            pending_update: None,
        }
    }
}

/// Whether a field is worth a place in the client's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexing {
    /// Sent on most responses with this very value: insert it once, then index it.
    Cache,
    /// A value that varies (a status message, custom metadata): a literal never indexed.
    Never,
}

impl Encoder {
    /// The client's SETTINGS_HEADER_TABLE_SIZE changed: use at most that much of its table,
    /// and tell it at the start of the next block.
    pub(crate) fn set_peer_table_size(&mut self, size: usize) {
        let size = size.min(DEFAULT_TABLE_SIZE);
        if size != self.max_size {
            self.max_size = size;
            self.evict_to(size);
            let smallest = self
                .pending_update
                .map_or(size, |(smallest, _)| smallest.min(size));
            self.pending_update = Some((smallest, size));
        }
    }

    /// Starts a header block: emits the size update the client is owed, if any.
    pub fn begin_block(&mut self, dst: &mut Vec<u8>) {
        if let Some((smallest, size)) = self.pending_update.take() {
            if smallest < size {
                integer(smallest, 5, 0x20, dst);
            }
            integer(size, 5, 0x20, dst);
        }
    }

    /// Encodes `:status`. 200 is one byte from the static table.
    pub(crate) fn status(&mut self, status: u16, dst: &mut Vec<u8>) {
        let static_index = match status {
            200 => 8,
            204 => 9,
            206 => 10,
            304 => 11,
            400 => 12,
            404 => 13,
            500 => 14,
            _ => 0,
        };
        if static_index != 0 {
            integer(static_index, 7, 0x80, dst);
            return;
        }
        let digits = [
            b'0' + (status / 100 % 10) as u8,
            b'0' + (status / 10 % 10) as u8,
            b'0' + (status % 10) as u8,
        ];
        // Literal without indexing, name ":status" (static index 8).
        integer(8, 4, 0x00, dst);
        string(&digits, dst);
    }

    /// Encodes one field.
    pub fn field(&mut self, name: &[u8], value: &[u8], indexing: Indexing, dst: &mut Vec<u8>) {
        if indexing == Indexing::Cache {
            if let Some(index) = self.find(name, value) {
                integer(index, 7, 0x80, dst);
                return;
            }
            if field_size(name, value) <= self.max_size {
                self.write_literal(name, value, 6, 0x40, dst);
                self.insert(name, value);
                return;
            }
        }
        // Never indexed (0001): intermediaries must not index it either.
        self.write_literal(name, value, 4, 0x10, dst);
    }

    fn write_literal(
        &self,
        name: &[u8],
        value: &[u8],
        prefix: u32,
        pattern: u8,
        dst: &mut Vec<u8>,
    ) {
        match static_name_index(name) {
            Some(index) => integer(index, prefix, pattern, dst),
            None => {
                integer(0, prefix, pattern, dst);
                string(name, dst);
            }
        }
        string(value, dst);
    }

    /// The index of a field we inserted and the client still holds.
    fn find(&self, name: &[u8], value: &[u8]) -> Option<usize> {
        let mut newest_first = self.entries.iter().rev();
        newest_first
            .position(|(n, v)| **n == *name && **v == *value)
            .map(|position| STATIC.len() + 1 + position)
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = field_size(name, value);
        self.evict_to(self.max_size - size);
        self.entries.push_back((name.into(), value.into()));
        self.size += size;
    }

    fn evict_to(&mut self, size: usize) {
        while self.size > size {
            let (name, value) = self.entries.pop_front().expect("size counts entries");
            self.size -= field_size(&name, &value);
        }
    }
}

/// The static table's index of `name`, if it has it.
fn static_name_index(name: &[u8]) -> Option<usize> {
    STATIC
        .iter()
        .position(|(static_name, _)| *static_name == name)
        .map(|position| position + 1)
}

/// Writes `value` with an `n`-bit prefix after the bits of `pattern` (§5.1).
pub(crate) fn integer(mut value: usize, n: u32, pattern: u8, dst: &mut Vec<u8>) {
    let mask = (1usize << n) - 1;
    if value < mask {
        dst.push(pattern | value as u8);
        return;
    }
    dst.push(pattern | mask as u8);
    value -= mask;
    while value >= 0x80 {
        dst.push(0x80 | (value & 0x7f) as u8);
        value >>= 7;
    }
    dst.push(value as u8);
}

/// Writes a string literal, Huffman-coded if that is shorter (§5.2).
pub(crate) fn string(value: &[u8], dst: &mut Vec<u8>) {
    let coded = huffman::encoded_len(value);
    if coded < value.len() {
        integer(coded, 7, 0x80, dst);
        huffman::encode(value, dst);
    } else {
        integer(value.len(), 7, 0x00, dst);
        dst.extend_from_slice(value);
    }
}
