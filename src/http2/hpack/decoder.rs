//! The HPACK decoder (RFC 7541 §3, §6): a header block in, its fields out to a callback, as
//! slices of the block, the tables or a scratch buffer; nothing is allocated per field.
//!
//! This is the attack surface of the header path, so every count is bounded as it is read:
//! integers to 2^28, strings to the bytes the block has left, Huffman output to the header list
//! limit, the table to the size we announced. A block whose fields pass the header list limit
//! is still decoded to its end, so that the dynamic table stays in step with the client's
//! encoder, but the fields past the limit are neither emitted nor decoded unless the table
//! needs them.

use super::huffman::{self, HuffmanError};
use super::table::{DynamicTable, STATIC, field_size};

/// A header block that cannot be decoded: a connection error of type COMPRESSION_ERROR
/// (RFC 9113 §4.3), since the table can no longer be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionError(pub(crate) &'static str);

/// What decoding a whole block found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// Every field was emitted.
    Complete,
    /// The fields passed the header list limit; those from the first one over it on were not
    /// emitted. The block was still decoded to its end.
    TooLarge,
}

/// The largest integer a representation may carry: far above any length or index a valid block
/// uses, and small enough that reading one never overflows.
const MAX_INTEGER: usize = 1 << 28;

/// One connection's HPACK decoder: its dynamic table lives from block to block.
#[derive(Debug)]
pub struct Decoder {
    table: DynamicTable,
    /// Huffman-decoded names and values of the field being decoded; kept between blocks.
    scratch: Vec<u8>,
}

/// Where a decoded string lies: in the block, the static table, or `scratch` (a range).
#[derive(Clone, Copy)]
enum Text<'b> {
    Block(&'b [u8]),
    Static(&'static [u8]),
    Scratch(usize, usize),
}

impl Decoder {
    /// A decoder whose dynamic table may grow to `max_table_size`, the
    /// SETTINGS_HEADER_TABLE_SIZE this side announces.
    pub fn new(max_table_size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(max_table_size),
            scratch: Vec::new(),
        }
    }

    /// Decodes one whole header block, calling `field(name, value)` for each field in order
    /// until their total size (as RFC 9113 §6.5.2 counts it) would pass `max_list_size`.
    pub fn decode(
        &mut self,
        mut block: &[u8],
        max_list_size: usize,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<Decoded, CompressionError> {
        // A string decoded past this is larger than both the list and the table may hold.
        let limit = max_list_size.max(self.table.capacity()) + 1;
        let mut list_size = 0usize;
        let mut over = false;
        let mut at_start = true;
        while let Some(&first) = block.first() {
            if first & 0x80 != 0 {
                let index = integer(&mut block, 7)?;
                let (name, value) = self.indexed(index)?;
                list_size += field_size(name, value);
                over |= list_size > max_list_size;
                if !over {
                    field(name, value);
                }
                at_start = false;
                continue;
            }
            if first & 0xe0 == 0x20 {
                if !at_start {
                    return Err(CompressionError("table size update after a field"));
                }
                let size = integer(&mut block, 5)?;
                if size > self.table.capacity() {
                    return Err(CompressionError(
                        "table size update above the announced maximum",
                    ));
                }
                self.table.set_max_size(size);
                continue;
            }
            at_start = false;
            // 01: with incremental indexing (6-bit index); 0000 and 0001: without indexing and
            // never indexed (4-bit index).
            let indexing = first & 0xc0 == 0x40;
            let name_index = integer(&mut block, if indexing { 6 } else { 4 })?;
            self.scratch.clear();
            let name = match name_index {
                0 => self.string(&mut block, limit)?,
                1..=61 => Some(Text::Static(STATIC[name_index - 1].0)),
                _ => {
                    let index = name_index - STATIC.len() - 1;
                    let (name, _) = self
                        .table
                        .get(index)
                        .ok_or(CompressionError("name index beyond the tables"))?;
                    // The insert below may evict the entry the name comes from: copy it out.
                    self.scratch.extend_from_slice(name);
                    Some(Text::Scratch(0, name.len()))
                }
            };
            if over && !indexing {
                // Neither emitted nor kept: step over the value.
                self.string(&mut block, 0)?;
                continue;
            }
            let value = self.string(&mut block, limit)?;
            let (Some(name), Some(value)) = (name, value) else {
                // Larger than the list may hold, and than the table: it empties the table.
                over = true;
                if indexing {
                    self.table.clear();
                }
                continue;
            };
            let (name, value) = (resolve(&self.scratch, name), resolve(&self.scratch, value));
            list_size += field_size(name, value);
            over |= list_size > max_list_size;
            if !over {
                field(name, value);
            }
            if indexing {
                self.table.insert(name, value);
            }
        }
        Ok(if over {
            Decoded::TooLarge
        } else {
            Decoded::Complete
        })
    }

    fn indexed(&self, index: usize) -> Result<(&[u8], &[u8]), CompressionError> {
        match index {
            0 => Err(CompressionError("index 0")),
            1..=61 => Ok(STATIC[index - 1]),
            _ => self
                .table
                .get(index - STATIC.len() - 1)
                .ok_or(CompressionError("index beyond the tables")),
        }
    }

    /// Reads a string literal (§5.2). A Huffman-coded one is decoded into the scratch buffer;
    /// `None` if it decodes to `limit` bytes or more (with `limit` 0 it is only stepped over).
    fn string<'b>(
        &mut self,
        block: &mut &'b [u8],
        limit: usize,
    ) -> Result<Option<Text<'b>>, CompressionError> {
        let huffman = block.first().is_some_and(|b| b & 0x80 != 0);
        let len = integer(block, 7)?;
        if len > block.len() {
            return Err(CompressionError("string longer than the block"));
        }
        let (bytes, rest) = block.split_at(len);
        *block = rest;
        if !huffman {
            return Ok((len < limit).then_some(Text::Block(bytes)));
        }
        if limit == 0 {
            return Ok(None);
        }
        let start = self.scratch.len();
        match huffman::decode(bytes, &mut self.scratch, start + limit) {
            Ok(()) if self.scratch.len() - start < limit => {
                Ok(Some(Text::Scratch(start, self.scratch.len())))
            }
            Ok(()) | Err(HuffmanError::TooLong) => Ok(None),
            Err(HuffmanError::Invalid) => Err(CompressionError("invalid Huffman code")),
        }
    }
}

fn resolve<'a>(scratch: &'a [u8], text: Text<'a>) -> &'a [u8] {
    match text {
        Text::Block(bytes) | Text::Static(bytes) => bytes,
        Text::Scratch(start, end) => &scratch[start..end],
    }
}

/// Reads an integer with an `n`-bit prefix (§5.1), at most [`MAX_INTEGER`].
fn integer(block: &mut &[u8], n: u32) -> Result<usize, CompressionError> {
    let (&first, mut rest) = block
        .split_first()
        .ok_or(CompressionError("integer cut off"))?;
    let mask = (1usize << n) - 1;
    let mut value = first as usize & mask;
    if value == mask {
        let mut shift = 0;
        loop {
            let (&byte, after) = rest
                .split_first()
                .ok_or(CompressionError("integer cut off"))?;
            rest = after;
            value += ((byte & 0x7f) as usize) << shift;
            if value > MAX_INTEGER {
                return Err(CompressionError("integer too large"));
            }
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
            // Zero-valued continuation bytes add nothing, but would shift past the word: four
            // of them already reach 2^28.
            if shift > 28 {
                return Err(CompressionError("integer too large"));
            }
        }
    }
    *block = rest;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::super::encoder::{integer as write_integer, string as write_string};
    use super::*;

    fn decode(
        decoder: &mut Decoder,
        block: &[u8],
        limit: usize,
    ) -> Result<(Decoded, usize), CompressionError> {
        let mut fields = 0;
        decoder
            .decode(block, limit, |_, _| fields += 1)
            .map(|decoded| (decoded, fields))
    }

    /// A literal with incremental indexing of a new name.
    fn inserted(name: &[u8], value: &[u8]) -> Vec<u8> {
        let mut block = vec![0x40];
        write_string(name, &mut block);
        write_string(value, &mut block);
        block
    }

    #[test]
    fn malformed_blocks_are_compression_errors() {
        let cases: [(&[u8], &str); 10] = [
            (&[0x80], "index 0"),
            (&[0xbe], "index beyond the tables"),
            (&[0x7f, 0x80], "integer cut off"),
            (&[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], "integer too large"),
            (
                &[
                    0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
                ],
                "integer too large",
            ),
            (&[0x00, 0x05, b'a'], "string longer than the block"),
            (
                &[0x00, 0x01, b'a', 0x85, 0xff],
                "string longer than the block",
            ),
            (&[0x00, 0x81, 0x00, 0x00], "invalid Huffman code"),
            (&[0x82, 0x20], "table size update after a field"),
            (
                &[0x3f, 0xe2, 0x1f],
                "table size update above the announced maximum",
            ),
        ];
        for (block, why) in cases {
            let mut decoder = Decoder::new(4096);
            assert_eq!(
                decode(&mut decoder, block, 16 * 1024),
                Err(CompressionError(why)),
                "{block:02x?}"
            );
        }
        // A name index into an empty dynamic table.
        let mut decoder = Decoder::new(4096);
        assert_eq!(
            decode(&mut decoder, &[0x7e, 0x00], 1024),
            Err(CompressionError("name index beyond the tables"))
        );
    }

    #[test]
    fn size_updates_at_the_start_are_obeyed() {
        let mut decoder = Decoder::new(4096);
        decode(&mut decoder, &inserted(b"x-a", b"1"), 1024).unwrap();
        // Two updates (to 0, then back), then a field: the entry is gone.
        let mut block = vec![0x20];
        write_integer(4096, 5, 0x20, &mut block);
        block.push(0xbe);
        assert_eq!(
            decode(&mut decoder, &block, 1024),
            Err(CompressionError("index beyond the tables"))
        );
    }

    #[test]
    fn an_hpack_bomb_stops_at_the_list_limit_and_keeps_the_table_in_step() {
        // One 4,000-byte value put in the table, then referenced 4,000 times: a 4 KiB block
        // that would decode to 16 MB.
        let mut decoder = Decoder::new(4096);
        let mut block = inserted(b"x-bomb", &[b'b'; 4000]);
        block.extend(std::iter::repeat_n(0xbe, 4000));
        let (decoded, emitted) = decode(&mut decoder, &block, 16 * 1024).unwrap();
        assert_eq!(decoded, Decoded::TooLarge);
        assert_eq!(emitted, 4, "16 KiB hold four 4 KiB fields");
        // The table still holds the entry: the next block decodes.
        let mut value_len = 0;
        decoder
            .decode(&[0xbe], 16 * 1024, |_, value| value_len = value.len())
            .unwrap();
        assert_eq!(value_len, 4000);
    }

    #[test]
    fn a_field_past_the_limit_still_enters_the_table() {
        let mut decoder = Decoder::new(4096);
        let block = inserted(b"x-big", &[b'v'; 2000]);
        assert_eq!(
            decode(&mut decoder, &block, 100).unwrap(),
            (Decoded::TooLarge, 0)
        );
        assert_eq!(
            decode(&mut decoder, &[0xbe], 4096).unwrap(),
            (Decoded::Complete, 1)
        );
        // A field larger than the whole table empties it, decoded or not.
        let block = inserted(b"x-huge", &[b'h'; 5000]);
        assert_eq!(
            decode(&mut decoder, &block, 100).unwrap(),
            (Decoded::TooLarge, 0)
        );
        assert_eq!(
            decode(&mut decoder, &[0xbe], 4096),
            Err(CompressionError("index beyond the tables"))
        );
    }

    #[test]
    fn a_huffman_string_is_not_decoded_past_what_it_can_be_used_for() {
        // 10,000 Huffman-coded bytes, never indexed: beyond both the list and the table.
        let mut block = vec![0x10];
        write_string(b"x-long", &mut block);
        write_string(&[b'a'; 10_000], &mut block);
        assert!(block[7] & 0x80 != 0, "Huffman-coded");
        let mut decoder = Decoder::new(4096);
        assert_eq!(
            decode(&mut decoder, &block, 8192).unwrap(),
            (Decoded::TooLarge, 0)
        );
        assert!(
            decoder.scratch.capacity() <= 2 * 8192,
            "{}",
            decoder.scratch.capacity()
        );
    }
}
