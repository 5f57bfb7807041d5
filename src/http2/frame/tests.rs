//! Every frame type, well-formed and in each malformed form RFC 9113 names for a receiver.

use bytes::{Bytes, BytesMut};

use super::*;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Result<Frame, FrameError> {
    let head = Head {
        len: payload.len(),
        kind,
        flags,
        stream,
    };
    parse(head, Bytes::copy_from_slice(payload))
}

fn connection_error(result: Result<Frame, FrameError>) -> Reason {
    match result {
        Err(FrameError::Connection(reason, _)) => reason,
        other => panic!("expected a connection error, got {other:?}"),
    }
}

fn stream_error(result: Result<Frame, FrameError>) -> (u32, Reason) {
    match result {
        Err(FrameError::Stream(stream, reason, _)) => (stream, reason),
        other => panic!("expected a stream error, got {other:?}"),
    }
}

#[test]
fn the_head_is_read_with_the_reserved_bit_ignored() {
    let head = Head::parse(&[0x00, 0x40, 0x01, 0x01, 0x05, 0x80, 0x00, 0x00, 0x03]);
    assert_eq!(
        head,
        Head {
            len: 0x4001,
            kind: kind::HEADERS,
            flags: 0x05,
            stream: 3,
        }
    );
}

#[test]
fn data() {
    assert_eq!(
        frame(
            kind::DATA,
            flag::END_STREAM | flag::PADDED,
            1,
            &[2, b'h', b'i', 0, 0]
        ),
        Ok(Frame::Data {
            stream: 1,
            end_stream: true,
            data: Bytes::from_static(b"hi"),
            flow_len: 5,
        })
    );
    assert_eq!(
        connection_error(frame(kind::DATA, 0, 0, b"x")),
        Reason::PROTOCOL_ERROR
    );
    // Padding as long as the payload, or longer; and no room for the pad length at all.
    assert_eq!(
        connection_error(frame(kind::DATA, flag::PADDED, 1, &[2, 0])),
        Reason::PROTOCOL_ERROR
    );
    assert_eq!(
        connection_error(frame(kind::DATA, flag::PADDED, 1, &[1])),
        Reason::PROTOCOL_ERROR
    );
    assert_eq!(
        connection_error(frame(kind::DATA, flag::PADDED, 1, &[])),
        Reason::FRAME_SIZE_ERROR
    );
}

#[test]
fn headers() {
    let flags = flag::END_HEADERS | flag::PRIORITY | flag::PADDED;
    assert_eq!(
        frame(kind::HEADERS, flags, 3, &[1, 0, 0, 0, 1, 16, 0x82, 0]),
        Ok(Frame::Headers {
            stream: 3,
            end_stream: false,
            end_headers: true,
            depends_on_itself: false,
            block: Bytes::from_static(&[0x82]),
        })
    );
    let itself = frame(kind::HEADERS, flag::PRIORITY, 3, &[0, 0, 0, 3, 16, 0x82]);
    assert!(matches!(
        itself,
        Ok(Frame::Headers {
            depends_on_itself: true,
            ..
        })
    ));
    assert_eq!(
        connection_error(frame(kind::HEADERS, 0, 0, &[0x82])),
        Reason::PROTOCOL_ERROR
    );
    assert_eq!(
        connection_error(frame(kind::HEADERS, flag::PRIORITY, 1, &[0, 0, 0])),
        Reason::FRAME_SIZE_ERROR
    );
    assert_eq!(
        connection_error(frame(kind::HEADERS, flag::PADDED, 1, &[4, 0x82])),
        Reason::PROTOCOL_ERROR
    );
}

#[test]
fn priority() {
    assert_eq!(
        frame(kind::PRIORITY, 0, 5, &[0, 0, 0, 1, 9]),
        Ok(Frame::Priority { stream: 5 })
    );
    assert_eq!(
        stream_error(frame(kind::PRIORITY, 0, 5, &[0, 0, 0, 5, 9])),
        (5, Reason::PROTOCOL_ERROR)
    );
    assert_eq!(
        stream_error(frame(kind::PRIORITY, 0, 5, &[0, 0, 0, 1])),
        (5, Reason::FRAME_SIZE_ERROR)
    );
    assert_eq!(
        connection_error(frame(kind::PRIORITY, 0, 0, &[0, 0, 0, 1, 9])),
        Reason::PROTOCOL_ERROR
    );
}

#[test]
fn rst_stream() {
    assert_eq!(
        frame(kind::RST_STREAM, 0, 7, &[0, 0, 0, 8]),
        Ok(Frame::RstStream {
            stream: 7,
            reason: Reason::CANCEL,
        })
    );
    assert_eq!(
        connection_error(frame(kind::RST_STREAM, 0, 7, &[0, 0, 8])),
        Reason::FRAME_SIZE_ERROR
    );
    assert_eq!(
        connection_error(frame(kind::RST_STREAM, 0, 0, &[0, 0, 0, 8])),
        Reason::PROTOCOL_ERROR
    );
}

#[test]
fn settings() {
    let payload = [
        0, 1, 0, 0, 0x10, 0, // HEADER_TABLE_SIZE 4096
        0, 4, 0, 1, 0, 0, // INITIAL_WINDOW_SIZE 65536
        0, 0x42, 1, 2, 3, 4, // unknown: ignored
        0, 4, 0, 2, 0, 0, // INITIAL_WINDOW_SIZE again: the last counts
    ];
    let Ok(Frame::Settings(settings)) = frame(kind::SETTINGS, 0, 0, &payload) else {
        panic!("SETTINGS");
    };
    assert_eq!(settings.header_table_size, Some(4096));
    assert_eq!(settings.initial_window_size, Some(0x20000));
    assert_eq!(settings.max_frame_size, None);
    assert_eq!(
        frame(kind::SETTINGS, flag::ACK, 0, &[]),
        Ok(Frame::SettingsAck)
    );
    let malformed: [(u8, u32, &[u8], Reason); 7] = [
        (flag::ACK, 0, &[0, 1, 0, 0, 0, 0], Reason::FRAME_SIZE_ERROR),
        (0, 0, &[0, 1, 0, 0, 0], Reason::FRAME_SIZE_ERROR),
        (0, 1, &[], Reason::PROTOCOL_ERROR),
        (0, 0, &[0, 2, 0, 0, 0, 2], Reason::PROTOCOL_ERROR),
        (0, 0, &[0, 4, 0x80, 0, 0, 0], Reason::FLOW_CONTROL_ERROR),
        (0, 0, &[0, 5, 0, 0, 0x3f, 0xff], Reason::PROTOCOL_ERROR),
        (0, 0, &[0, 5, 1, 0, 0, 0], Reason::PROTOCOL_ERROR),
    ];
    for (flags, stream, payload, reason) in malformed {
        assert_eq!(
            connection_error(frame(kind::SETTINGS, flags, stream, payload)),
            reason,
            "{payload:?}"
        );
    }
    // What we write parses back.
    let ours = Settings {
        max_concurrent_streams: Some(1024),
        initial_window_size: Some(1 << 20),
        max_header_list_size: Some(16 * 1024),
        enable_push: Some(false),
        ..Settings::default()
    };
    let mut dst = BytesMut::new();
    ours.put(&mut dst);
    let head = Head::parse(dst[..HEAD_LEN].try_into().unwrap());
    assert_eq!(
        parse(head, dst.split_off(HEAD_LEN).freeze()),
        Ok(Frame::Settings(ours))
    );
}

#[test]
fn push_promise_ping_goaway_window_update_continuation_unknown() {
    assert_eq!(
        connection_error(frame(kind::PUSH_PROMISE, 0, 1, &[0, 0, 0, 2])),
        Reason::PROTOCOL_ERROR
    );

    assert_eq!(
        frame(kind::PING, flag::ACK, 0, &[1, 2, 3, 4, 5, 6, 7, 8]),
        Ok(Frame::Ping {
            ack: true,
            payload: [1, 2, 3, 4, 5, 6, 7, 8],
        })
    );
    assert_eq!(
        connection_error(frame(kind::PING, 0, 0, &[1; 7])),
        Reason::FRAME_SIZE_ERROR
    );
    assert_eq!(
        connection_error(frame(kind::PING, 0, 1, &[1; 8])),
        Reason::PROTOCOL_ERROR
    );

    assert_eq!(
        frame(
            kind::GOAWAY,
            0,
            0,
            &[0x80, 0, 0, 9, 0, 0, 0, 0, b'b', b'y', b'e']
        ),
        Ok(Frame::GoAway {
            last_stream: 9,
            reason: Reason::NO_ERROR,
        })
    );
    assert_eq!(
        connection_error(frame(kind::GOAWAY, 0, 0, &[0; 7])),
        Reason::FRAME_SIZE_ERROR
    );
    assert_eq!(
        connection_error(frame(kind::GOAWAY, 0, 3, &[0; 8])),
        Reason::PROTOCOL_ERROR
    );

    assert_eq!(
        frame(kind::WINDOW_UPDATE, 0, 0, &[0x80, 0, 0x10, 0]),
        Ok(Frame::WindowUpdate {
            stream: 0,
            increment: 0x1000,
        })
    );
    assert_eq!(
        connection_error(frame(kind::WINDOW_UPDATE, 0, 0, &[0; 4])),
        Reason::PROTOCOL_ERROR
    );
    assert_eq!(
        stream_error(frame(kind::WINDOW_UPDATE, 0, 3, &[0; 4])),
        (3, Reason::PROTOCOL_ERROR)
    );
    assert_eq!(
        connection_error(frame(kind::WINDOW_UPDATE, 0, 3, &[0; 5])),
        Reason::FRAME_SIZE_ERROR
    );

    assert_eq!(
        connection_error(frame(kind::CONTINUATION, 0, 0, &[0x82])),
        Reason::PROTOCOL_ERROR
    );
    assert_eq!(frame(0xfa, 0xff, 9, b"anything"), Ok(Frame::Unknown));
}

#[test]
fn a_long_header_block_is_split_into_continuations_and_read_back_whole() {
    let block: Vec<u8> = (0..40_000u32).map(|i| i as u8).collect();
    let mut dst = BytesMut::new();
    put_headers(&mut dst, 1, &block, true, 16_384);
    let mut read = Vec::new();
    let mut frames = 0;
    let mut bytes = dst.freeze();
    while !bytes.is_empty() {
        let head = Head::parse(bytes[..HEAD_LEN].try_into().unwrap());
        let payload = bytes.slice(HEAD_LEN..HEAD_LEN + head.len);
        bytes = bytes.slice(HEAD_LEN + head.len..);
        frames += 1;
        match parse(head, payload).unwrap() {
            Frame::Headers {
                end_stream,
                end_headers,
                block,
                ..
            } => {
                assert!(end_stream && !end_headers);
                read.extend_from_slice(&block);
            }
            Frame::Continuation {
                end_headers, block, ..
            } => {
                assert_eq!(end_headers, bytes.is_empty());
                read.extend_from_slice(&block);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((frames, read), (3, block));
}
