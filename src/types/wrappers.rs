//! The wrapper types (`google.protobuf.Int64Value`, ...), whose JSON form is the wrapped
//! value's own: a 64-bit integer as a string, bytes as base64, a non-finite float as a string.

use std::fmt;

use base64::Engine as _;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares a wrapper message: its prost form, its name, and a JSON form made by `$json`
/// (a type with `Serialize` and `Deserialize` for the wrapped value).
macro_rules! wrappers {
    ($($(#[$doc:meta])* $name:ident($ty:ty, [$($prost:tt)*], $json:ident);)*) => {$(
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
                $json::serialize(&self.value, serializer)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $json::deserialize(deserializer).map(|value| $name { value })
            }
        }
    )*};
}

wrappers! {
    /// A `double`, in a message so that it can be absent.
    DoubleValue(f64, [double], float);
    /// A `float`, in a message so that it can be absent.
    FloatValue(f32, [float], float);
    /// An `int64`, in a message so that it can be absent; a string in JSON.
    Int64Value(i64, [int64], integer);
    /// A `uint64`, in a message so that it can be absent; a string in JSON.
    UInt64Value(u64, [uint64], integer);
    /// An `int32`, in a message so that it can be absent.
    Int32Value(i32, [int32], integer);
    /// A `uint32`, in a message so that it can be absent.
    UInt32Value(u32, [uint32], integer);
    /// A `bool`, in a message so that it can be absent.
    BoolValue(bool, [bool], plain);
    /// A `string`, in a message so that it can be absent.
    StringValue(String, [string], plain);
    /// `bytes`, in a message so that they can be absent; base64 in JSON.
    BytesValue(Vec<u8>, [bytes = "vec"], bytes);
}

/// Values whose JSON form is serde's.
mod plain {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<T: Serialize, S: Serializer>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }

    pub(super) fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<T, D::Error> {
        T::deserialize(deserializer)
    }
}

/// Integers: 64-bit ones written as strings, any read from a number or a string.
mod integer {
    use super::*;

    /// An integer type the JSON form knows.
    pub(super) trait Integer:
        Sized + Copy + std::str::FromStr + TryFrom<i64> + TryFrom<u64>
    {
        /// Whether it is written as a string (64-bit integers are).
        const QUOTED: bool;
        fn serialize<S: Serializer>(self, serializer: S) -> Result<S::Ok, S::Error>;
    }

    macro_rules! integers {
        ($($ty:ty: $quoted:literal, $method:ident;)*) => {$(
            impl Integer for $ty {
                const QUOTED: bool = $quoted;
                fn serialize<S: Serializer>(self, serializer: S) -> Result<S::Ok, S::Error> {
                    if Self::QUOTED {
                        serializer.collect_str(&self)
                    } else {
                        serializer.$method(self)
                    }
                }
            }
        )*};
    }

    integers! {
        i64: true, serialize_i64;
        u64: true, serialize_u64;
        i32: false, serialize_i32;
        u32: false, serialize_u32;
    }

    pub(super) fn serialize<T: Integer + fmt::Display, S: Serializer>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }

    pub(super) fn deserialize<'de, T: Integer, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<T, D::Error> {
        struct Number<T>(std::marker::PhantomData<T>);
        impl<T: Integer> Visitor<'_> for Number<T> {
            type Value = T;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer, as a number or a string")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
                T::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
                T::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
                // `1e3` and `5.0` are integers too, in JSON's eyes.
                let whole = v.fract() == 0.0 && v.abs() < 9.3e18;
                whole
                    .then(|| T::try_from(v as i64).ok())
                    .flatten()
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Float(v), &self))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
                v.parse()
                    .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_any(Number(std::marker::PhantomData))
    }
}

/// Floats: non-finite ones as `"NaN"`, `"Infinity"`, `"-Infinity"`; read from a number or a
/// string.
mod float {
    use super::*;

    pub(super) trait Float: Sized + Copy + std::str::FromStr {
        fn into_f64(self) -> f64;
        fn from_f64(value: f64) -> Self;
    }

    impl Float for f64 {
        fn into_f64(self) -> f64 {
            self
        }
        fn from_f64(value: f64) -> Self {
            value
        }
    }

    impl Float for f32 {
        fn into_f64(self) -> f64 {
            self.into()
        }
        fn from_f64(value: f64) -> Self {
            value as f32
        }
    }

    pub(super) fn serialize<T: Float, S: Serializer>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let value = value.into_f64();
        match value {
            v if v.is_nan() => serializer.serialize_str("NaN"),
            f64::INFINITY => serializer.serialize_str("Infinity"),
            f64::NEG_INFINITY => serializer.serialize_str("-Infinity"),
            v => serializer.serialize_f64(v),
        }
    }

    pub(super) fn deserialize<'de, T: Float, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<T, D::Error> {
        struct Number<T>(std::marker::PhantomData<T>);
        impl<T: Float> Visitor<'_> for Number<T> {
            type Value = T;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, or \"NaN\", \"Infinity\" or \"-Infinity\"")
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
                Ok(T::from_f64(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
                Ok(T::from_f64(v as f64))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
                Ok(T::from_f64(v as f64))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
                match v {
                    "NaN" => Ok(T::from_f64(f64::NAN)),
                    "Infinity" => Ok(T::from_f64(f64::INFINITY)),
                    "-Infinity" => Ok(T::from_f64(f64::NEG_INFINITY)),
                    _ => v
                        .parse()
                        .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        deserializer.deserialize_any(Number(std::marker::PhantomData))
    }
}

/// Bytes: standard base64 out; standard or URL-safe, padded or not, in.
pub(super) mod bytes {
    use super::*;
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
    use base64::engine::{DecodePaddingMode, general_purpose::STANDARD};

    const EITHER_PADDING: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const STANDARD_ANY: GeneralPurpose =
        GeneralPurpose::new(&base64::alphabet::STANDARD, EITHER_PADDING);
    const URL_SAFE_ANY: GeneralPurpose =
        GeneralPurpose::new(&base64::alphabet::URL_SAFE, EITHER_PADDING);

    /// Decodes base64 in either alphabet, padded or not.
    pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
        if text.contains(['-', '_']) {
            URL_SAFE_ANY.decode(text).ok()
        } else {
            STANDARD_ANY.decode(text).ok()
        }
    }

    pub(super) fn serialize<S: Serializer>(value: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(value))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        struct Base64;
        impl Visitor<'_> for Base64 {
            type Value = Vec<u8>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("base64")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
                decode(v).ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_str(Base64)
    }
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
