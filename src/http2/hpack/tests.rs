//! The decoder against the public hpack-test-case stories (header blocks encoded by nghttp2,
//! Go and Python), and the encoder's output for the stories' header lists decoded back, by our
//! decoder and by h2's (its client).
//!
//! The stories live in the repository, `testdata/hpack-test-case/` (one gzip file of JSON
//! lines per set, with the collection's licence).

use std::io::BufRead;
use std::path::PathBuf;

use super::{Decoded, Decoder, Encoder, Indexing};

type Field = (Vec<u8>, Vec<u8>);

struct Case {
    wire: Vec<u8>,
    headers: Vec<Field>,
    table_size: Option<usize>,
}

fn stories_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/hpack-test-case")
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// Every story of `set`, each a list of cases in order.
fn stories(set: &str) -> Vec<(String, Vec<Case>)> {
    let path = stories_dir().join(format!("{set}.jsonl.gz"));
    let file =
        std::fs::File::open(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let stories: Vec<_> = std::io::BufReader::new(flate2::read::GzDecoder::new(file))
        .lines()
        .map(|line| {
            let story: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
            let cases = story["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|case| Case {
                    wire: case["wire"].as_str().map(hex).unwrap_or_default(),
                    headers: case["headers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .flat_map(|field| field.as_object().unwrap().iter())
                        .map(|(name, value)| {
                            (
                                name.as_bytes().to_vec(),
                                value.as_str().unwrap().as_bytes().to_vec(),
                            )
                        })
                        .collect(),
                    table_size: case["header_table_size"].as_u64().map(|size| size as usize),
                })
                .collect();
            (format!("{set}/{}", story["story"].as_str().unwrap()), cases)
        })
        .collect();
    assert!(!stories.is_empty(), "no stories in {}", path.display());
    stories
}

fn decode_all(decoder: &mut Decoder, block: &[u8]) -> Vec<Field> {
    let mut fields = Vec::new();
    let decoded = decoder
        .decode(block, usize::MAX / 2, |name, value| {
            fields.push((name.to_vec(), value.to_vec()))
        })
        .unwrap();
    assert_eq!(decoded, Decoded::Complete);
    fields
}

#[test]
fn the_decoder_passes_every_story() {
    let mut blocks = 0;
    for set in [
        "nghttp2",
        "nghttp2-change-table-size",
        "go-hpack",
        "python-hpack",
    ] {
        for (path, cases) in stories(set) {
            let capacity = cases
                .iter()
                .filter_map(|case| case.table_size)
                .max()
                .unwrap_or(4096);
            let mut decoder = Decoder::new(capacity.max(4096));
            for (seqno, case) in cases.iter().enumerate() {
                assert_eq!(
                    decode_all(&mut decoder, &case.wire),
                    case.headers,
                    "{path}, case {seqno}"
                );
                blocks += 1;
            }
        }
    }
    assert!(blocks > 1000, "only {blocks} blocks decoded");
}

#[test]
fn the_encoder_output_decodes_back_for_every_raw_story() {
    for (path, cases) in stories("raw-data") {
        let mut encoder = Encoder::default();
        let mut decoder = Decoder::new(4096);
        for (seqno, case) in cases.iter().enumerate() {
            let mut block = Vec::new();
            encoder.begin_block(&mut block);
            for (i, (name, value)) in case.headers.iter().enumerate() {
                // Some fields cached, some not, as a server mixes them.
                let indexing = if i % 3 == 2 {
                    Indexing::Never
                } else {
                    Indexing::Cache
                };
                encoder.field(name, value, indexing, &mut block);
            }
            assert_eq!(
                decode_all(&mut decoder, &block),
                case.headers,
                "{path}, case {seqno}"
            );
        }
    }
}

#[test]
fn cached_fields_become_one_byte_and_survive_a_table_size_change() {
    let mut encoder = Encoder::default();
    let mut decoder = Decoder::new(4096);
    let fields: [(&[u8], &[u8]); 2] = [
        (b"content-type", b"application/grpc"),
        (b"grpc-status", b"0"),
    ];
    let encode = |encoder: &mut Encoder| {
        let mut block = Vec::new();
        encoder.begin_block(&mut block);
        encoder.status(200, &mut block);
        for (name, value) in fields {
            encoder.field(name, value, Indexing::Cache, &mut block);
        }
        block
    };
    let first = encode(&mut encoder);
    let second = encode(&mut encoder);
    assert_eq!(second.len(), 3, "{second:02x?}");
    let expected = vec![
        (b":status".to_vec(), b"200".to_vec()),
        (fields[0].0.to_vec(), fields[0].1.to_vec()),
        (fields[1].0.to_vec(), fields[1].1.to_vec()),
    ];
    assert_eq!(decode_all(&mut decoder, &first), expected);
    assert_eq!(decode_all(&mut decoder, &second), expected);
    // The client shrinks its table to nothing and back: the encoder says so and re-inserts.
    encoder.set_peer_table_size(0);
    encoder.set_peer_table_size(4096);
    let third = encode(&mut encoder);
    assert_eq!(&third[..3], &[0x20, 0x3f, 0xe1], "updates to 0, then 4096");
    assert_eq!(decode_all(&mut decoder, &third), expected);
    assert_eq!(decode_all(&mut decoder, &encode(&mut encoder)), expected);
}

/// h2's decoder reads what the encoder wrote as a client does: every regular field of every
/// raw story, on one connection per story (so the client's table carries over from block to
/// block, as it does from reply to reply), comes back the same from h2's client. (h2's HPACK
/// module is private: its client is the way in.)
#[tokio::test]
async fn h2s_decoder_agrees_with_the_encoder_for_every_raw_story() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut responses = 0;
    for (path, cases) in stories("raw-data") {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (mut server_read, mut server_write) = tokio::io::split(server_io);
        // The client's requests are answered once they have arrived (before that, h2 holds a
        // reply on the stream a protocol error): the ids of its HEADERS frames, as they come.
        let (requests, mut arrived) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut read = Vec::new();
            let mut at = crate::http2::connection::PREFACE.len();
            let mut chunk = [0u8; 16 * 1024];
            while let Ok(n @ 1..) = server_read.read(&mut chunk).await {
                read.extend_from_slice(&chunk[..n]);
                while read.len() >= at + 9 {
                    let len = u32::from_be_bytes([0, read[at], read[at + 1], read[at + 2]]);
                    let end = at + 9 + len as usize;
                    if read.len() < end {
                        break;
                    }
                    if read[at + 3] == 0x1 {
                        let stream = u32::from_be_bytes(read[at + 5..at + 9].try_into().unwrap());
                        let _ = requests.send(stream & 0x7fff_ffff);
                    }
                    at = end;
                }
            }
        });
        let mut frames = bytes::BytesMut::new();
        // Our (empty) SETTINGS; the client's are never acknowledged, which h2 tolerates.
        crate::http2::frame::put_head(&mut frames, 0, 0x4, 0, 0);
        server_write.write_all(&frames).await.unwrap();
        let (client, connection) = h2::client::handshake(client_io).await.unwrap();
        tokio::spawn(connection);
        let mut encoder = Encoder::default();
        for (seqno, case) in cases.iter().enumerate() {
            // A reply carries no request pseudo-headers, nor HTTP/1.1's connection fields, nor
            // a content-length its (empty) body would contradict.
            let expected: Vec<Field> = case
                .headers
                .iter()
                .filter(|(name, _)| {
                    !name.starts_with(b":")
                        && !matches!(
                            &name[..],
                            b"connection"
                                | b"keep-alive"
                                | b"proxy-connection"
                                | b"transfer-encoding"
                                | b"upgrade"
                                | b"te"
                                | b"content-length"
                        )
                })
                .cloned()
                .collect();
            let mut block = Vec::new();
            encoder.begin_block(&mut block);
            encoder.status(200, &mut block);
            for (i, (name, value)) in expected.iter().enumerate() {
                let indexing = if i % 3 == 2 {
                    Indexing::Never
                } else {
                    Indexing::Cache
                };
                encoder.field(name, value, indexing, &mut block);
            }
            let mut ready = client.clone().ready().await.unwrap();
            let (response, _) = ready
                .send_request(http::Request::get("http://story/").body(()).unwrap(), true)
                .unwrap();
            let stream = 2 * seqno as u32 + 1;
            assert_eq!(arrived.recv().await, Some(stream), "{path}, case {seqno}");
            let mut frame = bytes::BytesMut::new();
            crate::http2::frame::put_headers(&mut frame, stream, &block, true, 16_384);
            server_write.write_all(&frame).await.unwrap();
            let response = response
                .await
                .unwrap_or_else(|error| panic!("{path}, case {seqno}: {error:?}"));
            assert_eq!(response.status(), 200);
            let mut decoded: Vec<Field> = response
                .headers()
                .iter()
                .map(|(name, value)| (name.as_str().as_bytes().to_vec(), value.as_bytes().to_vec()))
                .collect();
            let mut expected = expected;
            // `HeaderMap` groups a name's values: compare the fields, not their order.
            decoded.sort();
            expected.sort();
            assert_eq!(decoded, expected, "{path}, case {seqno}");
            responses += 1;
        }
    }
    assert!(responses > 1000, "only {responses} replies checked");
}
