//! The message types `google.protobuf.Any` can carry in JSON: for each full name
//! (`package.Message`), how to turn its encoding into JSON and back. Generated code registers
//! the messages of a package when a server of that package is built
//! (`<package>::register_json_types`); the well-known types are always there.

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::codec::json::options::{DecodeOptions, WithOptions};

/// How one message type goes between its encoding and JSON.
#[derive(Clone, Copy)]
pub(super) struct Entry {
    /// The message's encoding as its JSON value.
    pub(super) to_json: fn(&[u8]) -> Result<Value, String>,
    /// A JSON value as the message's encoding, read with the options given.
    pub(super) from_json: fn(Value, DecodeOptions) -> Result<Vec<u8>, String>,
    /// A well-known type with a special form: inside an `Any` it is `{"@type", "value"}`.
    pub(super) special: bool,
}

fn registry() -> &'static RwLock<HashMap<String, Entry>> {
    static REGISTRY: OnceLock<RwLock<HashMap<String, Entry>>> = OnceLock::new();
    REGISTRY.get_or_init(|| RwLock::new(super::well_known_entries().collect()))
}

pub(super) fn entry<M: Message + Default + Serialize + DeserializeOwned + 'static>(
    special: bool,
) -> Entry {
    Entry {
        to_json: to_json::<M>,
        from_json: from_json::<M>,
        special,
    }
}

fn to_json<M: Message + Default + Serialize + 'static>(encoded: &[u8]) -> Result<Value, String> {
    let message = M::decode(encoded).map_err(|error| error.to_string())?;
    let mut json = Vec::new();
    crate::codec::json::write(&message, &mut json).map_err(|error| error.to_string())?;
    serde_json::from_slice(&json).map_err(|error| error.to_string())
}

fn from_json<M: Message + DeserializeOwned>(
    json: Value,
    options: DecodeOptions,
) -> Result<Vec<u8>, String> {
    let message =
        M::deserialize(WithOptions::new(json, options)).map_err(|error| error.to_string())?;
    Ok(message.encode_to_vec())
}

/// Makes `M`, named `name` (`package.Message`), one an `Any` can carry in JSON.
pub fn register<M>(name: &str)
where
    M: Message + Default + Serialize + DeserializeOwned + 'static,
{
    let mut types = registry()
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    types
        .entry(name.to_owned())
        .or_insert_with(|| entry::<M>(false));
}

/// How the message type a type URL names goes to JSON and back, if it is registered.
pub(super) fn lookup(type_url: &str) -> Option<Entry> {
    let name = type_url.rsplit('/').next().unwrap_or(type_url);
    registry()
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get(name)
        .copied()
}
