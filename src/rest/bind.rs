//! The request message of a REST call, as a ProtoJSON object built from the three places a
//! rule takes it from: the body (all of it, one field, or none, as the rule's `body` says),
//! the path's variables, and the query's parameters. The JSON codec then decodes the object
//! as it decodes any JSON request, so every ProtoJSON form it reads (64-bit integers as
//! strings or numbers, enums by name or number, the well-known types' strings) works here too.
//!
//! Path and query values are text; each becomes the JSON value of its field's kind
//! ([`FieldKind`]) here, where a value of the wrong kind (`ids=x`, `verbose=maybe`,
//! `genre=NOPE`, `since=yesterday`) can be refused naming its parameter. The values are kept
//! as [`Scalar`]s, borrowing the text they came from, and written straight into the object's
//! text; `serde_json::Value`s are built only to merge them into a body. Objects are keyed by
//! JSON names; a query parameter may use either name, at every level (`page.size`,
//! `displayName`, `display_name`). A path variable's value replaces what the body says of its
//! field. A query parameter that sets a field twice (a field that is not repeated, or one the
//! path or the body already carries) is refused; one that names no field is skipped, as the
//! codec skips unknown JSON fields, unless [`BindOptions::reject_unknown_parameters`].

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, Error as ValueError};
use serde_json::{Map, Number, Value};
use tonic::Status;

use super::query::{QueryParam, parse_query};
use super::routes::Binding;
use super::{Body, Encoding, Field, FieldKind, FieldTable, Rule};
use crate::types::{Duration, FieldMask, Timestamp, decode_base64};

/// How strictly a request is bound.
#[derive(Debug, Clone, Copy, Default)]
pub struct BindOptions {
    /// Refuse a query parameter that names no field of the request (by default it is
    /// skipped, so that a client built from a newer schema can call an older server).
    pub reject_unknown_parameters: bool,
}

/// The request of a call to `rule`, as the text of a JSON object: `body` as the rule says
/// (empty for no body), the path's `bindings` over it, and `query`'s parameters (the URI's
/// part after `?`). Every failure is `INVALID_ARGUMENT`, naming the parameter, variable or
/// body at fault.
pub fn request_json(
    rule: &Rule,
    bindings: &[Binding<'_, '_>],
    query: Option<&str>,
    body: &[u8],
    options: BindOptions,
) -> Result<Vec<u8>, Status> {
    let table = rule.request;
    if rule.body == Body::None && !body.is_empty() {
        return Err(Status::invalid_argument(format!(
            "{} {} takes no body",
            rule.http_method.as_str(),
            rule.template.text
        )));
    }
    // The query's parameters outlive the object, which borrows their values.
    let params = query_params(query)?;
    // What the path and the query set, by field; the body's part is merged in at the end.
    let assigned = collect(rule, bindings, &params, options)?;
    let body_object = match rule.body {
        Body::None => None,
        Body::All if body.is_empty() => None,
        Body::All => match parse_body(body)? {
            Value::Object(object) => Some(object),
            _ => return Err(Status::invalid_argument("the body is not a JSON object")),
        },
        Body::Field(_) if body.is_empty() => None,
        Body::Field(name) => {
            let field = table.field(name).ok_or_else(|| no_field(table, name))?;
            let mut object = Map::new();
            object.insert(field.json_name.to_owned(), parse_body(body)?);
            Some(object)
        }
    };
    let mut json = Vec::with_capacity(body.len() + 128);
    match body_object {
        // The common case, a request from the path and the query alone: written as it is.
        None => assigned.write(&mut json),
        Some(mut object) => {
            assigned
                .merge_into(&mut object)
                .map_err(Status::invalid_argument)?;
            serde_json::to_writer(&mut json, &object).map_err(|error| {
                Status::internal(format!("writing the request's JSON: {error}"))
            })?;
        }
    }
    Ok(json)
}

/// The request of a call to `rule` made with no body, from the path's `bindings` and `query`
/// alone, in the protobuf encoding, which a handler decodes for a fraction of what the same
/// message costs as JSON. It sets what [`request_json`] would, and fails as it would.
pub fn request_proto(
    rule: &Rule,
    bindings: &[Binding<'_, '_>],
    query: Option<&str>,
    options: BindOptions,
) -> Result<Vec<u8>, Status> {
    let params = query_params(query)?;
    let assigned = collect(rule, bindings, &params, options)?;
    let mut out = Vec::with_capacity(64);
    assigned.write_proto(&mut out)?;
    Ok(out)
}

/// Appends a `google.api.HttpBody` of `content_type` and `data` to `request`, a request
/// message in the protobuf encoding: as its field `field`, or as the request itself when it is
/// one. A field set twice takes its last value, so the body's replace what the path set.
pub(crate) fn append_http_body(
    request: &mut Vec<u8>,
    field: Option<u32>,
    content_type: &str,
    data: &[u8],
) -> Result<(), Status> {
    let write = |out: &mut Vec<u8>| {
        if !content_type.is_empty() {
            write_bytes(1, content_type.as_bytes(), out);
        }
        if !data.is_empty() {
            write_bytes(2, data, out);
        }
        Ok(())
    };
    match field {
        Some(number) => write_nested(number, request, write),
        None => write(request),
    }
}

fn query_params(query: Option<&str>) -> Result<Vec<QueryParam<'_>>, Status> {
    match query {
        Some(query) => parse_query(query),
        None => Ok(Vec::new()),
    }
}

/// What the path's `bindings` and the query's `params` set of a request to `rule`, checked.
fn collect<'t>(
    rule: &Rule,
    bindings: &'t [Binding<'_, '_>],
    params: &'t [QueryParam<'_>],
    options: BindOptions,
) -> Result<Object<'t>, Status> {
    let table = rule.request;
    let mut assigned = Object::default();
    for binding in bindings {
        let what = || format!("the path's `{}`", binding.field.join("."));
        let invalid = |reason| Status::invalid_argument(format!("{}: {reason}", what()));
        let path = resolve(table, binding.field.iter().map(|name| &**name))
            .map_err(invalid)?
            .ok_or_else(|| no_field(table, &binding.field.join(".")))?;
        let value = value_of(path.last(), &binding.value).map_err(invalid)?;
        assigned.set(path.fields(), value).map_err(invalid)?;
    }
    for QueryParam { name, value: text } in params {
        let invalid = |reason: String| {
            Status::invalid_argument(format!("query parameter `{name}`: {reason}"))
        };
        let Some(path) = resolve(table, name.split('.')).map_err(invalid)? else {
            if options.reject_unknown_parameters {
                return Err(invalid(format!("{} has no such field", table.message)));
            }
            continue;
        };
        let fields = path.fields();
        let bound_by_path = bindings.iter().any(|binding| {
            binding.field.len() == fields.len()
                && binding
                    .field
                    .iter()
                    .zip(fields)
                    .all(|(name, field)| **name == *field.name)
        });
        if bound_by_path {
            return Err(invalid("the path sets this field".to_owned()));
        }
        match rule.body {
            Body::All => return Err(invalid("the body carries every field".to_owned())),
            Body::Field(body) if fields[0].name == body => {
                return Err(invalid("the body carries this field".to_owned()));
            }
            _ => {}
        }
        let value = value_of(path.last(), text).map_err(invalid)?;
        assigned.set(fields, value).map_err(invalid)?;
    }
    Ok(assigned)
}

fn parse_body(body: &[u8]) -> Result<Value, Status> {
    serde_json::from_slice(body)
        .map_err(|error| Status::invalid_argument(format!("the body is not valid JSON: {error}")))
}

/// What the path and the query set of a message: each field once, in the order first set.
#[derive(Default)]
struct Object<'t> {
    members: Vec<(&'static Field, Member<'t>)>,
}

enum Member<'t> {
    Value(Scalar<'t>),
    List(Vec<Scalar<'t>>),
    Object(Object<'t>),
}

/// One value from a path or a query, checked against its field's kind, in the form its JSON
/// is written from. 64-bit integers are written as numbers: ProtoJSON readers take them either
/// way, and the number is exact in the text, whatever a JavaScript reader would make of it.
#[derive(Clone, Copy)]
enum Scalar<'t> {
    /// A JSON string: string and bytes fields, enum names, the well-known types' strings,
    /// and the non-finite floats.
    Text(&'t str),
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
}

impl Scalar<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        let written = match *self {
            Scalar::Text(text) => return write_string(out, text),
            Scalar::Bool(true) => return out.extend_from_slice(b"true"),
            Scalar::Bool(false) => return out.extend_from_slice(b"false"),
            Scalar::Int(number) => serde_json::to_writer(&mut *out, &number),
            Scalar::UInt(number) => serde_json::to_writer(&mut *out, &number),
            // Finite: the non-finite values are `Text`.
            Scalar::Float(number) => serde_json::to_writer(&mut *out, &number),
        };
        written.expect("writing a number to a Vec cannot fail");
    }

    fn into_value(self) -> Value {
        match self {
            Scalar::Text(text) => Value::String(text.to_owned()),
            Scalar::Bool(value) => Value::Bool(value),
            Scalar::Int(number) => Value::Number(number.into()),
            Scalar::UInt(number) => Value::Number(number.into()),
            Scalar::Float(number) => Number::from_f64(number).map_or(Value::Null, Value::Number),
        }
    }
}

/// Writes `text` as a JSON string. Most text (names, identifiers, numbers' digits) needs no
/// escaping and is copied; any other goes through serde_json's escaper.
fn write_string(out: &mut Vec<u8>, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, text).expect("writing to a Vec cannot fail");
    }
}

impl<'t> Object<'t> {
    /// Sets the last of `fields` (the others are the messages on the way) to `value`, or adds
    /// it to the field's list. A field that is not repeated is set once.
    fn set(&mut self, fields: &[&'static Field], value: Scalar<'t>) -> Result<(), String> {
        let (&first, rest) = fields.split_first().expect("a field path is never empty");
        let at = match self
            .members
            .iter()
            .position(|(field, _)| std::ptr::eq(*field, first))
        {
            Some(at) => at,
            None => {
                if let Some(oneof) = first.oneof
                    && self
                        .members
                        .iter()
                        .any(|(field, _)| field.oneof == Some(oneof))
                {
                    return Err(format!("more than one field of oneof {oneof:?} is set"));
                }
                let member = match rest.is_empty() {
                    false => Member::Object(Object::default()),
                    true if first.repeated => Member::List(Vec::new()),
                    true => {
                        self.members.push((first, Member::Value(value)));
                        return Ok(());
                    }
                };
                self.members.push((first, member));
                self.members.len() - 1
            }
        };
        match &mut self.members[at].1 {
            Member::Object(object) if !rest.is_empty() => object.set(rest, value),
            Member::List(values) => {
                values.push(value);
                Ok(())
            }
            _ => Err("given more than once".to_owned()),
        }
    }

    /// Writes the fields set as a JSON object, by their JSON names.
    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (index, (field, member)) in self.members.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_string(out, field.json_name);
            out.push(b':');
            match member {
                Member::Value(value) => value.write(out),
                Member::List(values) => {
                    out.push(b'[');
                    for (index, value) in values.iter().enumerate() {
                        if index > 0 {
                            out.push(b',');
                        }
                        value.write(out);
                    }
                    out.push(b']');
                }
                Member::Object(object) => object.write(out),
            }
        }
        out.push(b'}');
    }

    /// Sets the fields in `object`, a body's, over what it says of them. A field the body
    /// names by its proto name is moved to its JSON name, so that the object names each
    /// field once.
    fn merge_into(self, object: &mut Map<String, Value>) -> Result<(), String> {
        for (field, member) in self.members {
            let moved = match field.name != field.json_name {
                true => object.remove(field.name),
                false => None,
            };
            let slot = object
                .entry(field.json_name)
                .or_insert(moved.unwrap_or(Value::Null));
            match member {
                Member::Value(value) => *slot = value.into_value(),
                Member::List(values) => {
                    *slot = Value::Array(values.into_iter().map(Scalar::into_value).collect());
                }
                Member::Object(inner) => {
                    if slot.is_null() {
                        *slot = Value::Object(Map::new());
                    }
                    let Value::Object(slot) = slot else {
                        return Err(format!("the body's `{}` is not an object", field.json_name));
                    };
                    inner.merge_into(slot)?;
                }
            }
        }
        Ok(())
    }
}

impl Object<'_> {
    /// Writes the fields set in the protobuf encoding: each value as its own field (a
    /// repeated scalar unpacked, which every parser reads as well as packed), a message's
    /// fields nested in it.
    fn write_proto(&self, out: &mut Vec<u8>) -> Result<(), Status> {
        for (field, member) in &self.members {
            match member {
                Member::Value(value) => write_field(field, value, out)?,
                Member::List(values) => {
                    for value in values {
                        write_field(field, value, out)?;
                    }
                }
                Member::Object(object) => {
                    write_nested(field.number, out, |out| object.write_proto(out))?;
                }
            }
        }
        Ok(())
    }
}

/// Writes `value` as `field`, a wrapper as the message around it.
fn write_field(field: &Field, value: &Scalar<'_>, out: &mut Vec<u8>) -> Result<(), Status> {
    if field.encoding != Encoding::Wrapped {
        return write_scalar(field, field.number, field.encoding, value, out);
    }
    write_nested(field.number, out, |out| {
        write_scalar(field, 1, Encoding::Plain, value, out)
    })
}

/// Writes field `number` holding the message `write` writes, in place: its length, which
/// comes before it, is a byte's room left and filled in afterwards (moving the message in the
/// rare case it is 128 bytes or more, whose length takes more).
fn write_nested(
    number: u32,
    out: &mut Vec<u8>,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), Status>,
) -> Result<(), Status> {
    prost::encoding::encode_key(number, prost::encoding::WireType::LengthDelimited, out);
    let at = out.len();
    out.push(0);
    write(out)?;
    let len = out.len() - at - 1;
    match u8::try_from(len) {
        Ok(short) if short < 0x80 => out[at] = short,
        _ => {
            let mut prefix = Vec::with_capacity(10);
            prost::encoding::encode_varint(len as u64, &mut prefix);
            out.splice(at..=at, prefix);
        }
    }
    Ok(())
}

/// Writes `value`, checked against `field`'s kind already, as field `number` in `encoding`.
fn write_scalar(
    field: &Field,
    number: u32,
    encoding: Encoding,
    value: &Scalar<'_>,
    out: &mut Vec<u8>,
) -> Result<(), Status> {
    use prost::encoding::{WireType, encode_key, encode_varint};
    let varint = |value: u64, out: &mut Vec<u8>| {
        encode_key(number, WireType::Varint, out);
        encode_varint(value, out);
    };
    let fixed32 = |bits: u32, out: &mut Vec<u8>| {
        encode_key(number, WireType::ThirtyTwoBit, out);
        out.extend_from_slice(&bits.to_le_bytes());
    };
    let fixed64 = |bits: u64, out: &mut Vec<u8>| {
        encode_key(number, WireType::SixtyFourBit, out);
        out.extend_from_slice(&bits.to_le_bytes());
    };
    let unexpected = || {
        Status::internal(format!(
            "the value bound to `{}` does not fit its kind",
            field.name
        ))
    };
    match (field.kind, *value) {
        (FieldKind::String, Scalar::Text(text)) => write_bytes(number, text.as_bytes(), out),
        (FieldKind::Bytes, Scalar::Text(text)) => {
            let bytes = decode_base64(text).ok_or_else(unexpected)?;
            write_bytes(number, &bytes, out);
        }
        (FieldKind::Bool, Scalar::Bool(value)) => varint(u64::from(value), out),
        // Negative 32-bit values are sign-extended to 64 bits, as protobuf writes them.
        (FieldKind::Int32 | FieldKind::Int64 | FieldKind::Enum(_), Scalar::Int(n)) => {
            let is_32 = !matches!(field.kind, FieldKind::Int64);
            match encoding {
                Encoding::ZigZag if is_32 => {
                    let n = n as i32;
                    varint(u64::from(((n << 1) ^ (n >> 31)) as u32), out);
                }
                Encoding::ZigZag => varint(((n << 1) ^ (n >> 63)) as u64, out),
                Encoding::Fixed if is_32 => fixed32(n as i32 as u32, out),
                Encoding::Fixed => fixed64(n as u64, out),
                Encoding::Plain | Encoding::Wrapped => varint(n as u64, out),
            }
        }
        (FieldKind::UInt32, Scalar::UInt(n)) if encoding == Encoding::Fixed => {
            fixed32(n as u32, out);
        }
        (FieldKind::UInt64, Scalar::UInt(n)) if encoding == Encoding::Fixed => fixed64(n, out),
        (FieldKind::UInt32 | FieldKind::UInt64, Scalar::UInt(n)) => varint(n, out),
        (FieldKind::Enum(values), Scalar::Text(name)) => {
            let (_, n) = values
                .values
                .iter()
                .find(|(value, _)| *value == name)
                .ok_or_else(unexpected)?;
            varint(i64::from(*n) as u64, out);
        }
        (FieldKind::Float, value) => fixed32(
            (float_of(value).ok_or_else(unexpected)? as f32).to_bits(),
            out,
        ),
        (FieldKind::Double, value) => {
            fixed64(float_of(value).ok_or_else(unexpected)?.to_bits(), out)
        }
        (FieldKind::Timestamp, Scalar::Text(text)) => {
            write_message(
                number,
                &parsed::<Timestamp>(text).ok_or_else(unexpected)?,
                out,
            );
        }
        (FieldKind::Duration, Scalar::Text(text)) => {
            write_message(
                number,
                &parsed::<Duration>(text).ok_or_else(unexpected)?,
                out,
            );
        }
        (FieldKind::FieldMask, Scalar::Text(text)) => {
            write_message(
                number,
                &parsed::<FieldMask>(text).ok_or_else(unexpected)?,
                out,
            );
        }
        _ => return Err(unexpected()),
    }
    Ok(())
}

/// A float's value: a number, or one of the strings that stand for the non-finite ones.
fn float_of(value: Scalar<'_>) -> Option<f64> {
    match value {
        Scalar::Float(number) => Some(number),
        Scalar::Text("NaN") => Some(f64::NAN),
        Scalar::Text("Infinity") => Some(f64::INFINITY),
        Scalar::Text("-Infinity") => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// The well-known type `T` of its JSON string `text`.
fn parsed<'t, T: Deserialize<'t>>(text: &'t str) -> Option<T> {
    T::deserialize(BorrowedStrDeserializer::<ValueError>::new(text)).ok()
}

/// Writes field `number` of length-delimited `bytes`.
fn write_bytes(number: u32, bytes: &[u8], out: &mut Vec<u8>) {
    prost::encoding::encode_key(number, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// Writes field `number` holding `message`.
fn write_message(number: u32, message: &impl prost::Message, out: &mut Vec<u8>) {
    prost::encoding::message::encode(number, message, out);
}

/// The most names a field path may chain (`page.size` has 2).
const MAX_PATH_DEPTH: usize = 16;

/// The fields a path or query names, outermost first; kept in place, since a request has a
/// field path per parameter.
struct FieldPath {
    fields: [&'static Field; MAX_PATH_DEPTH],
    len: usize,
}

impl FieldPath {
    fn fields(&self) -> &[&'static Field] {
        &self.fields[..self.len]
    }

    fn last(&self) -> &'static Field {
        self.fields[self.len - 1]
    }
}

/// What fills a [`FieldPath`]'s unused places.
static NO_FIELD: Field = Field {
    name: "",
    json_name: "",
    kind: FieldKind::Unsupported,
    repeated: false,
    number: 0,
    encoding: Encoding::Plain,
    oneof: None,
};

/// The fields `names` name, from `table` down (`page`, then `size`), each by its proto or
/// JSON name; `None` if one names no field.
fn resolve<'n>(
    table: &FieldTable,
    names: impl Iterator<Item = &'n str>,
) -> Result<Option<FieldPath>, String> {
    let mut path = FieldPath {
        fields: [&NO_FIELD; MAX_PATH_DEPTH],
        len: 0,
    };
    let mut table = table;
    for part in names {
        if path.len == MAX_PATH_DEPTH {
            return Err(format!("names more than {MAX_PATH_DEPTH} nested fields"));
        }
        if let Some(parent) = path.fields().last() {
            match parent.kind {
                FieldKind::Message(_) if parent.repeated => {
                    return Err(format!(
                        "`{}` is a repeated message, which a query cannot reach into",
                        parent.name
                    ));
                }
                FieldKind::Message(next) => table = next,
                _ => return Err(format!("`{}` has no fields", parent.name)),
            }
        }
        let Some(field) = table.field(part) else {
            return Ok(None);
        };
        path.fields[path.len] = field;
        path.len += 1;
    }
    Ok((path.len > 0).then_some(path))
}

fn no_field(table: &FieldTable, name: &str) -> Status {
    Status::internal(format!(
        "the rule names `{name}`, which {} does not have",
        table.message
    ))
}

/// The JSON value of `text` for `field`, or why there is none.
fn value_of<'t>(field: &Field, text: &'t str) -> Result<Scalar<'t>, String> {
    let wrong = |kind: &str| format!("{text:?} is not {kind}");
    match field.kind {
        FieldKind::String => Ok(Scalar::Text(text)),
        FieldKind::Bytes => match decode_base64(text) {
            Some(_) => Ok(Scalar::Text(text)),
            None => Err(wrong("base64")),
        },
        FieldKind::Bool => match text {
            "true" => Ok(Scalar::Bool(true)),
            "false" => Ok(Scalar::Bool(false)),
            _ => Err(wrong("a bool (`true` or `false`)")),
        },
        FieldKind::Int32 => integer::<i32>(text)
            .map(|n| Scalar::Int(n.into()))
            .ok_or_else(|| wrong("an int32")),
        FieldKind::UInt32 => integer::<u32>(text)
            .map(|n| Scalar::UInt(n.into()))
            .ok_or_else(|| wrong("a uint32")),
        FieldKind::Int64 => integer::<i64>(text)
            .map(Scalar::Int)
            .ok_or_else(|| wrong("an int64")),
        FieldKind::UInt64 => integer::<u64>(text)
            .map(Scalar::UInt)
            .ok_or_else(|| wrong("a uint64")),
        FieldKind::Float => float(text, true).ok_or_else(|| wrong("a float")),
        FieldKind::Double => float(text, false).ok_or_else(|| wrong("a double")),
        FieldKind::Enum(values) => {
            if let Some((name, _)) = values.values.iter().find(|(name, _)| *name == text) {
                return Ok(Scalar::Text(name));
            }
            match integer::<i32>(text) {
                Some(number) if values.open || values.values.iter().any(|(_, n)| *n == number) => {
                    Ok(Scalar::Int(number.into()))
                }
                _ => Err(format!("{text:?} is not a value of {}", values.name)),
            }
        }
        FieldKind::Timestamp => well_known::<Timestamp>(text),
        FieldKind::Duration => well_known::<Duration>(text),
        FieldKind::FieldMask => well_known::<FieldMask>(text),
        FieldKind::Message(_) => Err(format!(
            "`{}` is a message: set its fields (`{}.field=...`)",
            field.name, field.name
        )),
        FieldKind::Unsupported => Err(format!(
            "`{}` cannot be set from a path or query (only from the body)",
            field.name
        )),
    }
}

/// A decimal integer, `-?[0-9]+`, in `T`'s range.
fn integer<T: std::str::FromStr>(text: &str) -> Option<T> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A finite number (within a `float`'s range if `single`), or `NaN`, `Infinity`,
/// `-Infinity`, which ProtoJSON writes as strings.
fn float(text: &str, single: bool) -> Option<Scalar<'_>> {
    if matches!(text, "NaN" | "Infinity" | "-Infinity") {
        return Some(Scalar::Text(text));
    }
    // Rust's parser also takes `inf` and `nan`; only finite values are numbers here.
    let value: f64 = text.parse().ok().filter(|value: &f64| value.is_finite())?;
    if single && !(value as f32).is_finite() {
        return None;
    }
    Some(Scalar::Float(value))
}

/// `text` if it is the JSON string form of the well-known type `T`.
fn well_known<'t, T: Deserialize<'t>>(text: &'t str) -> Result<Scalar<'t>, String> {
    match T::deserialize(BorrowedStrDeserializer::<ValueError>::new(text)) {
        Ok(_) => Ok(Scalar::Text(text)),
        Err(error) => Err(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::{EnumValues, HttpMethod, Segment, Template, Variable};
    use std::borrow::Cow;

    const fn field(name: &'static str, json_name: &'static str, kind: FieldKind) -> Field {
        Field {
            name,
            json_name,
            kind,
            repeated: false,
            number: 0,
            encoding: Encoding::Plain,
            oneof: None,
        }
    }

    static GENRE: EnumValues = EnumValues {
        name: "t.Genre",
        open: false,
        values: &[("GENRE_UNSPECIFIED", 0), ("FICTION", 1)],
    };
    static PAGE: FieldTable = FieldTable {
        message: "t.Page",
        fields: &[field("size", "size", FieldKind::Int32)],
    };
    static BOOK: FieldTable = FieldTable {
        message: "t.Book",
        fields: &[
            field("name", "name", FieldKind::String),
            field("title", "title", FieldKind::String),
        ],
    };
    static REQUEST: FieldTable = FieldTable {
        message: "t.Request",
        fields: &[
            field("name", "name", FieldKind::String),
            field("display_name", "displayName", FieldKind::String),
            field("book", "book", FieldKind::Message(&BOOK)),
            field("page", "page", FieldKind::Message(&PAGE)),
            Field {
                name: "ids",
                json_name: "ids",
                kind: FieldKind::Int32,
                repeated: true,
                number: 0,
                encoding: Encoding::Plain,
                oneof: None,
            },
            Field {
                name: "books",
                json_name: "books",
                kind: FieldKind::Message(&BOOK),
                repeated: true,
                number: 0,
                encoding: Encoding::Plain,
                oneof: None,
            },
            field("genre", "genre", FieldKind::Enum(&GENRE)),
            field("verbose", "verbose", FieldKind::Bool),
            field("big", "big", FieldKind::Int64),
            field("count", "count", FieldKind::UInt32),
            field("ratio", "ratio", FieldKind::Float),
            field("data", "data", FieldKind::Bytes),
            field("since", "since", FieldKind::Timestamp),
            field("interval", "interval", FieldKind::Duration),
            field("update_mask", "updateMask", FieldKind::FieldMask),
            field("labels", "labels", FieldKind::Unsupported),
        ],
    };

    fn rule(body: Body) -> Rule {
        Rule {
            path: "/t.S/M",
            method: "M",
            http_method: HttpMethod::Post,
            template: Template {
                text: "/v1/{name=*}",
                segments: &[Segment::Literal("v1"), Segment::Any],
                variables: &[Variable {
                    field: &["name"],
                    start: 1,
                    end: 2,
                }],
                verb: None,
            },
            body,
            response_body: None,
            request: &REQUEST,
            response: "t.Reply",
            server_streaming: false,
        }
    }

    fn bind(
        body_rule: Body,
        bindings: &[(&[Box<str>], &str)],
        query: &str,
        body: &str,
    ) -> Result<Value, Status> {
        let bindings: Vec<Binding<'_, '_>> = bindings
            .iter()
            .map(|(field, value)| Binding {
                field,
                value: Cow::Borrowed(*value),
            })
            .collect();
        request_json(
            &rule(body_rule),
            &bindings,
            Some(query),
            body.as_bytes(),
            BindOptions::default(),
        )
        .map(|json| serde_json::from_slice(&json).expect("the request's JSON parses"))
    }

    fn names(path: &str) -> Box<[Box<str>]> {
        path.split('.').map(Into::into).collect()
    }

    #[test]
    fn query_values_become_their_fields_json_values() {
        let json = bind(
            Body::None,
            &[],
            "page.size=10&ids=1&ids=-2&display_name=%22x%5C%0A&genre=FICTION&big=9007199254740993\
             &since=2024-01-01T00:00:00Z&verbose=true&count=4294967295&ratio=1.5\
             &interval=1.5s&updateMask=a.b,c&data=AQI_&book.title=T",
            "",
        )
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "page": {"size": 10}, "ids": [1, -2], "displayName": "\"x\\\n", "genre": "FICTION",
                "big": 9007199254740993u64, "since": "2024-01-01T00:00:00Z", "verbose": true,
                "count": 4294967295u32, "ratio": 1.5, "interval": "1.5s", "updateMask": "a.b,c",
                "data": "AQI_", "book": {"title": "T"},
            })
        );
        let json = bind(Body::None, &[], "genre=1&ratio=NaN&big=-007", "").unwrap();
        assert_eq!(
            json,
            serde_json::json!({"genre": 1, "ratio": "NaN", "big": -7})
        );
    }

    #[test]
    fn values_of_the_wrong_kind_name_their_parameter() {
        for (query, message) in [
            ("ids=x", "query parameter `ids`: \"x\" is not an int32"),
            (
                "verbose=maybe",
                "query parameter `verbose`: \"maybe\" is not a bool",
            ),
            (
                "genre=NOPE",
                "query parameter `genre`: \"NOPE\" is not a value of t.Genre",
            ),
            ("genre=7", "\"7\" is not a value of t.Genre"),
            (
                "since=yesterday",
                "query parameter `since`: invalid value: string \"yesterday\"",
            ),
            ("interval=5", "query parameter `interval`: invalid value"),
            ("count=-1", "\"-1\" is not a uint32"),
            ("ids=2147483648", "is not an int32"),
            ("big=1e3", "is not an int64"),
            ("ratio=1e39", "is not a float"),
            ("ratio=inf", "is not a float"),
            ("data=%25%25", "is not base64"),
            ("book=x", "`book` is a message: set its fields"),
            ("labels=x", "`labels` cannot be set from a path or query"),
            ("verbose.x=1", "`verbose` has no fields"),
            ("books.name=x", "`books` is a repeated message"),
        ] {
            let error = bind(Body::None, &[], query, "").unwrap_err();
            assert_eq!(error.code(), tonic::Code::InvalidArgument);
            assert!(error.message().contains(message), "{query}: {error:?}");
        }
    }

    #[test]
    fn a_single_valued_field_is_set_once_by_either_name() {
        for query in [
            "verbose=true&verbose=false",
            "display_name=a&displayName=b",
            "page.size=1&page.size=2",
        ] {
            let error = bind(Body::None, &[], query, "").unwrap_err();
            assert!(
                error.message().ends_with("given more than once"),
                "{error:?}"
            );
        }
    }

    #[test]
    fn unknown_parameters_are_skipped_unless_refused() {
        let json = bind(Body::None, &[], "nope=1&page.nope=2&verbose=true", "").unwrap();
        assert_eq!(json, serde_json::json!({"verbose": true}));
        let strict = request_json(
            &rule(Body::None),
            &[],
            Some("nope=1"),
            b"",
            BindOptions {
                reject_unknown_parameters: true,
            },
        )
        .unwrap_err();
        assert_eq!(
            strict.message(),
            "query parameter `nope`: t.Request has no such field"
        );
    }

    #[test]
    fn path_values_override_the_body_and_the_query_cannot_set_them() {
        let name = names("name");
        let book_name = names("book.name");
        let json = bind(
            Body::All,
            &[(&name, "shelves/1")],
            "",
            r#"{"name": "ignored", "display_name": "d"}"#,
        )
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"name": "shelves/1", "display_name": "d"})
        );
        let json = bind(
            Body::Field("book"),
            &[(&book_name, "b/1")],
            "verbose=true",
            r#"{"title": "T", "name": "old"}"#,
        )
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"book": {"name": "b/1", "title": "T"}, "verbose": true})
        );
        // Without a body, the path's and the query's fields make one object.
        let json = bind(
            Body::None,
            &[(&book_name, "b/1")],
            "book.title=T&ids=1&verbose=true&ids=2",
            "",
        )
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"book": {"name": "b/1", "title": "T"}, "ids": [1, 2], "verbose": true})
        );
        // The path's field by its JSON name in the body is moved, not doubled.
        let display = names("display_name");
        let json = bind(
            Body::All,
            &[(&display, "p")],
            "",
            r#"{"display_name": "b"}"#,
        )
        .unwrap();
        assert_eq!(json, serde_json::json!({"displayName": "p"}));
        for (rule, query, message) in [
            (
                Body::None,
                "name=x",
                "query parameter `name`: the path sets this field",
            ),
            (Body::All, "verbose=true", "the body carries every field"),
            (
                Body::Field("book"),
                "book.title=x",
                "the body carries this field",
            ),
        ] {
            let error = bind(rule, &[(&name, "n")], query, "").unwrap_err();
            assert!(error.message().ends_with(message), "{error:?}");
        }
    }

    #[test]
    fn bodies_are_what_the_rule_says() {
        let none = bind(Body::None, &[], "", "{}").unwrap_err();
        assert_eq!(none.message(), "POST /v1/{name=*} takes no body");
        let array = bind(Body::All, &[], "", "[1]").unwrap_err();
        assert_eq!(array.message(), "the body is not a JSON object");
        let broken = bind(Body::Field("book"), &[], "", "{").unwrap_err();
        assert!(
            broken.message().starts_with("the body is not valid JSON"),
            "{broken:?}"
        );
        let book_name = names("book.name");
        let not_object = bind(Body::Field("book"), &[(&book_name, "n")], "", "5").unwrap_err();
        assert_eq!(not_object.message(), "the body's `book` is not an object");
        assert_eq!(bind(Body::All, &[], "", "").unwrap(), serde_json::json!({}));
        assert_eq!(
            bind(Body::Field("ids"), &[], "", "[1, 2]").unwrap(),
            serde_json::json!({"ids": [1, 2]})
        );
    }

    /// Every encoding a field's value can take, read back by prost.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Encoded {
        #[prost(sint32, tag = "1")]
        zigzag32: i32,
        #[prost(sint64, tag = "2")]
        zigzag64: i64,
        #[prost(sfixed32, tag = "3")]
        sfixed32: i32,
        #[prost(fixed64, tag = "4")]
        fixed64: u64,
        #[prost(int32, tag = "5")]
        negative: i32,
        #[prost(float, tag = "6")]
        single: f32,
        #[prost(double, repeated, tag = "7")]
        doubles: Vec<f64>,
        #[prost(bytes = "vec", tag = "8")]
        data: Vec<u8>,
        #[prost(int32, tag = "9")]
        genre: i32,
        #[prost(message, optional, tag = "10")]
        limit: Option<crate::types::Int64Value>,
        #[prost(message, optional, tag = "11")]
        since: Option<Timestamp>,
        #[prost(message, optional, tag = "12")]
        mask: Option<FieldMask>,
        #[prost(message, optional, tag = "13")]
        page: Option<EncodedPage>,
        #[prost(uint32, tag = "14")]
        count: u32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct EncodedPage {
        #[prost(int32, tag = "1")]
        size: i32,
        #[prost(string, tag = "2")]
        token: String,
    }

    const fn numbered(
        name: &'static str,
        kind: FieldKind,
        number: u32,
        encoding: Encoding,
        repeated: bool,
    ) -> Field {
        Field {
            name,
            json_name: name,
            kind,
            repeated,
            number,
            encoding,
            oneof: None,
        }
    }

    static ENCODED_PAGE: FieldTable = FieldTable {
        message: "t.EncodedPage",
        fields: &[
            numbered("size", FieldKind::Int32, 1, Encoding::Plain, false),
            numbered("token", FieldKind::String, 2, Encoding::Plain, false),
        ],
    };
    static ENCODED: FieldTable = FieldTable {
        message: "t.Encoded",
        fields: &[
            numbered("zigzag32", FieldKind::Int32, 1, Encoding::ZigZag, false),
            numbered("zigzag64", FieldKind::Int64, 2, Encoding::ZigZag, false),
            numbered("sfixed32", FieldKind::Int32, 3, Encoding::Fixed, false),
            numbered("fixed64", FieldKind::UInt64, 4, Encoding::Fixed, false),
            numbered("negative", FieldKind::Int32, 5, Encoding::Plain, false),
            numbered("single", FieldKind::Float, 6, Encoding::Plain, false),
            numbered("doubles", FieldKind::Double, 7, Encoding::Plain, true),
            numbered("data", FieldKind::Bytes, 8, Encoding::Plain, false),
            numbered("genre", FieldKind::Enum(&GENRE), 9, Encoding::Plain, false),
            numbered("limit", FieldKind::Int64, 10, Encoding::Wrapped, false),
            numbered("since", FieldKind::Timestamp, 11, Encoding::Plain, false),
            numbered("mask", FieldKind::FieldMask, 12, Encoding::Plain, false),
            numbered(
                "page",
                FieldKind::Message(&ENCODED_PAGE),
                13,
                Encoding::Plain,
                false,
            ),
            numbered("count", FieldKind::UInt32, 14, Encoding::Plain, false),
        ],
    };

    #[test]
    fn a_request_without_a_body_binds_in_protobuf_as_prost_reads_it() {
        let mut rule = rule(Body::None);
        rule.request = &ENCODED;
        let query = "zigzag32=-3&zigzag64=-9000000000&sfixed32=-7&fixed64=18446744073709551615\
                     &negative=-2&single=1.5&doubles=NaN&doubles=-Infinity&doubles=0.25\
                     &data=AQI_&genre=FICTION&limit=0&since=1970-01-01T00:00:01.5Z\
                     &mask=a.fooBar,b&page.size=-1&count=4294967295";
        let bytes = request_proto(&rule, &[], Some(query), BindOptions::default()).unwrap();
        let encoded = <Encoded as prost::Message>::decode(&bytes[..]).unwrap();
        // A nested message of 128 bytes or more, whose length takes two bytes.
        let token = "t".repeat(300);
        let long = format!("page.token={token}&count=1");
        let bytes = request_proto(&rule, &[], Some(&long), BindOptions::default()).unwrap();
        let long = <Encoded as prost::Message>::decode(&bytes[..]).unwrap();
        assert_eq!(long.page.map(|page| page.token), Some(token));
        assert_eq!(long.count, 1);
        assert_eq!(encoded.zigzag32, -3);
        assert_eq!(encoded.zigzag64, -9_000_000_000);
        assert_eq!(encoded.sfixed32, -7);
        assert_eq!(encoded.fixed64, u64::MAX);
        assert_eq!(encoded.negative, -2);
        assert_eq!(encoded.single, 1.5);
        assert!(encoded.doubles[0].is_nan());
        assert_eq!(encoded.doubles[1..], [f64::NEG_INFINITY, 0.25]);
        assert_eq!(encoded.data, [1, 2, 63]);
        assert_eq!(encoded.genre, 1);
        // A wrapper of its default value is present, as its JSON `0` says.
        assert_eq!(encoded.limit, Some(crate::types::Int64Value { value: 0 }));
        assert_eq!(
            encoded.since,
            Some(Timestamp {
                seconds: 1,
                nanos: 500_000_000
            })
        );
        assert_eq!(encoded.mask.unwrap().paths, ["a.foo_bar", "b"]);
        assert_eq!(
            encoded.page,
            Some(EncodedPage {
                size: -1,
                token: String::new()
            })
        );
        assert_eq!(encoded.count, u32::MAX);
        // What the JSON binding refuses, the protobuf one does too.
        let error = request_proto(&rule, &[], Some("genre=NOPE"), BindOptions::default());
        assert_eq!(error.unwrap_err().code(), tonic::Code::InvalidArgument);
    }

    static CHOICE: FieldTable = FieldTable {
        message: "t.Choice",
        fields: &[
            Field {
                oneof: Some("choice"),
                ..field("a", "a", FieldKind::String)
            },
            Field {
                oneof: Some("choice"),
                ..field("b", "b", FieldKind::Int32)
            },
            field("c", "c", FieldKind::String),
        ],
    };

    #[test]
    fn a_request_sets_one_member_of_a_oneof_at_most() {
        let mut rule = rule(Body::None);
        rule.request = &CHOICE;
        let options = BindOptions::default();
        assert!(request_json(&rule, &[], Some("a=x&c=y"), b"", options).is_ok());
        let json = request_json(&rule, &[], Some("a=x&b=1"), b"", options);
        let proto = request_proto(&rule, &[], Some("b=1&a=x"), options);
        for (error, second) in [(json.unwrap_err(), "b"), (proto.unwrap_err(), "a")] {
            assert_eq!(
                error.message(),
                format!(
                    "query parameter `{second}`: more than one field of oneof \"choice\" is set"
                )
            );
        }
    }
}
