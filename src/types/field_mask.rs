//! `google.protobuf.FieldMask`, whose JSON form is one string: the paths, each in
//! lowerCamelCase, joined by commas (`"user.displayName,photo"`).

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A set of field paths, such as the fields an update should change.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct FieldMask {
    /// The paths, each field names in snake_case joined by dots: `user.display_name`.
    #[prost(string, repeated, tag = "1")]
    pub paths: Vec<String>,
}

/// `display_name` as `displayName`; `None` for a name that would not come back the same
/// (an upper-case letter, or `_` not followed by a lower-case letter).
fn to_camel(path: &str) -> Option<String> {
    let mut out = String::with_capacity(path.len());
    let mut upper = false;
    for c in path.chars() {
        if c.is_ascii_uppercase() {
            return None;
        }
        if c == '_' {
            if upper {
                return None;
            }
            upper = true;
            continue;
        }
        if upper {
            if !c.is_ascii_lowercase() {
                return None;
            }
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    (!upper).then_some(out)
}

/// `displayName` as `display_name`; `None` if it holds a `_`.
fn to_snake(path: &str) -> Option<String> {
    let mut out = String::with_capacity(path.len() + 4);
    for c in path.chars() {
        match c {
            '_' => return None,
            c if c.is_ascii_uppercase() => {
                out.push('_');
                out.push(c.to_ascii_lowercase());
            }
            c => out.push(c),
        }
    }
    Some(out)
}

impl Serialize for FieldMask {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut joined = String::new();
        for (i, path) in self.paths.iter().enumerate() {
            let camel = to_camel(path).ok_or_else(|| {
                serde::ser::Error::custom(format!(
                    "FieldMask path {path:?} has no lowerCamelCase form"
                ))
            })?;
            if i > 0 {
                joined.push(',');
            }
            joined.push_str(&camel);
        }
        serializer.serialize_str(&joined)
    }
}

impl<'de> Deserialize<'de> for FieldMask {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Paths;
        impl Visitor<'_> for Paths {
            type Value = FieldMask;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("comma-separated lowerCamelCase paths, such as \"user.displayName\"")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<FieldMask, E> {
                if text.is_empty() {
                    return Ok(FieldMask::default());
                }
                let paths = text
                    .split(',')
                    .map(|path| {
                        to_snake(path)
                            .ok_or_else(|| E::invalid_value(de::Unexpected::Str(path), &self))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(FieldMask { paths })
            }
        }
        deserializer.deserialize_str(Paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_convert_both_ways_and_refuse_what_would_not_come_back() {
        for (snake, camel) in [
            ("user.display_name", "user.displayName"),
            ("photo", "photo"),
            ("a_b_c.d", "aBC.d"),
        ] {
            assert_eq!(to_camel(snake).as_deref(), Some(camel));
            assert_eq!(to_snake(camel).as_deref(), Some(snake));
        }
        for bad in ["userName", "trailing_", "double__underscore", "a_1"] {
            assert_eq!(to_camel(bad), None, "{bad}");
        }
        assert_eq!(to_snake("snake_in_json"), None);
    }
}
