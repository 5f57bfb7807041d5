//! Messages as ProtoJSON, through the `serde` impls `fastgrpc-build` generates for every
//! message (with pbjson-build): what `application/json`, `application/connect+json`,
//! `application/grpc+json` and `application/grpc-web+json` carry.
//!
//! A request that is not valid JSON, has a value of the wrong type, or names a field the
//! message does not have is refused with `INVALID_ARGUMENT`, as protobuf's own JSON parsers do
//! by default. `()`, the type of a method taking or returning `google.protobuf.Empty`, is the
//! empty object `{}` (its own serde form would be `null`). Non-finite floats are the strings
//! `"NaN"`, `"Infinity"` and `"-Infinity"` (`finite`), which serde_json would write as `null`.

mod finite;

use std::any::{Any, TypeId};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::Status;

/// Decodes one message from `json`.
pub fn decode<M: DeserializeOwned + 'static>(json: &[u8]) -> Result<M, Status> {
    if TypeId::of::<M>() == TypeId::of::<()>() {
        let fields: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(json).map_err(invalid)?;
        if let Some(name) = fields.keys().next() {
            return Err(Status::invalid_argument(format!(
                "invalid JSON request message: google.protobuf.Empty has no field {:?}",
                crate::status::excerpt(name)
            )));
        }
        // A zero-sized box: no allocation.
        let unit: Box<dyn Any> = Box::new(());
        return Ok(*unit.downcast::<M>().expect("M is ()"));
    }
    serde_json::from_slice(json).map_err(invalid)
}

/// Appends `message` to `out` as JSON.
pub(crate) fn encode<M: Serialize + 'static>(message: &M, out: &mut Vec<u8>) -> Result<(), Status> {
    write(message, out).map_err(|error| {
        Status::internal(format!(
            "failed to encode the response message as JSON: {error}"
        ))
    })
}

/// Writes `message` as ProtoJSON to `out`: non-finite floats as strings, `()` as `{}`.
pub fn write<M: Serialize + 'static>(
    message: &M,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    if TypeId::of::<M>() == TypeId::of::<()>() {
        out.extend_from_slice(b"{}");
        return Ok(());
    }
    message.serialize(finite::Finite(&mut serde_json::Serializer::new(out)))
}

fn invalid(error: serde_json::Error) -> Status {
    Status::invalid_argument(format!("invalid JSON request message: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn unit_is_the_empty_object_both_ways() {
        let mut out = Vec::new();
        encode(&(), &mut out).unwrap();
        assert_eq!(out, b"{}");
        decode::<()>(b"{}").unwrap();
        decode::<()>(b" { } ").unwrap();
        for bad in [&b"null"[..], b"{\"a\":1}", b"[]", b"{"] {
            assert_eq!(decode::<()>(bad).unwrap_err().code(), Code::InvalidArgument);
        }
    }

    #[test]
    fn non_finite_floats_are_strings_at_any_depth() {
        let mut out = Vec::new();
        let value = (
            f64::NAN,
            vec![f32::INFINITY, 1.5],
            Some(f64::NEG_INFINITY),
            std::collections::BTreeMap::from([("k", f64::INFINITY)]),
        );
        write(&value, &mut out).unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"["NaN",["Infinity",1.5],"-Infinity",{"k":"Infinity"}]"#
        );
    }

    #[test]
    fn bad_json_is_invalid_argument() {
        let error = decode::<String>(b"{nope").unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument);
        assert!(error.message().contains("invalid JSON"), "{error:?}");
    }
}
