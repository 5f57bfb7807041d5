//! REST transcoding's building blocks: what a `google.api.http` rule says, read from the
//! static tables `fastgrpc-build` generates ([`Rule`], [`FieldTable`]); the matcher that finds
//! the rule of a request path among all of a server's ([`Routes`], `routes.rs`), with the
//! path's variables percent-decoded as the rule's template says (`template.rs`,
//! `percent.rs`); the query string's parameters (`query.rs`); and the request message built
//! as a ProtoJSON object from the path, the query and the body (`bind.rs`), which the JSON
//! codec then decodes as it decodes any JSON request.
//!
//! Nothing here knows the call path: what it finds and builds is handed to it.
//! `docs/design/rest.md` explains the choices (precedence, decoding, what the build checks).

mod bind;
mod percent;
mod query;
mod routes;
mod template;

pub(crate) use self::bind::append_http_body;
pub use self::bind::{BindOptions, request_json, request_proto};
pub use self::query::{MAX_QUERY_LEN, MAX_QUERY_PARAMS, QueryParam, parse_query};
pub use self::routes::{Binding, Found, Lookup, MAX_PATH_SEGMENTS, RouteError, Routes};
pub use self::template::{Segment, Template, TemplateError, Variable};

/// One HTTP binding of a method: a method's `google.api.http` option, or one of its
/// `additional_bindings`. `fastgrpc-build` generates a server's as a static table, checked
/// at build time (fields exist, path variables bind single scalar fields, no body on GET or
/// DELETE, no two rules match the same requests).
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The gRPC path of the method the rule calls: `/package.Service/Method`.
    pub path: &'static str,
    /// The method's name: `Method`.
    pub method: &'static str,
    /// The HTTP method the rule answers.
    pub http_method: HttpMethod,
    /// The path template, parsed.
    pub template: Template<'static>,
    /// Which part of the request message the HTTP body carries.
    pub body: Body,
    /// The JSON name of the reply's field whose value is the whole HTTP body, when the rule
    /// says `response_body`; `None` for the whole reply.
    pub response_body: Option<&'static str>,
    /// The request message's fields, as the path and the query set them.
    pub request: &'static FieldTable,
    /// The reply message's full name, `package.Message` (`google.api.HttpBody` for a reply
    /// that is raw bytes with their content type).
    pub response: &'static str,
    /// Whether the method answers with a stream of replies.
    pub server_streaming: bool,
}

/// The full name of `google.api.HttpBody`: a request or reply that is an HTTP body as it is,
/// bytes and their content type, not JSON.
pub(crate) const HTTP_BODY: &str = "google.api.HttpBody";

/// The HTTP method of a rule: `get`, `put`, `post`, `delete`, `patch`, or `custom`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// `GET`.
    Get,
    /// `PUT`.
    Put,
    /// `POST`.
    Post,
    /// `DELETE`.
    Delete,
    /// `PATCH`.
    Patch,
    /// `custom { kind: "HEAD" }`: the method of that name.
    Custom(&'static str),
    /// `custom { kind: "*" }`: any method (after the rules that name the request's method).
    Any,
}

impl HttpMethod {
    /// The method's name as HTTP writes it (`*` for any).
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Put => "PUT",
            HttpMethod::Post => "POST",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Custom(name) => name,
            HttpMethod::Any => "*",
        }
    }

    /// Whether a request of `method` is one this rule answers.
    pub fn matches(self, method: &http::Method) -> bool {
        match self {
            HttpMethod::Any => true,
            other => other.as_str() == method.as_str(),
        }
    }
}

/// What the HTTP body of a rule's request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body (`body` left out): the fields the path does not bind come from the query.
    None,
    /// `body: "*"`: the whole request message but the fields the path binds.
    All,
    /// `body: "field"`: that top-level field (its proto name); the others the path does not
    /// bind come from the query.
    Field(&'static str),
}

/// A message's fields, as the path and the query set them: each by its proto and JSON
/// names, with the kind of value it takes.
#[derive(Debug)]
pub struct FieldTable {
    /// The message's full name, `package.Message`.
    pub message: &'static str,
    /// Its fields, in declaration order.
    pub fields: &'static [Field],
}

impl FieldTable {
    /// The field called `name`, by its proto name or its JSON name.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields
            .iter()
            .find(|field| field.name == name || field.json_name == name)
    }
}

/// One field of a [`FieldTable`].
#[derive(Debug)]
pub struct Field {
    /// Its name in the proto: `display_name`.
    pub name: &'static str,
    /// Its JSON name: `displayName`.
    pub json_name: &'static str,
    /// The kind of its values.
    pub kind: FieldKind,
    /// Whether it is `repeated` (maps are [`FieldKind::Unsupported`]).
    pub repeated: bool,
    /// Its number, for the protobuf encoding.
    pub number: u32,
    /// How its values are written in the protobuf encoding, beyond what its kind says.
    pub encoding: Encoding,
    /// The oneof it is a member of, if any (not proto3 `optional`'s own): a request sets one
    /// member at most.
    pub oneof: Option<&'static str>,
}

/// How a field's value is written in the protobuf encoding, where its [`FieldKind`] (which
/// says what its text means) leaves a choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// The kind's usual form: a varint for integers, bools and enums, 4 or 8 bytes for
    /// `float` and `double`, length-delimited for strings, bytes and messages.
    Plain,
    /// `sint32`, `sint64`: a zigzag varint.
    ZigZag,
    /// `fixed32`, `sfixed32`, `fixed64`, `sfixed64`: 4 or 8 bytes.
    Fixed,
    /// A `google.protobuf` wrapper (`Int32Value`, ...): a message whose field 1 is the value,
    /// in its usual form.
    Wrapped,
}

/// The kind of a field's values, as a path or query string becomes its JSON value.
#[derive(Debug, Clone, Copy)]
pub enum FieldKind {
    /// `string`, and `google.protobuf.StringValue`: the string as it is.
    String,
    /// `bytes`, and `BytesValue`: base64, either alphabet.
    Bytes,
    /// `bool`, and `BoolValue`: `true` or `false`.
    Bool,
    /// `int32`, `sint32`, `sfixed32`, and `Int32Value`.
    Int32,
    /// `uint32`, `fixed32`, and `UInt32Value`.
    UInt32,
    /// `int64`, `sint64`, `sfixed64`, and `Int64Value`: a JSON string, as ProtoJSON writes them.
    Int64,
    /// `uint64`, `fixed64`, and `UInt64Value`: a JSON string.
    UInt64,
    /// `float`, and `FloatValue`.
    Float,
    /// `double`, and `DoubleValue`.
    Double,
    /// An enum: a value's name or number.
    Enum(&'static EnumValues),
    /// `google.protobuf.Timestamp`: RFC 3339 (`2024-01-01T00:00:00Z`).
    Timestamp,
    /// `google.protobuf.Duration`: seconds with an `s` (`1.5s`).
    Duration,
    /// `google.protobuf.FieldMask`: paths joined by commas.
    FieldMask,
    /// A message: the query sets its fields one by one (`page.size=10`).
    Message(&'static FieldTable),
    /// What no path or query string sets: maps, `Struct`, `Value`, `ListValue`, `Any`,
    /// `Empty`, `NullValue` (the body can).
    Unsupported,
}

/// An enum's values, by name (aliases included) and number.
#[derive(Debug)]
pub struct EnumValues {
    /// The enum's full name, `package.Enum`.
    pub name: &'static str,
    /// Whether any number is a value (proto3's open enums), or only those declared.
    pub open: bool,
    /// Each name with its number.
    pub values: &'static [(&'static str, i32)],
}
