//! Compressing and decompressing one message: gzip, deflate (zlib), zstd; decompression
//! bounded by the receive limit.

use std::io::{self, Read, Write};

use bytes::{BufMut, Bytes, BytesMut};
use flate2::Compression;
use flate2::write::{GzEncoder, ZlibEncoder};
use tonic::Status;

use super::CompressionEncoding;

/// Decompresses one message, refusing to produce more than `max_len` bytes.
///
/// - Output over `max_len` is `RESOURCE_EXHAUSTED`. The decoder is read through
///   `Read::take(max_len + 1)`, so a decompression bomb costs at most that much output (and
///   the time to inflate it) before it is refused. A zstd frame that declares a larger size is
///   refused before anything is decompressed, and the zstd window is capped so that a frame
///   header cannot make zstd allocate more than a message within the limit could need.
/// - Input that is corrupt, truncated, or followed by stray bytes is `INTERNAL`, with the
///   decoder's reason.
/// - No input at all is the empty message, whatever the encoding: some encoders write nothing
///   for an empty message (connect-go's zstd writer), and nothing can mean nothing else.
pub fn decompress(
    encoding: CompressionEncoding,
    compressed: &[u8],
    max_len: usize,
) -> Result<Bytes, Status> {
    if compressed.is_empty() {
        return Ok(Bytes::new());
    }
    let too_large = || {
        Status::resource_exhausted(format!(
            "decompressed request message is larger than the limit of {max_len} bytes"
        ))
    };
    let corrupt = |error: io::Error| {
        Status::internal(format!(
            "failed to decompress a {encoding} request message: {error}"
        ))
    };
    let mut output = Vec::with_capacity(compressed.len().saturating_mul(4).min(max_len));
    let read = match encoding {
        CompressionEncoding::Gzip => read_bounded(
            flate2::bufread::MultiGzDecoder::new(compressed),
            max_len,
            &mut output,
        )
        .map(|decoder| decoder.into_inner()),
        CompressionEncoding::Deflate => read_bounded(
            flate2::bufread::ZlibDecoder::new(compressed),
            max_len,
            &mut output,
        )
        .map(|decoder| decoder.into_inner()),
        #[cfg(feature = "zstd")]
        CompressionEncoding::Zstd => {
            if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(compressed)
                && size > max_len as u64
            {
                return Err(too_large());
            }
            let mut decoder =
                zstd::stream::read::Decoder::with_buffer(compressed).map_err(corrupt)?;
            // zstd allocates its window (up to 2^window_log bytes) up front: allow standard
            // levels (2^23, 8 MiB), and beyond that only what a message within the limit needs.
            let needed = usize::BITS - max_len.leading_zeros();
            decoder
                .window_log_max(needed.clamp(23, 30))
                .map_err(corrupt)?;
            read_bounded(decoder.single_frame(), max_len, &mut output)
                .map(|decoder| decoder.finish())
        }
    };
    let rest = read.map_err(corrupt)?;
    if output.len() > max_len {
        return Err(too_large());
    }
    if !rest.is_empty() {
        return Err(corrupt(io::Error::new(
            io::ErrorKind::InvalidData,
            "stray bytes after the compressed message",
        )));
    }
    Ok(Bytes::from(output))
}

/// Reads `decoder` into `output`, stopping after `max_len + 1` bytes, and gives it back.
fn read_bounded<R: Read>(decoder: R, max_len: usize, output: &mut Vec<u8>) -> io::Result<R> {
    let mut bounded = decoder.take((max_len as u64).saturating_add(1));
    bounded.read_to_end(output)?;
    Ok(bounded.into_inner())
}

/// Compresses `data` with `encoding`, appending the result to `out`.
///
/// The encoders write straight into `out` (through [`BufMut::writer`]), so `codec::encode_frame`
/// can put a frame header in front and patch its length afterwards without copying. Levels are
/// the libraries' defaults: 6 for gzip and deflate, 3 for zstd.
pub fn compress(
    encoding: CompressionEncoding,
    data: &[u8],
    out: &mut BytesMut,
) -> Result<(), Status> {
    let writer = out.writer();
    let written = match encoding {
        CompressionEncoding::Gzip => {
            let mut encoder = GzEncoder::new(writer, Compression::default());
            encoder
                .write_all(data)
                .and_then(|()| encoder.finish().map(drop))
        }
        CompressionEncoding::Deflate => {
            let mut encoder = ZlibEncoder::new(writer, Compression::default());
            encoder
                .write_all(data)
                .and_then(|()| encoder.finish().map(drop))
        }
        #[cfg(feature = "zstd")]
        CompressionEncoding::Zstd => {
            zstd::stream::copy_encode(data, writer, zstd::DEFAULT_COMPRESSION_LEVEL)
        }
    };
    written.map_err(|error| Status::internal(format!("failed to compress a message: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};
    use tonic::Code;

    /// Protobuf-ish data: repetitive but not trivially so.
    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"the quick brown fox jumps over the lazy dog; "[i % 45] ^ (i / 997) as u8)
            .collect()
    }

    /// Data that does not compress: a simple xorshift sequence.
    fn noise(len: usize) -> Vec<u8> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn compressed(encoding: CompressionEncoding, data: &[u8]) -> BytesMut {
        let mut out = BytesMut::new();
        compress(encoding, data, &mut out).unwrap();
        out
    }

    #[test]
    fn round_trips_for_every_encoding_and_size() {
        for &encoding in CompressionEncoding::ALL {
            for len in [0, 1, 100, 64 * 1024, 1024 * 1024 + 3] {
                for data in [sample(len), noise(len)] {
                    let packed = compressed(encoding, &data);
                    let unpacked = decompress(encoding, &packed, len).unwrap();
                    assert_eq!(unpacked, data, "{encoding} {len}");
                }
            }
            let big = sample(1024 * 1024);
            assert!(
                compressed(encoding, &big).len() < big.len() / 4,
                "{encoding} compresses repetitive data"
            );
        }
    }

    #[test]
    fn output_is_readable_by_the_reference_decoders() {
        let data = sample(10_000);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&compressed(CompressionEncoding::Gzip, &data)[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
        out.clear();
        flate2::read::ZlibDecoder::new(&compressed(CompressionEncoding::Deflate, &data)[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
        #[cfg(feature = "zstd")]
        {
            let packed = compressed(CompressionEncoding::Zstd, &data);
            assert_eq!(zstd::decode_all(&packed[..]).unwrap(), data);
            assert_eq!(
                zstd::zstd_safe::get_frame_content_size(&packed).unwrap(),
                Some(10_000),
                "the frame records its size"
            );
        }
    }

    #[test]
    fn reads_what_other_encoders_produce() {
        use std::io::Write;
        let data = sample(50_000);
        // flate2's own encoders, as tonic uses them (gzip with a header of its choosing).
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), Compression::best());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(
            decompress(CompressionEncoding::Gzip, &gz, data.len()).unwrap(),
            data
        );

        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), Compression::fast());
        zlib.write_all(&data).unwrap();
        let zlib = zlib.finish().unwrap();
        assert_eq!(
            decompress(CompressionEncoding::Deflate, &zlib, data.len()).unwrap(),
            data
        );

        // Two gzip members are one gzip stream.
        let mut two = gz.clone();
        two.extend_from_slice(&gz);
        let both = decompress(CompressionEncoding::Gzip, &two, 2 * data.len()).unwrap();
        assert_eq!(both.len(), 2 * data.len());

        #[cfg(feature = "zstd")]
        {
            // A streaming encoder's frame records no size and uses a large window.
            let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
            encoder.write_all(&data).unwrap();
            let frame = encoder.finish().unwrap();
            assert_eq!(
                zstd::zstd_safe::get_frame_content_size(&frame).unwrap(),
                None
            );
            assert_eq!(
                decompress(CompressionEncoding::Zstd, &frame, data.len()).unwrap(),
                data
            );
        }
    }

    #[test]
    fn an_empty_message_reads_back_from_nothing_and_from_what_encoders_write_for_it() {
        for &encoding in CompressionEncoding::ALL {
            // No bytes at all (connect-go's zstd writer for an empty message), with any limit.
            assert_eq!(
                decompress(encoding, b"", 0).unwrap(),
                Bytes::new(),
                "{encoding}"
            );
            // Ours.
            let ours = compressed(encoding, b"");
            assert!(!ours.is_empty(), "{encoding}");
            assert_eq!(
                decompress(encoding, &ours, 0).unwrap(),
                Bytes::new(),
                "{encoding}"
            );
        }
        // Go's `compress/gzip` and `compress/zlib` closed without a write (grpc-go's and
        // connect-go's gzip and deflate): a final empty stored block between the header and the
        // checksums.
        let go_gzip = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\x01\x00\x00\xff\xff\
                        \x00\x00\x00\x00\x00\x00\x00\x00";
        let go_zlib = b"\x78\x9c\x01\x00\x00\xff\xff\x00\x00\x00\x01";
        for (encoding, bytes) in [
            (CompressionEncoding::Gzip, &go_gzip[..]),
            (CompressionEncoding::Deflate, &go_zlib[..]),
        ] {
            assert_eq!(
                decompress(encoding, bytes, 0).unwrap(),
                Bytes::new(),
                "{encoding}"
            );
        }
        #[cfg(feature = "zstd")]
        {
            // A frame that declares no content, as the zstd library writes for empty input.
            let frame = zstd::encode_all(&b""[..], 3).unwrap();
            assert_eq!(
                zstd::zstd_safe::get_frame_content_size(&frame).unwrap(),
                Some(0)
            );
            let zstd = CompressionEncoding::Zstd;
            assert_eq!(decompress(zstd, &frame, 0).unwrap(), Bytes::new());
        }
    }

    #[test]
    fn limit_exactly_at_the_size_is_ok_and_one_less_is_not() {
        let data = sample(10_000);
        for &encoding in CompressionEncoding::ALL {
            let packed = compressed(encoding, &data);
            assert_eq!(decompress(encoding, &packed, 10_000).unwrap(), data);
            let error = decompress(encoding, &packed, 9_999).unwrap_err();
            assert_eq!(error.code(), Code::ResourceExhausted, "{encoding}");
            assert!(
                error
                    .message()
                    .contains("larger than the limit of 9999 bytes"),
                "{error:?}"
            );
        }
        // Empty messages, and a zero limit.
        for &encoding in CompressionEncoding::ALL {
            assert!(
                decompress(encoding, &compressed(encoding, &[]), 0)
                    .unwrap()
                    .is_empty()
            );
            let error = decompress(encoding, &compressed(encoding, b"x"), 0).unwrap_err();
            assert_eq!(error.code(), Code::ResourceExhausted, "{encoding}");
        }
    }

    #[test]
    fn size_hints_that_lie_do_not_matter() {
        let data = sample(5_000);
        // gzip: claim ISIZE = 1 and then u32::MAX; the output is right and bounded either way.
        for claimed in [1u32, u32::MAX] {
            let mut packed = compressed(CompressionEncoding::Gzip, &data);
            let n = packed.len();
            packed[n - 4..].copy_from_slice(&claimed.to_le_bytes());
            // ISIZE is checked against the real size by the decoder: a lie is corruption.
            let error = decompress(CompressionEncoding::Gzip, &packed, data.len()).unwrap_err();
            assert_eq!(error.code(), Code::Internal, "{claimed}");
            // And a lie does not get past the limit either.
            let error = decompress(CompressionEncoding::Gzip, &packed, 100).unwrap_err();
            assert_eq!(error.code(), Code::ResourceExhausted, "{claimed}");
        }
    }

    /// 10 MiB of zeros against a 4 MiB limit: refused quickly (the output stops at the limit
    /// plus one byte, see `reading_stops_one_byte_past_the_limit`).
    #[test]
    fn decompression_bomb_is_refused_quickly_in_bounded_memory() {
        let zeros = vec![0u8; 10 * 1024 * 1024];
        let limit = 4 * 1024 * 1024;
        for &encoding in CompressionEncoding::ALL {
            let bomb = compressed(encoding, &zeros);
            assert!(bomb.len() < 64 * 1024, "{encoding}: {} bytes", bomb.len());
            let started = Instant::now();
            let error = decompress(encoding, &bomb, limit).unwrap_err();
            let elapsed = started.elapsed();
            assert_eq!(error.code(), Code::ResourceExhausted, "{encoding}");
            assert!(elapsed < Duration::from_secs(2), "{encoding}: {elapsed:?}");
        }
    }

    #[test]
    fn reading_stops_one_byte_past_the_limit() {
        // A reader producing endless zeros: only `max_len + 1` bytes are ever taken from it.
        for max_len in [0, 1, 1000, 4096] {
            let mut output = Vec::new();
            read_bounded(io::repeat(0), max_len, &mut output).unwrap();
            assert_eq!(output.len(), max_len + 1);
        }
    }

    #[test]
    fn corrupt_input_is_internal() {
        let data = sample(20_000);
        for &encoding in CompressionEncoding::ALL {
            let packed = compressed(encoding, &data);
            let mut flipped = packed.to_vec();
            let middle = flipped.len() / 2;
            flipped[middle] ^= 0x55;
            let truncated = &packed[..packed.len() - 3];
            let mut trailing = packed.to_vec();
            trailing.extend_from_slice(b"junk");
            // gzip and zlib carry a checksum of the content; a zstd frame only if its encoder
            // asked for one (ours does not: TCP and TLS already protect the bytes), so a
            // flipped bit in a zstd literal may decode to different content without error.
            let checksummed = !matches!(encoding.as_str(), "zstd");
            let flipped_case = if checksummed {
                &flipped[..]
            } else {
                &b"\xff\xff"[..]
            };
            for (what, input) in [
                ("garbage", &b"definitely not compressed"[..]),
                ("flipped", flipped_case),
                ("truncated", truncated),
                ("trailing", &trailing[..]),
            ] {
                let error = decompress(encoding, input, 1 << 20).unwrap_err();
                assert_eq!(error.code(), Code::Internal, "{encoding} {what}: {error:?}");
                assert!(
                    error.message().starts_with(&format!(
                        "failed to decompress a {encoding} request message"
                    )),
                    "{error:?}"
                );
            }
        }
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_frame_declaring_too_much_is_refused_up_front() {
        let packed = compressed(CompressionEncoding::Zstd, &sample(100_000));
        let error = decompress(CompressionEncoding::Zstd, &packed, 99_999).unwrap_err();
        assert_eq!(error.code(), Code::ResourceExhausted);
    }
}
