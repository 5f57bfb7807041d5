//! ProtoJSON for every generated message and enum: `serde` impls written from the same
//! descriptors prost-build reads, appended to the file it wrote for each package.
//!
//! The impls are thin: per message, a table of member names to fields and, per field, one
//! call into the runtime (`fastgrpc::codegen::json`) naming the field's kind (`I64`,
//! `Enum<Color>`, `Message<_>`, ...) and its shape (with or without presence, a list, a map, a
//! member of a oneof). The mapping's rules (numbers in any notation, `null`, enum aliases and
//! unknown values, unknown fields, ...) live in the runtime once. Message field types are left
//! for the compiler to infer (`Message<_>`), so boxing, `bytes::Bytes` and `BTreeMap` choices
//! made in prost-build's configuration need no mirroring here; the Rust names of types, fields
//! and oneofs are derived as prost-build derives them.
//!
//! The well-known types (`google.protobuf.Timestamp`, ...) come from the runtime's `types`
//! module, whose types have the special JSON forms the mapping gives them; nothing is
//! generated for them here, nor for any other type an `extern_path` names.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use heck::{ToSnakeCase, ToUpperCamelCase};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
    FileDescriptorSet,
};

/// The protobuf package of the well-known types.
pub(crate) const WELL_KNOWN_PACKAGE: &str = ".google.protobuf";

/// The well-known types the runtime's `types` module has, with their special JSON forms. The
/// package's other types (`Api`, `Type`, ...) are generated like any message.
pub(crate) const WELL_KNOWN_TYPES: &[&str] = &[
    "Any",
    "BoolValue",
    "BytesValue",
    "DoubleValue",
    "Duration",
    "Empty",
    "FieldMask",
    "FloatValue",
    "Int32Value",
    "Int64Value",
    "ListValue",
    "NullValue",
    "StringValue",
    "Struct",
    "Timestamp",
    "UInt32Value",
    "UInt64Value",
    "Value",
];

/// Writes the ProtoJSON impls of every message and enum in `fds` (but those `extern_paths`
/// name, which come from elsewhere with their own) at the end of the package files prost-build
/// wrote into `out_dir`, with each file's `register_json_types`.
pub(crate) fn append_serde_impls(
    fds: &FileDescriptorSet,
    out_dir: &Path,
    runtime: &str,
    extern_paths: &[(String, String)],
) -> io::Result<()> {
    let types = Types::new(fds);
    let mut by_file: BTreeMap<String, Generated> = BTreeMap::new();
    for file in &fds.file {
        let name = match file.package() {
            "" => "_.rs".to_owned(),
            package => format!("{package}.rs"),
        };
        let generated = by_file.entry(name).or_default();
        let mut generator = Generator {
            file,
            types: &types,
            names: Names {
                package: file.package(),
                extern_paths,
            },
            json: format!("{runtime}::codegen::json"),
            serde: format!("{runtime}::codegen::serde"),
            out: generated,
        };
        let scope = package_scope(file.package());
        for message in &file.message_type {
            generator.message(&scope, message);
        }
        for enumeration in &file.enum_type {
            generator.enumeration(&scope, enumeration);
        }
    }
    for (file, generated) in by_file {
        let path = out_dir.join(&file);
        // prost-build writes a file for every package it generated something for; a package
        // of extern types alone has none.
        if !path.is_file() {
            if generated.code.is_empty() {
                continue;
            }
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{}: prost-build wrote no file for this package",
                    path.display()
                ),
            ));
        }
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str("\n// ProtoJSON (fastgrpc-build), through the runtime's serde.\n");
        text.push_str(&generated.code);
        text.push_str(&register_function(&generated.messages, runtime));
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// `.package`, the scope of a file's top-level types (`` for no package).
fn package_scope(package: &str) -> String {
    if package.is_empty() {
        String::new()
    } else {
        format!(".{package}")
    }
}

/// What is generated for one package file.
#[derive(Default)]
struct Generated {
    code: String,
    /// The messages written, as (Rust path, full proto name).
    messages: Vec<(String, String)>,
}

/// `register_json_types`, which makes every message of the package one a
/// `google.protobuf.Any` can carry in JSON.
fn register_function(messages: &[(String, String)], runtime: &str) -> String {
    let mut code = String::from(
        "\n/// Makes every message of this package one a `google.protobuf.Any` can carry in JSON\n\
         /// (its generated servers call it when they are built).\n\
         pub fn register_json_types() {\n",
    );
    for (rust_type, name) in messages {
        let _ = writeln!(
            code,
            "    {runtime}::codegen::register_json_type::<{rust_type}>(\"{name}\");"
        );
    }
    code.push_str("}\n");
    code
}

/// Every message and enum of the descriptor set, by full name (`.package.Outer.Inner`).
pub(crate) struct Types<'a> {
    pub(crate) messages: HashMap<String, &'a DescriptorProto>,
    /// Enums, with whether each is open (declared in a proto3 file).
    pub(crate) enums: HashMap<String, (&'a EnumDescriptorProto, bool)>,
}

impl<'a> Types<'a> {
    pub(crate) fn new(fds: &'a FileDescriptorSet) -> Self {
        let mut types = Types {
            messages: HashMap::new(),
            enums: HashMap::new(),
        };
        for file in &fds.file {
            let open = file.syntax() == "proto3";
            let scope = package_scope(file.package());
            for enumeration in &file.enum_type {
                types.enums.insert(
                    format!("{scope}.{}", enumeration.name()),
                    (enumeration, open),
                );
            }
            for message in &file.message_type {
                types.add_message(&scope, message, open);
            }
        }
        types
    }

    fn add_message(&mut self, scope: &str, message: &'a DescriptorProto, open: bool) {
        let name = format!("{scope}.{}", message.name());
        for enumeration in &message.enum_type {
            self.enums.insert(
                format!("{name}.{}", enumeration.name()),
                (enumeration, open),
            );
        }
        for nested in &message.nested_type {
            self.add_message(&name, nested, open);
        }
        self.messages.insert(name, message);
    }

    /// The key and value fields of the map entry type `type_name`, if it is one.
    pub(crate) fn map_entry(
        &self,
        type_name: &str,
    ) -> Option<(&'a FieldDescriptorProto, &'a FieldDescriptorProto)> {
        let entry = self.messages.get(type_name)?;
        if !entry.options.as_ref().is_some_and(|o| o.map_entry()) {
            return None;
        }
        let key = entry.field.iter().find(|f| f.number() == 1)?;
        let value = entry.field.iter().find(|f| f.number() == 2)?;
        Some((key, value))
    }
}

/// Rust names of protobuf types, as prost-build gives them, from the root of one package's
/// file.
struct Names<'a> {
    package: &'a str,
    extern_paths: &'a [(String, String)],
}

impl Names<'_> {
    /// The extern Rust path of `full_name`, if an `extern_path` covers it: the path itself, or
    /// for a type inside a covered package or message, the path joined with the rest.
    fn extern_path(&self, full_name: &str) -> Option<String> {
        if let Some((_, rust)) = self
            .extern_paths
            .iter()
            .find(|(proto, _)| proto == full_name)
        {
            return Some(rust.clone());
        }
        for (dot, _) in full_name.rmatch_indices('.') {
            let prefix = &full_name[..dot];
            if let Some((_, rust)) = self.extern_paths.iter().find(|(proto, _)| proto == prefix) {
                let mut segments: Vec<&str> = full_name[dot + 1..].split('.').collect();
                let last = segments.pop().unwrap_or_default();
                let mut path = rust.clone();
                for segment in segments {
                    path.push_str("::");
                    path.push_str(&rust_snake(segment));
                }
                path.push_str("::");
                path.push_str(&rust_camel(last));
                return Some(path);
            }
        }
        None
    }

    /// The Rust path of the type `full_name` (`.pkg.Outer.Inner`) from this package's root.
    fn path(&self, full_name: &str) -> String {
        if let Some(path) = self.extern_path(full_name) {
            return path;
        }
        let mut segments: Vec<&str> = full_name.trim_start_matches('.').split('.').collect();
        let last = segments.pop().unwrap_or_default();
        let mut local = self.package.split('.').filter(|s| !s.is_empty()).peekable();
        let mut target = segments.into_iter().peekable();
        while local.peek().is_some() && local.peek() == target.peek() {
            local.next();
            target.next();
        }
        let mut parts: Vec<String> = local.map(|_| "super".to_owned()).collect();
        parts.extend(target.map(rust_snake));
        parts.push(rust_camel(last));
        parts.join("::")
    }

    /// The Rust module holding the nested types of the message `full_name`.
    fn module(&self, full_name: &str) -> String {
        let path = self.path(full_name);
        match path.rsplit_once("::") {
            Some((parent, name)) => format!("{parent}::{}", rust_snake(name)),
            None => rust_snake(&path),
        }
    }
}

/// A name as a Rust identifier, as prost-build escapes it.
fn sanitize(ident: String) -> String {
    match ident.as_str() {
        "as" | "break" | "const" | "continue" | "else" | "enum" | "false" | "fn" | "for" | "if"
        | "impl" | "in" | "let" | "loop" | "match" | "mod" | "move" | "mut" | "pub" | "ref"
        | "return" | "static" | "struct" | "trait" | "true" | "type" | "unsafe" | "use"
        | "where" | "while" | "dyn" | "abstract" | "become" | "box" | "do" | "final" | "macro"
        | "override" | "priv" | "typeof" | "unsized" | "virtual" | "yield" | "async" | "await"
        | "try" | "gen" => format!("r#{ident}"),
        "_" | "super" | "self" | "Self" | "extern" | "crate" => format!("{ident}_"),
        s if s.starts_with(|c: char| c.is_numeric()) => format!("_{ident}"),
        _ => ident,
    }
}

/// A field or module name, as prost-build writes it.
fn rust_snake(name: &str) -> String {
    sanitize(name.to_snake_case())
}

/// A type or variant name, as prost-build writes it.
fn rust_camel(name: &str) -> String {
    sanitize(name.to_upper_camel_case())
}

/// protobuf's default JSON name of a field: lowerCamelCase of its name.
pub(crate) fn default_json_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// How a field is stored and written, as prost-build lays it out.
enum Shape {
    /// `T`, left out of JSON when it holds the default (proto3 without `optional`).
    Implicit,
    /// `T`, always written (proto2 `required`).
    Required,
    /// `Option<T>`.
    Optional,
    /// `Vec<T>`.
    List,
    /// A map, with the key's kind.
    Map(&'static str),
    /// A member of the oneof at this index of the message's oneofs.
    Oneof(usize),
}

/// One field's JSON reading and writing.
struct Field {
    rust_name: String,
    /// Its variant's name, for a member of a oneof.
    variant: String,
    /// The name written, and the one other name read (the proto name), if it differs.
    json_name: String,
    other_name: Option<String>,
    kind: String,
    shape: Shape,
}

struct Generator<'a> {
    file: &'a FileDescriptorProto,
    types: &'a Types<'a>,
    names: Names<'a>,
    /// The runtime's paths for generated code.
    json: String,
    serde: String,
    out: &'a mut Generated,
}

impl Generator<'_> {
    fn is_proto3(&self) -> bool {
        self.file.syntax() == "proto3"
    }

    fn message(&mut self, scope: &str, message: &DescriptorProto) {
        let full_name = format!("{scope}.{}", message.name());
        if message.options.as_ref().is_some_and(|o| o.map_entry()) {
            return;
        }
        for nested in &message.nested_type {
            self.message(&full_name, nested);
        }
        for enumeration in &message.enum_type {
            self.enumeration(&full_name, enumeration);
        }
        if self.names.extern_path(&full_name).is_some() {
            return;
        }
        let rust_type = self.names.path(&full_name);
        let fields: Vec<Field> = message
            .field
            .iter()
            .map(|field| self.field(field))
            .collect();
        let oneofs = self.oneof_paths(&full_name, message);
        self.write_message(&full_name, &rust_type, &fields, &oneofs);
        self.out
            .messages
            .push((rust_type, full_name.trim_start_matches('.').to_owned()));
    }

    /// Each oneof of `message` (but the synthetic ones of proto3 `optional`): its field's
    /// Rust name and its enum's Rust path.
    fn oneof_paths(
        &self,
        full_name: &str,
        message: &DescriptorProto,
    ) -> Vec<Option<(String, String)>> {
        let module = self.names.module(full_name);
        message
            .oneof_decl
            .iter()
            .enumerate()
            .map(|(index, oneof)| {
                let real = message.field.iter().any(|field| {
                    field.oneof_index == Some(index as i32) && !field.proto3_optional()
                });
                if !real {
                    return None;
                }
                let mut type_name = rust_camel(oneof.name());
                // prost-build's rule when a nested type has the same name.
                let clash = message
                    .nested_type
                    .iter()
                    .map(|nested| nested.name())
                    .chain(message.enum_type.iter().map(|e| e.name()))
                    .any(|name| rust_camel(name) == type_name);
                if clash {
                    type_name.push_str("OneOf");
                }
                Some((rust_snake(oneof.name()), format!("{module}::{type_name}")))
            })
            .collect()
    }

    fn field(&self, field: &FieldDescriptorProto) -> Field {
        let json_name = field
            .json_name
            .clone()
            .unwrap_or_else(|| default_json_name(field.name()));
        // An extension made a field (`extensions.rs`) is named `[full.name]` only.
        let other_name = (!json_name.starts_with('[') && json_name != field.name())
            .then(|| field.name().to_owned());
        let map_entry = match field.r#type() {
            Type::Message if field.label() == Label::Repeated => {
                self.types.map_entry(field.type_name())
            }
            _ => None,
        };
        let (kind, shape) = if let Some((key, value)) = map_entry {
            (self.kind(value), Shape::Map(map_key_kind(key.r#type())))
        } else {
            let kind = self.kind(field);
            let shape = if field.label() == Label::Repeated {
                Shape::List
            } else if let (Some(index), false) = (field.oneof_index, field.proto3_optional()) {
                Shape::Oneof(index as usize)
            } else if self.optional(field) {
                Shape::Optional
            } else if field.label() == Label::Required {
                Shape::Required
            } else {
                Shape::Implicit
            };
            (kind, shape)
        };
        Field {
            rust_name: rust_snake(field.name()),
            variant: rust_camel(field.name()),
            json_name,
            other_name,
            kind,
            shape,
        }
    }

    /// Whether prost-build stores the field as an `Option` (its rule, for a field that is not
    /// repeated nor in a oneof).
    fn optional(&self, field: &FieldDescriptorProto) -> bool {
        if field.proto3_optional() {
            return true;
        }
        if field.label() != Label::Optional {
            return false;
        }
        field.r#type() == Type::Message || !self.is_proto3()
    }

    /// The runtime kind of the field's values.
    fn kind(&self, field: &FieldDescriptorProto) -> String {
        let json = &self.json;
        match field.r#type() {
            Type::Double => format!("{json}::F64"),
            Type::Float => format!("{json}::F32"),
            Type::Int64 | Type::Sint64 | Type::Sfixed64 => format!("{json}::I64"),
            Type::Uint64 | Type::Fixed64 => format!("{json}::U64"),
            Type::Int32 | Type::Sint32 | Type::Sfixed32 => format!("{json}::I32"),
            Type::Uint32 | Type::Fixed32 => format!("{json}::U32"),
            Type::Bool => format!("{json}::Bool"),
            Type::String => format!("{json}::Str"),
            Type::Bytes => format!("{json}::Bytes<_>"),
            Type::Enum if field.type_name() == ".google.protobuf.NullValue" => {
                format!("{json}::NullEnum")
            }
            Type::Enum => {
                let path = self.names.path(field.type_name());
                if self.names.extern_path(field.type_name()).is_some()
                    || !self.types.enums.contains_key(field.type_name())
                {
                    format!("{json}::SerdeEnum<{path}>")
                } else {
                    format!("{json}::Enum<{path}>")
                }
            }
            Type::Message | Type::Group if field.type_name() == ".google.protobuf.Value" => {
                format!("{json}::NullableMessage<_>")
            }
            Type::Message | Type::Group => format!("{json}::Message<_>"),
        }
    }

    fn write_message(
        &mut self,
        full_name: &str,
        rust_type: &str,
        fields: &[Field],
        oneofs: &[Option<(String, String)>],
    ) {
        let (json, serde) = (&self.json, &self.serde);
        let proto_name = full_name.trim_start_matches('.');
        let out = &mut self.out.code;

        // The names, and reading each field.
        let _ = writeln!(out, "#[allow(deprecated)]");
        let _ = writeln!(out, "impl {json}::JsonMessage for {rust_type} {{");
        let _ = writeln!(out, "    const NAME: &'static str = {proto_name:?};");
        let names: Vec<String> = fields
            .iter()
            .map(|f| format!("{:?}", f.json_name))
            .collect();
        let _ = writeln!(
            out,
            "    const FIELDS: &'static [&'static str] = &[{}];",
            names.join(", ")
        );
        if fields.is_empty() {
            let _ = writeln!(
                out,
                "    fn field(_: &str) -> ::core::option::Option<usize> {{"
            );
            let _ = writeln!(out, "        ::core::option::Option::None");
        } else {
            let _ = writeln!(
                out,
                "    fn field(name: &str) -> ::core::option::Option<usize> {{"
            );
            let _ = writeln!(out, "        ::core::option::Option::Some(match name {{");
            // A name two fields claim stays with the first (protoc refuses most such clashes).
            let mut claimed = std::collections::HashSet::new();
            for (index, field) in fields.iter().enumerate() {
                let names: Vec<String> = std::iter::once(&field.json_name)
                    .chain(&field.other_name)
                    .filter(|name| claimed.insert(name.as_str()))
                    .map(|name| format!("{name:?}"))
                    .collect();
                if !names.is_empty() {
                    let _ = writeln!(out, "            {} => {index},", names.join(" | "));
                }
            }
            let _ = writeln!(out, "            _ => return ::core::option::Option::None,");
            let _ = writeln!(out, "        }})");
        }
        let _ = writeln!(out, "    }}");
        let _ = writeln!(
            out,
            "    fn read_field<'de, A: {serde}::de::MapAccess<'de>>(\n        &mut self,\n        \
             index: usize,\n        fields: &mut {json}::Fields<'_, A>,\n    ) -> \
             ::core::result::Result<(), A::Error> {{"
        );
        if fields.is_empty() {
            let _ = writeln!(out, "        let _ = (index, fields);");
            let _ = writeln!(out, "        ::core::result::Result::Ok(())");
        } else {
            let _ = writeln!(out, "        match index {{");
            for (index, field) in fields.iter().enumerate() {
                let (name, kind) = (&field.rust_name, &field.kind);
                let read = match &field.shape {
                    Shape::Implicit | Shape::Required => {
                        format!("fields.value::<{kind}>(&mut self.{name})")
                    }
                    Shape::Optional => format!("fields.option::<{kind}>(&mut self.{name})"),
                    Shape::List => format!("fields.list::<{kind}>(&mut self.{name})"),
                    Shape::Map(key) => {
                        format!("fields.map::<{json}::{key}, {kind}, _>(&mut self.{name})")
                    }
                    Shape::Oneof(oneof) => match &oneofs[*oneof] {
                        Some((slot, path)) => format!(
                            "{{\n                if let ::core::option::Option::Some(value) = \
                             fields.oneof::<{kind}>(self.{slot}.is_some(), {slot:?})? {{\n                    \
                             self.{slot} = ::core::option::Option::Some({path}::{}(value));\n                \
                             }}\n                ::core::result::Result::Ok(())\n            }}",
                            field.variant
                        ),
                        None => unreachable!("a oneof with this member is real"),
                    },
                };
                let _ = writeln!(out, "            {index} => {read},");
            }
            let _ = writeln!(out, "            _ => ::core::result::Result::Ok(()),");
            let _ = writeln!(out, "        }}");
        }
        let _ = writeln!(out, "    }}");
        let _ = writeln!(out, "}}");

        // Writing, field by field (a oneof where its first member is); reading through the
        // runtime, which asks the deserializer for the decode options.
        let mutable = if fields.is_empty() { "" } else { "mut " };
        let mut body = format!("let {mutable}out = {json}::writer(serializer)?;\n");
        let mut oneofs_written = vec![false; oneofs.len()];
        for field in fields {
            let (name, kind, json_name) = (&field.rust_name, &field.kind, &field.json_name);
            match &field.shape {
                Shape::Implicit => {
                    let _ = writeln!(
                        body,
                        "out.implicit::<{kind}>({json_name:?}, &self.{name})?;"
                    );
                }
                Shape::Required => {
                    let _ = writeln!(body, "out.value::<{kind}>({json_name:?}, &self.{name})?;");
                }
                Shape::Optional => {
                    let _ = writeln!(body, "out.option::<{kind}>({json_name:?}, &self.{name})?;");
                }
                Shape::List => {
                    let _ = writeln!(body, "out.list::<{kind}>({json_name:?}, &self.{name})?;");
                }
                Shape::Map(key) => {
                    let _ = writeln!(
                        body,
                        "out.map::<{json}::{key}, {kind}, _>({json_name:?}, &self.{name})?;"
                    );
                }
                Shape::Oneof(oneof) => {
                    if std::mem::replace(&mut oneofs_written[*oneof], true) {
                        continue;
                    }
                    let Some((slot, path)) = &oneofs[*oneof] else {
                        continue;
                    };
                    let _ = writeln!(body, "match &self.{slot} {{");
                    for member in fields {
                        if !matches!(member.shape, Shape::Oneof(o) if o == *oneof) {
                            continue;
                        }
                        let _ = writeln!(
                            body,
                            "    ::core::option::Option::Some({path}::{}(value)) => \
                             out.value::<{}>({:?}, value)?,",
                            member.variant, member.kind, member.json_name
                        );
                    }
                    let _ = writeln!(body, "    ::core::option::Option::None => {{}}");
                    let _ = writeln!(body, "}}");
                }
            }
        }
        body.push_str("out.end()");
        serde_impls(
            out,
            serde,
            rust_type,
            &body,
            &format!("{json}::deserialize(deserializer)"),
        );
    }

    fn enumeration(&mut self, scope: &str, enumeration: &EnumDescriptorProto) {
        let full_name = format!("{scope}.{}", enumeration.name());
        if self.names.extern_path(&full_name).is_some() {
            return;
        }
        let rust_type = self.names.path(&full_name);
        let (json, serde) = (&self.json, &self.serde);
        let open = self.is_proto3();
        let out = &mut self.out.code;
        let _ = writeln!(out, "impl {json}::JsonEnum for {rust_type} {{");
        let _ = writeln!(out, "    const OPEN: bool = {open};");
        let _ = writeln!(
            out,
            "    fn name(number: i32) -> ::core::option::Option<&'static str> {{"
        );
        let _ = writeln!(out, "        ::core::option::Option::Some(match number {{");
        // The first name of each number (the others are aliases).
        let mut numbers = std::collections::HashSet::new();
        for value in &enumeration.value {
            if numbers.insert(value.number()) {
                let _ = writeln!(out, "            {} => {:?},", value.number(), value.name());
            }
        }
        let _ = writeln!(out, "            _ => return ::core::option::Option::None,");
        let _ = writeln!(out, "        }})");
        let _ = writeln!(out, "    }}");
        let _ = writeln!(
            out,
            "    fn number(name: &str) -> ::core::option::Option<i32> {{"
        );
        let _ = writeln!(out, "        ::core::option::Option::Some(match name {{");
        for value in &enumeration.value {
            let _ = writeln!(out, "            {:?} => {},", value.name(), value.number());
        }
        let _ = writeln!(out, "            _ => return ::core::option::Option::None,");
        let _ = writeln!(out, "        }})");
        let _ = writeln!(out, "    }}");
        let _ = writeln!(out, "}}");
        // Its own serde impls, by name, for users who serialize the enum by itself.
        serde_impls(
            out,
            serde,
            &rust_type,
            &format!("<{json}::Enum<Self> as {json}::Kind>::write(&(*self as i32), serializer)"),
            &format!("{json}::enum_value::<Self, D>(deserializer)"),
        );
    }
}

/// Writes `impl Serialize` and `impl Deserialize` for `rust_type`, with the bodies given (of
/// `self` and `serializer`, and of `deserializer`).
fn serde_impls(out: &mut String, serde: &str, rust_type: &str, serialize: &str, deserialize: &str) {
    let indented = |body: &str| {
        body.lines()
            .map(|line| format!("        {line}\n"))
            .collect::<String>()
    };
    let _ = write!(
        out,
        "#[allow(deprecated)]\n\
         impl {serde}::Serialize for {rust_type} {{\n    \
         fn serialize<S: {serde}::Serializer>(&self, serializer: S) -> \
         ::core::result::Result<S::Ok, S::Error> {{\n{}    }}\n}}\n\
         impl<'de> {serde}::Deserialize<'de> for {rust_type} {{\n    \
         fn deserialize<D: {serde}::Deserializer<'de>>(deserializer: D) -> \
         ::core::result::Result<Self, D::Error> {{\n{}    }}\n}}\n",
        indented(serialize),
        indented(deserialize),
    );
}

/// The runtime kind of a map key of type `key`.
fn map_key_kind(key: Type) -> &'static str {
    match key {
        Type::Int64 | Type::Sint64 | Type::Sfixed64 => "I64",
        Type::Uint64 | Type::Fixed64 => "U64",
        Type::Int32 | Type::Sint32 | Type::Sfixed32 => "I32",
        Type::Uint32 | Type::Fixed32 => "U32",
        Type::Bool => "Bool",
        // protoc allows only integers, bool and string as map keys.
        _ => "Str",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_paths_are_prost_builds() {
        let extern_paths = [
            (
                ".google.protobuf.Timestamp".to_owned(),
                "::fastgrpc::types::Timestamp".to_owned(),
            ),
            (".other".to_owned(), "::other_crate".to_owned()),
        ];
        let names = Names {
            package: "a.b",
            extern_paths: &extern_paths,
        };
        assert_eq!(names.path(".a.b.Foo"), "Foo");
        assert_eq!(names.path(".a.b.Foo.bar_baz"), "foo::BarBaz");
        assert_eq!(names.path(".a.c.Foo"), "super::c::Foo");
        assert_eq!(names.path(".x.Foo"), "super::super::x::Foo");
        assert_eq!(
            names.path(".google.protobuf.Timestamp"),
            "::fastgrpc::types::Timestamp"
        );
        assert_eq!(
            names.path(".other.Outer.Inner"),
            "::other_crate::outer::Inner"
        );
        assert_eq!(names.module(".a.b.TestAllTypes"), "test_all_types");
        assert_eq!(names.module(".a.b.Outer.Inner"), "outer::inner");
        assert_eq!(rust_snake("type"), "r#type");
        assert_eq!(rust_snake("self"), "self_");
        assert_eq!(rust_camel("FOO_BAR"), "FooBar");
        let root = Names {
            package: "",
            extern_paths: &[],
        };
        assert_eq!(root.path(".Foo.Bar"), "foo::Bar");
    }

    #[test]
    fn json_names_are_lower_camel_case() {
        assert_eq!(default_json_name("optional_int32"), "optionalInt32");
        assert_eq!(default_json_name("field__name4_"), "fieldName4");
        assert_eq!(default_json_name("_field_name3"), "FieldName3");
    }

    #[test]
    fn registration_lists_each_message() {
        let function = register_function(
            &[("outer::Inner".to_owned(), "pkg.Outer.Inner".to_owned())],
            "::fastgrpc",
        );
        assert!(function.contains(
            "::fastgrpc::codegen::register_json_type::<outer::Inner>(\"pkg.Outer.Inner\");"
        ));
    }
}
