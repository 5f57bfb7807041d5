//! Percent-decoding, in the three forms REST needs: a single-segment path variable and a
//! literal decode everything; a multi-segment variable leaves `%2F` and `%2f` as they are, so
//! that an encoded slash stays apart from the path's own (`google/api/http.proto`); a query
//! string's names and values also read `+` as a space (HTML forms' encoding, as grpc-gateway
//! and Envoy read queries).
//!
//! Text without `%` (and, in a query, `+`) is borrowed as it is. An escape that is not `%`
//! and two hex digits, or bytes that are not UTF-8 once decoded, are refused.

use std::borrow::Cow;

/// Which form to decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Everything decoded.
    All,
    /// Everything but `%2F` and `%2f`.
    KeepSlashes,
    /// Everything, and `+` is a space.
    Query,
}

/// Why text does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PercentError {
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// The decoded bytes are not UTF-8.
    NotUtf8,
}

impl PercentError {
    /// The error in words, for a message that names what was being decoded.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            PercentError::BadEscape => "a `%` not followed by two hex digits",
            PercentError::NotUtf8 => "percent-encoding that is not UTF-8",
        }
    }
}

/// `text` decoded in `form`.
pub(crate) fn decode(text: &str, form: Form) -> Result<Cow<'_, str>, PercentError> {
    let plus_is_space = form == Form::Query;
    let bytes = text.as_bytes();
    // Most text has nothing to decode: one fast scan says so.
    let plain = if plus_is_space {
        !bytes.iter().any(|&byte| byte == b'%' || byte == b'+')
    } else {
        !bytes.contains(&b'%')
    };
    if plain {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' => {
                let high = bytes.get(at + 1).and_then(|&b| hex(b));
                let low = bytes.get(at + 2).and_then(|&b| hex(b));
                let (Some(high), Some(low)) = (high, low) else {
                    return Err(PercentError::BadEscape);
                };
                let byte = high << 4 | low;
                if byte == b'/' && form == Form::KeepSlashes {
                    out.extend_from_slice(&bytes[at..at + 3]);
                } else {
                    out.push(byte);
                }
                at += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                at += 1;
            }
            byte => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| PercentError::NotUtf8)
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        for form in [Form::All, Form::KeepSlashes, Form::Query] {
            assert!(matches!(
                decode("shelves-1_a.b~", form),
                Ok(Cow::Borrowed(_))
            ));
        }
        assert!(matches!(decode("a+b", Form::All), Ok(Cow::Borrowed("a+b"))));
    }

    #[test]
    fn each_form_decodes_what_it_should() {
        assert_eq!(decode("a%2Fb%20c%2fd", Form::All).unwrap(), "a/b c/d");
        assert_eq!(
            decode("a%2Fb%20c%2fd", Form::KeepSlashes).unwrap(),
            "a%2Fb c%2fd"
        );
        assert_eq!(decode("a+b%2B%2F", Form::Query).unwrap(), "a b+/");
        assert_eq!(decode("caf%C3%A9", Form::All).unwrap(), "café");
    }

    #[test]
    fn bad_escapes_and_bytes_that_are_not_utf8_are_refused() {
        for bad in ["%", "%4", "%G1", "a%zz", "%%41"] {
            assert_eq!(
                decode(bad, Form::All),
                Err(PercentError::BadEscape),
                "{bad}"
            );
        }
        for bad in ["%FF", "%C3", "%C3%28", "%ED%A0%80"] {
            assert_eq!(
                decode(bad, Form::Query),
                Err(PercentError::NotUtf8),
                "{bad}"
            );
        }
    }
}
