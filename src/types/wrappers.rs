//! The wrapper types (`google.protobuf.Int64Value`, ...), whose JSON form is the wrapped
//! value's own (`codec::json::values`): a 64-bit integer as a string, bytes as base64, a
//! non-finite float as a string.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::codec::json::options::DecodeOptions;
use crate::codec::json::values::{self, Kind, Read};

/// Declares a wrapper message: its prost form, its name, and a JSON form that is the
/// wrapped value's, of kind `$kind`.
macro_rules! wrappers {
    ($($(#[$doc:meta])* $name:ident($ty:ty, [$($prost:tt)*], $kind:ty);)*) => {$(
        $(#[$doc])*
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct $name {
            /// The wrapped value.
            #[prost($($prost)*, tag = "1")]
            pub value: $ty,
        }

        impl From<$ty> for $name {
            fn from(value: $ty) -> Self {
                $name { value }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                <$kind>::write(&self.value, serializer)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                match <$kind>::read(deserializer, DecodeOptions::default())? {
                    Read::Value(value) => Ok($name { value }),
                    // A field of this type reads `null` as unset before it gets here.
                    Read::Null | Read::Skip => Err(de::Error::custom(concat!(
                        "a google.protobuf.",
                        stringify!($name),
                        " is a value, not null"
                    ))),
                }
            }
        }
    )*};
}

wrappers! {
    /// A `double`, in a message so that it can be absent.
    DoubleValue(f64, [double], values::F64);
    /// A `float`, in a message so that it can be absent.
    FloatValue(f32, [float], values::F32);
    /// An `int64`, in a message so that it can be absent; a string in JSON.
    Int64Value(i64, [int64], values::I64);
    /// A `uint64`, in a message so that it can be absent; a string in JSON.
    UInt64Value(u64, [uint64], values::U64);
    /// An `int32`, in a message so that it can be absent.
    Int32Value(i32, [int32], values::I32);
    /// A `uint32`, in a message so that it can be absent.
    UInt32Value(u32, [uint32], values::U32);
    /// A `bool`, in a message so that it can be absent.
    BoolValue(bool, [bool], values::Bool);
    /// A `string`, in a message so that it can be absent.
    StringValue(String, [string], values::Str);
    /// `bytes`, in a message so that they can be absent; base64 in JSON.
    BytesValue(Vec<u8>, [bytes = "vec"], values::Bytes<Vec<u8>>);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write<T: Serialize>(value: T) -> serde_json::Value {
        serde_json::to_value(value).unwrap()
    }

    #[test]
    fn each_wrapper_is_its_value() {
        assert_eq!(write(Int64Value::from(-5)), json!("-5"));
        assert_eq!(
            write(UInt64Value::from(u64::MAX)),
            json!("18446744073709551615")
        );
        assert_eq!(write(Int32Value::from(-5)), json!(-5));
        assert_eq!(write(UInt32Value::from(5)), json!(5));
        assert_eq!(write(BoolValue::from(false)), json!(false));
        assert_eq!(write(StringValue::from("s".to_owned())), json!("s"));
        assert_eq!(write(BytesValue::from(vec![0xfb, 0xff])), json!("+/8="));
        assert_eq!(write(DoubleValue::from(1.5)), json!(1.5));
        assert_eq!(write(DoubleValue::from(f64::NAN)), json!("NaN"));
        assert_eq!(
            write(FloatValue::from(f32::NEG_INFINITY)),
            json!("-Infinity")
        );

        let read = |text: &str| {
            serde_json::from_str::<Int64Value>(text)
                .map(|v| v.value)
                .ok()
        };
        assert_eq!(read("\"-5\""), Some(-5));
        assert_eq!(read("-5"), Some(-5));
        assert_eq!(read("1e3"), Some(1000));
        assert_eq!(read("\"1e3\""), Some(1000));
        assert_eq!(read("null"), None);
        assert_eq!(read("1.5"), None);
        assert_eq!(read("\"x\""), None);
        let read = |text: &str| {
            serde_json::from_str::<Int32Value>(text)
                .map(|v| v.value)
                .ok()
        };
        assert_eq!(read("2147483648"), None, "out of range");
        let read = |text: &str| {
            serde_json::from_str::<BytesValue>(text)
                .map(|v| v.value)
                .ok()
        };
        for text in ["\"+/8=\"", "\"+/8\"", "\"-_8=\"", "\"-_8\""] {
            assert_eq!(read(text), Some(vec![0xfb, 0xff]), "{text}");
        }
        assert_eq!(read("\"!\""), None);
        let read = |text: &str| {
            serde_json::from_str::<DoubleValue>(text)
                .map(|v| v.value)
                .ok()
        };
        assert_eq!(read("\"Infinity\""), Some(f64::INFINITY));
        assert_eq!(read("\"2.5\""), Some(2.5));
        assert_eq!(read("3"), Some(3.0));
    }
}
