//! The testee of protobuf's conformance suite (`conformance_test_runner`, see `run.sh`): reads
//! `conformance.ConformanceRequest`s from stdin, each after its length (4 bytes, little-endian),
//! and answers each with a `ConformanceResponse` the same way on stdout, until stdin ends.
//!
//! Each request carries a `TestAllTypesProto3` or `TestAllTypesProto2` in protobuf or
//! ProtoJSON, to be read and written back in the format asked. Both directions go through the
//! functions a fastgrpc server decodes requests and encodes replies with
//! (`fastgrpc::internals::codec`): a protobuf payload is framed as a gRPC request body, and a
//! reply's frame header is taken off again. Text format and JSPB are not fastgrpc's formats:
//! those cases are answered as skipped.

use std::io::{self, Read, Write};

use fastgrpc::internals::codec::{
    self, DEFAULT_MAX_RECEIVE_MESSAGE_SIZE, DecodeOptions, FRAME_HEADER_LEN, Format,
};
use prost::Message;

// Generated code: every message of the protos, used or not, named as the protos name them.
#[allow(dead_code, clippy::enum_variant_names)]
mod conformance {
    include!(concat!(env!("OUT_DIR"), "/conformance.rs"));
}

#[allow(dead_code, clippy::enum_variant_names)]
mod test_messages {
    pub mod proto2 {
        include!(concat!(
            env!("OUT_DIR"),
            "/protobuf_test_messages.proto2.rs"
        ));
    }
    pub mod proto3 {
        include!(concat!(
            env!("OUT_DIR"),
            "/protobuf_test_messages.proto3.rs"
        ));
    }
}

use conformance::{
    ConformanceRequest, ConformanceResponse, FailureSet, TestCategory, WireFormat,
    conformance_request::Payload, conformance_response::Result as Outcome,
};

fn main() -> io::Result<()> {
    // The messages an `Any` of the suite's cases can carry in JSON.
    test_messages::proto2::register_json_types();
    test_messages::proto3::register_json_types();
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    let mut request = Vec::new();
    // One request per turn until the runner closes stdin.
    loop {
        let mut len = [0u8; 4];
        match stdin.read_exact(&mut len) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(error) => return Err(error),
        }
        request.resize(u32::from_le_bytes(len) as usize, 0);
        stdin.read_exact(&mut request)?;
        let request = ConformanceRequest::decode(&request[..]).map_err(io::Error::other)?;
        let response = ConformanceResponse {
            result: Some(answer(&request)),
        }
        .encode_to_vec();
        let len = u32::try_from(response.len()).map_err(io::Error::other)?;
        stdout.write_all(&len.to_le_bytes())?;
        stdout.write_all(&response)?;
        stdout.flush()?;
    }
}

/// The outcome of one request.
fn answer(request: &ConformanceRequest) -> Outcome {
    match request.message_type.as_str() {
        "protobuf_test_messages.proto3.TestAllTypesProto3" => {
            round_trip::<test_messages::proto3::TestAllTypesProto3>(request)
        }
        "protobuf_test_messages.proto2.TestAllTypesProto2" => {
            round_trip::<test_messages::proto2::TestAllTypesProto2>(request)
        }
        // The runner first asks which cases this testee expects to fail: none (its failure
        // list, if any, is given on the runner's command line).
        "conformance.FailureSet" => Outcome::ProtobufPayload(FailureSet::default().encode_to_vec()),
        other => Outcome::Skipped(format!("message type {other} is not in this testee")),
    }
}

/// Reads the request's message and writes it back in the format asked.
fn round_trip<M>(request: &ConformanceRequest) -> Outcome
where
    M: Message
        + Default
        + fastgrpc::codegen::serde::Serialize
        + fastgrpc::codegen::serde::de::DeserializeOwned
        + 'static,
{
    let message: M = match &request.payload {
        Some(Payload::ProtobufPayload(bytes)) => {
            let mut frame = vec![0; FRAME_HEADER_LEN];
            frame[1..].copy_from_slice(&(bytes.len() as u32).to_be_bytes());
            frame.extend_from_slice(bytes);
            match codec::decode_unary(
                frame.into(),
                DEFAULT_MAX_RECEIVE_MESSAGE_SIZE,
                None,
                Format::Proto,
            ) {
                Ok(message) => message,
                Err(status) => return Outcome::ParseError(status.message().to_owned()),
            }
        }
        Some(Payload::JsonPayload(json)) => {
            // protobuf's own parsers refuse what a message does not know unless asked to
            // ignore it, and the suite's JSON cases expect that (an unknown enum value name is
            // refused), but for those of the ignore-unknown category: both modes are judged.
            let options = DecodeOptions {
                reject_unknown_fields: request.test_category()
                    != TestCategory::JsonIgnoreUnknownParsingTest,
            };
            match codec::decode_json(json.as_bytes(), options) {
                Ok(message) => message,
                Err(status) => return Outcome::ParseError(status.message().to_owned()),
            }
        }
        _ => return Outcome::Skipped("only protobuf and JSON payloads".into()),
    };
    let format = match request.requested_output_format() {
        WireFormat::Protobuf => Format::Proto,
        WireFormat::Json => Format::Json,
        _ => return Outcome::Skipped("only protobuf and JSON output".into()),
    };
    match codec::encode_reply(&message, format, None, usize::MAX) {
        Err(status) => Outcome::SerializeError(status.message().to_owned()),
        Ok(frame) => {
            let body = frame[FRAME_HEADER_LEN..].to_vec();
            match format {
                Format::Proto => Outcome::ProtobufPayload(body),
                Format::Json => match String::from_utf8(body) {
                    Ok(json) => Outcome::JsonPayload(json),
                    Err(error) => Outcome::SerializeError(error.to_string()),
                },
            }
        }
    }
}
