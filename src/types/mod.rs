//! The protobuf well-known types (`google.protobuf.*`) that generated messages use, with the
//! special JSON forms of the ProtoJSON mapping: a `Timestamp` is an RFC 3339 string, a
//! `Duration` a string of seconds (`"1.5s"`), a wrapper such as `Int64Value` its bare value,
//! `Struct`, `Value` and `ListValue` plain JSON, `Empty` an empty object, an `Any` its
//! message's JSON with `"@type"` (for the types registered: [`register_json_type`]).
//!
//! They are prost messages, like `prost-types`' own, with `serde` impls that write and read
//! the mapping's forms. (The crate `pbjson-types` has the same idea, but builds with
//! prost-build in every user's tree and writes a Timestamp's zone as `+00:00`, a FieldMask as
//! a list.) A method whose request or reply is `google.protobuf.Empty` takes or returns `()`,
//! as with tonic. The other types of `google/protobuf/*.proto` (`Api`, `Type`, ...) are
//! generated with the protos that use them.

mod duration;
mod field_mask;
mod registry;
mod structs;
mod timestamp;
mod wrappers;

/// Base64 in either alphabet, padded or not, as ProtoJSON reads bytes (and Connect a GET's
/// message).
pub(crate) use crate::codec::json::values::decode_base64;

use serde::de;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::codec::json::NoFields;
use crate::codec::json::options::{self, DecodeOptions, ReadJson};

pub use self::duration::Duration;
pub use self::field_mask::FieldMask;
pub use self::registry::register as register_json_type;
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
/// In JSON it is the message's own JSON with `"@type": URL` added (a well-known type with a
/// special form: `{"@type": URL, "value": ...}`), as the mapping has it. That needs the message
/// type to be known: the well-known types are, and generated code registers the messages of a
/// package when a server of it is built, or with `<package>::register_json_types()` (or
/// [`register_json_type`] for a type of your own). An `Any` of a type not registered fails to
/// serialize, and one read from JSON is refused. The empty `Any` (no type, no value) is `{}`.
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
    ($($ty:ident),*) => {
        $(
            impl prost::Name for $ty {
                const NAME: &'static str = stringify!($ty);
                const PACKAGE: &'static str = "google.protobuf";

                // As `prost-types` has them: the domain `Any`s of these types carry.
                fn type_url() -> String {
                    concat!("type.googleapis.com/google.protobuf.", stringify!($ty)).to_owned()
                }
            }
        )*

        /// Every well-known type's entry in the JSON registry, by full name. Inside an `Any`
        /// each has the special form `{"@type", "value"}`, except `Empty`, an object like any
        /// message's.
        fn well_known_entries() -> impl Iterator<Item = (String, registry::Entry)> {
            [$((
                concat!("google.protobuf.", stringify!($ty)).to_owned(),
                registry::entry::<$ty>(stringify!($ty) != "Empty"),
            )),*]
            .into_iter()
        }
    };
}

// Every well-known type here, by its proto name (what `Any`'s type URLs say).
named!(
    Any,
    BoolValue,
    BytesValue,
    DoubleValue,
    Duration,
    Empty,
    FieldMask,
    FloatValue,
    Int32Value,
    Int64Value,
    ListValue,
    StringValue,
    Struct,
    Timestamp,
    UInt32Value,
    UInt64Value,
    Value
);

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_map(Some(0))?.end()
    }
}

impl<'de> Deserialize<'de> for Empty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        options::deserialize(deserializer).map(|NoFields| Empty {})
    }
}

impl Serialize for Any {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        // No type: the empty `Any`, as `{}` reads.
        if self.type_url.is_empty() && self.value.is_empty() {
            return serializer.serialize_map(Some(0))?.end();
        }
        let entry = registry::lookup(&self.type_url).ok_or_else(|| {
            S::Error::custom(format!(
                "an Any of {:?}, a message type not registered for JSON",
                self.type_url
            ))
        })?;
        let json = (entry.to_json)(&self.value).map_err(S::Error::custom)?;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("@type", &self.type_url)?;
        match json {
            serde_json::Value::Object(fields) if !entry.special => {
                for (name, value) in &fields {
                    map.serialize_entry(name, value)?;
                }
            }
            value => map.serialize_entry("value", &value)?,
        }
        map.end()
    }
}

impl ReadJson for Any {
    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        options: DecodeOptions,
    ) -> Result<Self, D::Error> {
        let mut fields = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        if fields.is_empty() {
            return Ok(Any::default());
        }
        let type_url = match fields.remove("@type") {
            Some(serde_json::Value::String(type_url)) => type_url,
            _ => return Err(de::Error::missing_field("@type")),
        };
        let entry = registry::lookup(&type_url).ok_or_else(|| {
            de::Error::custom(format!(
                "an Any of {type_url:?}, a message type not registered for JSON"
            ))
        })?;
        let json = if entry.special {
            let value = fields
                .remove("value")
                .ok_or_else(|| de::Error::missing_field("value"))?;
            if let Some(name) = fields.keys().next()
                && options.reject_unknown_fields
            {
                return Err(de::Error::unknown_field(name, &["@type", "value"]));
            }
            value
        } else {
            serde_json::Value::Object(fields)
        };
        let value = (entry.from_json)(json, options).map_err(de::Error::custom)?;
        Ok(Any { type_url, value })
    }
}

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        options::deserialize(deserializer)
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

#[cfg(test)]
mod tests {
    use prost::Name;

    #[test]
    fn each_type_has_its_proto_name() {
        assert_eq!(super::Int64Value::full_name(), "google.protobuf.Int64Value");
        assert_eq!(super::Timestamp::full_name(), "google.protobuf.Timestamp");
        assert_eq!(super::Struct::full_name(), "google.protobuf.Struct");
        assert_eq!(
            super::Any::type_url(),
            "type.googleapis.com/google.protobuf.Any"
        );
    }
}
