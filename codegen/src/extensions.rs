//! Extensions (proto2's `extend`) as ordinary fields of the message they extend.
//!
//! prost has no extensions: a message drops the fields of its extensions when it is decoded.
//! An extension declared among the compiled protos is, on the wire, a field like any other of
//! the message it extends; so before prost-build sees the descriptors, each such extension
//! is added to its message as a field (same number, type and label), and prost keeps it in
//! binary as any field. Its JSON name is `[full.extension.name]`, as ProtoJSON writes an
//! extension. Its Rust field is named after the extension (with a suffix if the message has a
//! field of that name already).
//!
//! Left out: extensions of messages that come from elsewhere (an `extern_path`, the
//! well-known and descriptor types of `google.protobuf`, whose extensions are custom
//! options), and of messages with the MessageSet wire format, whose extensions are encoded
//! in a form of their own.

use heck::ToSnakeCase;
use prost_types::source_code_info::Location;
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};

/// Adds every extension in `fds` to the message it extends, where that message is compiled
/// here (`compiled` says whether a message, by full name, is).
pub(crate) fn as_fields(fds: &mut FileDescriptorSet, compiled: impl Fn(&str) -> bool) {
    let mut extensions = Vec::new();
    for file in &fds.file {
        let scope = match file.package() {
            "" => String::new(),
            package => format!(".{package}"),
        };
        collect(&scope, &file.extension, &file.message_type, &mut extensions);
    }
    for (full_name, extension) in extensions {
        let extendee_name = extension.extendee().to_owned();
        if extendee_name.starts_with(".google.protobuf.") || !compiled(&extendee_name) {
            continue;
        }
        let Some((file, path)) = find_message(fds, &extendee_name) else {
            continue;
        };
        let file = &mut fds.file[file];
        let mut extendee = &mut file.message_type[path[1] as usize];
        for index in path.iter().skip(3).step_by(2) {
            extendee = &mut extendee.nested_type[*index as usize];
        }
        if extendee
            .options
            .as_ref()
            .is_some_and(|options| options.message_set_wire_format())
        {
            continue;
        }
        let mut name = extension.name().to_owned();
        while extendee
            .field
            .iter()
            .any(|field| field.name().to_snake_case() == name.to_snake_case())
        {
            name.push_str("_extension");
        }
        let full_name = full_name.trim_start_matches('.');
        // prost-build looks up every field's comments by its path in the file.
        if let Some(info) = &mut file.source_code_info {
            let mut field_path = path.clone();
            field_path.extend([FIELD, extendee.field.len() as i32]);
            info.location.push(Location {
                path: field_path,
                leading_comments: Some(format!(" The extension `{full_name}`.\n")),
                ..Default::default()
            });
        }
        extendee.field.push(FieldDescriptorProto {
            name: Some(name),
            json_name: Some(format!("[{full_name}]")),
            extendee: None,
            oneof_index: None,
            ..extension
        });
    }
}

/// Descriptor field numbers, in paths of `SourceCodeInfo` locations.
const MESSAGE_TYPE: i32 = 4;
const NESTED_TYPE: i32 = 3;
const FIELD: i32 = 2;

/// The extensions declared at `scope` (a package's or a message's) and inside its messages,
/// each with its full name.
fn collect(
    scope: &str,
    extensions: &[FieldDescriptorProto],
    messages: &[DescriptorProto],
    out: &mut Vec<(String, FieldDescriptorProto)>,
) {
    for extension in extensions {
        out.push((format!("{scope}.{}", extension.name()), extension.clone()));
    }
    for message in messages {
        let scope = format!("{scope}.{}", message.name());
        collect(&scope, &message.extension, &message.nested_type, out);
    }
}

/// The file holding the message whose full name is `full_name` (`.package.Outer.Inner`),
/// and the message's path in it (`[4, i, 3, j, ...]`, as `SourceCodeInfo` locations have it).
fn find_message(fds: &FileDescriptorSet, full_name: &str) -> Option<(usize, Vec<i32>)> {
    for (file_index, file) in fds.file.iter().enumerate() {
        let Some(rest) = (match file.package() {
            "" => Some(full_name),
            package => full_name
                .strip_prefix('.')
                .and_then(|name| name.strip_prefix(package))
                .filter(|rest| rest.starts_with('.')),
        }) else {
            continue;
        };
        let mut names = rest.trim_start_matches('.').split('.');
        let first = names.next()?;
        let Some(index) = file.message_type.iter().position(|m| m.name() == first) else {
            continue;
        };
        let mut message = &file.message_type[index];
        let mut path = vec![MESSAGE_TYPE, index as i32];
        for name in names {
            let index = message.nested_type.iter().position(|m| m.name() == name)?;
            message = &message.nested_type[index];
            path.extend([NESTED_TYPE, index as i32]);
        }
        return Some((file_index, path));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_types::{FileDescriptorProto, MessageOptions, SourceCodeInfo};

    fn field(name: &str, number: i32) -> FieldDescriptorProto {
        FieldDescriptorProto {
            name: Some(name.to_owned()),
            number: Some(number),
            ..Default::default()
        }
    }

    #[test]
    fn extensions_join_their_messages_but_those_from_elsewhere() {
        let extension = |name: &str, number: i32, extendee: &str| FieldDescriptorProto {
            extendee: Some(extendee.to_owned()),
            ..field(name, number)
        };
        let mut fds = FileDescriptorSet {
            file: vec![FileDescriptorProto {
                package: Some("pkg".to_owned()),
                message_type: vec![
                    DescriptorProto {
                        name: Some("Base".to_owned()),
                        field: vec![field("taken", 1)],
                        nested_type: vec![DescriptorProto {
                            name: Some("Inner".to_owned()),
                            ..Default::default()
                        }],
                        extension: vec![extension("taken", 101, ".pkg.Base.Inner")],
                        ..Default::default()
                    },
                    DescriptorProto {
                        name: Some("Set".to_owned()),
                        options: Some(MessageOptions {
                            message_set_wire_format: Some(true),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ],
                extension: vec![
                    extension("taken", 100, ".pkg.Base"),
                    extension("in_set", 4, ".pkg.Set"),
                    extension("option", 50000, ".google.protobuf.FieldOptions"),
                    extension("elsewhere", 7, ".other.Message"),
                ],
                source_code_info: Some(SourceCodeInfo::default()),
                ..Default::default()
            }],
        };
        as_fields(&mut fds, |name| name != ".other.Message");
        let base = &fds.file[0].message_type[0];
        let added = &base.field[1];
        assert_eq!(added.name(), "taken_extension");
        assert_eq!(added.json_name(), "[pkg.taken]");
        assert_eq!((added.number(), added.extendee.as_deref()), (100, None));
        let inner = &base.nested_type[0];
        assert_eq!(inner.field.len(), 1);
        assert_eq!(inner.field[0].json_name(), "[pkg.Base.taken]");
        assert!(fds.file[0].message_type[1].field.is_empty(), "MessageSet");
        let paths: Vec<&[i32]> = fds.file[0]
            .source_code_info
            .as_ref()
            .unwrap()
            .location
            .iter()
            .map(|location| &location.path[..])
            .collect();
        assert_eq!(paths, [&[4, 0, 2, 1][..], &[4, 0, 3, 0, 2, 0]]);
    }
}
