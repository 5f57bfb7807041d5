//! How a message's JSON is read ([`DecodeOptions`]: whether a field the message does not have
//! is skipped or refused), and how that choice reaches the `Deserialize` impls of generated
//! messages at any depth although serde's `Deserialize` takes no argument.
//!
//! The codec wraps its deserializer in [`WithOptions`], which carries the options and
//! otherwise forwards every call. A message's `Deserialize` impl ([`deserialize`]) asks for
//! them by calling `deserialize_newtype_struct` with a name of ours, [`ASK`]: `WithOptions`
//! answers by visiting a sequence of two elements, the options and then the value; any other
//! deserializer (`serde_json::from_str`, `from_value`, ...) visits a newtype struct as serde
//! has it, and the message is read with the default options. The message then reads its
//! fields with the options in hand, and reads a field holding another message through a
//! `WithOptions` of its own, so the choice passes down explicitly, level by level.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, SeqAccess, Visitor};

/// How JSON is read into a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Whether a field the message does not have (or an enum value name its enum does not
    /// have) is an error rather than skipped.
    pub reject_unknown_fields: bool,
}

impl DecodeOptions {
    /// The options as one byte, as [`WithOptions`] hands them over.
    fn to_bits(self) -> u8 {
        u8::from(self.reject_unknown_fields)
    }

    fn from_bits(bits: u8) -> Self {
        DecodeOptions {
            reject_unknown_fields: bits & 1 != 0,
        }
    }
}

/// The newtype-struct name by which a message asks its deserializer for the options.
pub(super) const ASK: &str = "$fastgrpc::codec::json::DecodeOptions";

/// A value read from JSON with [`DecodeOptions`]: generated messages, and the well-known types
/// whose reading depends on them.
pub trait ReadJson: Sized {
    /// Reads the value from `deserializer` with `options`.
    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        options: DecodeOptions,
    ) -> Result<Self, D::Error>;
}

/// What a `Deserialize` impl of a [`ReadJson`] type does: reads it with the options the
/// deserializer carries (a `WithOptions` of the codec), or the default ones.
pub fn deserialize<'de, T: ReadJson, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_newtype_struct(ASK, Ask(PhantomData))
}

/// Reads `T` from `deserializer` with `options`, through its `Deserialize` impl: what a
/// generated message does for a field holding another message (of any type: one generated
/// elsewhere, or a user's own, reads as it would with plain serde).
pub(super) fn read_with<'de, T: de::Deserialize<'de>, D: Deserializer<'de>>(
    deserializer: D,
    options: DecodeOptions,
) -> Result<T, D::Error> {
    T::deserialize(WithOptions {
        inner: deserializer,
        options,
    })
}

/// The visitor of [`deserialize`]'s question.
struct Ask<T>(PhantomData<T>);

impl<'de, T: ReadJson> Visitor<'de> for Ask<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message")
    }

    // Any deserializer but ours: the default options.
    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::read(deserializer, DecodeOptions::default())
    }

    // `WithOptions`: the options, then the value.
    fn visit_seq<A: SeqAccess<'de>>(self, mut answer: A) -> Result<T, A::Error> {
        let bits: u8 = answer
            .next_element()?
            .ok_or_else(|| de::Error::custom("no decode options"))?;
        answer
            .next_element_seed(ReadSeed(DecodeOptions::from_bits(bits), PhantomData))?
            .ok_or_else(|| de::Error::custom("no value after the decode options"))
    }
}

/// Reads a `T` with the options it holds.
struct ReadSeed<T>(DecodeOptions, PhantomData<T>);

impl<'de, T: ReadJson> DeserializeSeed<'de> for ReadSeed<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::read(deserializer, self.0)
    }
}

/// A deserializer that carries [`DecodeOptions`] to the messages it reads, and is `inner`
/// for everything else.
pub(crate) struct WithOptions<D> {
    inner: D,
    options: DecodeOptions,
}

impl<D> WithOptions<D> {
    /// `inner`, read with `options`.
    pub(crate) fn new(inner: D, options: DecodeOptions) -> Self {
        WithOptions { inner, options }
    }
}

/// [`WithOptions`]'s answer: the options, then the value from the inner deserializer.
struct Answer<D> {
    options: Option<u8>,
    inner: Option<D>,
}

impl<'de, D: Deserializer<'de>> SeqAccess<'de> for Answer<D> {
    type Error = D::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, D::Error> {
        if let Some(bits) = self.options.take() {
            return seed
                .deserialize(IntoDeserializer::<D::Error>::into_deserializer(bits))
                .map(Some);
        }
        match self.inner.take() {
            Some(inner) => seed.deserialize(inner).map(Some),
            None => Ok(None),
        }
    }
}

/// Forwards `deserialize_*` methods to the inner deserializer.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method($($arg,)* visitor)
        })*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for WithOptions<D> {
    type Error = D::Error;

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        if name == ASK {
            visitor.visit_seq(Answer {
                options: Some(self.options.to_bits()),
                inner: Some(self.inner),
            })
        } else {
            self.inner.deserialize_newtype_struct(name, visitor)
        }
    }

    forward! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reports the options it was read with, after reading any value.
    #[derive(Debug, PartialEq)]
    struct Reported(DecodeOptions);

    impl ReadJson for Reported {
        fn read<'de, D: Deserializer<'de>>(
            deserializer: D,
            options: DecodeOptions,
        ) -> Result<Self, D::Error> {
            <de::IgnoredAny as de::Deserialize>::deserialize(deserializer)?;
            Ok(Reported(options))
        }
    }

    impl<'de> de::Deserialize<'de> for Reported {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserialize(deserializer)
        }
    }

    #[test]
    fn options_reach_the_value_through_with_options_only() {
        let strict = DecodeOptions {
            reject_unknown_fields: true,
        };
        for options in [DecodeOptions::default(), strict] {
            let mut json = serde_json::Deserializer::from_str(r#"{"a": [1, 2]}"#);
            let read: Reported = read_with(&mut json, options).unwrap();
            assert_eq!(read, Reported(options));
        }
        let plain: Reported = serde_json::from_str("{}").unwrap();
        assert_eq!(plain, Reported(DecodeOptions::default()));
        let from_value: Reported = serde_json::from_value(serde_json::json!([1])).unwrap();
        assert_eq!(from_value, Reported(DecodeOptions::default()));
    }

    #[test]
    fn other_values_read_through_with_options_unchanged() {
        let mut json = serde_json::Deserializer::from_str(r#"{"k": ["x", 1.5]}"#);
        let value: serde_json::Value =
            de::Deserialize::deserialize(WithOptions::new(&mut json, DecodeOptions::default()))
                .unwrap();
        assert_eq!(value, serde_json::json!({ "k": ["x", 1.5] }));
    }
}
