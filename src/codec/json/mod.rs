//! Messages as ProtoJSON, through the `serde` impls `fastgrpc-build` generates for every
//! message: what `application/json`, `application/connect+json`, `application/grpc+json` and
//! `application/grpc-web+json` carry.
//!
//! A request that is not valid JSON or has a value of the wrong type is refused with
//! `INVALID_ARGUMENT`. A field the message does not have is skipped by default, as
//! connect-go, connect-es and grpc-gateway do, so that a client built from a newer schema can
//! call an older server; [`DecodeOptions::reject_unknown_fields`] refuses it instead.
//! `()`, the type of a method taking or returning `google.protobuf.Empty`, is an object
//! (its own serde form would be `null`). Non-finite floats are the strings `"NaN"`,
//! `"Infinity"` and `"-Infinity"` (`finite`), which serde_json would write as `null`.
//!
//! `values` has the forms of single values, `message` those of messages (what generated code
//! calls), `options` how the decode options reach them.

mod finite;
pub(crate) mod message;
pub(crate) mod options;
pub(crate) mod values;

use std::any::{Any, TypeId};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::Status;

pub use self::options::DecodeOptions;
use self::options::WithOptions;

/// `google.protobuf.Empty` in JSON: an object without fields. What `()` reads as, and the
/// well-known `Empty` too.
#[derive(Default)]
pub(crate) struct NoFields;

impl message::JsonMessage for NoFields {
    const NAME: &'static str = "google.protobuf.Empty";
    const FIELDS: &'static [&'static str] = &[];

    fn field(_: &str) -> Option<usize> {
        None
    }

    fn read_field<'de, A: serde::de::MapAccess<'de>>(
        &mut self,
        _: usize,
        _: &mut message::Fields<'_, A>,
    ) -> Result<(), A::Error> {
        Ok(())
    }
}

/// Decodes one message from `json`, with `options`.
pub fn decode<M: DeserializeOwned + 'static>(
    json: &[u8],
    options: DecodeOptions,
) -> Result<M, Status> {
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    if TypeId::of::<M>() == TypeId::of::<()>() {
        // `()` stands for `google.protobuf.Empty`: an object with no fields.
        let _: NoFields =
            options::deserialize(WithOptions::new(&mut deserializer, options)).map_err(invalid)?;
        deserializer.end().map_err(invalid)?;
        // A zero-sized box: no allocation.
        let unit: Box<dyn Any> = Box::new(());
        return Ok(*unit.downcast::<M>().expect("M is ()"));
    }
    let message = M::deserialize(WithOptions::new(&mut deserializer, options)).map_err(invalid)?;
    deserializer.end().map_err(invalid)?;
    Ok(message)
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

    const STRICT: DecodeOptions = DecodeOptions {
        reject_unknown_fields: true,
    };

    #[test]
    fn unit_is_the_empty_object_both_ways() {
        let mut out = Vec::new();
        encode(&(), &mut out).unwrap();
        assert_eq!(out, b"{}");
        for options in [DecodeOptions::default(), STRICT] {
            decode::<()>(b"{}", options).unwrap();
            decode::<()>(b" { } ", options).unwrap();
            for bad in [&b"null"[..], b"[]", b"{", b"{} {}"] {
                let error = decode::<()>(bad, options).unwrap_err();
                assert_eq!(error.code(), Code::InvalidArgument);
            }
        }
        // A field Empty does not have: skipped, or refused when asked.
        decode::<()>(br#"{"a":1}"#, DecodeOptions::default()).unwrap();
        let error = decode::<()>(br#"{"a":1}"#, STRICT).unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument);
        assert!(error.message().contains("has no field \"a\""), "{error:?}");
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
        let error = decode::<String>(b"{nope", DecodeOptions::default()).unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument);
        assert!(error.message().contains("invalid JSON"), "{error:?}");
    }
}
