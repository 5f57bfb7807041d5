//! An OpenAPI 3.1 document per service with `google.api.http` rules, written from the rules
//! that passed their checks and the same descriptors: what a REST client of the transcoded
//! service sees, in ProtoJSON's shapes.
//!
//! - `paths`: one operation per binding (the rule and each of its `additional_bindings`),
//!   `operationId` `Service_Method`, `Service_Method_1`, ... for the additional ones. A
//!   variable that is one segment (`{name}`, `{path=**}`) is one path parameter named after its
//!   field; a variable spanning segments (`{name=shelves/*/books/*}`) is written out, each
//!   wildcard a parameter named after the literal before it (`/v1/shelves/{shelves}/books/
//!   {books}`), since an OpenAPI path parameter cannot hold a `/` and the server keeps an
//!   encoded one (`%2F`) as written. Templates of the same shape get the same parameter names,
//!   so they share a path item, as OpenAPI asks. A verb stays literal (`.../{books}:archive`).
//! - Methods: GET, PUT, POST, DELETE, PATCH and custom HEAD, OPTIONS and TRACE are operations;
//!   OpenAPI has no place for other custom methods nor for `*` (any method), which go in the
//!   path item's `x-fastgrpc-other-methods`, by method, in the same form.
//! - Parameters: the path's, then, unless the body is `*`, a query parameter for every field
//!   a query can set that the path and the body do not (`page.size`, JSON names; repeated
//!   fields as exploded arrays).
//! - Bodies: `*` is the request message without the fields the path sets, a body field that
//!   field's schema, `google.api.HttpBody` any bytes (`*/*`). The `200` reply likewise, or its
//!   `response_body` field; a server stream is NDJSON or server-sent events of the replies.
//!   `default` is the error: a `google.rpc.Status`.
//! - `components.schemas`: every message and enum reachable, by full name, in ProtoJSON:
//!   JSON names, 64-bit integers as strings, enums by name, bytes as base64, maps as objects,
//!   the well-known types in their JSON forms. The protos' comments are the descriptions.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorSet,
    MethodDescriptorProto, ServiceDescriptorProto,
};

use super::template::{Segment, Template, is_literal_byte};
use super::{Binding, Body, Kind, json_name, kind};
use crate::json::Types;

/// `google.api.HttpBody`: raw bytes with their content type, not JSON.
const HTTP_BODY: &str = ".google.api.HttpBody";

/// How deep query parameters go into nested messages (`a.b.c` is 3).
const MAX_QUERY_DEPTH: usize = 8;

/// The document of `service` (full name `service_name`), from the bindings of its methods.
pub(super) fn document(
    types: &Types<'_>,
    docs: &Docs,
    service_name: &str,
    service: &ServiceDescriptorProto,
    checked: &[(&MethodDescriptorProto, Binding)],
) -> Json {
    let short_name = service.name();
    let service_doc = docs.get(Item::Service, service_name);
    let mut schemas = Schemas::new(types, docs);
    let mut paths = Paths::default();
    let mut bindings_seen: HashMap<&str, usize> = HashMap::new();
    let mut operation_ids = BTreeSet::new();
    for (method, binding) in checked {
        let count = bindings_seen.entry(method.name()).or_default();
        let mut operation_id = match *count {
            0 => format!("{short_name}_{}", method.name()),
            index => format!("{short_name}_{}_{index}", method.name()),
        };
        *count += 1;
        // A method named like another's additional binding (`Search_1`) must not share its id.
        while !operation_ids.insert(operation_id.clone()) {
            operation_id.push('_');
        }
        let method_name = format!("{service_name}.{}", method.name());
        let (key, path_params) = paths.path_of(&binding.template);
        let mut parameters: Vec<Json> = path_params
            .iter()
            .map(|param| path_parameter(&mut schemas, method.input_type(), param))
            .collect();
        if !matches!(binding.body, Body::All) {
            let body_field = match &binding.body {
                Body::Field(field) => Some(field.as_str()),
                _ => None,
            };
            let bound: Vec<&[String]> = binding
                .template
                .variables
                .iter()
                .map(|variable| variable.field.as_slice())
                .collect();
            let mut query = Query {
                schemas: &mut schemas,
                bound: &bound,
                body_field,
                out: &mut parameters,
                within: vec![method.input_type().to_owned()],
            };
            query.message(method.input_type(), &mut Vec::new(), &mut Vec::new());
        }
        let mut operation = Json::object()
            .with("tags", Json::Array(vec![short_name.into()]))
            .with("operationId", operation_id.into());
        if let Some(doc) = docs.get(Item::Method, &method_name) {
            operation = operation.with("description", doc.into());
        }
        if !parameters.is_empty() {
            operation = operation.with("parameters", Json::Array(parameters));
        }
        if let Some(body) = request_body(&mut schemas, method, binding) {
            operation = operation.with("requestBody", body);
        }
        operation = operation.with("responses", responses(&mut schemas, method, binding));
        if method
            .options
            .as_ref()
            .is_some_and(|options| options.deprecated())
        {
            operation = operation.with("deprecated", true.into());
        }
        paths.add(key, &binding.http_method, operation);
    }
    let mut info = Json::object()
        .with("title", service_name.into())
        .with("version", version(service_name).into());
    if let Some(doc) = &service_doc {
        info = info.with("description", doc.as_str().into());
    }
    let mut tag = Json::object().with("name", short_name.into());
    if let Some(doc) = service_doc {
        tag = tag.with("description", doc.into());
    }
    Json::object()
        .with("openapi", "3.1.0".into())
        .with("info", info)
        .with("tags", Json::Array(vec![tag]))
        .with("paths", paths.into_json())
        .with(
            "components",
            Json::object().with("schemas", schemas.into_components()),
        )
}

/// The API's version for `info.version`: the last part of the package that looks like one
/// (`v1`, `v2beta1`), else `0`.
fn version(service_name: &str) -> String {
    service_name
        .split('.')
        .rev()
        .skip(1)
        .find(|part| {
            part.strip_prefix('v')
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .unwrap_or("0")
        .to_owned()
}

/// The comments of the protos, by the element they precede or follow.
#[derive(Default)]
pub(super) struct Docs {
    by_item: HashMap<(Item, String), String>,
}

/// What a comment documents; with the element's full name (`.pkg.Message`,
/// `.pkg.Message.field`, `pkg.Service`, `pkg.Service.Method`) it is the key of a comment.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Item {
    Message,
    Field,
    Enum,
    Value,
    Service,
    Method,
}

// Field numbers in `google/protobuf/descriptor.proto`, which make up source locations' paths.
const FILE_MESSAGE: i32 = 4;
const FILE_ENUM: i32 = 5;
const FILE_SERVICE: i32 = 6;
const MESSAGE_FIELD: i32 = 2;
const MESSAGE_NESTED: i32 = 3;
const MESSAGE_ENUM: i32 = 4;
const ENUM_VALUE: i32 = 2;
const SERVICE_METHOD: i32 = 2;

impl Docs {
    pub(super) fn new(fds: &FileDescriptorSet) -> Self {
        let mut docs = Docs::default();
        for file in &fds.file {
            let Some(info) = &file.source_code_info else {
                continue;
            };
            let comments: HashMap<&[i32], String> = info
                .location
                .iter()
                .filter_map(|location| {
                    let parts: Vec<String> =
                        [&location.leading_comments, &location.trailing_comments]
                            .into_iter()
                            .filter_map(|comment| comment.as_deref().map(clean_comment))
                            .filter(|comment| !comment.is_empty())
                            .collect();
                    (!parts.is_empty()).then(|| (location.path.as_slice(), parts.join("\n\n")))
                })
                .collect();
            let mut walk = Walk {
                comments: &comments,
                docs: &mut docs,
            };
            let scope = match file.package() {
                "" => String::new(),
                package => format!(".{package}"),
            };
            for (index, message) in file.message_type.iter().enumerate() {
                walk.message(vec![FILE_MESSAGE, index as i32], &scope, message);
            }
            for (index, enumeration) in file.enum_type.iter().enumerate() {
                walk.enumeration(vec![FILE_ENUM, index as i32], &scope, enumeration);
            }
            for (index, service) in file.service.iter().enumerate() {
                let path = vec![FILE_SERVICE, index as i32];
                let name = super::qualified(file.package(), service.name());
                walk.add(&path, Item::Service, name.clone());
                for (index, method) in service.method.iter().enumerate() {
                    let mut path = path.clone();
                    path.extend([SERVICE_METHOD, index as i32]);
                    walk.add(&path, Item::Method, format!("{name}.{}", method.name()));
                }
            }
        }
        docs
    }

    fn get(&self, item: Item, name: &str) -> Option<String> {
        self.by_item.get(&(item, name.to_owned())).cloned()
    }
}

/// A comment as prose: each line without the space after `//`, no blank lines around.
fn clean_comment(comment: &str) -> String {
    let lines: Vec<&str> = comment
        .lines()
        .map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end())
        .collect();
    lines.join("\n").trim().to_owned()
}

/// Names the comments of one file's elements, walking its descriptors along their paths.
struct Walk<'a> {
    comments: &'a HashMap<&'a [i32], String>,
    docs: &'a mut Docs,
}

impl Walk<'_> {
    fn add(&mut self, path: &[i32], item: Item, name: String) {
        if let Some(comment) = self.comments.get(path) {
            self.docs.by_item.insert((item, name), comment.clone());
        }
    }

    fn message(&mut self, path: Vec<i32>, scope: &str, message: &DescriptorProto) {
        let name = format!("{scope}.{}", message.name());
        self.add(&path, Item::Message, name.clone());
        for (index, field) in message.field.iter().enumerate() {
            let mut path = path.clone();
            path.extend([MESSAGE_FIELD, index as i32]);
            self.add(&path, Item::Field, format!("{name}.{}", field.name()));
        }
        for (index, nested) in message.nested_type.iter().enumerate() {
            let mut path = path.clone();
            path.extend([MESSAGE_NESTED, index as i32]);
            self.message(path, &name, nested);
        }
        for (index, enumeration) in message.enum_type.iter().enumerate() {
            let mut path = path.clone();
            path.extend([MESSAGE_ENUM, index as i32]);
            self.enumeration(path, &name, enumeration);
        }
    }

    fn enumeration(&mut self, path: Vec<i32>, scope: &str, enumeration: &EnumDescriptorProto) {
        let name = format!("{scope}.{}", enumeration.name());
        self.add(&path, Item::Enum, name.clone());
        for (index, value) in enumeration.value.iter().enumerate() {
            let mut path = path.clone();
            path.extend([ENUM_VALUE, index as i32]);
            self.add(&path, Item::Value, format!("{name}.{}", value.name()));
        }
    }
}

/// The document's path items, in the order their first operation came.
#[derive(Default)]
struct Paths {
    items: Vec<(String, PathItem)>,
    /// The parameter names given to each template shape (its literals, `None` for a
    /// parameter, and the verb), so that templates alike but for their variables' names get
    /// one path item.
    names: HashMap<Shape, Vec<String>>,
}

/// A template's segments as a path has them (a literal, or `None` for a parameter), and its
/// verb.
type Shape = (Vec<Option<String>>, Option<String>);

#[derive(Default)]
struct PathItem {
    operations: Vec<(String, Json)>,
    /// Operations of methods OpenAPI has no place for, by method.
    others: Vec<(String, Json)>,
}

/// One parameter of a path: a wildcard segment and what it sets.
struct PathParam {
    name: String,
    /// The field of the variable it belongs to, if any.
    field: Option<Vec<String>>,
    /// Whether it is the variable's one segment, so that its value is the field's.
    whole: bool,
    /// Whether it is `**`.
    rest: bool,
    /// The variable's segments with the parameters' names, as text (`shelves/{shelves}`).
    variable_text: String,
}

impl Paths {
    /// The OpenAPI path of `template` and its parameters, in order.
    fn path_of(&mut self, template: &Template) -> (String, Vec<PathParam>) {
        let variable_at = |index: usize| {
            template
                .variables
                .iter()
                .find(|variable| variable.start <= index && index < variable.end)
        };
        let mut shape = Vec::new();
        let mut natural = Vec::new();
        for (index, segment) in template.segments.iter().enumerate() {
            let Segment::Literal(literal) = segment else {
                shape.push(None);
                // The literal before the wildcard names it, if it is within the same variable
                // (or both are in none): `shelves/{shelves}`.
                let variable = variable_at(index);
                let before = index
                    .checked_sub(1)
                    .filter(|&at| variable.is_none_or(|variable| at >= variable.start))
                    .filter(|&at| variable.is_some() || variable_at(at).is_none());
                let before = match before.map(|at| &template.segments[at]) {
                    Some(Segment::Literal(literal)) if is_name(literal) => Some(literal.clone()),
                    _ => None,
                };
                let name = match variable {
                    Some(variable) if variable.end - variable.start == 1 => {
                        variable.field.join(".")
                    }
                    Some(variable) => before.unwrap_or_else(|| {
                        let ordinal = template.segments[variable.start..index]
                            .iter()
                            .filter(|segment| !matches!(segment, Segment::Literal(_)))
                            .count();
                        format!("{}.{}", variable.field.join("."), ordinal + 1)
                    }),
                    None => before.unwrap_or_else(|| format!("segment{}", index + 1)),
                };
                natural.push(name);
                continue;
            };
            shape.push(Some(literal.clone()));
        }
        let mut unique: Vec<String> = Vec::new();
        for name in natural {
            let mut candidate = name.clone();
            let mut counter = 1;
            while unique.contains(&candidate) {
                counter += 1;
                candidate = format!("{name}_{counter}");
            }
            unique.push(candidate);
        }
        let names = self
            .names
            .entry((shape.clone(), template.verb.clone()))
            .or_insert(unique)
            .clone();

        let mut key = String::new();
        let mut names_iter = names.iter();
        let mut segment_names = Vec::new();
        for part in &shape {
            key.push('/');
            match part {
                Some(literal) => encode(literal, &mut key),
                None => {
                    let name = names_iter.next().expect("a name per parameter");
                    key.push('{');
                    key.push_str(name);
                    key.push('}');
                    segment_names.push(Some(name.clone()));
                    continue;
                }
            }
            segment_names.push(None);
        }
        if key.is_empty() {
            key.push('/');
        }
        if let Some(verb) = &template.verb {
            key.push(':');
            encode(verb, &mut key);
        }
        let mut params = Vec::new();
        for (index, segment) in template.segments.iter().enumerate() {
            let Some(name) = &segment_names[index] else {
                continue;
            };
            let variable = variable_at(index);
            let variable_text = variable
                .map(|variable| {
                    (variable.start..variable.end)
                        .map(|at| match (&template.segments[at], &segment_names[at]) {
                            (_, Some(name)) => format!("{{{name}}}"),
                            (Segment::Literal(literal), None) => literal.clone(),
                            (_, None) => String::new(),
                        })
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or_default();
            params.push(PathParam {
                name: name.clone(),
                field: variable.map(|variable| variable.field.clone()),
                whole: variable.is_some_and(|variable| variable.end - variable.start == 1),
                rest: *segment == Segment::Rest,
                variable_text,
            });
        }
        (key, params)
    }

    fn add(&mut self, key: String, http_method: &str, operation: Json) {
        let at = match self.items.iter().position(|(known, _)| *known == key) {
            Some(at) => at,
            None => {
                self.items.push((key, PathItem::default()));
                self.items.len() - 1
            }
        };
        let item = &mut self.items[at].1;
        match http_method {
            "GET" | "PUT" | "POST" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS" | "TRACE" => item
                .operations
                .push((http_method.to_ascii_lowercase(), operation)),
            other => item.others.push((other.to_owned(), operation)),
        }
    }

    fn into_json(self) -> Json {
        let mut paths = Json::object();
        for (key, item) in self.items {
            let mut json = Json::Object(item.operations);
            if !item.others.is_empty() {
                json = json.with("x-fastgrpc-other-methods", Json::Object(item.others));
            }
            paths = paths.with(&key, json);
        }
        paths
    }
}

/// Whether a literal can name a parameter as it is.
fn is_name(literal: &str) -> bool {
    !literal.is_empty()
        && literal
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"_-.".contains(&byte))
}

/// Appends a literal to an OpenAPI path, percent-encoding what a template's literal may hold
/// once decoded but a path may not (`{`, `?`, spaces, ...).
fn encode(literal: &str, out: &mut String) {
    for &byte in literal.as_bytes() {
        if is_literal_byte(byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
}

fn path_parameter(schemas: &mut Schemas<'_>, request: &str, param: &PathParam) -> Json {
    let field = param
        .field
        .as_ref()
        .and_then(|path| schemas.field_at(request, path));
    let field_doc = field.as_ref().and_then(|(message, field)| {
        schemas
            .docs
            .get(Item::Field, &format!("{message}.{}", field.name()))
    });
    let field_path = param.field.as_ref().map(|path| path.join("."));
    let (schema, note) = match (&field_path, param.whole, param.rest) {
        (Some(path), true, false) => {
            let schema = match field {
                Some((_, field)) => schemas.value_schema(field),
                None => string(),
            };
            (schema, format!("Sets `{path}`."))
        }
        (Some(path), true, true) => (
            string(),
            format!(
                "Sets `{path}` to the rest of the path, `/`s included: they are sent as they \
                 are, since an encoded `/` (`%2F`) stays encoded in the field."
            ),
        ),
        (Some(path), false, rest) => (
            string(),
            format!(
                "{} of `{path}`, which the path sets to `{}`.",
                if rest {
                    "The last segments, `/`s included,"
                } else {
                    "One segment"
                },
                param.variable_text
            ),
        ),
        (None, _, false) => (string(), "Any one segment; it sets no field.".to_owned()),
        (None, _, true) => (
            string(),
            "The rest of the path; it sets no field.".to_owned(),
        ),
    };
    let description = match field_doc {
        Some(doc) => format!("{note}\n\n{doc}"),
        None => note,
    };
    Json::object()
        .with("name", param.name.as_str().into())
        .with("in", "path".into())
        .with("required", true.into())
        .with("description", description.into())
        .with("schema", schema)
}

/// The query parameters of a request: every field a query can set, but those the path or the
/// body sets.
struct Query<'q, 's> {
    schemas: &'q mut Schemas<'s>,
    bound: &'q [&'q [String]],
    body_field: Option<&'q str>,
    out: &'q mut Vec<Json>,
    /// The messages the walk is in, outermost first.
    within: Vec<String>,
}

impl Query<'_, '_> {
    /// The parameters of `message`'s fields, whose field path so far is `proto_path`
    /// (`json_path` by JSON names).
    fn message(
        &mut self,
        message: &str,
        proto_path: &mut Vec<String>,
        json_path: &mut Vec<String>,
    ) {
        let Some(descriptor) = self.schemas.types.messages.get(message).copied() else {
            return;
        };
        for field in &descriptor.field {
            if proto_path.is_empty() && self.body_field == Some(field.name()) {
                continue;
            }
            proto_path.push(field.name().to_owned());
            json_path.push(json_name(field));
            match kind(self.schemas.types, field) {
                Kind::Unsupported => {}
                Kind::Message(nested) => {
                    // A repeated message cannot be set from a query; a message within itself
                    // would lead nowhere.
                    if field.label() != Label::Repeated
                        && !self.within.contains(&nested)
                        && proto_path.len() < MAX_QUERY_DEPTH
                        && !self.bound.contains(&proto_path.as_slice())
                    {
                        self.within.push(nested.clone());
                        self.message(&nested, proto_path, json_path);
                        self.within.pop();
                    }
                }
                _ if self.bound.contains(&proto_path.as_slice()) => {}
                _ => {
                    let parameter = self.parameter(message, field, &json_path.join("."));
                    self.out.push(parameter);
                }
            }
            proto_path.pop();
            json_path.pop();
        }
    }

    fn parameter(&mut self, message: &str, field: &FieldDescriptorProto, name: &str) -> Json {
        let value = self.schemas.value_schema(field);
        let repeated = field.label() == Label::Repeated;
        let schema = if repeated {
            Json::object()
                .with("type", "array".into())
                .with("items", value)
        } else {
            value
        };
        let mut parameter = Json::object()
            .with("name", name.into())
            .with("in", "query".into());
        if let Some(doc) = self
            .schemas
            .docs
            .get(Item::Field, &format!("{message}.{}", field.name()))
        {
            parameter = parameter.with("description", doc.into());
        }
        if is_deprecated(field) {
            parameter = parameter.with("deprecated", true.into());
        }
        if repeated {
            parameter = parameter
                .with("style", "form".into())
                .with("explode", true.into());
        }
        parameter.with("schema", schema)
    }
}

fn request_body(
    schemas: &mut Schemas<'_>,
    method: &MethodDescriptorProto,
    binding: &Binding,
) -> Option<Json> {
    let request = method.input_type();
    let (description, content) = match &binding.body {
        Body::None => return None,
        Body::All if request == HTTP_BODY => (
            "The body's bytes, as they are, with their content type.".to_owned(),
            binary(),
        ),
        Body::All => {
            // The path's values replace what the body says of their fields; those at the top
            // are left out of the body's schema.
            let bound: Vec<&str> = binding
                .template
                .variables
                .iter()
                .filter(|variable| variable.field.len() == 1)
                .map(|variable| variable.field[0].as_str())
                .collect();
            let schema = if bound.is_empty() {
                schemas.message_value(request)
            } else {
                schemas.message_schema(request, &bound)
            };
            (
                format!("`{}`, as ProtoJSON.", request.trim_start_matches('.')),
                json_content(schema),
            )
        }
        Body::Field(name) => {
            let field = schemas
                .types
                .messages
                .get(request)
                .and_then(|message| message.field.iter().find(|field| field.name() == name))?;
            if field.type_name() == HTTP_BODY && field.label() != Label::Repeated {
                (
                    format!("The bytes of `{name}`, as they are, with their content type."),
                    binary(),
                )
            } else {
                (
                    format!("The request's `{name}`, as ProtoJSON."),
                    json_content(schemas.field_schema(request, field)),
                )
            }
        }
    };
    Some(
        Json::object()
            .with("description", description.into())
            .with("content", content),
    )
}

fn responses(schemas: &mut Schemas<'_>, method: &MethodDescriptorProto, binding: &Binding) -> Json {
    let reply = method.output_type();
    let reply_name = reply.trim_start_matches('.');
    let field = binding.response_body.as_ref().and_then(|json| {
        schemas
            .types
            .messages
            .get(reply)
            .and_then(|message| message.field.iter().find(|field| json_name(field) == *json))
    });
    let (what, bytes) = match field {
        Some(field) => (
            format!("The reply's `{}`", field.name()),
            field.type_name() == HTTP_BODY && field.label() != Label::Repeated,
        ),
        None => (format!("`{reply_name}`"), reply == HTTP_BODY),
    };
    let (description, content) = if bytes {
        (format!("{what}: bytes with their content type."), binary())
    } else {
        let schema = match field {
            Some(field) => schemas.field_schema(reply, field),
            None => schemas.message_value(reply),
        };
        if method.server_streaming() {
            (
                format!(
                    "A stream of replies, each {}: one JSON value a line (NDJSON), or one \
                     a server-sent event's data.",
                    lowercase_first(&what)
                ),
                Json::object()
                    .with(
                        "application/x-ndjson",
                        Json::object().with("schema", schema),
                    )
                    .with("text/event-stream", Json::object().with("schema", string())),
            )
        } else {
            (format!("{what}, as ProtoJSON."), json_content(schema))
        }
    };
    let error = Json::object()
        .with(
            "description",
            "The error: a `google.rpc.Status`, with the HTTP status of its code.".into(),
        )
        .with("content", json_content(reference("google.rpc.Status")));
    Json::object()
        .with(
            "200",
            Json::object()
                .with("description", description.into())
                .with("content", content),
        )
        .with("default", error)
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) if first.is_ascii_uppercase() => {
            first.to_ascii_lowercase().to_string() + chars.as_str()
        }
        _ => text.to_owned(),
    }
}

fn json_content(schema: Json) -> Json {
    Json::object().with("application/json", Json::object().with("schema", schema))
}

/// Any content type, any bytes: OpenAPI 3.1 leaves the schema out for raw bodies.
fn binary() -> Json {
    Json::object().with("*/*", Json::object())
}

fn string() -> Json {
    Json::object().with("type", "string".into())
}

fn reference(component: &str) -> Json {
    Json::object().with("$ref", format!("#/components/schemas/{component}").into())
}

fn is_deprecated(field: &FieldDescriptorProto) -> bool {
    field
        .options
        .as_ref()
        .is_some_and(|options| options.deprecated())
}

/// The schemas of the messages and enums the document refers to, gathered as they are.
struct Schemas<'a> {
    types: &'a Types<'a>,
    docs: &'a Docs,
    /// Types referred to, by full name (`.pkg.Message`), and those whose schemas are still to
    /// write.
    referred: BTreeSet<String>,
    queue: VecDeque<String>,
}

/// The error every operation may answer, as `google.rpc.Status`'s ProtoJSON.
const STATUS: &str = ".google.rpc.Status";

impl<'a> Schemas<'a> {
    fn new(types: &'a Types<'a>, docs: &'a Docs) -> Self {
        Schemas {
            types,
            docs,
            // Written by hand below, whether or not the protos import it.
            referred: BTreeSet::from([STATUS.to_owned()]),
            queue: VecDeque::new(),
        }
    }

    /// The field `path` names from `request`, with the message holding it.
    fn field_at(
        &self,
        request: &str,
        path: &[String],
    ) -> Option<(String, &'a FieldDescriptorProto)> {
        let mut message = request.to_owned();
        let (last, parents) = path.split_last()?;
        for name in parents {
            let field = self
                .types
                .messages
                .get(&message)?
                .field
                .iter()
                .find(|field| field.name() == name)?;
            message = field.type_name().to_owned();
        }
        let field = self
            .types
            .messages
            .get(&message)?
            .field
            .iter()
            .find(|field| field.name() == last)?;
        Some((message, field))
    }

    /// A reference to the schema of the message or enum `full_name`, which is then written.
    fn refer(&mut self, full_name: &str) -> Json {
        if self.referred.insert(full_name.to_owned()) {
            self.queue.push_back(full_name.to_owned());
        }
        reference(full_name.trim_start_matches('.'))
    }

    /// The schema of a field of `message`, its comment and deprecation included.
    fn field_schema(&mut self, message: &str, field: &FieldDescriptorProto) -> Json {
        let mut schema = if let Some((key, value)) = self.types.map_entry(field.type_name()) {
            let mut map = Json::object()
                .with("type", "object".into())
                .with("additionalProperties", self.value_schema(value));
            let keys = match key.r#type() {
                Type::Bool => Some("^(true|false)$"),
                Type::String => None,
                Type::Uint32 | Type::Uint64 | Type::Fixed32 | Type::Fixed64 => Some("^[0-9]+$"),
                _ => Some("^-?[0-9]+$"),
            };
            if let Some(pattern) = keys {
                map = map.with(
                    "propertyNames",
                    Json::object().with("pattern", pattern.into()),
                );
            }
            map
        } else if field.label() == Label::Repeated {
            Json::object()
                .with("type", "array".into())
                .with("items", self.value_schema(field))
        } else {
            self.value_schema(field)
        };
        let mut description = self
            .docs
            .get(Item::Field, &format!("{message}.{}", field.name()));
        if let Some(index) = field.oneof_index
            && !field.proto3_optional()
        {
            let oneof = self
                .types
                .messages
                .get(message)
                .and_then(|message| message.oneof_decl.get(index as usize))
                .map(|oneof| oneof.name().to_owned())
                .unwrap_or_default();
            let note =
                format!("A member of the oneof `{oneof}`: at most one of its fields is set.");
            description = Some(match description {
                Some(doc) => format!("{doc}\n\n{note}"),
                None => note,
            });
        }
        if let Some(description) = description {
            schema = schema.with("description", description.into());
        }
        if is_deprecated(field) {
            schema = schema.with("deprecated", true.into());
        }
        schema
    }

    /// The schema of one value of a field: an element of a list or a map's value.
    fn value_schema(&mut self, field: &FieldDescriptorProto) -> Json {
        match field.r#type() {
            Type::Enum if field.type_name() == ".google.protobuf.NullValue" => {
                Json::object().with("type", "null".into())
            }
            Type::Enum => self.refer(field.type_name()),
            Type::Message | Type::Group => self.message_value(field.type_name()),
            scalar => scalar_schema(scalar),
        }
    }

    /// A message where a value of it goes: a well-known type's schema, or a reference.
    fn message_value(&mut self, full_name: &str) -> Json {
        well_known(full_name).unwrap_or_else(|| self.refer(full_name))
    }

    /// The schema of the message `full_name`, without the fields `left_out`.
    fn message_schema(&mut self, full_name: &str, left_out: &[&str]) -> Json {
        let Some(message) = self.types.messages.get(full_name).copied() else {
            return Json::object().with("type", "object".into());
        };
        let mut properties = Json::object();
        let mut required = Vec::new();
        for field in &message.field {
            if left_out.contains(&field.name()) {
                continue;
            }
            let name = json_name(field);
            if field.label() == Label::Required {
                required.push(Json::from(name.as_str()));
            }
            properties = properties.with(&name, self.field_schema(full_name, field));
        }
        let mut schema = Json::object().with("type", "object".into());
        if let Some(doc) = self.docs.get(Item::Message, full_name) {
            schema = schema.with("description", doc.into());
        }
        schema = schema.with("properties", properties);
        if !required.is_empty() {
            schema = schema.with("required", Json::Array(required));
        }
        schema
    }

    fn enum_schema(&self, full_name: &str) -> Json {
        let Some((enumeration, _)) = self.types.enums.get(full_name) else {
            return string();
        };
        let names: Vec<Json> = enumeration
            .value
            .iter()
            .map(|value| value.name().into())
            .collect();
        let mut description = self.docs.get(Item::Enum, full_name).unwrap_or_default();
        for value in &enumeration.value {
            if let Some(doc) = self
                .docs
                .get(Item::Value, &format!("{full_name}.{}", value.name()))
            {
                if !description.is_empty() {
                    description.push_str(if description.contains("\n- ") {
                        "\n"
                    } else {
                        "\n\n"
                    });
                }
                description.push_str(&format!("- `{}`: {}", value.name(), doc.replace('\n', " ")));
            }
        }
        let mut schema = Json::object().with("type", "string".into());
        if !description.is_empty() {
            schema = schema.with("description", description.into());
        }
        schema.with("enum", Json::Array(names))
    }

    /// `components.schemas`: every type referred to, and what those refer to, by name.
    fn into_components(mut self) -> Json {
        let mut written = BTreeMap::new();
        while let Some(full_name) = self.queue.pop_front() {
            let schema = if self.types.enums.contains_key(&full_name) {
                self.enum_schema(&full_name)
            } else {
                self.message_schema(&full_name, &[])
            };
            written.insert(full_name.trim_start_matches('.').to_owned(), schema);
        }
        written.insert(STATUS.trim_start_matches('.').to_owned(), status_schema());
        let mut components = Json::object();
        for (name, schema) in written {
            components = components.with(&name, schema);
        }
        components
    }
}

fn scalar_schema(scalar: Type) -> Json {
    let (kind, format) = match scalar {
        Type::Double => ("number", "double"),
        Type::Float => ("number", "float"),
        // ProtoJSON writes 64-bit integers as strings, which keeps them exact in JavaScript.
        Type::Int64 | Type::Sint64 | Type::Sfixed64 => ("string", "int64"),
        Type::Uint64 | Type::Fixed64 => ("string", "uint64"),
        Type::Int32 | Type::Sint32 | Type::Sfixed32 => ("integer", "int32"),
        Type::Uint32 | Type::Fixed32 => ("integer", "uint32"),
        Type::Bool => return Json::object().with("type", "boolean".into()),
        Type::Bytes => {
            return Json::object()
                .with("type", "string".into())
                .with("format", "byte".into())
                .with("contentEncoding", "base64".into());
        }
        Type::String | Type::Enum | Type::Message | Type::Group => return string(),
    };
    let schema = Json::object()
        .with("type", kind.into())
        .with("format", format.into());
    if format.starts_with('u') && kind == "integer" {
        schema.with("minimum", Json::Int(0))
    } else {
        schema
    }
}

/// The JSON form of a well-known type, which is no object of its fields.
fn well_known(full_name: &str) -> Option<Json> {
    let name = full_name.strip_prefix(".google.protobuf.")?;
    let object = || Json::object().with("type", "object".into());
    Some(match name {
        "Timestamp" => string().with("format", "date-time".into()),
        "Duration" => string().with("pattern", r"^-?[0-9]+(\.[0-9]{1,9})?s$".into()),
        // Field paths in lowerCamelCase, comma-separated.
        "FieldMask" => string(),
        "Struct" => object().with("additionalProperties", Json::object()),
        "Value" => Json::object(),
        "ListValue" => Json::object()
            .with("type", "array".into())
            .with("items", Json::object()),
        "Any" => any_schema(),
        "Empty" => object(),
        "DoubleValue" => scalar_schema(Type::Double),
        "FloatValue" => scalar_schema(Type::Float),
        "Int64Value" => scalar_schema(Type::Int64),
        "UInt64Value" => scalar_schema(Type::Uint64),
        "Int32Value" => scalar_schema(Type::Int32),
        "UInt32Value" => scalar_schema(Type::Uint32),
        "BoolValue" => scalar_schema(Type::Bool),
        "StringValue" => scalar_schema(Type::String),
        "BytesValue" => scalar_schema(Type::Bytes),
        _ => return None,
    })
}

/// `google.protobuf.Any` in JSON: the message's fields (or `value`, for a well-known type)
/// beside `@type`, its type's URL.
fn any_schema() -> Json {
    Json::object()
        .with("type", "object".into())
        .with("properties", Json::object().with("@type", string()))
        .with("required", Json::Array(vec!["@type".into()]))
        .with("additionalProperties", Json::object())
}

fn status_schema() -> Json {
    Json::object()
        .with("type", "object".into())
        .with(
            "description",
            "An error: its gRPC status code, a message for developers, and details for \
             programs, each an `Any` (google.rpc.ErrorInfo, BadRequest, ...)."
                .into(),
        )
        .with(
            "properties",
            Json::object()
                .with("code", scalar_schema(Type::Int32))
                .with("message", string())
                .with(
                    "details",
                    Json::object()
                        .with("type", "array".into())
                        .with("items", any_schema()),
                ),
        )
}

/// A JSON value, written in the order it was built.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Bool(bool),
    Int(i64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl From<&str> for Json {
    fn from(text: &str) -> Self {
        Json::String(text.to_owned())
    }
}

impl From<String> for Json {
    fn from(text: String) -> Self {
        Json::String(text)
    }
}

impl From<bool> for Json {
    fn from(value: bool) -> Self {
        Json::Bool(value)
    }
}

impl Json {
    fn object() -> Self {
        Json::Object(Vec::new())
    }

    /// The object with `key` set to `value`, replacing what it had there.
    fn with(self, key: &str, value: Json) -> Self {
        let Json::Object(mut members) = self else {
            unreachable!("`with` is called on objects");
        };
        match members.iter_mut().find(|(known, _)| known == key) {
            Some(member) => member.1 = value,
            None => members.push((key.to_owned(), value)),
        }
        Json::Object(members)
    }

    /// The value as JSON text: on one line, or indented by two spaces a level.
    pub(crate) fn to_text(&self, pretty: bool) -> String {
        let mut out = String::new();
        self.write(&mut out, pretty.then_some(0));
        if pretty {
            out.push('\n');
        }
        out
    }

    fn write(&self, out: &mut String, indent: Option<usize>) {
        let newline = |out: &mut String, level: usize| {
            if indent.is_some() {
                out.push('\n');
                out.push_str(&"  ".repeat(level));
            }
        };
        let level = indent.unwrap_or(0);
        let inner = indent.map(|level| level + 1);
        match self {
            Json::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
            Json::Int(value) => out.push_str(&value.to_string()),
            Json::String(text) => write_string(text, out),
            Json::Array(items) if items.is_empty() => out.push_str("[]"),
            Json::Object(members) if members.is_empty() => out.push_str("{}"),
            Json::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    newline(out, level + 1);
                    item.write(out, inner);
                }
                newline(out, level);
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (index, (key, value)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    newline(out, level + 1);
                    write_string(key, out);
                    out.push(':');
                    if indent.is_some() {
                        out.push(' ');
                    }
                    value.write(out, inner);
                }
                newline(out, level);
                out.push('}');
            }
        }
    }
}

fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_escapes_and_indents() {
        let value = Json::object()
            .with("a\"\n\u{1}", Json::Array(vec![Json::Int(-1), true.into()]))
            .with("empty", Json::object())
            .with("list", Json::Array(Vec::new()));
        assert_eq!(
            value.to_text(false),
            r#"{"a\"\n\u0001":[-1,true],"empty":{},"list":[]}"#
        );
        assert_eq!(
            value.to_text(true),
            "{\n  \"a\\\"\\n\\u0001\": [\n    -1,\n    true\n  ],\n  \"empty\": {},\n  \"list\": []\n}\n"
        );
    }

    #[test]
    fn the_version_comes_from_the_package() {
        assert_eq!(version("transcoding.v1.Echo"), "v1");
        assert_eq!(version("google.cloud.v2beta1.Things"), "v2beta1");
        assert_eq!(version("helloworld.Greeter"), "0");
        assert_eq!(version("v1"), "0");
    }

    fn paths_of(templates: &[&str]) -> Vec<(String, Vec<String>)> {
        let mut paths = Paths::default();
        templates
            .iter()
            .map(|text| {
                let template = super::super::template::parse(text).unwrap();
                let (key, params) = paths.path_of(&template);
                (key, params.into_iter().map(|param| param.name).collect())
            })
            .collect()
    }

    #[test]
    fn templates_become_openapi_paths() {
        let paths = paths_of(&[
            "/v1/{name=shelves/*/books/*}",
            "/v1/{book.name=shelves/*/books/*}:archive",
            "/v1/files/{path=**}",
            "/v1/{count}",
            "/v1/{name}",
            "/v1/*/x/*",
            "/v1/{a=*/*}/{b}",
            "/",
            "/v1/a%7Bb",
        ]);
        let expected: &[(&str, &[&str])] = &[
            ("/v1/shelves/{shelves}/books/{books}", &["shelves", "books"]),
            (
                "/v1/shelves/{shelves}/books/{books}:archive",
                &["shelves", "books"],
            ),
            ("/v1/files/{path}", &["path"]),
            ("/v1/{count}", &["count"]),
            // Alike but for the variable's name: the first names it, so one path item holds
            // both.
            ("/v1/{count}", &["count"]),
            ("/v1/{v1}/x/{x}", &["v1", "x"]),
            ("/v1/{a.1}/{a.2}/{b}", &["a.1", "a.2", "b"]),
            ("/", &[]),
            ("/v1/a%7Bb", &[]),
        ];
        let expected: Vec<(String, Vec<String>)> = expected
            .iter()
            .map(|(key, names)| {
                (
                    (*key).to_owned(),
                    names.iter().map(|name| (*name).to_owned()).collect(),
                )
            })
            .collect();
        assert_eq!(paths, expected);
    }

    #[test]
    fn comments_lose_their_markers_and_blank_lines() {
        assert_eq!(clean_comment(" One.\n Two.  \n\n"), "One.\nTwo.");
        assert_eq!(clean_comment("\n"), "");
    }
}
