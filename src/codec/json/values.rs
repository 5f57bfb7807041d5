//! The ProtoJSON forms of single values, one [`Kind`] per kind of field: how a value is
//! written, how it is read (with what a `null` or an unknown enum name means), and which value
//! a field without presence leaves out. Generated messages name a kind for each field; the
//! well-known wrappers (`Int64Value`, ...) use the same ones for their bare values.
//!
//! The rules, from protobuf.dev's "ProtoJSON Format" and protobuf's conformance suite:
//! - integers are read from numbers or strings, in decimal or with a fraction or exponent
//!   as long as the value is a whole number in range (`1e5`, `"100000.000"`); 64-bit ones are
//!   written as strings;
//! - floats are read from numbers or strings (`"NaN"`, `"Infinity"`, `"-Infinity"` too); a
//!   `float` out of its range is refused, not taken as infinity;
//! - bytes are base64 in either alphabet, padded or not, written in the standard one;
//! - enums are written by name (by number when the number has no name) and read by any of
//!   their names (aliases too) or by number; an unknown name is skipped or refused as the
//!   decode options say, and so is an unknown number of a closed (proto2) enum;
//! - `null` is the field's default, but for `google.protobuf.Value` (JSON's null) and
//!   `google.protobuf.NullValue`.

use std::fmt;
use std::marker::PhantomData;

use base64::Engine as _;
use serde::de::{self, DeserializeSeed, Deserializer, Unexpected, Visitor};
use serde::ser::{Serialize, Serializer};

use super::options::{DecodeOptions, read_with};

/// What reading one value found.
#[derive(Debug, PartialEq)]
pub enum Read<T> {
    /// A value.
    Value(T),
    /// `null`: the field keeps its default.
    Null,
    /// An enum value the enum does not have, skipped as the decode options allow.
    Skip,
}

/// How a kind of field value is written and read.
pub trait Kind {
    /// The Rust type prost stores it as.
    type Value;

    /// Writes `value`.
    fn write<S: Serializer>(value: &Self::Value, serializer: S) -> Result<S::Ok, S::Error>;

    /// Reads a value.
    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        options: DecodeOptions,
    ) -> Result<Read<Self::Value>, D::Error>;

    /// Whether a field without presence holding `value` is left out.
    fn is_default(value: &Self::Value) -> bool;
}

/// A value of kind `K`, to serialize.
pub(super) struct Item<'a, K: Kind>(pub(super) &'a K::Value);

impl<K: Kind> Serialize for Item<'_, K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        K::write(self.0, serializer)
    }
}

/// Reads a value of kind `K`.
pub(super) struct Seed<K>(pub(super) DecodeOptions, pub(super) PhantomData<K>);

impl<K> Seed<K> {
    pub(super) fn new(options: DecodeOptions) -> Self {
        Seed(options, PhantomData)
    }
}

impl<'de, K: Kind> DeserializeSeed<'de> for Seed<K> {
    type Value = Read<K::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        K::read(deserializer, self.0)
    }
}

/// A map key's kind: written and read as a JSON object's member name.
pub trait MapKey {
    /// The Rust type prost stores it as.
    type Value;

    /// Writes `key` as a string.
    fn write_key<S: Serializer>(key: &Self::Value, serializer: S) -> Result<S::Ok, S::Error>;

    /// The key a member name stands for, if it is one.
    fn parse_key(name: &str) -> Option<Self::Value>;
}

/// A map key of kind `K`, to serialize.
pub(super) struct Key<'a, K: MapKey>(pub(super) &'a K::Value);

impl<K: MapKey> Serialize for Key<'_, K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        K::write_key(self.0, serializer)
    }
}

/// Reads a map key of kind `K` from a member name.
pub(super) struct KeySeed<K>(pub(super) PhantomData<K>);

impl<'de, K: MapKey> DeserializeSeed<'de> for KeySeed<K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<K: MapKey> Visitor<'_> for KeySeed<K> {
    type Value = K::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<K::Value, E> {
        K::parse_key(name).ok_or_else(|| E::invalid_value(Unexpected::Str(name), &self))
    }
}

/// Whether `text` is a number as JSON writes one: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
/// Returns `Some(true)` if it is an integer (neither fraction nor exponent).
fn json_number(text: &str) -> Option<bool> {
    let digits = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut rest = text.as_bytes();
    if let [b'-', after @ ..] = rest {
        rest = after;
    }
    let whole = digits(rest);
    if whole == 0 || (whole > 1 && rest[0] == b'0') {
        return None;
    }
    rest = &rest[whole..];
    let mut integer = true;
    if let [b'.', after @ ..] = rest {
        let fraction = digits(after);
        if fraction == 0 {
            return None;
        }
        rest = &after[fraction..];
        integer = false;
    }
    if let [b'e' | b'E', after @ ..] = rest {
        let after = match after {
            [b'+' | b'-', after @ ..] => after,
            after => after,
        };
        let exponent = digits(after);
        if exponent == 0 {
            return None;
        }
        rest = &after[exponent..];
        integer = false;
    }
    rest.is_empty().then_some(integer)
}

/// The whole number `value` is, if it is one (and within ±2^64).
fn whole(value: f64) -> Option<i128> {
    (value.is_finite() && value.fract() == 0.0 && value.abs() <= 1.9e19).then_some(value as i128)
}

/// `value`'s decimal digits, with a `-` if `negative`, in `buffer`.
fn decimal(mut value: u64, negative: bool, buffer: &mut [u8; 21]) -> &str {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    if negative {
        at -= 1;
        buffer[at] = b'-';
    }
    std::str::from_utf8(&buffer[at..]).expect("ASCII digits")
}

/// The integer types of the integer kinds.
trait Integer: Copy + Default + PartialEq + TryFrom<i128> {
    /// What the type is called in an error.
    const NAME: &'static str;

    /// Writes the value: a number, or a string for 64-bit integers.
    fn write<S: Serializer>(self, serializer: S) -> Result<S::Ok, S::Error>;

    /// Writes the value as a string.
    fn write_str<S: Serializer>(self, serializer: S) -> Result<S::Ok, S::Error>;
}

macro_rules! integers {
    ($($kind:ident($ty:ty, $name:literal, $write:ident);)*) => {$(
        #[doc = concat!("An `", $name, "` (and the `sint`, `fixed` and `sfixed` of its size).")]
        #[derive(Debug)]
        pub struct $kind;

        impl Integer for $ty {
            const NAME: &'static str = $name;

            fn write<S: Serializer>(self, serializer: S) -> Result<S::Ok, S::Error> {
                integers!(@write $write, self, serializer)
            }

            fn write_str<S: Serializer>(self, serializer: S) -> Result<S::Ok, S::Error> {
                #[allow(unused_comparisons)]
                let negative = self < 0;
                serializer.serialize_str(decimal(
                    (self as i128).unsigned_abs() as u64,
                    negative,
                    &mut [0; 21],
                ))
            }
        }

        impl Kind for $kind {
            type Value = $ty;

            fn write<S: Serializer>(value: &$ty, serializer: S) -> Result<S::Ok, S::Error> {
                Integer::write(*value, serializer)
            }

            fn read<'de, D: Deserializer<'de>>(
                deserializer: D,
                _: DecodeOptions,
            ) -> Result<Read<$ty>, D::Error> {
                deserializer.deserialize_any(IntegerVisitor(PhantomData))
            }

            fn is_default(value: &$ty) -> bool {
                *value == 0
            }
        }

        impl MapKey for $kind {
            type Value = $ty;

            fn write_key<S: Serializer>(key: &$ty, serializer: S) -> Result<S::Ok, S::Error> {
                key.write_str(serializer)
            }

            fn parse_key(name: &str) -> Option<$ty> {
                // Exactly a decimal integer: `-?[0-9]+`.
                let digits = name.strip_prefix('-').unwrap_or(name);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                name.parse().ok()
            }
        }
    )*};
    (@write number, $value:ident, $serializer:ident) => { $serializer.serialize_i64($value.into()) };
    (@write string, $value:ident, $serializer:ident) => { $value.write_str($serializer) };
}

integers! {
    I32(i32, "int32", number);
    U32(u32, "uint32", number);
    I64(i64, "int64", string);
    U64(u64, "uint64", string);
}

/// Reads an integer of type `T`.
struct IntegerVisitor<T>(PhantomData<T>);

impl<T: Integer> IntegerVisitor<T> {
    fn fit<E: de::Error>(&self, value: i128, unexpected: Unexpected<'_>) -> Result<Read<T>, E> {
        T::try_from(value)
            .map(Read::Value)
            .map_err(|_| E::invalid_value(unexpected, self))
    }
}

impl<T: Integer> Visitor<'_> for IntegerVisitor<T> {
    type Value = Read<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "an {} (a whole number in range, or a string of one)",
            T::NAME
        )
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Read<T>, E> {
        self.fit(value.into(), Unexpected::Signed(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Read<T>, E> {
        self.fit(value.into(), Unexpected::Unsigned(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Read<T>, E> {
        match whole(value) {
            Some(value) => self.fit(value, Unexpected::Float(value as f64)),
            None => Err(E::invalid_value(Unexpected::Float(value), &self)),
        }
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Read<T>, E> {
        let unexpected = Unexpected::Str(text);
        let value = match json_number(text) {
            Some(true) => text.parse::<i128>().ok(),
            Some(false) => text.parse::<f64>().ok().and_then(whole),
            None => None,
        };
        match value {
            Some(value) => self.fit(value, unexpected),
            None => Err(E::invalid_value(unexpected, &self)),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<Read<T>, E> {
        Ok(Read::Null)
    }
}

/// The float types of the float kinds.
trait Float: Copy + Default + PartialEq {
    const NAME: &'static str;

    fn write<S: Serializer>(self, serializer: S) -> Result<S::Ok, S::Error>;

    /// `value` as this type; `None` if it is beyond the type's range (it would become an
    /// infinity).
    fn from_f64(value: f64) -> Option<Self>;

    fn into_f64(self) -> f64;
}

impl Float for f64 {
    const NAME: &'static str = "double";

    fn write<S: Serializer>(self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self)
    }

    fn from_f64(value: f64) -> Option<Self> {
        Some(value)
    }

    fn into_f64(self) -> f64 {
        self
    }
}

impl Float for f32 {
    const NAME: &'static str = "float";

    fn write<S: Serializer>(self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f32(self)
    }

    fn from_f64(value: f64) -> Option<Self> {
        // Rounded to the nearest float; past the largest one by more than half a step it
        // becomes an infinity, which a finite number must not.
        let rounded = value as f32;
        (rounded.is_finite() || !value.is_finite()).then_some(rounded)
    }

    fn into_f64(self) -> f64 {
        self.into()
    }
}

macro_rules! floats {
    ($($kind:ident($ty:ty);)*) => {$(
        #[doc = concat!("A `", stringify!($ty), "`.")]
        #[derive(Debug)]
        pub struct $kind;

        impl Kind for $kind {
            type Value = $ty;

            fn write<S: Serializer>(value: &$ty, serializer: S) -> Result<S::Ok, S::Error> {
                write_float(*value, serializer)
            }

            fn read<'de, D: Deserializer<'de>>(
                deserializer: D,
                _: DecodeOptions,
            ) -> Result<Read<$ty>, D::Error> {
                deserializer.deserialize_any(FloatVisitor(PhantomData))
            }

            fn is_default(value: &$ty) -> bool {
                *value == 0.0
            }
        }
    )*};
}

floats! {
    F32(f32);
    F64(f64);
}

/// Writes a float: a number, or `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn write_float<T: Float, S: Serializer>(value: T, serializer: S) -> Result<S::Ok, S::Error> {
    let wide = value.into_f64();
    if wide.is_nan() {
        serializer.serialize_str("NaN")
    } else if wide.is_infinite() {
        serializer.serialize_str(if wide > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        value.write(serializer)
    }
}

/// Reads a float of type `T`.
struct FloatVisitor<T>(PhantomData<T>);

impl<T: Float> FloatVisitor<T> {
    fn fit<E: de::Error>(&self, value: f64, unexpected: Unexpected<'_>) -> Result<Read<T>, E> {
        T::from_f64(value)
            .map(Read::Value)
            .ok_or_else(|| E::invalid_value(unexpected, self))
    }
}

impl<T: Float> Visitor<'_> for FloatVisitor<T> {
    type Value = Read<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a {} (a number in range, or a string of one, or \"NaN\", \"Infinity\" or \"-Infinity\")",
            T::NAME
        )
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Read<T>, E> {
        self.fit(value, Unexpected::Float(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Read<T>, E> {
        self.fit(value as f64, Unexpected::Signed(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Read<T>, E> {
        self.fit(value as f64, Unexpected::Unsigned(value))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Read<T>, E> {
        let value = match text {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            // Rust's parser also takes `inf`, `nan`, `+1`, `.5`; JSON's grammar does not.
            _ => match json_number(text).and_then(|_| text.parse::<f64>().ok()) {
                Some(value) if value.is_finite() => value,
                _ => return Err(E::invalid_value(Unexpected::Str(text), &self)),
            },
        };
        self.fit(value, Unexpected::Str(text))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Read<T>, E> {
        Ok(Read::Null)
    }
}

/// A `bool`.
#[derive(Debug)]
pub struct Bool;

impl Kind for Bool {
    type Value = bool;

    fn write<S: Serializer>(value: &bool, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(*value)
    }

    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        _: DecodeOptions,
    ) -> Result<Read<bool>, D::Error> {
        struct BoolVisitor;
        impl Visitor<'_> for BoolVisitor {
            type Value = Read<bool>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true or false")
            }

            fn visit_bool<E: de::Error>(self, value: bool) -> Result<Read<bool>, E> {
                Ok(Read::Value(value))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Read<bool>, E> {
                Ok(Read::Null)
            }
        }
        deserializer.deserialize_any(BoolVisitor)
    }

    fn is_default(value: &bool) -> bool {
        !*value
    }
}

impl MapKey for Bool {
    type Value = bool;

    fn write_key<S: Serializer>(key: &bool, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(if *key { "true" } else { "false" })
    }

    fn parse_key(name: &str) -> Option<bool> {
        match name {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }
}

/// A `string`.
#[derive(Debug)]
pub struct Str;

impl Kind for Str {
    type Value = String;

    fn write<S: Serializer>(value: &String, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(value)
    }

    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        _: DecodeOptions,
    ) -> Result<Read<String>, D::Error> {
        struct StrVisitor;
        impl Visitor<'_> for StrVisitor {
            type Value = Read<String>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<Read<String>, E> {
                Ok(Read::Value(value.to_owned()))
            }

            fn visit_string<E: de::Error>(self, value: String) -> Result<Read<String>, E> {
                Ok(Read::Value(value))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Read<String>, E> {
                Ok(Read::Null)
            }
        }
        deserializer.deserialize_any(StrVisitor)
    }

    fn is_default(value: &String) -> bool {
        value.is_empty()
    }
}

impl MapKey for Str {
    type Value = String;

    fn write_key<S: Serializer>(key: &String, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(key)
    }

    fn parse_key(name: &str) -> Option<String> {
        Some(name.to_owned())
    }
}

/// How prost stores a `bytes` field: `Vec<u8>`, or `bytes::Bytes` where the build asked.
pub trait ByteStorage: Default {
    /// The bytes.
    fn as_slice(&self) -> &[u8];
    /// Decoded bytes, stored.
    fn from_vec(bytes: Vec<u8>) -> Self;
}

impl ByteStorage for Vec<u8> {
    fn as_slice(&self) -> &[u8] {
        self
    }

    fn from_vec(bytes: Vec<u8>) -> Self {
        bytes
    }
}

impl ByteStorage for bytes::Bytes {
    fn as_slice(&self) -> &[u8] {
        self
    }

    fn from_vec(bytes: Vec<u8>) -> Self {
        bytes.into()
    }
}

/// `bytes`, stored as `T`.
#[derive(Debug)]
pub struct Bytes<T>(PhantomData<T>);

impl<T: ByteStorage> Kind for Bytes<T> {
    type Value = T;

    fn write<S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
        write_base64(value.as_slice(), serializer)
    }

    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        _: DecodeOptions,
    ) -> Result<Read<T>, D::Error> {
        struct Base64<T>(PhantomData<T>);
        impl<T: ByteStorage> Visitor<'_> for Base64<T> {
            type Value = Read<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("base64")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Read<T>, E> {
                decode_base64(text)
                    .map(|bytes| Read::Value(T::from_vec(bytes)))
                    .ok_or_else(|| E::invalid_value(Unexpected::Str(text), &self))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Read<T>, E> {
                Ok(Read::Null)
            }
        }
        deserializer.deserialize_any(Base64(PhantomData))
    }

    fn is_default(value: &T) -> bool {
        value.as_slice().is_empty()
    }
}

mod base64_engines {
    use base64::alphabet;
    use base64::engine::DecodePaddingMode;
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};

    /// Padding or none, and whatever the bits after the last byte are (`-_` is one byte).
    const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    pub(super) const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
    pub(super) const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);
}

/// Decodes base64 in either alphabet, padded or not.
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    if text.contains(['-', '_']) {
        base64_engines::URL_SAFE.decode(text).ok()
    } else {
        base64_engines::STANDARD.decode(text).ok()
    }
}

/// Writes `bytes` as standard, padded base64, without an intermediate string.
pub(crate) fn write_base64<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&base64::display::Base64Display::new(
        bytes,
        &base64::engine::general_purpose::STANDARD,
    ))
}

/// A generated enum's names and numbers, for its JSON form.
pub trait JsonEnum {
    /// Whether any number is a value of the enum (a proto3 enum), or only the declared ones
    /// (a proto2 enum).
    const OPEN: bool;

    /// The name a number is written as: its first name.
    fn name(number: i32) -> Option<&'static str>;

    /// The number a name (any of them, aliases included) stands for.
    fn number(name: &str) -> Option<i32>;
}

/// An enum generated with `fastgrpc-build`, stored as `i32`.
#[derive(Debug)]
pub struct Enum<E>(PhantomData<E>);

impl<E: JsonEnum> Kind for Enum<E> {
    type Value = i32;

    fn write<S: Serializer>(value: &i32, serializer: S) -> Result<S::Ok, S::Error> {
        match E::name(*value) {
            Some(name) => serializer.serialize_str(name),
            None => serializer.serialize_i32(*value),
        }
    }

    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        options: DecodeOptions,
    ) -> Result<Read<i32>, D::Error> {
        deserializer.deserialize_any(EnumVisitor {
            number: E::number,
            known: |number| E::OPEN || E::name(number).is_some(),
            options,
        })
    }

    fn is_default(value: &i32) -> bool {
        *value == 0
    }
}

/// `google.protobuf.NullValue`: JSON's `null`, its one value `NULL_VALUE` (0).
#[derive(Debug)]
pub struct NullEnum;

impl Kind for NullEnum {
    type Value = i32;

    fn write<S: Serializer>(_: &i32, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_unit()
    }

    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        options: DecodeOptions,
    ) -> Result<Read<i32>, D::Error> {
        let read = deserializer.deserialize_any(EnumVisitor {
            number: |name| (name == "NULL_VALUE").then_some(0),
            known: |number| number == 0,
            options,
        })?;
        // Here `null` is the value itself.
        Ok(match read {
            Read::Null => Read::Value(0),
            read => read,
        })
    }

    fn is_default(value: &i32) -> bool {
        *value == 0
    }
}

/// Reads an enum value by name or number.
struct EnumVisitor {
    number: fn(&str) -> Option<i32>,
    known: fn(i32) -> bool,
    options: DecodeOptions,
}

impl EnumVisitor {
    fn unknown<E: de::Error>(&self, unexpected: Unexpected<'_>) -> Result<Read<i32>, E> {
        if self.options.reject_unknown_fields {
            Err(E::invalid_value(unexpected, self))
        } else {
            Ok(Read::Skip)
        }
    }

    fn by_number<E: de::Error>(
        &self,
        number: i64,
        unexpected: Unexpected<'_>,
    ) -> Result<Read<i32>, E> {
        match i32::try_from(number) {
            Ok(number) if (self.known)(number) => Ok(Read::Value(number)),
            Ok(_) => self.unknown(unexpected),
            Err(_) => Err(E::invalid_value(unexpected, self)),
        }
    }
}

impl Visitor<'_> for EnumVisitor {
    type Value = Read<i32>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an enum value's name or number")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Read<i32>, E> {
        match (self.number)(name) {
            Some(number) => Ok(Read::Value(number)),
            None => self.unknown(Unexpected::Str(name)),
        }
    }

    fn visit_i64<E: de::Error>(self, number: i64) -> Result<Read<i32>, E> {
        self.by_number(number, Unexpected::Signed(number))
    }

    fn visit_u64<E: de::Error>(self, number: u64) -> Result<Read<i32>, E> {
        let unexpected = Unexpected::Unsigned(number);
        match i64::try_from(number) {
            Ok(signed) => self.by_number(signed, unexpected),
            Err(_) => Err(E::invalid_value(unexpected, &self)),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<Read<i32>, E> {
        Ok(Read::Null)
    }
}

/// What a generated enum's `Deserialize` impl does: reads it by name or number, refusing
/// names and numbers it does not have.
pub fn enum_value<'de, E, D>(deserializer: D) -> Result<E, D::Error>
where
    E: JsonEnum + TryFrom<i32>,
    D: Deserializer<'de>,
{
    let strict = DecodeOptions {
        reject_unknown_fields: true,
    };
    match Enum::<E>::read(deserializer, strict)? {
        Read::Value(number) => E::try_from(number)
            .map_err(|_| de::Error::custom(format_args!("{number} is not a value of the enum"))),
        Read::Null | Read::Skip => Err(de::Error::custom("an enum value, not null")),
    }
}

/// An enum of a type from elsewhere (`extern_path`), stored as `i32`, through its own serde
/// impls.
#[derive(Debug)]
pub struct SerdeEnum<E>(PhantomData<E>);

impl<E> Kind for SerdeEnum<E>
where
    E: Serialize + for<'de> de::Deserialize<'de> + TryFrom<i32> + Into<i32>,
{
    type Value = i32;

    fn write<S: Serializer>(value: &i32, serializer: S) -> Result<S::Ok, S::Error> {
        match E::try_from(*value) {
            Ok(known) => known.serialize(serializer),
            Err(_) => serializer.serialize_i32(*value),
        }
    }

    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        _: DecodeOptions,
    ) -> Result<Read<i32>, D::Error> {
        Ok(
            match <Option<E> as de::Deserialize>::deserialize(deserializer)? {
                Some(value) => Read::Value(value.into()),
                None => Read::Null,
            },
        )
    }

    fn is_default(value: &i32) -> bool {
        *value == 0
    }
}

/// A message (or a well-known type), stored as `T` (which may be a `Box`), through its serde
/// impls; `null` leaves the field unset.
#[derive(Debug)]
pub struct Message<T>(PhantomData<T>);

impl<T: Serialize + for<'de> de::Deserialize<'de>> Kind for Message<T> {
    type Value = T;

    fn write<S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }

    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        options: DecodeOptions,
    ) -> Result<Read<T>, D::Error> {
        struct Present<T>(DecodeOptions, PhantomData<T>);
        impl<'de, T: de::Deserialize<'de>> Visitor<'de> for Present<T> {
            type Value = Read<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message")
            }

            fn visit_none<E: de::Error>(self) -> Result<Read<T>, E> {
                Ok(Read::Null)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Read<T>, E> {
                Ok(Read::Null)
            }

            fn visit_some<D: Deserializer<'de>>(
                self,
                deserializer: D,
            ) -> Result<Read<T>, D::Error> {
                read_with(deserializer, self.0).map(Read::Value)
            }
        }
        deserializer.deserialize_option(Present(options, PhantomData))
    }

    fn is_default(_: &T) -> bool {
        false
    }
}

/// `google.protobuf.Value`, which reads `null` as its own null value, and is otherwise a
/// [`Message`].
#[derive(Debug)]
pub struct NullableMessage<T>(PhantomData<T>);

impl<T: Serialize + for<'de> de::Deserialize<'de>> Kind for NullableMessage<T> {
    type Value = T;

    fn write<S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
        Message::<T>::write(value, serializer)
    }

    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        options: DecodeOptions,
    ) -> Result<Read<T>, D::Error> {
        read_with(deserializer, options).map(Read::Value)
    }

    fn is_default(value: &T) -> bool {
        Message::<T>::is_default(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<K: Kind>(json: &str) -> Result<Read<K::Value>, serde_json::Error> {
        read_options::<K>(json, DecodeOptions::default())
    }

    fn read_options<K: Kind>(
        json: &str,
        options: DecodeOptions,
    ) -> Result<Read<K::Value>, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(json);
        K::read(&mut deserializer, options)
    }

    fn write<K: Kind>(value: &K::Value) -> String {
        let mut out = Vec::new();
        K::write(value, &mut serde_json::Serializer::new(&mut out)).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn integers_are_read_when_exact_in_any_notation() {
        for json in [
            "100000",
            "1e5",
            "100000.000",
            "\"1e5\"",
            "\"100000\"",
            "1.0E5",
            "\"100000.0\"",
        ] {
            assert_eq!(read::<I32>(json).unwrap(), Read::Value(100_000), "{json}");
        }
        assert_eq!(read::<I32>("2.147483647e9").unwrap(), Read::Value(i32::MAX));
        assert_eq!(
            read::<I32>("-2.147483648e9").unwrap(),
            Read::Value(i32::MIN)
        );
        assert_eq!(read::<U32>("4.294967295e9").unwrap(), Read::Value(u32::MAX));
        assert_eq!(
            read::<I64>("\"-9223372036854775808\"").unwrap(),
            Read::Value(i64::MIN)
        );
        assert_eq!(
            read::<U64>("18446744073709551615").unwrap(),
            Read::Value(u64::MAX)
        );
        assert_eq!(read::<I64>("null").unwrap(), Read::Null);
        for bad in [
            "0.5",
            "1e-1",
            "\"0.5\"",
            "2147483648",
            "\"2147483648\"",
            "\" 1\"",
            "\"+1\"",
            "\"01\"",
            "\"1 \"",
            "\"\"",
            "\"0x10\"",
            "true",
            "[]",
            "\"NaN\"",
        ] {
            assert!(read::<I32>(bad).is_err(), "{bad}");
        }
        assert!(read::<U32>("-1").is_err());
        assert!(read::<U64>("18446744073709551616").is_err());
        assert!(read::<I64>("9223372036854775808").is_err());
    }

    #[test]
    fn sixty_four_bit_integers_are_written_as_strings() {
        assert_eq!(write::<I64>(&i64::MIN), "\"-9223372036854775808\"");
        assert_eq!(write::<U64>(&u64::MAX), "\"18446744073709551615\"");
        assert_eq!(write::<I64>(&0), "\"0\"");
        assert_eq!(write::<I32>(&-5), "-5");
        assert_eq!(write::<U32>(&u32::MAX), "4294967295");
    }

    #[test]
    fn floats_out_of_range_are_refused_and_the_rest_read_exactly() {
        assert!(read::<F32>("3.502823e+38").is_err());
        assert!(read::<F32>("-3.502823e+38").is_err());
        assert!(read::<F32>("\"3.502823e+38\"").is_err());
        assert_eq!(
            read::<F32>("3.402823e+38").unwrap(),
            Read::Value(3.402823e38)
        );
        assert_eq!(
            read::<F64>("2.22507e-308").unwrap(),
            Read::Value(2.22507e-308)
        );
        assert_eq!(
            read::<F64>("-2.22507e-308").unwrap(),
            Read::Value(-2.22507e-308)
        );
        assert_eq!(write::<F64>(&2.22507e-308), "2.22507e-308");
        assert_eq!(
            read::<F64>("\"Infinity\"").unwrap(),
            Read::Value(f64::INFINITY)
        );
        assert_eq!(read::<F64>("\"-1.5e1\"").unwrap(), Read::Value(-15.0));
        for bad in [
            "\"inf\"",
            "\"nan\"",
            "\"+1\"",
            "\".5\"",
            "\"1e400\"",
            "\"\"",
            "true",
        ] {
            assert!(read::<F64>(bad).is_err(), "{bad}");
        }
        assert_eq!(write::<F32>(&f32::NEG_INFINITY), "\"-Infinity\"");
        assert_eq!(write::<F64>(&f64::NAN), "\"NaN\"");
    }

    #[test]
    fn base64_in_either_alphabet_with_any_trailing_bits() {
        assert_eq!(
            read::<Bytes<Vec<u8>>>("\"-_\"").unwrap(),
            Read::Value(vec![0xfb])
        );
        for text in ["\"+/8=\"", "\"+/8\"", "\"-_8=\"", "\"-_8\""] {
            assert_eq!(
                read::<Bytes<Vec<u8>>>(text).unwrap(),
                Read::Value(vec![0xfb, 0xff]),
                "{text}"
            );
        }
        assert!(read::<Bytes<Vec<u8>>>("\"!\"").is_err());
        assert_eq!(write::<Bytes<Vec<u8>>>(&vec![0xfb, 0xff]), "\"+/8=\"");
    }

    #[test]
    fn bool_map_keys_read_escaped() {
        let mut deserializer = serde_json::Deserializer::from_str(r#""tr\u0075e""#);
        assert!(
            KeySeed::<Bool>(PhantomData)
                .deserialize(&mut deserializer)
                .unwrap()
        );
        assert_eq!(<I64 as MapKey>::parse_key("-12"), Some(-12));
        for bad in ["", "-", "1.0", "+1", " 1", "1e3"] {
            assert_eq!(<I64 as MapKey>::parse_key(bad), None, "{bad}");
        }
        assert_eq!(<Bool as MapKey>::parse_key("True"), None);
    }

    enum Aliased {}

    impl JsonEnum for Aliased {
        const OPEN: bool = true;

        fn name(number: i32) -> Option<&'static str> {
            match number {
                0 => Some("ZERO"),
                1 => Some("ONE"),
                _ => None,
            }
        }

        fn number(name: &str) -> Option<i32> {
            match name {
                "ZERO" => Some(0),
                "ONE" | "UNO" => Some(1),
                _ => None,
            }
        }
    }

    enum Closed {}

    impl JsonEnum for Closed {
        const OPEN: bool = false;

        fn name(number: i32) -> Option<&'static str> {
            Aliased::name(number)
        }

        fn number(name: &str) -> Option<i32> {
            Aliased::number(name)
        }
    }

    #[test]
    fn enums_by_any_name_or_number_and_unknown_ones_as_the_options_say() {
        assert_eq!(read::<Enum<Aliased>>("\"UNO\"").unwrap(), Read::Value(1));
        assert_eq!(read::<Enum<Aliased>>("\"ONE\"").unwrap(), Read::Value(1));
        assert_eq!(write::<Enum<Aliased>>(&1), "\"ONE\"");
        // Open: any number is a value, written as a number when it has no name.
        assert_eq!(read::<Enum<Aliased>>("123").unwrap(), Read::Value(123));
        assert_eq!(write::<Enum<Aliased>>(&123), "123");
        // Closed: an unknown number is as an unknown name.
        assert_eq!(read::<Enum<Closed>>("123").unwrap(), Read::Skip);
        assert_eq!(read::<Enum<Aliased>>("\"TWO\"").unwrap(), Read::Skip);
        let strict = DecodeOptions {
            reject_unknown_fields: true,
        };
        assert!(read_options::<Enum<Aliased>>("\"TWO\"", strict).is_err());
        assert!(read_options::<Enum<Closed>>("123", strict).is_err());
        assert!(read::<Enum<Aliased>>("4294967296").is_err(), "not an int32");
        assert_eq!(read::<NullEnum>("null").unwrap(), Read::Value(0));
        assert_eq!(write::<NullEnum>(&0), "null");
    }
}
