//! The matcher: every rule of a server in one tree, walked once per request path.
//!
//! The tree has a node per distinct prefix of the templates' segments. A node's children are
//! its literal segments (a hash map, so the number of routes does not slow the lookup of one
//! segment), its `*` child, and the routes that end there or whose `**` starts there. A
//! request's path is split into segments once and walked from the root; at each node a
//! literal child is tried first, then `*`, then `**`, so the most specific route wins segment
//! by segment from the left (as Envoy's transcoder and ESP have it), and an exact end before
//! a `**`. Each node is at one depth, so a walk visits a node at most once however it
//! backtracks: a lookup costs the segments of the path, not the number of routes.
//!
//! A path whose last segment holds a `:` is tried first as segments and a verb (`books/2` and
//! `archive`), against the routes with that verb, then whole, against those without. A path
//! that matches with another HTTP method is told apart from one that matches nothing
//! ([`Lookup::MethodNotAllowed`] with the methods that would do), and a route for the
//! request's method is preferred to one for any method (`custom { kind: "*" }`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use tonic::Status;

use super::HttpMethod;
use super::percent::{self, Form};
use super::template::{Segment, Template, TemplateError};

/// The most segments a request path may have; a longer path matches nothing.
pub const MAX_PATH_SEGMENTS: usize = 256;

/// The routes of a server, each a template, an HTTP method and a value of the caller's (the
/// rule it stands for).
pub struct Routes<T> {
    nodes: Vec<Node>,
    routes: Vec<Route<T>>,
}

#[derive(Default)]
struct Node {
    literals: HashMap<Box<str>, usize, BuildHasherDefault<Fnv>>,
    any: Option<usize>,
    /// The routes whose templates end at this node.
    ends: Vec<End>,
    /// The routes whose templates end with a `**` that starts at this node.
    rest: Vec<End>,
}

struct End {
    verb: Option<Box<str>>,
    method: HttpMethod,
    route: usize,
}

struct Route<T> {
    value: T,
    /// The index of its template's `**`, if it has one.
    rest_at: Option<usize>,
    variables: Vec<Capture>,
}

/// A variable, as the matcher keeps it.
struct Capture {
    field: Box<[Box<str>]>,
    start: usize,
    end: usize,
    multi_segment: bool,
}

/// Why routes cannot be put together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// A template is not one the matcher can use.
    Template(TemplateError),
    /// Two routes (by their positions in the list given) match the same requests: the same
    /// HTTP method, and templates alike but for their variables' names.
    Conflict {
        /// The route given first.
        first: usize,
        /// The route given later.
        second: usize,
    },
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::Template(error) => error.fmt(f),
            RouteError::Conflict { first, second } => write!(
                f,
                "routes {first} and {second} match the same requests (same HTTP method and path)"
            ),
        }
    }
}

impl std::error::Error for RouteError {}

/// What a request's method and path find.
pub enum Lookup<'r, 'p, T> {
    /// The route, and where its variables are in the path.
    Found(Found<'r, 'p, T>),
    /// Routes match the path, but none answers the request's method: these do (sorted, for
    /// an `Allow` header).
    MethodNotAllowed(Vec<&'static str>),
    /// No route matches the path.
    NotFound,
}

/// A route found for a request.
pub struct Found<'r, 'p, T> {
    route: &'r Route<T>,
    path: &'p str,
    /// The segments of the path (the verb cut off the last one).
    segments: Vec<Span>,
}

/// Where a segment of a request's path is, and whether it holds a `%` (so that only those
/// are decoded to be compared with literals).
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    escaped: bool,
}

/// A path variable's value, for the field it binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding<'r, 'p> {
    /// The field's path from the request message, by proto names.
    pub field: &'r [Box<str>],
    /// The value, percent-decoded as the variable's template says.
    pub value: Cow<'p, str>,
}

impl<T> Routes<T> {
    /// Puts `routes` together: each an HTTP method, a template and the value a lookup gives
    /// back. Fails on a template the matcher cannot use, or on two routes that match the
    /// same requests.
    pub fn new<'t>(
        routes: impl IntoIterator<Item = (HttpMethod, Template<'t>, T)>,
    ) -> Result<Self, RouteError> {
        let mut built = Routes {
            nodes: vec![Node::default()],
            routes: Vec::new(),
        };
        for (method, template, value) in routes {
            template.check().map_err(RouteError::Template)?;
            built.insert(method, &template, value)?;
        }
        Ok(built)
    }

    fn insert(
        &mut self,
        method: HttpMethod,
        template: &Template<'_>,
        value: T,
    ) -> Result<(), RouteError> {
        let mut node = 0;
        let mut rest_at = None;
        for (index, segment) in template.segments.iter().enumerate() {
            node = match *segment {
                Segment::Literal(text) => match self.nodes[node].literals.get(text) {
                    Some(&child) => child,
                    None => {
                        let child = self.new_node();
                        self.nodes[node].literals.insert(text.into(), child);
                        child
                    }
                },
                Segment::Any => match self.nodes[node].any {
                    Some(child) => child,
                    None => {
                        let child = self.new_node();
                        self.nodes[node].any = Some(child);
                        child
                    }
                },
                // `**` is last (checked): its routes stay with the node it starts at.
                Segment::Rest => {
                    rest_at = Some(index);
                    break;
                }
            };
        }
        let route = self.routes.len();
        let node = &mut self.nodes[node];
        let ends = if rest_at.is_some() {
            &mut node.rest
        } else {
            &mut node.ends
        };
        let verb = template.verb;
        if let Some(same) = ends
            .iter()
            .find(|end| end.verb.as_deref() == verb && end.method == method)
        {
            return Err(RouteError::Conflict {
                first: same.route,
                second: route,
            });
        }
        let end = End {
            verb: verb.map(Into::into),
            method,
            route,
        };
        // Routes for any method go after those naming one, which are preferred.
        match method {
            HttpMethod::Any => ends.push(end),
            _ => {
                let first_any = ends
                    .iter()
                    .position(|end| end.method == HttpMethod::Any)
                    .unwrap_or(ends.len());
                ends.insert(first_any, end);
            }
        }
        let variables = template
            .variables
            .iter()
            .map(|variable| Capture {
                field: variable.field.iter().map(|&name| name.into()).collect(),
                start: variable.start,
                end: variable.end,
                multi_segment: variable.is_multi_segment(template),
            })
            .collect();
        self.routes.push(Route {
            value,
            rest_at,
            variables,
        });
        Ok(())
    }

    fn new_node(&mut self) -> usize {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    /// How many routes there are.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The route for a request of `method` to `path` (the URI's path, without its query).
    pub fn find<'r, 'p>(&'r self, method: &http::Method, path: &'p str) -> Lookup<'r, 'p, T> {
        let Some(mut segments) = split(path) else {
            return Lookup::NotFound;
        };
        let mut allowed = Vec::new();
        // First as segments and a verb, if the last segment has one.
        if let Some(&Span { start, end, .. }) = segments.last()
            && let Some(colon) = path[start..end].rfind(':')
            && colon > 0
            && start + colon + 1 < end
            // Compared decoded, as literals are.
            && let Ok(verb) = percent::decode(&path[start + colon + 1..end], Form::All)
        {
            let last = segments.len() - 1;
            segments[last].end = start + colon;
            let want = Want {
                path,
                segments: &segments,
                verb: Some(&verb),
                method,
            };
            if let Some(route) = self.search(0, 0, &want, &mut allowed) {
                return self.found(route, path, segments);
            }
            segments[last].end = end;
        }
        let want = Want {
            path,
            segments: &segments,
            verb: None,
            method,
        };
        if let Some(route) = self.search(0, 0, &want, &mut allowed) {
            return self.found(route, path, segments);
        }
        if allowed.is_empty() {
            Lookup::NotFound
        } else {
            allowed.sort_unstable();
            allowed.dedup();
            Lookup::MethodNotAllowed(allowed)
        }
    }

    fn found<'r, 'p>(
        &'r self,
        route: usize,
        path: &'p str,
        segments: Vec<Span>,
    ) -> Lookup<'r, 'p, T> {
        Lookup::Found(Found {
            route: &self.routes[route],
            path,
            segments,
        })
    }

    /// The first route, in order of precedence, under `node` (at `depth` segments into the
    /// path) that matches the rest of the path, its verb and method; the methods of those
    /// that match but for the method go into `allowed`.
    fn search(
        &self,
        node: usize,
        depth: usize,
        want: &Want<'_>,
        allowed: &mut Vec<&'static str>,
    ) -> Option<usize> {
        let node = &self.nodes[node];
        if depth == want.segments.len() {
            if let Some(route) = want.pick(&node.ends, allowed) {
                return Some(route);
            }
        } else {
            let span = want.segments[depth];
            let segment = &want.path[span.start..span.end];
            let literal = match span.escaped {
                false => Ok(Cow::Borrowed(segment)),
                true => percent::decode(segment, Form::All),
            };
            if !node.literals.is_empty()
                && let Ok(literal) = literal
                && let Some(&child) = node.literals.get(&*literal)
                && let Some(route) = self.search(child, depth + 1, want, allowed)
            {
                return Some(route);
            }
            if let Some(child) = node.any
                && !segment.is_empty()
                && let Some(route) = self.search(child, depth + 1, want, allowed)
            {
                return Some(route);
            }
        }
        // `**` takes whatever is left, nothing included.
        want.pick(&node.rest, allowed)
    }
}

impl<T> fmt::Debug for Routes<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Routes")
            .field("routes", &self.routes.len())
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

/// FNV-1a, for the literal maps: a segment is a few bytes, which SipHash takes four times as
/// long over. Its weakness to chosen keys does not matter here: the maps are filled from the
/// rules, and a request's segment only looks one up, so it cannot lengthen a probe.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &byte in bytes {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// What a lookup looks for.
struct Want<'w> {
    path: &'w str,
    segments: &'w [Span],
    verb: Option<&'w str>,
    method: &'w http::Method,
}

impl Want<'_> {
    /// The first of `ends` with the verb and method wanted.
    fn pick(&self, ends: &[End], allowed: &mut Vec<&'static str>) -> Option<usize> {
        for end in ends.iter().filter(|end| end.verb.as_deref() == self.verb) {
            if end.method.matches(self.method) {
                return Some(end.route);
            }
            allowed.push(end.method.as_str());
        }
        None
    }
}

/// Where each segment of `path` is: none for `/`; `None` if the path does not start with a
/// `/` or has more than [`MAX_PATH_SEGMENTS`].
fn split(path: &str) -> Option<Vec<Span>> {
    let rest = path.strip_prefix('/')?;
    if rest.is_empty() {
        return Some(Vec::new());
    }
    let mut segments = Vec::with_capacity(8);
    let mut span = Span {
        start: 1,
        end: 1,
        escaped: false,
    };
    for byte in rest.bytes() {
        match byte {
            b'/' => {
                segments.push(span);
                span = Span {
                    start: span.end + 1,
                    end: span.end + 1,
                    escaped: false,
                };
                continue;
            }
            b'%' => span.escaped = true,
            _ => {}
        }
        span.end += 1;
    }
    segments.push(span);
    (segments.len() <= MAX_PATH_SEGMENTS).then_some(segments)
}

impl<'r, 'p, T> Found<'r, 'p, T> {
    /// The value the route was given.
    pub fn value(&self) -> &'r T {
        &self.route.value
    }

    /// The values of the route's variables, percent-decoded: a single-segment variable
    /// decodes everything, a multi-segment one all but `%2F`. Fails with `INVALID_ARGUMENT`
    /// on an escape that is not `%` and two hex digits, or on bytes that are not UTF-8.
    pub fn bindings(&self) -> Result<Vec<Binding<'r, 'p>>, Status> {
        self.route
            .variables
            .iter()
            .map(|variable| {
                let end = match self.route.rest_at {
                    // The variable holding `**` takes every segment left.
                    Some(rest) if variable.end > rest => self.segments.len(),
                    _ => variable.end,
                };
                let raw = if variable.start >= end {
                    ""
                } else {
                    &self.path[self.segments[variable.start].start..self.segments[end - 1].end]
                };
                let form = if variable.multi_segment {
                    Form::KeepSlashes
                } else {
                    Form::All
                };
                let value = percent::decode(raw, form).map_err(|error| {
                    Status::invalid_argument(format!(
                        "the path's `{}` has {}",
                        variable.field.join("."),
                        error.describe()
                    ))
                })?;
                Ok(Binding {
                    field: &variable.field,
                    value,
                })
            })
            .collect()
    }
}

impl<T> fmt::Debug for Found<'_, '_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Found")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Lookup<'_, '_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lookup::Found(found) => found.fmt(f),
            Lookup::MethodNotAllowed(allowed) => {
                f.debug_tuple("MethodNotAllowed").field(allowed).finish()
            }
            Lookup::NotFound => f.write_str("NotFound"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::Variable;
    use Segment::{Any, Literal, Rest};

    fn template<'a>(
        text: &'a str,
        segments: &'a [Segment<'a>],
        variables: &'a [Variable<'a>],
        verb: Option<&'a str>,
    ) -> Template<'a> {
        Template {
            text,
            segments,
            variables,
            verb,
        }
    }

    fn variable<'a>(field: &'a [&'a str], start: usize, end: usize) -> Variable<'a> {
        Variable { field, start, end }
    }

    const BOOK: &[Segment<'static>] = &[
        Literal("v1"),
        Literal("shelves"),
        Any,
        Literal("books"),
        Any,
    ];
    const NAME: &[Variable<'static>] = &[Variable {
        field: &["name"],
        start: 1,
        end: 5,
    }];

    /// The routes, and a few to show precedence.
    fn routes() -> Routes<&'static str> {
        let files = [variable(&["path"], 2, 3)];
        let user = [variable(&["id"], 2, 3)];
        let special = [variable(&["id"], 5, 6)];
        Routes::new([
            (HttpMethod::Get, template("get", BOOK, NAME, None), "Get"),
            (
                HttpMethod::Post,
                template("archive", BOOK, NAME, Some("archive")),
                "Archive",
            ),
            (
                HttpMethod::Get,
                template(
                    "files",
                    &[Literal("v1"), Literal("files"), Rest],
                    &files,
                    None,
                ),
                "GetPath",
            ),
            (
                HttpMethod::Get,
                template("user", &[Literal("v1"), Literal("users"), Any], &user, None),
                "User",
            ),
            (
                HttpMethod::Get,
                template(
                    "special",
                    &[
                        Literal("v1"),
                        Literal("shelves"),
                        Literal("special"),
                        Literal("books"),
                        Literal("x"),
                        Any,
                    ],
                    &special,
                    None,
                ),
                "Special",
            ),
            (
                HttpMethod::Any,
                template("any", &[Literal("v1"), Literal("any")], &[], None),
                "AnyMethod",
            ),
            (
                HttpMethod::Get,
                template("get any", &[Literal("v1"), Literal("any")], &[], None),
                "GetAny",
            ),
            (HttpMethod::Get, template("/", &[], &[], None), "Root"),
        ])
        .unwrap()
    }

    /// The route found and its bindings as `field=value`.
    fn find(routes: &Routes<&'static str>, method: http::Method, path: &str) -> String {
        match routes.find(&method, path) {
            Lookup::Found(found) => {
                let bindings: Vec<String> = found
                    .bindings()
                    .unwrap()
                    .iter()
                    .map(|binding| format!("{}={}", binding.field.join("."), binding.value))
                    .collect();
                format!("{} {}", found.value(), bindings.join(" "))
                    .trim_end()
                    .to_owned()
            }
            Lookup::MethodNotAllowed(allowed) => format!("405 {}", allowed.join(",")),
            Lookup::NotFound => "404".to_owned(),
        }
    }

    #[test]
    fn variables_over_several_segments_bind_the_path_they_span() {
        let routes = routes();
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/shelves/1/books/2"),
            "Get name=shelves/1/books/2"
        );
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/shelves/1/books"),
            "404"
        );
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/shelves/1/books/2/3"),
            "404"
        );
    }

    #[test]
    fn a_verb_is_cut_off_the_last_segment_for_the_routes_that_have_it() {
        let routes = routes();
        assert_eq!(
            find(&routes, http::Method::POST, "/v1/shelves/1/books/2:archive"),
            "Archive name=shelves/1/books/2"
        );
        // Without a route for that verb, the colon is the segment's own.
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/shelves/1/books/2:archive"),
            "Get name=shelves/1/books/2:archive"
        );
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/users/a:b"),
            "User id=a:b"
        );
        // The verb is compared decoded, as literals are.
        assert_eq!(
            find(
                &routes,
                http::Method::POST,
                "/v1/shelves/1/books/2:%61rchive"
            ),
            "Archive name=shelves/1/books/2"
        );
        assert_eq!(
            find(
                &routes,
                http::Method::POST,
                "/v1/shelves/1/books/2:unarchive"
            ),
            "405 GET"
        );
    }

    #[test]
    fn double_wildcards_take_the_rest_keeping_encoded_slashes() {
        let routes = routes();
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/files/a/b%2Fc/d%20e"),
            "GetPath path=a/b%2Fc/d e"
        );
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/files/a//b/"),
            "GetPath path=a//b/"
        );
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/files"),
            "GetPath path="
        );
    }

    #[test]
    fn single_segment_variables_decode_everything() {
        let routes = routes();
        assert_eq!(
            find(
                &routes,
                http::Method::GET,
                "/v1/users/a%2Fb%3Fc%20caf%C3%A9"
            ),
            "User id=a/b?c café"
        );
        // A literal matches its encoded form too.
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/%75sers/x"),
            "User id=x"
        );
    }

    #[test]
    fn percent_encoding_that_is_not_utf8_is_an_invalid_argument() {
        let routes = routes();
        for path in ["/v1/users/%FF", "/v1/users/%G0", "/v1/files/a/%C3"] {
            let Lookup::Found(found) = routes.find(&http::Method::GET, path) else {
                panic!("{path} matches");
            };
            let error = found.bindings().unwrap_err();
            assert_eq!(error.code(), tonic::Code::InvalidArgument, "{path}");
            assert!(error.message().starts_with("the path's `"), "{error:?}");
        }
    }

    #[test]
    fn literals_win_over_wildcards_and_the_walk_backtracks() {
        let routes = routes();
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/shelves/special/books/x/7"),
            "Special id=7"
        );
        // `special` leads nowhere for this path; `*` does.
        assert_eq!(
            find(&routes, http::Method::GET, "/v1/shelves/special/books/7"),
            "Get name=shelves/special/books/7"
        );
    }

    #[test]
    fn the_request_method_wins_over_any_method_and_others_get_405() {
        let routes = routes();
        assert_eq!(find(&routes, http::Method::GET, "/v1/any"), "GetAny");
        assert_eq!(find(&routes, http::Method::PUT, "/v1/any"), "AnyMethod");
        assert_eq!(
            find(&routes, http::Method::DELETE, "/v1/shelves/1/books/2"),
            "405 GET"
        );
        assert_eq!(find(&routes, http::Method::GET, "/"), "Root");
    }

    #[test]
    fn empty_segments_and_paths_out_of_bounds_match_nothing() {
        let routes = routes();
        for path in [
            "",
            "v1/users/1",
            "/v1/users/",
            "/v1//users/1",
            "/v1/shelves//books/2",
        ] {
            assert_eq!(find(&routes, http::Method::GET, path), "404", "{path:?}");
        }
        let deep = format!("/v1/files{}", "/a".repeat(MAX_PATH_SEGMENTS));
        assert_eq!(find(&routes, http::Method::GET, &deep), "404");
        let deepest = format!("/v1/files{}", "/a".repeat(MAX_PATH_SEGMENTS - 2));
        assert!(find(&routes, http::Method::GET, &deepest).starts_with("GetPath"));
    }

    #[test]
    fn routes_alike_but_for_their_variables_conflict() {
        let a = [variable(&["a"], 1, 2)];
        let b = [variable(&["b"], 1, 2)];
        let segments = [Literal("v1"), Any];
        let conflict = Routes::new([
            (HttpMethod::Get, template("a", &segments, &a, None), ()),
            (HttpMethod::Post, template("a", &segments, &a, None), ()),
            (HttpMethod::Get, template("b", &segments, &b, None), ()),
        ])
        .unwrap_err();
        assert_eq!(
            conflict,
            RouteError::Conflict {
                first: 0,
                second: 2
            }
        );
        let verbs = Routes::new([
            (HttpMethod::Get, template("a", &segments, &a, None), ()),
            (HttpMethod::Get, template("b", &segments, &b, Some("x")), ()),
        ]);
        assert_eq!(verbs.unwrap().len(), 2);
        let bad = Routes::new([(
            HttpMethod::Get,
            template("bad", &[Rest, Any], &[], None),
            (),
        )]);
        assert!(matches!(bad, Err(RouteError::Template(_))));
    }
}
