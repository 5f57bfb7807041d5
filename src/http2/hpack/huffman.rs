//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B): decoding four bits at a time through a
//! state table built at compile time from the code itself, and encoding.
//!
//! The table is derived, not transcribed: `CODES` is the one copy of the code, and a wrong
//! entry there would fail every Huffman-coded header of the test stories.

#[path = "huffman_codes.rs"]
mod codes;

use codes::CODES;

/// The code's end-of-string symbol: never valid inside a string (§5.2).
const EOS: u16 = 256;

/// A child in the code tree that is a symbol rather than an inner node.
const LEAF: u16 = 0x200;

/// The code tree: 257 symbols need 256 inner nodes; node 0 is the root. A child is an inner
/// node's index, or `LEAF | symbol`. 0 means "no child yet" while building (the root is nobody's
/// child); every node has both children once built, the code being complete.
const TREE: [[u16; 2]; 256] = build_tree();

const fn build_tree() -> [[u16; 2]; 256] {
    let mut nodes = [[0u16; 2]; 256];
    let mut used = 1;
    let mut symbol = 0;
    while symbol < CODES.len() {
        let (code, len) = CODES[symbol];
        let mut node = 0;
        let mut bit = len;
        while bit > 1 {
            bit -= 1;
            let branch = ((code >> bit) & 1) as usize;
            if nodes[node][branch] == 0 {
                nodes[node][branch] = used as u16;
                used += 1;
            }
            node = nodes[node][branch] as usize;
        }
        nodes[node][(code & 1) as usize] = LEAF | symbol as u16;
        symbol += 1;
    }
    assert!(
        used == 256,
        "a complete code over 257 symbols has 256 inner nodes"
    );
    nodes
}

/// One step of the decoder: from an inner node, four more bits.
#[derive(Clone, Copy)]
struct Step {
    /// The inner node reached.
    next: u8,
    /// `EMIT`, `FAIL`; the symbol emitted in the low byte.
    flags: u8,
    symbol: u8,
}

const EMIT: u8 = 1;
/// The bits spell EOS, which a string must not contain.
const FAIL: u8 = 2;

/// `STEPS[node][nibble]`. Codes are at least 5 bits long, so four bits finish at most one.
const STEPS: [[Step; 16]; 256] = build_steps();

const fn build_steps() -> [[Step; 16]; 256] {
    let mut steps = [[Step {
        next: 0,
        flags: 0,
        symbol: 0,
    }; 16]; 256];
    let mut node = 0;
    while node < 256 {
        let mut nibble = 0;
        while nibble < 16 {
            let mut at = node;
            let mut step = Step {
                next: 0,
                flags: 0,
                symbol: 0,
            };
            let mut bit = 4;
            while bit > 0 {
                bit -= 1;
                let child = TREE[at][(nibble >> bit) & 1];
                if child & LEAF == 0 {
                    at = child as usize;
                } else if child & !LEAF == EOS {
                    step.flags |= FAIL;
                    at = 0;
                } else {
                    step.flags |= EMIT;
                    step.symbol = (child & !LEAF) as u8;
                    at = 0;
                }
            }
            step.next = at as u8;
            steps[node][nibble] = step;
            nibble += 1;
        }
        node += 1;
    }
    steps
}

/// Inner nodes a string may end on: those reached from the root by at most seven 1 bits, the
/// padding the code allows (a prefix of EOS, shorter than a byte, §5.2).
const ACCEPTING: [bool; 256] = build_accepting();

const fn build_accepting() -> [bool; 256] {
    let mut accepting = [false; 256];
    let mut node = 0;
    let mut depth = 0;
    loop {
        accepting[node] = true;
        let child = TREE[node][1];
        if depth == 7 || child & LEAF != 0 {
            return accepting;
        }
        node = child as usize;
        depth += 1;
    }
}

/// Why a Huffman-coded string was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HuffmanError {
    /// EOS inside the string, or padding that is not a prefix of EOS or is 8 bits or more.
    Invalid,
    /// The decoded string would exceed the caller's limit.
    TooLong,
}

/// Decodes `src`, appending to `dst`; fails before `dst` grows past `limit` bytes in all.
pub(crate) fn decode(src: &[u8], dst: &mut Vec<u8>, limit: usize) -> Result<(), HuffmanError> {
    // At most 8 symbols per 5 bytes: reserve once, bounded by the limit.
    let most = (src.len() * 8 / 5).min(limit.saturating_sub(dst.len()));
    dst.reserve(most);
    let mut node = 0usize;
    for &byte in src {
        for nibble in [byte >> 4, byte & 0x0f] {
            let step = STEPS[node][nibble as usize];
            if step.flags & FAIL != 0 {
                return Err(HuffmanError::Invalid);
            }
            if step.flags & EMIT != 0 {
                if dst.len() >= limit {
                    return Err(HuffmanError::TooLong);
                }
                dst.push(step.symbol);
            }
            node = step.next as usize;
        }
    }
    if ACCEPTING[node] {
        Ok(())
    } else {
        Err(HuffmanError::Invalid)
    }
}

/// How many bytes `src` takes Huffman-coded.
pub(crate) fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| CODES[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

/// Appends `src` Huffman-coded to `dst`, padded with 1 bits.
pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>) {
    // Bits not yet written, right-aligned; never more than 7 + 30 at once.
    let mut pending: u64 = 0;
    let mut pending_bits = 0u32;
    for &byte in src {
        let (code, len) = CODES[byte as usize];
        pending = (pending << len) | code as u64;
        pending_bits += len as u32;
        while pending_bits >= 8 {
            pending_bits -= 8;
            dst.push((pending >> pending_bits) as u8);
        }
        pending &= (1 << pending_bits) - 1;
    }
    if pending_bits > 0 {
        let pad = 8 - pending_bits;
        dst.push(((pending << pad) | ((1 << pad) - 1)) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &[u8]) {
        let mut coded = Vec::new();
        encode(text, &mut coded);
        assert_eq!(coded.len(), encoded_len(text));
        let mut decoded = Vec::new();
        decode(&coded, &mut decoded, usize::MAX).unwrap();
        assert_eq!(decoded, text);
    }

    #[test]
    fn every_octet_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        round_trip(&all);
        for byte in 0..=255u8 {
            round_trip(&[byte]);
            round_trip(&[byte, byte, byte]);
        }
        round_trip(b"");
        round_trip(b"application/grpc");
    }

    #[test]
    fn rfc_7541_examples_decode() {
        // C.4.1: "www.example.com"; C.4.2: "no-cache"; C.4.3: "custom-value".
        let cases: [(&str, &[u8]); 3] = [
            ("f1e3c2e5f23a6ba0ab90f4ff", b"www.example.com"),
            ("a8eb10649cbf", b"no-cache"),
            ("25a849e95bb8e8b4bf", b"custom-value"),
        ];
        for (hex, text) in cases {
            let coded: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let mut decoded = Vec::new();
            decode(&coded, &mut decoded, 64).unwrap();
            assert_eq!(decoded, text);
            let mut encoded = Vec::new();
            encode(text, &mut encoded);
            assert_eq!(encoded, coded);
        }
    }

    #[test]
    fn padding_must_be_a_short_prefix_of_eos() {
        let mut out = Vec::new();
        // '0' is 00000 (5 bits): padded with 111 it is valid, with 000 it is not.
        assert_eq!(decode(&[0b0000_0111], &mut out, 8), Ok(()));
        assert_eq!(out, b"0");
        out.clear();
        assert_eq!(
            decode(&[0b0000_0000], &mut out, 8),
            Err(HuffmanError::Invalid),
            "padding of 0 bits is not EOS"
        );
        // A whole byte of padding (8 ones) is too long.
        assert_eq!(
            decode(&[0b0000_0111, 0xff], &mut out, 8),
            Err(HuffmanError::Invalid)
        );
        // EOS itself (30 ones) inside a string.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xfc], &mut out, 8),
            Err(HuffmanError::Invalid)
        );
        assert_eq!(decode(&[], &mut out, 8), Ok(()));
    }

    #[test]
    fn the_limit_holds_while_decoding() {
        let mut coded = Vec::new();
        encode(&[b'a'; 100], &mut coded);
        let mut out = Vec::new();
        assert_eq!(decode(&coded, &mut out, 99), Err(HuffmanError::TooLong));
        assert_eq!(out.len(), 99);
        out.clear();
        assert_eq!(decode(&coded, &mut out, 100), Ok(()));
    }
}
