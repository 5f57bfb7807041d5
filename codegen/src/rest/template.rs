//! The path templates of `google.api.http` rules, parsed by the grammar of
//! `google/api/http.proto`:
//!
//! ```text
//! Template = "/" Segments [ Verb ] ;
//! Segments = Segment { "/" Segment } ;
//! Segment  = "*" | "**" | LITERAL | Variable ;
//! Variable = "{" FieldPath [ "=" Segments ] "}" ;
//! FieldPath = IDENT { "." IDENT } ;
//! Verb     = ":" LITERAL ;
//! ```
//!
//! with the rules its comments add: `**` only last (before the verb), no variable inside a
//! variable, `{var}` meaning `{var=*}`. `/` alone is the root, with no segments. A LITERAL is
//! made of RFC 3986's unreserved characters, its sub-delimiters but `*`, `@`, and
//! percent-escapes, which are decoded here (so `%41` matches `A`); an escaped `/` is refused,
//! since no single segment could match it. An IDENT is `[A-Za-z_][A-Za-z0-9_]*`.
//!
//! Bounded, so that a proto cannot make the build or the server's tables large: at most
//! [`MAX_TEMPLATE_LEN`] bytes, [`MAX_SEGMENTS`] segments, [`MAX_VARIABLES`] variables and
//! [`MAX_FIELD_DEPTH`] names in a field path.

use std::fmt::{self, Write as _};

/// The longest template, in bytes.
pub const MAX_TEMPLATE_LEN: usize = 2048;
/// The most segments a template may have.
pub const MAX_SEGMENTS: usize = 64;
/// The most variables a template may have.
pub const MAX_VARIABLES: usize = 16;
/// The most names a variable's field path may have (`a.b.c` has 3).
pub const MAX_FIELD_DEPTH: usize = 16;

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// Its segments, variables' included.
    pub segments: Vec<Segment>,
    /// Its variables, in order.
    pub variables: Vec<Variable>,
    /// The verb after the last segment, if any.
    pub verb: Option<String>,
}

/// One segment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// Literal text, percent-decoded.
    Literal(String),
    /// `*`: any one segment.
    Any,
    /// `**`: the rest of the path.
    Rest,
}

/// A variable: the field it binds, and the segments it spans (`start..end`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// The field's path, by the names written: `["book", "name"]`.
    pub field: Vec<String>,
    /// Its first segment.
    pub start: usize,
    /// One past its last segment.
    pub end: usize,
}

impl Variable {
    /// Whether it may span more than one path segment (`{name=shelves/*}`, `{path=**}`).
    pub fn is_multi_segment(&self, template: &Template) -> bool {
        self.end - self.start > 1
            || template.segments[self.start..self.end].contains(&Segment::Rest)
    }
}

/// Why a template does not parse: what is wrong, and at which byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What is wrong.
    pub reason: String,
    /// The byte of the template where it was found.
    pub at: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.reason, self.at)
    }
}

/// Parses `text`.
pub fn parse(text: &str) -> Result<Template, ParseError> {
    if text.len() > MAX_TEMPLATE_LEN {
        return Err(ParseError {
            reason: format!("longer than {MAX_TEMPLATE_LEN} bytes"),
            at: MAX_TEMPLATE_LEN,
        });
    }
    let mut parser = Parser {
        text: text.as_bytes(),
        at: 0,
        template: Template {
            segments: Vec::new(),
            variables: Vec::new(),
            verb: None,
        },
    };
    parser.expect(b'/', "a template starts with `/`")?;
    if text.len() > 1 {
        parser.segments(false)?;
        if parser.peek() == Some(b':') {
            parser.at += 1;
            parser.template.verb = Some(parser.literal("a verb")?);
        }
        if parser.at < text.len() {
            return parser.fail(match parser.template.verb {
                Some(_) => "the verb must end the template",
                None => "a character a template cannot hold here",
            });
        }
    }
    let segments = &parser.template.segments;
    if let Some(rest) = segments.iter().position(|s| *s == Segment::Rest)
        && rest + 1 != segments.len()
    {
        return Err(ParseError {
            reason: "`**` is not the last segment".to_owned(),
            at: 0,
        });
    }
    Ok(parser.template)
}

struct Parser<'t> {
    text: &'t [u8],
    at: usize,
    template: Template,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn fail<T>(&self, reason: &str) -> Result<T, ParseError> {
        Err(ParseError {
            reason: reason.to_owned(),
            at: self.at,
        })
    }

    fn expect(&mut self, byte: u8, reason: &str) -> Result<(), ParseError> {
        if self.peek() != Some(byte) {
            return self.fail(reason);
        }
        self.at += 1;
        Ok(())
    }

    /// `Segment { "/" Segment }`.
    fn segments(&mut self, in_variable: bool) -> Result<(), ParseError> {
        loop {
            self.segment(in_variable)?;
            if self.peek() != Some(b'/') {
                return Ok(());
            }
            self.at += 1;
        }
    }

    fn segment(&mut self, in_variable: bool) -> Result<(), ParseError> {
        if self.template.segments.len() == MAX_SEGMENTS {
            return self.fail(&format!("more than {MAX_SEGMENTS} segments"));
        }
        let segment = match self.peek() {
            Some(b'*') if self.text.get(self.at + 1) == Some(&b'*') => {
                self.at += 2;
                Segment::Rest
            }
            Some(b'*') => {
                self.at += 1;
                Segment::Any
            }
            Some(b'{') if in_variable => return self.fail("a variable inside a variable"),
            Some(b'{') => return self.variable(),
            _ => Segment::Literal(self.literal("a segment")?),
        };
        self.template.segments.push(segment);
        Ok(())
    }

    /// `"{" FieldPath [ "=" Segments ] "}"`.
    fn variable(&mut self) -> Result<(), ParseError> {
        if self.template.variables.len() == MAX_VARIABLES {
            return self.fail(&format!("more than {MAX_VARIABLES} variables"));
        }
        self.at += 1;
        let mut field = vec![self.ident()?];
        while self.peek() == Some(b'.') {
            if field.len() == MAX_FIELD_DEPTH {
                return self.fail(&format!(
                    "a field path of more than {MAX_FIELD_DEPTH} names"
                ));
            }
            self.at += 1;
            field.push(self.ident()?);
        }
        let start = self.template.segments.len();
        if self.peek() == Some(b'=') {
            self.at += 1;
            self.segments(true)?;
        } else {
            // `{var}` is `{var=*}`.
            if start == MAX_SEGMENTS {
                return self.fail(&format!("more than {MAX_SEGMENTS} segments"));
            }
            self.template.segments.push(Segment::Any);
        }
        self.expect(b'}', "a variable ends with `}`")?;
        let end = self.template.segments.len();
        self.template.variables.push(Variable { field, start, end });
        Ok(())
    }

    fn ident(&mut self) -> Result<String, ParseError> {
        let start = self.at;
        while let Some(byte) = self.peek() {
            let first = self.at == start;
            if byte == b'_' || byte.is_ascii_alphabetic() || (!first && byte.is_ascii_digit()) {
                self.at += 1;
            } else {
                break;
            }
        }
        if self.at == start {
            return self.fail("a field name (a letter or `_`, then letters, digits, `_`)");
        }
        Ok(String::from_utf8_lossy(&self.text[start..self.at]).into_owned())
    }

    /// One or more literal characters or escapes, decoded; `what` names it in errors.
    fn literal(&mut self, what: &str) -> Result<String, ParseError> {
        let start = self.at;
        let mut bytes = Vec::new();
        while let Some(byte) = self.peek() {
            if byte == b'%' {
                let digit = |at: usize| {
                    self.text
                        .get(at)
                        .and_then(|&byte| (byte as char).to_digit(16))
                };
                let (Some(high), Some(low)) = (digit(self.at + 1), digit(self.at + 2)) else {
                    return self.fail("a `%` not followed by two hex digits");
                };
                let decoded = (high << 4 | low) as u8;
                if decoded == b'/' {
                    return self.fail("an escaped `/` in a literal, which no segment matches");
                }
                bytes.push(decoded);
                self.at += 3;
            } else if is_literal_byte(byte) {
                bytes.push(byte);
                self.at += 1;
            } else {
                break;
            }
        }
        if bytes.is_empty() {
            return self.fail(&format!("{what} (literal text, `*`, `**` or a variable)"));
        }
        String::from_utf8(bytes).map_err(|_| ParseError {
            reason: "percent-encoding that is not UTF-8".to_owned(),
            at: start,
        })
    }
}

/// RFC 3986's unreserved characters, its sub-delimiters but `*`, and `@`.
pub(crate) fn is_literal_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-._~!$&'()+,;=@".contains(&byte)
}

impl fmt::Display for Template {
    /// The template in a canonical form: `{var}` for `{var=*}`, literals with every byte
    /// outside the literal characters escaped. It parses back to the same template.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            f.write_char('/')?;
        }
        let mut variables = self.variables.iter().peekable();
        let mut index = 0;
        while index < self.segments.len() {
            f.write_char('/')?;
            if let Some(variable) = variables.next_if(|variable| variable.start == index) {
                write!(f, "{{{}", variable.field.join("."))?;
                let segments = &self.segments[variable.start..variable.end];
                if segments != [Segment::Any] {
                    f.write_char('=')?;
                    for (at, segment) in segments.iter().enumerate() {
                        if at > 0 {
                            f.write_char('/')?;
                        }
                        write_segment(f, segment)?;
                    }
                }
                f.write_char('}')?;
                index = variable.end;
            } else {
                write_segment(f, &self.segments[index])?;
                index += 1;
            }
        }
        if let Some(verb) = &self.verb {
            f.write_char(':')?;
            write_literal(f, verb)?;
        }
        Ok(())
    }
}

fn write_segment(f: &mut fmt::Formatter<'_>, segment: &Segment) -> fmt::Result {
    match segment {
        Segment::Literal(text) => write_literal(f, text),
        Segment::Any => f.write_char('*'),
        Segment::Rest => f.write_str("**"),
    }
}

fn write_literal(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    for &byte in text.as_bytes() {
        if is_literal_byte(byte) {
            f.write_char(byte as char)?;
        } else {
            write!(f, "%{byte:02X}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(text: &str) -> Segment {
        Segment::Literal(text.to_owned())
    }

    fn variable(field: &[&str], start: usize, end: usize) -> Variable {
        Variable {
            field: field.iter().map(|name| (*name).to_owned()).collect(),
            start,
            end,
        }
    }

    #[test]
    fn the_issues_templates_parse() {
        use Segment::{Any, Rest};
        let book = || {
            vec![
                literal("v1"),
                literal("shelves"),
                Any,
                literal("books"),
                Any,
            ]
        };
        let cases = [
            (
                "/v1/{name=shelves/*/books/*}",
                book(),
                vec![variable(&["name"], 1, 5)],
                None,
            ),
            (
                "/v1/files/{path=**}",
                vec![literal("v1"), literal("files"), Rest],
                vec![variable(&["path"], 2, 3)],
                None,
            ),
            (
                "/v1/{book.name=shelves/*/books/*}",
                book(),
                vec![variable(&["book", "name"], 1, 5)],
                None,
            ),
            (
                "/v1/{name=shelves/*/books/*}:archive",
                book(),
                vec![variable(&["name"], 1, 5)],
                Some("archive".to_owned()),
            ),
            (
                "/v1/search:query",
                vec![literal("v1"), literal("search")],
                vec![],
                Some("query".to_owned()),
            ),
            (
                "/v1/fail/{code}",
                vec![literal("v1"), literal("fail"), Any],
                vec![variable(&["code"], 2, 3)],
                None,
            ),
            ("/", vec![], vec![], None),
            (
                "/v1/*/x/**",
                vec![literal("v1"), Any, literal("x"), Rest],
                vec![],
                None,
            ),
            (
                "/v1/a%41b/{x=*}/{y=z/**}",
                vec![literal("v1"), literal("aAb"), Any, literal("z"), Rest],
                vec![variable(&["x"], 2, 3), variable(&["y"], 3, 5)],
                None,
            ),
        ];
        for (text, segments, variables, verb) in cases {
            let parsed = parse(text).unwrap_or_else(|error| panic!("{text}: {error}"));
            assert_eq!(
                parsed,
                Template {
                    segments,
                    variables,
                    verb
                },
                "{text}"
            );
        }
    }

    #[test]
    fn what_the_grammar_refuses_is_an_error_saying_where() {
        for (text, reason) in [
            ("", "starts with `/`"),
            ("v1/x", "starts with `/`"),
            ("/v1/", "a segment"),
            ("/v1//x", "a segment"),
            ("/v1/**/x", "`**` is not the last"),
            ("/v1/{a=**}/x", "`**` is not the last"),
            ("/v1/{a={b}}", "a variable inside a variable"),
            ("/v1/{a", "ends with `}`"),
            ("/v1/{}", "a field name"),
            ("/v1/{1a}", "a field name"),
            ("/v1/{a.}", "a field name"),
            ("/v1/{a=}", "a segment"),
            ("/v1/x:", "a verb"),
            ("/v1/x:a/b", "the verb must end"),
            ("/v1/x?y", "cannot hold here"),
            ("/v1/%4", "two hex digits"),
            ("/v1/%+1", "two hex digits"),
            ("/v1/a%2Fb", "an escaped `/`"),
            ("/v1/%FF", "not UTF-8"),
            ("/v1/a b", "cannot hold here"),
        ] {
            let error = parse(text).expect_err(text);
            assert!(error.reason.contains(reason), "{text}: {error}");
        }
    }

    #[test]
    fn bounds_hold() {
        let long = format!("/{}", "a".repeat(MAX_TEMPLATE_LEN));
        assert!(parse(&long).unwrap_err().reason.contains("longer than"));
        let segments = "/a".repeat(MAX_SEGMENTS);
        assert_eq!(parse(&segments).unwrap().segments.len(), MAX_SEGMENTS);
        let more = format!("{segments}/a");
        assert!(parse(&more).unwrap_err().reason.contains("segments"));
        let variables: String = (0..=MAX_VARIABLES).map(|i| format!("/{{v{i}}}")).collect();
        assert!(parse(&variables).unwrap_err().reason.contains("variables"));
        let deep = vec!["a"; MAX_FIELD_DEPTH + 1].join(".");
        assert!(
            parse(&format!("/{{{deep}}}"))
                .unwrap_err()
                .reason
                .contains("field path")
        );
        let deepest = vec!["a"; MAX_FIELD_DEPTH].join(".");
        assert!(parse(&format!("/{{{deepest}}}")).is_ok());
    }

    #[test]
    fn the_canonical_form_parses_back_to_the_same_template() {
        for text in [
            "/v1/{name=shelves/*/books/*}:archive",
            "/v1/{name=*}",
            "/v1/files/{path=**}",
            "/",
            "/a%20b/%C3%A9/{x}:v%3Aw",
            "/*/**",
        ] {
            let parsed = parse(text).unwrap();
            let written = parsed.to_string();
            assert_eq!(parse(&written).unwrap(), parsed, "{text} -> {written}");
        }
        assert_eq!(parse("/v1/{name=*}").unwrap().to_string(), "/v1/{name}");
    }
}
