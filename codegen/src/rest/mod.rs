//! REST transcoding at build time: each method's `google.api.http` rules read from the
//! compiled descriptors, checked, and written as the static tables the runtime matches
//! requests with (`fastgrpc::codegen::rest`).
//!
//! `google.api.http` is an extension of `MethodOptions`, which prost-types' descriptors drop
//! when they are decoded; the rules are read from the encoded descriptor set instead, through
//! the few messages below that keep just them.
//!
//! Checked, each failure a build error naming the method: the template parses (`template.rs`);
//! each variable names a field of the request, through singular message fields, ending on a
//! singular field of a primitive type (a scalar or an enum, as `google/api/http.proto` asks),
//! a string if the variable spans several segments, and no field twice; no body on GET or
//! DELETE; a `body` field and a `response_body` field exist at the top of their messages,
//! and the body field is not one the path binds; no `additional_bindings` inside an
//! additional binding; and no two rules of the services compiled together match the same
//! requests (the same HTTP method, and templates alike but for their variables' names).
//!
//! Each service with rules gets, in its server's module, `HTTP_RULES` (a
//! `fastgrpc::codegen::rest::Rule` a binding) and a field table per request message and
//! message within (which fields a path or query may set, by proto and JSON name, with their
//! kinds), and its server's `FastService::http_rules` answers them; and `OPENAPI`, the
//! service's OpenAPI 3.1 document (`openapi.rs`).

pub(crate) mod openapi;
pub(crate) mod template;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;

use heck::ToShoutySnakeCase;
use proc_macro2::{Ident, Literal, Span, TokenStream};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};
use quote::quote;

use self::template::{Segment, Template};
use crate::json::{Types, default_json_name};

/// The messages of `google/protobuf/descriptor.proto` and `google/api/http.proto` that lead
/// to the rules, with only the fields that do.
mod wire {
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct FileDescriptorSet {
        #[prost(message, repeated, tag = "1")]
        pub file: Vec<FileDescriptorProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct FileDescriptorProto {
        #[prost(string, tag = "2")]
        pub package: String,
        #[prost(message, repeated, tag = "6")]
        pub service: Vec<ServiceDescriptorProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ServiceDescriptorProto {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, repeated, tag = "2")]
        pub method: Vec<MethodDescriptorProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct MethodDescriptorProto {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "4")]
        pub options: Option<MethodOptions>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct MethodOptions {
        /// `google.api.http`, extension 72295728 of `MethodOptions`.
        #[prost(message, optional, tag = "72295728")]
        pub http: Option<HttpRule>,
    }

    /// `google.api.HttpRule`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct HttpRule {
        #[prost(oneof = "Pattern", tags = "2, 3, 4, 5, 6, 8")]
        pub pattern: Option<Pattern>,
        #[prost(string, tag = "7")]
        pub body: String,
        #[prost(string, tag = "12")]
        pub response_body: String,
        #[prost(message, repeated, tag = "11")]
        pub additional_bindings: Vec<HttpRule>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(crate) enum Pattern {
        #[prost(string, tag = "2")]
        Get(String),
        #[prost(string, tag = "3")]
        Put(String),
        #[prost(string, tag = "4")]
        Post(String),
        #[prost(string, tag = "5")]
        Delete(String),
        #[prost(string, tag = "6")]
        Patch(String),
        #[prost(message, tag = "8")]
        Custom(CustomHttpPattern),
    }

    /// `google.api.CustomHttpPattern`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct CustomHttpPattern {
        #[prost(string, tag = "1")]
        pub kind: String,
        #[prost(string, tag = "2")]
        pub path: String,
    }
}

pub(crate) use wire::HttpRule;

/// The `google.api.http` rule of each method that has one, by full name
/// (`package.Service.Method`), from an encoded `FileDescriptorSet`.
pub(crate) fn read_rules(encoded: &[u8]) -> io::Result<HashMap<String, HttpRule>> {
    let set: wire::FileDescriptorSet = prost::Message::decode(encoded)
        .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))?;
    let mut rules = HashMap::new();
    for file in set.file {
        for service in file.service {
            for method in service.method {
                if let Some(rule) = method.options.and_then(|options| options.http) {
                    let service = qualified(&file.package, &service.name);
                    rules.insert(format!("{service}.{}", method.name), rule);
                }
            }
        }
    }
    Ok(rules)
}

fn qualified(package: &str, name: &str) -> String {
    if package.is_empty() {
        name.to_owned()
    } else {
        format!("{package}.{name}")
    }
}

/// What a service with rules gets.
pub(crate) struct Generated {
    /// For its server's module: `HTTP_RULES`, the tables it refers to, and `OPENAPI`.
    pub(crate) code: TokenStream,
    /// Its OpenAPI document, indented for people to read.
    pub(crate) openapi: String,
}

/// What each service with rules (by full name, `package.Service`) gets. Every rule is checked
/// first; the failures, all of them, are one error.
pub(crate) fn generate(
    fds: &FileDescriptorSet,
    rules: &HashMap<String, HttpRule>,
) -> io::Result<BTreeMap<String, Generated>> {
    let types = Types::new(fds);
    let docs = openapi::Docs::new(fds);
    let mut errors = Vec::new();
    let mut services = BTreeMap::new();
    // Each (HTTP method, template shape) and the first method that has it.
    let mut taken: HashMap<(String, Vec<Segment>, Option<String>), String> = HashMap::new();
    for file in &fds.file {
        for service in &file.service {
            let service_name = qualified(file.package(), service.name());
            let mut checked = Vec::new();
            for method in &service.method {
                let full_name = format!("{service_name}.{}", method.name());
                let Some(rule) = rules.get(&full_name) else {
                    continue;
                };
                let context = Method {
                    types: &types,
                    full_name: &full_name,
                    request: method.input_type(),
                    response: method.output_type(),
                    client_streaming: method.client_streaming(),
                };
                let mut bindings = vec![(rule, false)];
                bindings.extend(rule.additional_bindings.iter().map(|rule| (rule, true)));
                for (rule, additional) in bindings {
                    match context.check(rule, additional) {
                        Ok(binding) => {
                            let shape = (
                                binding.http_method.clone(),
                                binding.template.segments.clone(),
                                binding.template.verb.clone(),
                            );
                            match taken.get(&shape) {
                                Some(first) => errors.push(format!(
                                    "{first} and {full_name}: both answer {} {} (templates alike \
                                     but for their variables' names)",
                                    binding.http_method, binding.text
                                )),
                                None => {
                                    taken.insert(shape, full_name.clone());
                                }
                            }
                            checked.push((method, binding));
                        }
                        Err(error) => errors.push(error),
                    }
                }
            }
            if !checked.is_empty() {
                let document = openapi::document(&types, &docs, &service_name, service, &checked);
                let mut code = tables(&types, &service_name, &checked);
                let compact = document.to_text(false);
                let doc = format!(
                    " The OpenAPI 3.1 document of `{service_name}`'s REST face, as JSON: every \
                     `google.api.http` binding, its parameters, bodies and replies in ProtoJSON."
                );
                code.extend(quote! {
                    #[doc = #doc]
                    pub const OPENAPI: &str = #compact;
                });
                services.insert(
                    service_name.clone(),
                    Generated {
                        code,
                        openapi: document.to_text(true),
                    },
                );
            }
        }
    }
    if errors.is_empty() {
        Ok(services)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "google.api.http rules that fail their checks:\n{}",
                errors.join("\n")
            ),
        ))
    }
}

/// A rule that passed its checks.
struct Binding {
    /// `GET`, a custom method's name, or `*`.
    http_method: String,
    text: String,
    template: Template,
    body: Body,
    /// The reply's field that is the HTTP body, by its JSON name.
    response_body: Option<String>,
}

enum Body {
    None,
    All,
    Field(String),
}

/// The method whose rules are checked.
struct Method<'a> {
    types: &'a Types<'a>,
    full_name: &'a str,
    request: &'a str,
    response: &'a str,
    /// Whether the client sends a stream of messages, which a REST call cannot: it sends one.
    client_streaming: bool,
}

impl Method<'_> {
    fn check(&self, rule: &HttpRule, additional: bool) -> Result<Binding, String> {
        use wire::Pattern;
        let (http_method, text) = match &rule.pattern {
            Some(Pattern::Get(path)) => ("GET", path),
            Some(Pattern::Put(path)) => ("PUT", path),
            Some(Pattern::Post(path)) => ("POST", path),
            Some(Pattern::Delete(path)) => ("DELETE", path),
            Some(Pattern::Patch(path)) => ("PATCH", path),
            Some(Pattern::Custom(custom)) => (custom.kind.as_str(), &custom.path),
            None => {
                return Err(format!(
                    "{}: a google.api.http rule without an HTTP method and path",
                    self.full_name
                ));
            }
        };
        let fail = |reason: String| format!("{}: {http_method} {text:?}: {reason}", self.full_name);
        if http_method != "*" && !is_token(http_method) {
            return Err(fail(
                "a custom method's kind is an HTTP method's name, or `*`".into(),
            ));
        }
        if additional && !rule.additional_bindings.is_empty() {
            return Err(fail(
                "an additional binding cannot have additional bindings of its own".into(),
            ));
        }
        if self.client_streaming {
            return Err(fail(
                "the client streams its requests, and a REST call sends one; serve this method \
                 over gRPC or Connect only, or make its request a single message"
                    .into(),
            ));
        }
        let template = template::parse(text)
            .map_err(|error| fail(format!("the path template does not parse: {error}")))?;
        let request = self.message(self.request)?;
        let mut bound: Vec<&[String]> = Vec::new();
        for variable in &template.variables {
            let field = self.path_field(request, &variable.field).map_err(&fail)?;
            if variable.is_multi_segment(&template) && field.r#type() != Type::String {
                return Err(fail(format!(
                    "`{}` spans several segments, so it binds a string field, not a {:?}",
                    variable.field.join("."),
                    field.r#type()
                )));
            }
            if bound.contains(&variable.field.as_slice()) {
                return Err(fail(format!(
                    "`{}` is bound twice",
                    variable.field.join(".")
                )));
            }
            bound.push(&variable.field);
        }
        let body = match rule.body.as_str() {
            "" => Body::None,
            _ if matches!(http_method, "GET" | "DELETE") => {
                return Err(fail(format!("a {http_method} request has no body")));
            }
            "*" => Body::All,
            name => {
                if !request.field.iter().any(|field| field.name() == name) {
                    return Err(fail(format!(
                        "the body is `{name}`, which {} does not have",
                        self.request.trim_start_matches('.')
                    )));
                }
                if bound
                    .iter()
                    .any(|field| field.len() == 1 && field[0] == name)
                {
                    return Err(fail(format!("the body is `{name}`, which the path binds")));
                }
                Body::Field(name.to_owned())
            }
        };
        let response_body = match rule.response_body.as_str() {
            "" => None,
            name => {
                let response = self.message(self.response)?;
                let field = response
                    .field
                    .iter()
                    .find(|field| field.name() == name)
                    .ok_or_else(|| {
                        fail(format!(
                            "the response body is `{name}`, which {} does not have",
                            self.response.trim_start_matches('.')
                        ))
                    })?;
                Some(json_name(field))
            }
        };
        Ok(Binding {
            http_method: http_method.to_owned(),
            text: text.clone(),
            template,
            body,
            response_body,
        })
    }

    fn message(&self, full_name: &str) -> Result<&DescriptorProto, String> {
        self.types.messages.get(full_name).copied().ok_or_else(|| {
            format!(
                "{}: {full_name} is not among the compiled messages",
                self.full_name
            )
        })
    }

    /// The field a path variable binds, checked: singular messages on the way, a singular
    /// scalar or enum at the end.
    fn path_field<'m>(
        &'m self,
        request: &'m DescriptorProto,
        path: &[String],
    ) -> Result<&'m FieldDescriptorProto, String> {
        let mut message = request;
        let mut message_name = self.request;
        let (last, parents) = path.split_last().expect("a variable names a field");
        let named = |field: &FieldDescriptorProto| format!("`{}`", field.name());
        for name in parents {
            let field = find(message, message_name, name)?;
            if field.label() == Label::Repeated || field.r#type() != Type::Message {
                return Err(format!(
                    "{} in `{}` is not a singular message field",
                    named(field),
                    path.join(".")
                ));
            }
            message_name = field.type_name();
            message = self.message(message_name)?;
        }
        let field = find(message, message_name, last)?;
        if field.label() == Label::Repeated {
            return Err(format!(
                "`{}` is repeated: a path binds only singular fields",
                path.join(".")
            ));
        }
        match kind(self.types, field) {
            Kind::Message(_)
            | Kind::Timestamp
            | Kind::Duration
            | Kind::FieldMask
            | Kind::Unsupported => Err(format!(
                "`{}` is a message: a path binds only fields of primitive types",
                path.join(".")
            )),
            _ if field.r#type() == Type::Message => Err(format!(
                "`{}` is a message (a wrapper): a path binds only fields of primitive types",
                path.join(".")
            )),
            _ => Ok(field),
        }
    }
}

fn find<'m>(
    message: &'m DescriptorProto,
    message_name: &str,
    name: &str,
) -> Result<&'m FieldDescriptorProto, String> {
    message
        .field
        .iter()
        .find(|field| field.name() == name)
        .ok_or_else(|| {
            format!(
                "{} has no field `{name}`",
                message_name.trim_start_matches('.')
            )
        })
}

/// Whether `name` is an HTTP token (RFC 9110's `tchar`s), as a method's name is.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte))
}

fn json_name(field: &FieldDescriptorProto) -> String {
    field
        .json_name
        .clone()
        .unwrap_or_else(|| default_json_name(field.name()))
}

/// A field's kind, as the runtime's `FieldKind` has it.
enum Kind {
    String,
    Bytes,
    Bool,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float,
    Double,
    /// With the enum's full name.
    Enum(String),
    Timestamp,
    Duration,
    FieldMask,
    /// With the message's full name.
    Message(String),
    Unsupported,
}

fn kind(types: &Types<'_>, field: &FieldDescriptorProto) -> Kind {
    match field.r#type() {
        Type::String => Kind::String,
        Type::Bytes => Kind::Bytes,
        Type::Bool => Kind::Bool,
        Type::Int32 | Type::Sint32 | Type::Sfixed32 => Kind::Int32,
        Type::Uint32 | Type::Fixed32 => Kind::UInt32,
        Type::Int64 | Type::Sint64 | Type::Sfixed64 => Kind::Int64,
        Type::Uint64 | Type::Fixed64 => Kind::UInt64,
        Type::Float => Kind::Float,
        Type::Double => Kind::Double,
        Type::Enum if field.type_name() == ".google.protobuf.NullValue" => Kind::Unsupported,
        Type::Enum => Kind::Enum(field.type_name().to_owned()),
        Type::Message | Type::Group => match field.type_name() {
            ".google.protobuf.Timestamp" => Kind::Timestamp,
            ".google.protobuf.Duration" => Kind::Duration,
            ".google.protobuf.FieldMask" => Kind::FieldMask,
            // A wrapper's JSON is its bare value.
            ".google.protobuf.StringValue" => Kind::String,
            ".google.protobuf.BytesValue" => Kind::Bytes,
            ".google.protobuf.BoolValue" => Kind::Bool,
            ".google.protobuf.Int32Value" => Kind::Int32,
            ".google.protobuf.UInt32Value" => Kind::UInt32,
            ".google.protobuf.Int64Value" => Kind::Int64,
            ".google.protobuf.UInt64Value" => Kind::UInt64,
            ".google.protobuf.FloatValue" => Kind::Float,
            ".google.protobuf.DoubleValue" => Kind::Double,
            name if name.starts_with(".google.protobuf.") => Kind::Unsupported,
            name if types.map_entry(name).is_some() => Kind::Unsupported,
            name if types.messages.contains_key(name) => Kind::Message(name.to_owned()),
            _ => Kind::Unsupported,
        },
    }
}

/// `HTTP_RULES` of one service and the tables it refers to.
fn tables(
    types: &Types<'_>,
    service: &str,
    checked: &[(&prost_types::MethodDescriptorProto, Binding)],
) -> TokenStream {
    let mut names = StaticNames::default();
    let rules = checked.iter().map(|(method, binding)| {
        let path = format!("/{service}/{}", method.name());
        let name = method.name();
        let http_method = match binding.http_method.as_str() {
            "GET" => quote!(rest::HttpMethod::Get),
            "PUT" => quote!(rest::HttpMethod::Put),
            "POST" => quote!(rest::HttpMethod::Post),
            "DELETE" => quote!(rest::HttpMethod::Delete),
            "PATCH" => quote!(rest::HttpMethod::Patch),
            "*" => quote!(rest::HttpMethod::Any),
            custom => quote!(rest::HttpMethod::Custom(#custom)),
        };
        let template = template_tokens(&binding.text, &binding.template);
        let body = match &binding.body {
            Body::None => quote!(rest::Body::None),
            Body::All => quote!(rest::Body::All),
            Body::Field(field) => quote!(rest::Body::Field(#field)),
        };
        let response_body = option_tokens(binding.response_body.as_deref());
        let request = names.fields(method.input_type());
        let response = method.output_type().trim_start_matches('.');
        let server_streaming = method.server_streaming();
        quote! {
            rest::Rule {
                path: #path,
                method: #name,
                http_method: #http_method,
                template: #template,
                body: #body,
                response_body: #response_body,
                request: &#request,
                response: #response,
                server_streaming: #server_streaming,
            }
        }
    });
    let rules: Vec<TokenStream> = rules.collect();
    let doc = format!(
        " The `google.api.http` rules of `{service}`'s methods, one per binding, for REST \
         transcoding."
    );
    let statics = names.statics(types);
    quote! {
        #[doc = #doc]
        pub static HTTP_RULES: &[rest::Rule] = &[#(#rules),*];
        #statics
    }
}

fn template_tokens(text: &str, template: &Template) -> TokenStream {
    let segments = template.segments.iter().map(|segment| match segment {
        Segment::Literal(literal) => quote!(rest::Segment::Literal(#literal)),
        Segment::Any => quote!(rest::Segment::Any),
        Segment::Rest => quote!(rest::Segment::Rest),
    });
    let variables = template.variables.iter().map(|variable| {
        let field = &variable.field;
        let start = Literal::usize_unsuffixed(variable.start);
        let end = Literal::usize_unsuffixed(variable.end);
        quote!(rest::Variable { field: &[#(#field),*], start: #start, end: #end })
    });
    let verb = option_tokens(template.verb.as_deref());
    quote! {
        rest::Template {
            text: #text,
            segments: &[#(#segments),*],
            variables: &[#(#variables),*],
            verb: #verb,
        }
    }
}

fn option_tokens(value: Option<&str>) -> TokenStream {
    match value {
        Some(value) => quote!(Some(#value)),
        None => quote!(None),
    }
}

/// The statics a service's rules refer to: a field table per message reached from the
/// requests, a value table per enum, each named after its type.
#[derive(Default)]
struct StaticNames {
    /// Each type's static, by full name; and each name given, so that no two types share one.
    by_type: BTreeMap<String, Ident>,
    given: HashMap<String, String>,
    /// Messages whose tables are named but not written yet.
    queue: VecDeque<String>,
}

impl StaticNames {
    fn name(&mut self, full_name: &str, suffix: &str) -> Ident {
        if let Some(ident) = self.by_type.get(full_name) {
            return ident.clone();
        }
        let stem: Vec<String> = full_name
            .trim_start_matches('.')
            .split('.')
            .map(|part| part.to_shouty_snake_case())
            .collect();
        let mut name = format!("{}_{suffix}", stem.join("_"));
        let mut counter = 1;
        while self
            .given
            .get(&name)
            .is_some_and(|owner| owner != full_name)
        {
            counter += 1;
            name = format!("{}_{suffix}_{counter}", stem.join("_"));
        }
        self.given.insert(name.clone(), full_name.to_owned());
        let ident = Ident::new(&name, Span::call_site());
        self.by_type.insert(full_name.to_owned(), ident.clone());
        if suffix == "FIELDS" {
            self.queue.push_back(full_name.to_owned());
        }
        ident
    }

    fn fields(&mut self, message: &str) -> Ident {
        self.name(message, "FIELDS")
    }

    /// Writes the tables of every message named, and of what they reach.
    fn statics(&mut self, types: &Types<'_>) -> TokenStream {
        let mut out = TokenStream::new();
        while let Some(full_name) = self.queue.pop_front() {
            let ident = self.by_type[&full_name].clone();
            let message_name = full_name.trim_start_matches('.');
            let message = types.messages.get(&full_name);
            let fields: Vec<TokenStream> = message
                .map(|message| message.field.iter().collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .map(|field| {
                    // A proto3 `optional` field is in a oneof of its own, which is no choice.
                    let oneof = field
                        .oneof_index
                        .filter(|_| !field.proto3_optional())
                        .and_then(|index| message?.oneof_decl.get(usize::try_from(index).ok()?))
                        .map(|oneof| oneof.name());
                    self.field(types, field, oneof, &mut out)
                })
                .collect();
            out.extend(quote! {
                static #ident: rest::FieldTable = rest::FieldTable {
                    message: #message_name,
                    fields: &[#(#fields),*],
                };
            });
        }
        out
    }

    fn field(
        &mut self,
        types: &Types<'_>,
        field: &FieldDescriptorProto,
        oneof: Option<&str>,
        out: &mut TokenStream,
    ) -> TokenStream {
        let field_kind = kind(types, field);
        // A message field whose values are scalars is a wrapper (`Int32Value`, ...).
        let wrapper = field.r#type() == Type::Message
            && !matches!(
                field_kind,
                Kind::Message(_)
                    | Kind::Timestamp
                    | Kind::Duration
                    | Kind::FieldMask
                    | Kind::Unsupported
            );
        let kind = match field_kind {
            Kind::String => quote!(rest::FieldKind::String),
            Kind::Bytes => quote!(rest::FieldKind::Bytes),
            Kind::Bool => quote!(rest::FieldKind::Bool),
            Kind::Int32 => quote!(rest::FieldKind::Int32),
            Kind::UInt32 => quote!(rest::FieldKind::UInt32),
            Kind::Int64 => quote!(rest::FieldKind::Int64),
            Kind::UInt64 => quote!(rest::FieldKind::UInt64),
            Kind::Float => quote!(rest::FieldKind::Float),
            Kind::Double => quote!(rest::FieldKind::Double),
            Kind::Timestamp => quote!(rest::FieldKind::Timestamp),
            Kind::Duration => quote!(rest::FieldKind::Duration),
            Kind::FieldMask => quote!(rest::FieldKind::FieldMask),
            Kind::Unsupported => quote!(rest::FieldKind::Unsupported),
            Kind::Message(message) => {
                let ident = self.fields(&message);
                quote!(rest::FieldKind::Message(&#ident))
            }
            Kind::Enum(enumeration) => {
                let known = self.by_type.contains_key(&enumeration);
                let ident = self.name(&enumeration, "VALUES");
                if !known {
                    out.extend(enum_table(types, &enumeration, &ident));
                }
                quote!(rest::FieldKind::Enum(&#ident))
            }
        };
        let name = field.name();
        let json_name = json_name(field);
        let repeated = field.label() == Label::Repeated;
        let number = u32::try_from(field.number()).unwrap_or_default();
        let oneof = option_tokens(oneof);
        let encoding = match field.r#type() {
            Type::Sint32 | Type::Sint64 => quote!(rest::Encoding::ZigZag),
            Type::Fixed32 | Type::Sfixed32 | Type::Fixed64 | Type::Sfixed64 => {
                quote!(rest::Encoding::Fixed)
            }
            _ if wrapper => quote!(rest::Encoding::Wrapped),
            _ => quote!(rest::Encoding::Plain),
        };
        quote! {
            rest::Field {
                name: #name,
                json_name: #json_name,
                kind: #kind,
                repeated: #repeated,
                number: #number,
                encoding: #encoding,
                oneof: #oneof,
            }
        }
    }
}

fn enum_table(types: &Types<'_>, full_name: &str, ident: &Ident) -> TokenStream {
    let (values, open) = match types.enums.get(full_name) {
        Some((enumeration, open)) => (
            enumeration
                .value
                .iter()
                .map(|value| {
                    let name = value.name();
                    let number = Literal::i32_unsuffixed(value.number());
                    quote!((#name, #number))
                })
                .collect(),
            *open,
        ),
        None => (Vec::new(), true),
    };
    let name = full_name.trim_start_matches('.');
    quote! {
        static #ident: rest::EnumValues = rest::EnumValues {
            name: #name,
            open: #open,
            values: &[#(#values),*],
        };
    }
}
