//! The protobuf well-known types (`google.protobuf.*`) that generated messages use, with the
//! special JSON forms of the ProtoJSON mapping: a `Timestamp` is an RFC 3339 string, a
//! `Duration` a string of seconds (`"1.5s"`), a wrapper such as `Int64Value` its bare value,
//! `Struct`, `Value` and `ListValue` plain JSON, `Empty` an empty object.
//!
//! They are prost messages, like `prost-types`' own, with `serde` impls that write and read
//! the mapping's forms. (The crate `pbjson-types` has the same idea, but builds with
//! prost-build in every user's tree and writes a Timestamp's zone as `+00:00`, a FieldMask as
//! a list.) A method whose request or reply is `google.protobuf.Empty` takes or returns `()`,
//! as with tonic. The other types of `google/protobuf/*.proto` (`Api`, `Type`, ...) are
//! generated with the protos that use them.

mod duration;
mod field_mask;
mod structs;
mod timestamp;
mod wrappers;

/// Base64 in either alphabet, padded or not, as ProtoJSON reads bytes (and Connect a GET's
/// message).
pub(crate) use self::wrappers::bytes::decode as decode_base64;

use std::fmt;

use base64::Engine as _;
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use self::duration::Duration;
pub use self::field_mask::FieldMask;
pub use self::structs::{ListValue, NullValue, Struct, Value, value};
pub use self::timestamp::Timestamp;
pub use self::wrappers::{
    BoolValue, BytesValue, DoubleValue, FloatValue, Int32Value, Int64Value, StringValue,
    UInt32Value, UInt64Value,
};

/// Nothing: a message without fields, `{}` in JSON. (A method that takes or returns
/// `google.protobuf.Empty` takes or returns `()`.)
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Empty {}

/// A message of any type: its type's URL (`type.googleapis.com/package.Message`) and its
/// encoding.
///
/// Its JSON form here is `{"@type": URL, "value": BASE64}`. The mapping asks for the message's
/// own JSON fields beside `@type`, which needs a registry of the message types a server
/// knows; fastgrpc has none yet (see the Connect and JSON section of the guide).
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct Any {
    /// The URL naming the message's type.
    #[prost(string, tag = "1")]
    pub type_url: String,
    /// The message, encoded.
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

macro_rules! named {
    ($($ty:ident),*) => {$(
        impl prost::Name for $ty {
            const NAME: &'static str = stringify!($ty);
            const PACKAGE: &'static str = "google.protobuf";
        }
    )*};
}

named!(Empty, Any);

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_map(Some(0))?.end()
    }
}

impl<'de> Deserialize<'de> for Empty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Empty;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an empty object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Empty, A::Error> {
                match map.next_key::<String>()? {
                    None => Ok(Empty {}),
                    Some(name) => Err(de::Error::unknown_field(&name, &[])),
                }
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

impl Serialize for Any {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("@type", &self.type_url)?;
        map.serialize_entry(
            "value",
            &base64::engine::general_purpose::STANDARD.encode(&self.value),
        )?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Any;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object with \"@type\" and \"value\"")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Any, A::Error> {
                let mut any = Any::default();
                while let Some(name) = map.next_key::<String>()? {
                    match name.as_str() {
                        "@type" => any.type_url = map.next_value()?,
                        "value" => {
                            let text: String = map.next_value()?;
                            any.value = decode_base64(&text).ok_or_else(|| {
                                de::Error::invalid_value(de::Unexpected::Str(&text), &self)
                            })?;
                        }
                        other => return Err(de::Error::unknown_field(other, &["@type", "value"])),
                    }
                }
                Ok(any)
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

/// Appends `nanos` as a fraction of 3, 6 or 9 digits (nothing for 0), as ProtoJSON writes the
/// fractions of Timestamps and Durations.
fn write_fraction(out: &mut String, nanos: u32) {
    use std::fmt::Write as _;
    if nanos == 0 {
        return;
    }
    let _ = if nanos.is_multiple_of(1_000_000) {
        write!(out, ".{:03}", nanos / 1_000_000)
    } else if nanos.is_multiple_of(1_000) {
        write!(out, ".{:06}", nanos / 1_000)
    } else {
        write!(out, ".{nanos:09}")
    };
}
