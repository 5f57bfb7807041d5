//! A path template, parsed: `/v1/{name=shelves/*/books/*}:archive` is the literal `v1`, a
//! variable `name` over `shelves/*/books/*`, and the verb `archive`.
//!
//! `fastgrpc-build` parses the templates of the protos (the grammar of `google/api/http.proto`,
//! with its bounds) and writes them in this form, so a server starts with nothing to parse and
//! a template that does not parse is a build error. [`Template::check`] checks what the
//! matcher relies on, for templates made any other way.

use std::fmt;

/// A parsed path template.
#[derive(Debug, Clone, Copy)]
pub struct Template<'a> {
    /// The template as written in the proto, for messages.
    pub text: &'a str,
    /// Its segments, each matching one segment of a request's path but [`Segment::Rest`].
    pub segments: &'a [Segment<'a>],
    /// Its variables, each over a run of segments.
    pub variables: &'a [Variable<'a>],
    /// The verb after the last segment (`archive` in `...:archive`), if any.
    pub verb: Option<&'a str>,
}

/// One segment of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Segment<'a> {
    /// This text, percent-decoded; a path segment matches when it decodes to the same.
    Literal(&'a str),
    /// `*`: any one segment that is not empty.
    Any,
    /// `**`: the rest of the path, zero segments or more; only last.
    Rest,
}

/// A variable: the field it binds and the segments it spans.
#[derive(Debug, Clone, Copy)]
pub struct Variable<'a> {
    /// The field's path from the request message, by proto names: `["book", "name"]`.
    pub field: &'a [&'a str],
    /// The first segment of the template the variable spans.
    pub start: usize,
    /// One past its last segment.
    pub end: usize,
}

impl Variable<'_> {
    /// Whether the variable may span several path segments (`{name=shelves/*}`, `{path=**}`),
    /// whose value keeps `%2F` encoded; a single-segment one (`{name}`) decodes everything.
    pub fn is_multi_segment(&self, template: &Template<'_>) -> bool {
        self.end - self.start > 1
            || template.segments[self.start..self.end].contains(&Segment::Rest)
    }
}

/// What makes a template unusable for matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// The template's text.
    pub template: String,
    /// What is wrong.
    pub reason: &'static str,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "path template {:?}: {}", self.template, self.reason)
    }
}

impl std::error::Error for TemplateError {}

impl Template<'_> {
    /// Checks what matching relies on: `**` only last, literals and the verb not empty,
    /// variables within the segments, in order and not overlapping, each naming a field.
    pub fn check(&self) -> Result<(), TemplateError> {
        let fail = |reason| {
            Err(TemplateError {
                template: self.text.to_owned(),
                reason,
            })
        };
        let last = self.segments.len().saturating_sub(1);
        for (index, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Rest if index != last => return fail("`**` is not the last segment"),
                Segment::Literal(text) if text.is_empty() || text.contains('/') => {
                    return fail("a literal segment is empty or holds a `/`");
                }
                _ => {}
            }
        }
        if self.verb.is_some_and(str::is_empty) {
            return fail("the verb is empty");
        }
        let mut free_from = 0;
        for variable in self.variables {
            if variable.field.is_empty() || variable.field.iter().any(|name| name.is_empty()) {
                return fail("a variable names no field");
            }
            if variable.start < free_from
                || variable.start >= variable.end
                || variable.end > self.segments.len()
            {
                return fail("a variable's segments are out of place");
            }
            free_from = variable.end;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template<'a>(segments: &'a [Segment<'a>], variables: &'a [Variable<'a>]) -> Template<'a> {
        Template {
            text: "test",
            segments,
            variables,
            verb: None,
        }
    }

    #[test]
    fn variables_over_several_segments_or_the_rest_are_multi_segment() {
        use Segment::*;
        let name = Variable {
            field: &["name"],
            start: 1,
            end: 5,
        };
        let id = Variable {
            field: &["id"],
            start: 1,
            end: 2,
        };
        let segments = [
            Literal("v1"),
            Literal("shelves"),
            Any,
            Literal("books"),
            Any,
        ];
        assert!(name.is_multi_segment(&template(&segments, &[name])));
        let segments = [Literal("v1"), Any];
        assert!(!id.is_multi_segment(&template(&segments, &[id])));
        let segments = [Literal("v1"), Rest];
        assert!(id.is_multi_segment(&template(&segments, &[id])));
    }

    #[test]
    fn check_refuses_what_matching_cannot_use() {
        use Segment::*;
        let var = |start, end| Variable {
            field: &["a"],
            start,
            end,
        };
        assert!(
            template(&[Literal("v1"), Rest], &[var(1, 2)])
                .check()
                .is_ok()
        );
        assert!(template(&[], &[]).check().is_ok());
        let bad: &[(&[Segment<'_>], &[Variable<'_>])] = &[
            (&[Rest, Literal("a")], &[]),
            (&[Literal("")], &[]),
            (&[Literal("a/b")], &[]),
            (&[Any], &[var(0, 2)]),
            (&[Any, Any], &[var(0, 2), var(1, 2)]),
            (&[Any], &[var(1, 1)]),
            (
                &[Any],
                &[Variable {
                    field: &[],
                    start: 0,
                    end: 1,
                }],
            ),
        ];
        for (segments, variables) in bad {
            assert!(
                template(segments, variables).check().is_err(),
                "{segments:?}"
            );
        }
        let mut with_verb = template(&[Any], &[]);
        with_verb.verb = Some("");
        assert!(with_verb.check().is_err());
    }
}
