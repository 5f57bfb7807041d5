//! ProtoJSON for every generated message: `serde` impls written by [`pbjson_build`], added to
//! the file prost-build wrote for the same package.
//!
//! pbjson's code names `serde::` and `pbjson::` as crates of the user's. Rewritten to the
//! runtime's re-exports (`fastgrpc::codegen::serde`, `..::pbjson`), it needs no dependency
//! beyond `fastgrpc` in the user's crate, as the rest of the generated code.
//!
//! The well-known types (`google.protobuf.Timestamp`, ...) come from the runtime's `types`
//! module, whose types have the special JSON forms the mapping gives them (a Timestamp as an
//! RFC 3339 string, a wrapper as its bare value, ...); nothing is generated for them here.
//!
//! pbjson reads a scalar, repeated or map field as a required value and so refuses `null`,
//! which the mapping reads as the field's default; [`nulls_as_defaults`] rewrites those reads.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use prost_types::FileDescriptorSet;

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
/// wrote into `out_dir`.
pub(crate) fn append_serde_impls(
    fds: &FileDescriptorSet,
    out_dir: &Path,
    runtime: &str,
    extern_paths: &[(String, String)],
) -> io::Result<()> {
    let mut builder = pbjson_build::Builder::new();
    builder.register_descriptors(&prost::Message::encode_to_vec(fds))?;
    for (proto_path, rust_path) in extern_paths {
        builder.extern_path(proto_path.clone(), rust_path.clone());
    }
    builder.exclude(
        extern_paths
            .iter()
            .map(|(proto_path, _)| proto_path.clone()),
    );
    let written = builder.generate(&["."], |_| Ok(Vec::<u8>::new()))?;
    // Several generated runs of one package are joined before they are appended, with the
    // messages they serialize.
    let mut by_file: BTreeMap<String, (String, Vec<(String, String)>)> = BTreeMap::new();
    for (package, code) in written {
        let code = String::from_utf8(code).map_err(io::Error::other)?;
        let (file_code, messages) = by_file.entry(format!("{package}.rs")).or_default();
        messages.extend(serialized_messages(&code));
        file_code.push_str(&with_runtime_paths(&nulls_as_defaults(&code), runtime));
    }
    // Every package file prost-build wrote gets its registration function, messages or not
    // (a generated server calls it).
    for file in &fds.file {
        let name = match file.package() {
            "" => "_.rs".to_owned(),
            package => format!("{package}.rs"),
        };
        if out_dir.join(&name).is_file() {
            by_file.entry(name).or_default();
        }
    }
    for (file, (code, messages)) in by_file {
        let code = code + &register_function(&messages, runtime);
        let path = out_dir.join(&file);
        let mut text = std::fs::read_to_string(&path).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!(
                    "{}: prost-build wrote no file for this package: {error}",
                    path.display()
                ),
            )
        })?;
        text.push_str("\n// ProtoJSON (pbjson-build), through the runtime's serde.\n");
        text.push_str(&code);
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// The messages pbjson wrote `serde` impls for in `code`, as (Rust type, full proto name): each
/// `impl serde::Serialize for TYPE` that serializes a struct named after its message (an enum's
/// impl writes a string instead, and is left out).
fn serialized_messages(code: &str) -> Vec<(String, String)> {
    const IMPL: &str = "impl serde::Serialize for ";
    let mut messages = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(IMPL) {
        rest = &rest[at + IMPL.len()..];
        let Some(end) = rest.find(" {") else { break };
        let rust_type = rest[..end].trim().to_owned();
        // This impl's body: up to the next impl.
        let body = &rest[..rest.find("\nimpl ").unwrap_or(rest.len())];
        const STRUCT: &str = "serialize_struct(\"";
        if let Some(name_at) = body.find(STRUCT) {
            let name = &body[name_at + STRUCT.len()..];
            if let Some(name_end) = name.find('"') {
                messages.push((rust_type, name[..name_end].to_owned()));
            }
        }
    }
    messages
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
        code.push_str(&format!(
            "    {runtime}::codegen::register_json_type::<{rust_type}>(\"{name}\");\n"
        ));
    }
    code.push_str("}\n");
    code
}

/// `code` with every field read as `Some(map_.next_value::<T>()?REST)` (a scalar, repeated or
/// map field, which pbjson reads as a required value) read as
/// `map_.next_value::<Option<T>>()?.map(|x| x REST)` instead: a JSON `null` is then the field's
/// default value, as ProtoJSON has it ("null is accepted for all field types and treated as
/// the default value of the corresponding field type"), where pbjson would refuse it.
fn nulls_as_defaults(code: &str) -> String {
    const READ: &str = "Some(";
    let mut out = String::with_capacity(code.len() + code.len() / 16);
    let mut rest = code;
    while let Some(at) = rest.find(READ) {
        out.push_str(&rest[..at]);
        let read = &rest[at..];
        match rewrite_read(read) {
            Some((rewritten, len)) => {
                out.push_str(&rewritten);
                rest = &read[len..];
            }
            None => {
                out.push_str(READ);
                rest = &read[READ.len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `read` starts with `Some(`: if a field's read follows, its rewritten form and how many bytes of it the
/// form replaces, or `None` if it is not of the shape [`nulls_as_defaults`] reads.
fn rewrite_read(read: &str) -> Option<(String, usize)> {
    let inner_start = "Some(".len();
    let end = matching_close(read, inner_start - 1)?;
    let inner = read[inner_start..end].trim_start();
    let after_name = inner.strip_prefix("map_.next_value")?;
    let (ty, after_ty) = match after_name.strip_prefix("::<") {
        Some(generic) => {
            let close = matching_angle(generic)?;
            (&generic[..close], &generic[close + 1..])
        }
        None => ("_", after_name),
    };
    let chain = after_ty.strip_prefix("()?")?;
    let mapped = if chain.trim().is_empty() {
        String::new()
    } else {
        format!(".map(|x| x{chain})")
    };
    Some((
        format!("map_.next_value::<::std::option::Option<{ty}>>()?{mapped}"),
        end + 1,
    ))
}

/// The index of the `)` that closes the `(` at `open` in `text`.
fn matching_close(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices().skip_while(|&(i, _)| i < open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The index of the `>` that closes a generic list whose `<` was just before `text`.
fn matching_angle(text: &str) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `code` with each path that starts at the crates `serde` or `pbjson` (`serde::..`, or
/// `::serde::..`) starting at the runtime's re-export of that crate instead.
fn with_runtime_paths(code: &str, runtime: &str) -> String {
    let mut out = String::with_capacity(code.len() + code.len() / 8);
    let mut rest = code;
    while let Some((at, global)) = next_crate_path(rest) {
        out.push_str(&rest[..at]);
        out.push_str(runtime);
        out.push_str("::codegen::");
        // Past the leading `::` of a global path; the crate's name is copied with the rest.
        rest = &rest[at + if global { 2 } else { 0 }..];
        let name_len = if rest.starts_with("serde::") { 5 } else { 6 };
        out.push_str(&rest[..name_len]);
        rest = &rest[name_len..];
    }
    out.push_str(rest);
    out
}

/// Where the next path starting at the crate `serde` or `pbjson` starts in `code`, and whether
/// it is written as a global path (`::serde::`): not a segment of some other path.
fn next_crate_path(code: &str) -> Option<(usize, bool)> {
    let bytes = code.as_bytes();
    let ident = |at: Option<usize>| {
        at.is_some_and(|i| bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_')
    };
    let mut from = 0;
    loop {
        let at = ["serde::", "pbjson::"]
            .iter()
            .filter_map(|name| code[from..].find(name).map(|at| from + at))
            .min()?;
        let before = at.checked_sub(1);
        if !ident(before) && before.is_none_or(|i| bytes[i] != b':') {
            return Some((at, false));
        }
        // `::serde::`, unless the `::` follows a segment (`a::serde::`).
        if at >= 2 && &code[at - 2..at] == "::" && !ident(at.checked_sub(3)) {
            return Some((at - 2, true));
        }
        from = at + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_found_by_their_struct_serialization_and_enums_left_out() {
        let code = "impl serde::Serialize for Color {\n fn serialize() { serializer.serialize_str(x) }\n}\n\
                    impl serde::Serialize for outer::Inner {\n fn serialize() { \
                    let mut struct_ser = serializer.serialize_struct(\"pkg.Outer.Inner\", len)?; }\n}\n";
        assert_eq!(
            serialized_messages(code),
            [("outer::Inner".to_owned(), "pkg.Outer.Inner".to_owned())]
        );
        let function = register_function(&serialized_messages(code), "::fastgrpc");
        assert!(function.contains(
            "::fastgrpc::codegen::register_json_type::<outer::Inner>(\"pkg.Outer.Inner\");"
        ));
    }

    #[test]
    fn required_reads_become_optional_so_null_is_the_default() {
        let cases = [
            (
                "s__ = Some(map_.next_value()?);",
                "s__ = map_.next_value::<::std::option::Option<_>>()?;",
            ),
            (
                "x__ = Some(map_.next_value::<P::NumberDeserialize<_>>()?.0);",
                "x__ = map_.next_value::<::std::option::Option<P::NumberDeserialize<_>>>()?.map(|x| x.0);",
            ),
            (
                "c__ = Some(map_.next_value::<Color>()? as i32);",
                "c__ = map_.next_value::<::std::option::Option<Color>>()?.map(|x| x as i32);",
            ),
            (
                "m__ = Some(\n map_.next_value::<HashMap<_, N<i64>>>()?\n .into_iter().map(|(k,v)| (k, v.0)).collect()\n);",
                "m__ = map_.next_value::<::std::option::Option<HashMap<_, N<i64>>>>()?.map(|x| x\n .into_iter().map(|(k,v)| (k, v.0)).collect()\n);",
            ),
            (
                "v__ = Some(map_.next_value::<Vec<N<_>>>()?\n .into_iter().map(|x| x.0).collect());",
                "v__ = map_.next_value::<::std::option::Option<Vec<N<_>>>>()?.map(|x| x\n .into_iter().map(|x| x.0).collect());",
            ),
            // Already optional reads are left as they are.
            ("o__ = map_.next_value()?;", "o__ = map_.next_value()?;"),
        ];
        for (code, expected) in cases {
            assert_eq!(nulls_as_defaults(code), expected, "{code}");
        }
    }

    #[test]
    fn crate_paths_move_under_the_runtime_and_nothing_else_does() {
        let code = "impl serde::Serialize for A { fn f() { use serde::ser::SerializeStruct; \
                    pbjson::private::NumberDeserialize(x); <serde::de::X>::y(); my_serde::z(); \
                    a::serde::w(); <::pbjson::B>::c(); ::serde::d(); } }";
        assert_eq!(
            with_runtime_paths(code, "::fastgrpc"),
            "impl ::fastgrpc::codegen::serde::Serialize for A { fn f() { use \
             ::fastgrpc::codegen::serde::ser::SerializeStruct; \
             ::fastgrpc::codegen::pbjson::private::NumberDeserialize(x); \
             <::fastgrpc::codegen::serde::de::X>::y(); my_serde::z(); a::serde::w(); \
             <::fastgrpc::codegen::pbjson::B>::c(); ::fastgrpc::codegen::serde::d(); } }"
        );
    }
}
