//! Messages as JSON objects: what the `Serialize` and `Deserialize` impls `fastgrpc-build`
//! generates for every message call. The generated code says, per message, which names
//! stand for which field ([`JsonMessage`]) and, per field, its kind ([`Kind`]) and shape (a value
//! with or without presence, a list, a map, a member of a oneof); the rules live here, once.
//!
//! Reading: each member name is looked up (the field's JSON name or its proto name); a field
//! named twice, by either name, is refused; a name the message does not have is skipped, or
//! refused if the [`DecodeOptions`] say so; `null` leaves a field at its default
//! (`google.protobuf.Value` aside), but a `null` in a list or as a map value is refused; a
//! oneof takes at most one member that is not `null`. Writing: a field without presence is
//! left out when it holds its default, a field with presence when it is unset, a list or a
//! map when it is empty.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::options::{DecodeOptions, ReadJson};
use super::values::{Item, Key, KeySeed, Kind, MapKey, Read, Seed};

/// A generated message's fields, by JSON member name.
pub trait JsonMessage: Default {
    /// The message's full proto name, for errors.
    const NAME: &'static str;

    /// Each field's JSON name, by the index [`JsonMessage::field`] gives it.
    const FIELDS: &'static [&'static str];

    /// The index of the field a member name stands for.
    fn field(name: &str) -> Option<usize>;

    /// Reads the value of the field at `index` into `self`.
    fn read_field<'de, A: MapAccess<'de>>(
        &mut self,
        index: usize,
        fields: &mut Fields<'_, A>,
    ) -> Result<(), A::Error>;
}

impl<M: JsonMessage> ReadJson for M {
    fn read<'de, D: Deserializer<'de>>(
        deserializer: D,
        options: DecodeOptions,
    ) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor::<M>(options, PhantomData))
    }
}

struct MessageVisitor<M>(DecodeOptions, PhantomData<M>);

impl<'de, M: JsonMessage> Visitor<'de> for MessageVisitor<M> {
    type Value = M;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object ({})", M::NAME)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<M, A::Error> {
        let options = self.0;
        let mut message = M::default();
        let mut seen = Seen::default();
        while let Some(field) = map.next_key_seed(FieldName::<M>(options, PhantomData))? {
            let Some(index) = field else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if !seen.insert(index) {
                return Err(de::Error::custom(format_args!(
                    "field {:?} of {} is given more than once",
                    M::FIELDS[index],
                    M::NAME
                )));
            }
            message.read_field(
                index,
                &mut Fields {
                    map: &mut map,
                    options,
                },
            )?;
        }
        Ok(message)
    }
}

/// Reads a member name: the index of its field, or `None` for a name to skip.
struct FieldName<M>(DecodeOptions, PhantomData<M>);

impl<'de, M: JsonMessage> DeserializeSeed<'de> for FieldName<M> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<M: JsonMessage> Visitor<'_> for FieldName<M> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Option<usize>, E> {
        match M::field(name) {
            Some(index) => Ok(Some(index)),
            None if self.0.reject_unknown_fields => {
                Err(E::custom(format_args!("{} has no field {name:?}", M::NAME)))
            }
            None => Ok(None),
        }
    }
}

/// The fields already read, by index.
#[derive(Default)]
struct Seen {
    first: u64,
    /// Past the first 64 fields, allocated only for a message with more.
    rest: Vec<u64>,
}

impl Seen {
    /// Marks `index`; `false` if it was already marked.
    #[inline]
    fn insert(&mut self, index: usize) -> bool {
        let bit = 1u64 << (index % 64);
        let word = match index / 64 {
            0 => &mut self.first,
            n => {
                if self.rest.len() < n {
                    self.rest.resize(n, 0);
                }
                &mut self.rest[n - 1]
            }
        };
        let new = *word & bit == 0;
        *word |= bit;
        new
    }
}

/// The rest of a message's object, positioned at a field's value: what a generated
/// `read_field` reads the value with, by the field's shape.
pub struct Fields<'a, A> {
    map: &'a mut A,
    options: DecodeOptions,
}

impl<A> fmt::Debug for Fields<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fields")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<'de, A: MapAccess<'de>> Fields<'_, A> {
    fn next<K: Kind>(&mut self) -> Result<Read<K::Value>, A::Error> {
        self.map.next_value_seed(Seed::<K>::new(self.options))
    }

    /// A field without presence (or a required one): `null` leaves it as it is.
    pub fn value<K: Kind>(&mut self, slot: &mut K::Value) -> Result<(), A::Error> {
        if let Read::Value(value) = self.next::<K>()? {
            *slot = value;
        }
        Ok(())
    }

    /// A field with presence: `null` leaves it unset.
    pub fn option<K: Kind>(&mut self, slot: &mut Option<K::Value>) -> Result<(), A::Error> {
        if let Read::Value(value) = self.next::<K>()? {
            *slot = Some(value);
        }
        Ok(())
    }

    /// A member of a oneof of which one member is `set` already: its value, unless it is
    /// `null` (or an unknown enum value skipped).
    pub fn oneof<K: Kind>(&mut self, set: bool, oneof: &str) -> Result<Option<K::Value>, A::Error> {
        match self.next::<K>()? {
            Read::Value(_) if set => Err(de::Error::custom(format_args!(
                "more than one field of oneof {oneof:?} is set"
            ))),
            Read::Value(value) => Ok(Some(value)),
            Read::Null | Read::Skip => Ok(None),
        }
    }

    /// A repeated field: a JSON array (or `null`, for none).
    pub fn list<K: Kind>(&mut self, slot: &mut Vec<K::Value>) -> Result<(), A::Error> {
        self.map.next_value_seed(ListSeed::<K> {
            out: slot,
            options: self.options,
        })
    }

    /// A map field: a JSON object (or `null`, for none).
    pub fn map<KK: MapKey, VK: Kind, C: Extend<(KK::Value, VK::Value)>>(
        &mut self,
        slot: &mut C,
    ) -> Result<(), A::Error> {
        self.map.next_value_seed(MapSeed::<KK, VK, C> {
            out: slot,
            options: self.options,
            kinds: PhantomData,
        })
    }
}

/// Reads a JSON array's elements into `out`.
struct ListSeed<'a, K: Kind> {
    out: &'a mut Vec<K::Value>,
    options: DecodeOptions,
}

impl<'de, K: Kind> DeserializeSeed<'de> for ListSeed<'_, K> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, K: Kind> Visitor<'de> for ListSeed<'_, K> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        if let Some(len) = seq.size_hint() {
            self.out.reserve(len);
        }
        while let Some(read) = seq.next_element_seed(Seed::<K>::new(self.options))? {
            match read {
                Read::Value(value) => self.out.push(value),
                Read::Null => {
                    return Err(de::Error::custom("null is not a value of a repeated field"));
                }
                Read::Skip => {}
            }
        }
        Ok(())
    }
}

/// Reads a JSON object's members into the map `out`.
struct MapSeed<'a, KK, VK, C> {
    out: &'a mut C,
    options: DecodeOptions,
    kinds: PhantomData<(KK, VK)>,
}

impl<'de, KK: MapKey, VK: Kind, C: Extend<(KK::Value, VK::Value)>> DeserializeSeed<'de>
    for MapSeed<'_, KK, VK, C>
{
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, KK: MapKey, VK: Kind, C: Extend<(KK::Value, VK::Value)>> Visitor<'de>
    for MapSeed<'_, KK, VK, C>
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        while let Some(key) = map.next_key_seed(KeySeed::<KK>(PhantomData))? {
            match map.next_value_seed(Seed::<VK>::new(self.options))? {
                Read::Value(value) => self.out.extend(std::iter::once((key, value))),
                Read::Null => return Err(de::Error::custom("null is not a value of a map field")),
                Read::Skip => {}
            }
        }
        Ok(())
    }
}

/// Writes a message's fields as a JSON object: what a generated `Serialize` impl calls for
/// each field, by its shape.
pub struct Writer<M>(M);

impl<M> fmt::Debug for Writer<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Writer")
    }
}

/// Starts writing a message's object.
pub fn writer<S: Serializer>(serializer: S) -> Result<Writer<S::SerializeMap>, S::Error> {
    serializer.serialize_map(None).map(Writer)
}

impl<M: SerializeMap> Writer<M> {
    /// A field without presence: left out when it holds its default.
    pub fn implicit<K: Kind>(
        &mut self,
        name: &'static str,
        value: &K::Value,
    ) -> Result<(), M::Error> {
        if K::is_default(value) {
            return Ok(());
        }
        self.value::<K>(name, value)
    }

    /// A field with presence: written when it is set.
    pub fn option<K: Kind>(
        &mut self,
        name: &'static str,
        value: &Option<K::Value>,
    ) -> Result<(), M::Error> {
        match value {
            Some(value) => self.value::<K>(name, value),
            None => Ok(()),
        }
    }

    /// A field written whatever it holds (a required field, the set member of a oneof).
    pub fn value<K: Kind>(&mut self, name: &'static str, value: &K::Value) -> Result<(), M::Error> {
        self.0.serialize_entry(name, &Item::<K>(value))
    }

    /// A repeated field: left out when empty.
    pub fn list<K: Kind>(
        &mut self,
        name: &'static str,
        values: &[K::Value],
    ) -> Result<(), M::Error> {
        if values.is_empty() {
            return Ok(());
        }
        self.0.serialize_entry(name, &Items::<K>(values))
    }

    /// A map field: left out when empty.
    pub fn map<KK: MapKey, VK: Kind, C>(
        &mut self,
        name: &'static str,
        map: &C,
    ) -> Result<(), M::Error>
    where
        for<'a> &'a C: IntoIterator<Item = (&'a KK::Value, &'a VK::Value)>,
    {
        if map.into_iter().next().is_none() {
            return Ok(());
        }
        self.0.serialize_entry(
            name,
            &Entries::<KK, VK, C> {
                map,
                kinds: PhantomData,
            },
        )
    }

    /// Ends the object.
    pub fn end(self) -> Result<M::Ok, M::Error> {
        self.0.end()
    }
}

/// A list's values, to serialize.
struct Items<'a, K: Kind>(&'a [K::Value]);

impl<K: Kind> Serialize for Items<'_, K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for value in self.0 {
            seq.serialize_element(&Item::<K>(value))?;
        }
        seq.end()
    }
}

/// A map's entries, to serialize.
struct Entries<'a, KK, VK, C> {
    map: &'a C,
    kinds: PhantomData<(KK, VK)>,
}

impl<KK: MapKey, VK: Kind, C> Serialize for Entries<'_, KK, VK, C>
where
    for<'a> &'a C: IntoIterator<Item = (&'a KK::Value, &'a VK::Value)>,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.map {
            map.serialize_entry(&Key::<KK>(key), &Item::<VK>(value))?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_marks_each_index_once_past_64_too() {
        let mut seen = Seen::default();
        for index in [0, 63, 64, 200] {
            assert!(seen.insert(index), "{index}");
            assert!(!seen.insert(index), "{index} again");
        }
        assert!(seen.insert(127));
    }
}
