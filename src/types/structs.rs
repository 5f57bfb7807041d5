//! `google.protobuf.Struct`, `Value`, `ListValue` and `NullValue`: any JSON, as a message.
//! Their JSON form is that JSON itself.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A JSON object.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Struct {
    /// The object's members.
    #[prost(btree_map = "string, message", tag = "1")]
    pub fields: BTreeMap<String, Value>,
}

/// Any JSON value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    /// Which value it is; `None` reads as `null`.
    #[prost(oneof = "value::Kind", tags = "1, 2, 3, 4, 5, 6")]
    pub kind: Option<value::Kind>,
}

/// The kinds of [`Value`].
pub mod value {
    /// Which JSON value a [`Value`](super::Value) is.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        /// `null`.
        #[prost(enumeration = "super::NullValue", tag = "1")]
        NullValue(i32),
        /// A number.
        #[prost(double, tag = "2")]
        NumberValue(f64),
        /// A string.
        #[prost(string, tag = "3")]
        StringValue(String),
        /// `true` or `false`.
        #[prost(bool, tag = "4")]
        BoolValue(bool),
        /// An object.
        #[prost(message, tag = "5")]
        StructValue(super::Struct),
        /// An array.
        #[prost(message, tag = "6")]
        ListValue(super::ListValue),
    }
}

/// A JSON array.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListValue {
    /// The array's elements.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<Value>,
}

/// JSON's `null`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum NullValue {
    /// The one value.
    NullValue = 0,
}

impl NullValue {
    /// The value's name in the proto, `NULL_VALUE`.
    pub fn as_str_name(&self) -> &'static str {
        "NULL_VALUE"
    }

    /// The value of a name, if it is `NULL_VALUE`.
    pub fn from_str_name(name: &str) -> Option<Self> {
        (name == "NULL_VALUE").then_some(NullValue::NullValue)
    }
}

impl Serialize for NullValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_unit()
    }
}

impl<'de> Deserialize<'de> for NullValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Null;
        impl Visitor<'_> for Null {
            type Value = NullValue;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("null")
            }

            fn visit_unit<E: de::Error>(self) -> Result<NullValue, E> {
                Ok(NullValue::NullValue)
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<NullValue, E> {
                NullValue::from_str_name(v)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_any(Null)
    }
}

impl Serialize for Struct {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (name, value) in &self.fields {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl Serialize for ListValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.values.len()))?;
        for value in &self.values {
            seq.serialize_element(value)?;
        }
        seq.end()
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use value::Kind;
        match &self.kind {
            None | Some(Kind::NullValue(_)) => serializer.serialize_unit(),
            Some(Kind::NumberValue(number)) if !number.is_finite() => Err(
                serde::ser::Error::custom("a google.protobuf.Value number must be finite"),
            ),
            Some(Kind::NumberValue(number)) => serializer.serialize_f64(*number),
            Some(Kind::StringValue(string)) => serializer.serialize_str(string),
            Some(Kind::BoolValue(value)) => serializer.serialize_bool(*value),
            Some(Kind::StructValue(object)) => object.serialize(serializer),
            Some(Kind::ListValue(list)) => list.serialize(serializer),
        }
    }
}

/// Reads any JSON value into a [`Value`].
struct AnyValue;

impl<'de> Visitor<'de> for AnyValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::from(value::Kind::NullValue(0)))
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::from(value::Kind::BoolValue(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.visit_f64(v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.visit_f64(v as f64)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(value::Kind::NumberValue(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(value::Kind::StringValue(v.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut values = Vec::new();
        while let Some(value) = seq.next_element()? {
            values.push(value);
        }
        Ok(Value::from(value::Kind::ListValue(ListValue { values })))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = BTreeMap::new();
        while let Some((name, value)) = map.next_entry()? {
            fields.insert(name, value);
        }
        Ok(Value::from(value::Kind::StructValue(Struct { fields })))
    }
}

impl From<value::Kind> for Value {
    fn from(kind: value::Kind) -> Self {
        Value { kind: Some(kind) }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyValue)
    }
}

impl<'de> Deserialize<'de> for Struct {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)?.kind {
            Some(value::Kind::StructValue(object)) => Ok(object),
            _ => Err(de::Error::custom(
                "a google.protobuf.Struct must be a JSON object",
            )),
        }
    }
}

impl<'de> Deserialize<'de> for ListValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)?.kind {
            Some(value::Kind::ListValue(list)) => Ok(list),
            _ => Err(de::Error::custom(
                "a google.protobuf.ListValue must be a JSON array",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_json_round_trips() {
        let text = r#"{"a":[1.5,"two",null,true,{"x":{}}],"b":false,"c":-3.0}"#;
        let object: Struct = serde_json::from_str(text).unwrap();
        let written = serde_json::to_value(&object).unwrap();
        assert_eq!(
            written,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
        let value: Value = serde_json::from_str("null").unwrap();
        assert_eq!(value.kind, Some(value::Kind::NullValue(0)));
        assert!(serde_json::from_str::<Struct>("[1]").is_err());
        assert!(serde_json::from_str::<ListValue>("{}").is_err());
        let nan = Value::from(value::Kind::NumberValue(f64::NAN));
        assert!(
            serde_json::to_value(&nan).is_err(),
            "JSON has no NaN number"
        );
    }
}
