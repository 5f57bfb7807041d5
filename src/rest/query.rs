//! A query string as (name, value) pairs, percent-decoded as HTML forms encode them (`+` is a
//! space), in order. Bounded: at most [`MAX_QUERY_LEN`] bytes and [`MAX_QUERY_PARAMS`]
//! parameters, so a query costs at most a known amount however it is written.
//!
//! Empty pieces (`a=1&&b=2`) and pieces without a name (`=x`) are skipped; a name without
//! `=` has the empty value. What the names mean is `bind.rs`'s.

use std::borrow::Cow;

use tonic::Status;

use super::percent::{self, Form};

/// The longest query string read, in bytes.
pub const MAX_QUERY_LEN: usize = 64 * 1024;

/// The most parameters a query string may have.
pub const MAX_QUERY_PARAMS: usize = 256;

/// One parameter of a query string, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParam<'q> {
    /// Its name: a field's path, such as `page.size`.
    pub name: Cow<'q, str>,
    /// Its value.
    pub value: Cow<'q, str>,
}

/// The parameters of `query` (the URI's part after `?`), decoded. Fails with
/// `INVALID_ARGUMENT` on a query beyond the bounds, or with an escape that is not `%` and two
/// hex digits or bytes that are not UTF-8.
pub fn parse_query(query: &str) -> Result<Vec<QueryParam<'_>>, Status> {
    if query.len() > MAX_QUERY_LEN {
        return Err(Status::invalid_argument(format!(
            "the query string is longer than {MAX_QUERY_LEN} bytes"
        )));
    }
    let mut params = Vec::with_capacity(8);
    // Plain loops over the bytes: `&` and `=` are ASCII, and for pieces this short they cost
    // a fraction of `str::split`'s searchers.
    let mut start = 0;
    while start <= query.len() {
        let end = find(&query.as_bytes()[start..], b'&').map_or(query.len(), |at| start + at);
        let piece = &query[start..end];
        start = end + 1;
        let (name, value) = match find(piece.as_bytes(), b'=') {
            Some(at) => (&piece[..at], &piece[at + 1..]),
            None => (piece, ""),
        };
        if name.is_empty() {
            continue;
        }
        if params.len() == MAX_QUERY_PARAMS {
            return Err(Status::invalid_argument(format!(
                "the query string has more than {MAX_QUERY_PARAMS} parameters"
            )));
        }
        let name = percent::decode(name, Form::Query).map_err(|error| {
            Status::invalid_argument(format!("a query parameter's name has {}", error.describe()))
        })?;
        let value = percent::decode(value, Form::Query).map_err(|error| {
            Status::invalid_argument(format!("query parameter `{name}` has {}", error.describe()))
        })?;
        params.push(QueryParam { name, value });
    }
    Ok(params)
}

fn find(bytes: &[u8], byte: u8) -> Option<usize> {
    bytes.iter().position(|&candidate| candidate == byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &str) -> Vec<(String, String)> {
        parse_query(query)
            .unwrap()
            .into_iter()
            .map(|param| (param.name.into_owned(), param.value.into_owned()))
            .collect()
    }

    fn pair(name: &str, value: &str) -> (String, String) {
        (name.to_owned(), value.to_owned())
    }

    #[test]
    fn parameters_are_decoded_in_order() {
        assert_eq!(
            pairs("page.size=10&ids=1&ids=2&displayName=a+b%26c&since=2024-01-01T00%3A00%3A00Z"),
            [
                pair("page.size", "10"),
                pair("ids", "1"),
                pair("ids", "2"),
                pair("displayName", "a b&c"),
                pair("since", "2024-01-01T00:00:00Z"),
            ]
        );
    }

    #[test]
    fn empty_pieces_and_nameless_ones_are_skipped_and_bare_names_are_empty() {
        assert_eq!(
            pairs("&a=1&&=x&verbose&b==2&"),
            [pair("a", "1"), pair("verbose", ""), pair("b", "=2")]
        );
        assert!(pairs("").is_empty());
    }

    #[test]
    fn bounds_and_bad_encodings_are_invalid_arguments() {
        let long = format!("a={}", "x".repeat(MAX_QUERY_LEN));
        let many = vec!["a=1"; MAX_QUERY_PARAMS + 1].join("&");
        let most = vec!["a=1"; MAX_QUERY_PARAMS].join("&");
        assert_eq!(pairs(&most).len(), MAX_QUERY_PARAMS);
        for (query, message) in [
            (long.as_str(), "longer than"),
            (many.as_str(), "more than 256 parameters"),
            (
                "name=%FF",
                "query parameter `name` has percent-encoding that is not UTF-8",
            ),
            ("%4=1", "a query parameter's name has a `%` not followed"),
        ] {
            let error = parse_query(query).unwrap_err();
            assert_eq!(error.code(), tonic::Code::InvalidArgument);
            assert!(error.message().contains(message), "{error:?}");
        }
    }
}
