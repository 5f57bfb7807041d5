//! REST transcoding's parts with the rules `fastgrpc-build` generated for
//! `transcoding.v1.Echo` (`proto/transcoding/v1/echo.proto`): a request's method, path, query
//! and body matched against the server's rules, bound into its JSON object, and decoded as the
//! method's request message, for every kind of binding the issue lists, and the bad inputs
//! each refused with a clear `INVALID_ARGUMENT`.

use fastgrpc::codegen::rest::{Body, Rule};
use fastgrpc::internals::codec::{DecodeOptions, decode_json};
use fastgrpc::internals::rest::{BindOptions, Lookup, Routes, request_json, request_proto};
use fastgrpc::service::FastService;
use fastgrpc::types::{Duration, FieldMask, Int32Value, Timestamp};
use fastgrpc::{BoxStream, Code, Status};
use http::Method;
use prost::Message as _;
use protos::transcoding::v1::echo_server::{Echo, EchoServer, HTTP_RULES, OPENAPI};
use protos::transcoding::v1::{Book, EchoRequest, FailRequest, Genre, Page};

struct Unimplemented;

impl Echo for Unimplemented {
    type WatchStream = BoxStream<EchoRequest>;
    type DownloadPiecesStream = BoxStream<protos::google::api::HttpBody>;
}

fn routes() -> Routes<&'static Rule> {
    let server = EchoServer::new(Unimplemented);
    let rules = server.http_rules();
    assert!(
        std::ptr::eq(rules, HTTP_RULES),
        "the server answers its table"
    );
    Routes::new(
        rules
            .iter()
            .map(|rule| (rule.http_method, rule.template, rule)),
    )
    .expect("the generated rules fit together")
}

/// The rule `method uri` finds and the request's JSON object, or the failure's status (404
/// and 405 as `NOT_FOUND` and `UNIMPLEMENTED` with the allowed methods).
fn bind(method: Method, uri: &str, body: &str) -> Result<(&'static Rule, Vec<u8>), Status> {
    let routes = routes();
    let (path, query) = match uri.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (uri, None),
    };
    match routes.find(&method, path) {
        Lookup::Found(found) => {
            let bindings = found.bindings()?;
            let json = request_json(
                found.value(),
                &bindings,
                query,
                body.as_bytes(),
                BindOptions::default(),
            )?;
            Ok((found.value(), json))
        }
        Lookup::MethodNotAllowed(allowed) => Err(Status::unimplemented(allowed.join(", "))),
        Lookup::NotFound => Err(Status::not_found(path.to_owned())),
    }
}

/// The Echo method and `EchoRequest` that `method uri` with `body` calls. Without a body, the
/// request bound in protobuf (as the server binds it then) is checked to be the same message.
fn echo(method: Method, uri: &str, body: &str) -> (&'static str, EchoRequest) {
    let (rule, json) =
        bind(method.clone(), uri, body).unwrap_or_else(|status| panic!("{uri}: {status:?}"));
    let request = decode_json(&json, DecodeOptions::default())
        .unwrap_or_else(|status| panic!("{uri}: {}: {status:?}", String::from_utf8_lossy(&json)));
    if body.is_empty() && rule.request.message == "transcoding.v1.EchoRequest" {
        let routes = routes();
        let (path, query) = match uri.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (uri, None),
        };
        let Lookup::Found(found) = routes.find(&method, path) else {
            panic!("{uri} is found");
        };
        let bindings = found.bindings().unwrap();
        let proto = request_proto(rule, &bindings, query, BindOptions::default()).unwrap();
        let from_proto = EchoRequest::decode(&proto[..]).unwrap();
        assert_eq!(from_proto, request, "{uri}: bound in protobuf and in JSON");
    }
    (rule.method, request)
}

fn refused(method: Method, uri: &str, body: &str) -> Status {
    match bind(method, uri, body) {
        Ok((rule, json)) => panic!(
            "{uri} binds {}: {}",
            rule.method,
            String::from_utf8_lossy(&json)
        ),
        Err(status) => status,
    }
}

const BOOK_2: &str = "shelves/1/books/2";

#[test]
fn every_annotated_method_has_its_rules_and_hidden_has_none() {
    let mut methods: Vec<&str> = HTTP_RULES.iter().map(|rule| rule.method).collect();
    methods.dedup();
    assert_eq!(
        methods,
        [
            "Get",
            "GetPath",
            "Create",
            "Update",
            "Replace",
            "Delete",
            "Archive",
            "Search",
            "GetBook",
            "Fail",
            "Watch",
            "Download",
            "DownloadPieces",
            "Upload"
        ]
    );
    assert_eq!(HTTP_RULES.len(), 16, "Search has two additional bindings");
    assert!(
        HTTP_RULES
            .iter()
            .all(|rule| rule.path == format!("/transcoding.v1.Echo/{}", rule.method))
    );
    assert_eq!(
        refused(Method::POST, "/transcoding.v1.Echo/Hidden", "").code(),
        Code::NotFound
    );
}

#[test]
fn a_get_binds_the_path_and_every_kind_of_query_parameter() {
    let (method, request) = echo(
        Method::GET,
        "/v1/shelves/1/books/2?page.size=10&ids=1&ids=2&displayName=x&genre=FICTION\
         &big=9007199254740993&since=2024-01-01T00:00:00Z&verbose=true&limit=5&count=3\
         &interval=1.5s&update_mask=book.title,displayName&page.token=t%20u&fail_code=-4",
        "",
    );
    assert_eq!(method, "Get");
    assert_eq!(
        request,
        EchoRequest {
            name: BOOK_2.into(),
            page: Some(Page {
                size: 10,
                token: "t u".into()
            }),
            ids: vec![1, 2],
            display_name: "x".into(),
            genre: Genre::Fiction as i32,
            big: 9_007_199_254_740_993,
            since: Some(Timestamp {
                seconds: 1_704_067_200,
                nanos: 0
            }),
            verbose: true,
            limit: Some(Int32Value { value: 5 }),
            count: 3,
            interval: Some(Duration {
                seconds: 1,
                nanos: 500_000_000
            }),
            update_mask: Some(FieldMask {
                paths: vec!["book.title".into(), "display_name".into()]
            }),
            fail_code: -4,
            ..EchoRequest::default()
        }
    );
    // Enums by number, and proto names.
    let (_, request) = echo(
        Method::GET,
        "/v1/shelves/1/books/2?genre=2&display_name=y",
        "",
    );
    assert_eq!(request.genre, Genre::History as i32);
    assert_eq!(request.display_name, "y");
}

#[test]
fn multi_segment_variables_keep_encoded_slashes_and_single_ones_decode_all() {
    let (method, request) = echo(Method::GET, "/v1/files/a/b%2Fc/d%20e.txt", "");
    assert_eq!(
        (method, request.path.as_str()),
        ("GetPath", "a/b%2Fc/d e.txt")
    );
    let (_, request) = echo(Method::GET, "/v1/files", "");
    assert_eq!(request.path, "");
    let (_, request) = echo(Method::GET, "/v1/shelves/a%2Fb/books/%C3%A9", "");
    assert_eq!(request.name, "shelves/a%2Fb/books/é");
    let (rule, json) = bind(Method::GET, "/v1/fail/%35", "").unwrap();
    let request: FailRequest = decode_json(&json, DecodeOptions::default()).unwrap();
    assert_eq!((rule.method, request.code), ("Fail", 5));
}

#[test]
fn bodies_bind_as_their_rules_say() {
    // `body: "book"`, and the path's `book.name` inside it.
    let (method, request) = echo(
        Method::PATCH,
        "/v1/shelves/1/books/2?verbose=true",
        r#"{"title": "T", "pages": "300", "tags": ["a"], "genre": "HISTORY"}"#,
    );
    assert_eq!(method, "Update");
    assert_eq!(
        request,
        EchoRequest {
            book: Some(Book {
                name: BOOK_2.into(),
                title: "T".into(),
                pages: 300,
                tags: vec!["a".into()],
                genre: Genre::History as i32,
                ..Book::default()
            }),
            verbose: true,
            ..EchoRequest::default()
        }
    );
    let (method, request) = echo(
        Method::POST,
        "/v1/shelves/1/books",
        r#"{"name": "n", "title": "t"}"#,
    );
    assert_eq!(method, "Create");
    assert_eq!(request.parent, "shelves/1");
    assert_eq!(request.book.unwrap().title, "t");
    // `body: "*"`: the path's field wins over the body's.
    let (method, request) = echo(
        Method::PUT,
        "/v1/shelves/1/books/2",
        r#"{"name": "ignored", "displayName": "d", "ids": [7]}"#,
    );
    assert_eq!(method, "Replace");
    assert_eq!(
        (
            request.name.as_str(),
            request.display_name.as_str(),
            request.ids
        ),
        (BOOK_2, "d", vec![7])
    );
    let (method, request) = echo(
        Method::POST,
        "/v1/shelves/1/books/2:archive",
        r#"{"verbose": true}"#,
    );
    assert_eq!(
        (method, request.name.as_str(), request.verbose),
        ("Archive", BOOK_2, true)
    );
    let (method, request) = echo(Method::DELETE, "/v1/shelves/1/books/2", "");
    assert_eq!((method, request.name.as_str()), ("Delete", BOOK_2));
}

#[test]
fn additional_bindings_verbs_and_response_bodies_find_their_rules() {
    let (method, request) = echo(Method::GET, "/v1/search?parent=p&page.size=2", "");
    assert_eq!((method, request.parent.as_str()), ("Search", "p"));
    let (method, request) = echo(Method::GET, "/v1/shelves/3/search", "");
    assert_eq!((method, request.parent.as_str()), ("Search", "shelves/3"));
    let (method, request) = echo(Method::POST, "/v1/search:query", r#"{"count": 2}"#);
    assert_eq!((method, request.count), ("Search", 2));
    let (rule, _) = bind(Method::GET, "/v1/shelves/1/books/2/book", "").unwrap();
    assert_eq!((rule.method, rule.response_body), ("GetBook", Some("book")));
    let (method, _) = echo(Method::GET, "/v1/shelves/1/books/2:watch?count=2", "");
    assert_eq!(method, "Watch");
    let (method, _) = echo(Method::GET, "/v1/shelves/1/books/2/raw", "");
    assert_eq!(method, "Download");
    let (rule, _) = bind(Method::POST, "/v1/upload", "").unwrap();
    assert_eq!(
        (rule.method, rule.body, rule.request.message),
        ("Upload", Body::All, "google.api.HttpBody")
    );
}

#[test]
fn unknown_paths_are_not_found_and_other_methods_not_allowed() {
    for uri in [
        "/v1/shelves/1",
        "/v2/search",
        "/v1/shelves/1/books/2/x",
        "/",
    ] {
        assert_eq!(
            refused(Method::GET, uri, "").code(),
            Code::NotFound,
            "{uri}"
        );
    }
    let allowed = refused(Method::POST, "/v1/shelves/1/books/2", "");
    assert_eq!(allowed.code(), Code::Unimplemented);
    assert_eq!(allowed.message(), "DELETE, GET, PATCH, PUT");
    assert_eq!(refused(Method::DELETE, "/v1/search", "").message(), "GET");
}

#[test]
fn bad_input_is_an_invalid_argument_naming_what_is_wrong() {
    let get = |query: &str| format!("/v1/shelves/1/books/2?{query}");
    for (method, uri, body, message) in [
        (
            Method::GET,
            get("ids=x"),
            "",
            "query parameter `ids`: \"x\" is not an int32",
        ),
        (
            Method::GET,
            get("verbose=maybe"),
            "",
            "query parameter `verbose`: \"maybe\" is not a bool",
        ),
        (
            Method::GET,
            get("genre=NOPE"),
            "",
            "\"NOPE\" is not a value of transcoding.v1.Genre",
        ),
        (
            Method::GET,
            get("since=yesterday"),
            "",
            "query parameter `since`: invalid value",
        ),
        (
            Method::GET,
            get("big=12345678901234567890"),
            "",
            "is not an int64",
        ),
        (
            Method::GET,
            get("verbose=true&verbose=true"),
            "",
            "`verbose`: given more than once",
        ),
        (
            Method::GET,
            get("name=x"),
            "",
            "`name`: the path sets this field",
        ),
        (
            Method::GET,
            get("book.labels=x"),
            "",
            "`labels` cannot be set from a path or query",
        ),
        (
            Method::GET,
            get("display_name=%FF"),
            "",
            "percent-encoding that is not UTF-8",
        ),
        (
            Method::GET,
            "/v1/shelves/%FF/books/2".into(),
            "",
            "the path's `name` has percent-encoding",
        ),
        (
            Method::GET,
            "/v1/fail/x".into(),
            "",
            "the path's `code`: \"x\" is not an int32",
        ),
        (
            Method::GET,
            get(""),
            "{}",
            "GET /v1/{name=shelves/*/books/*} takes no body",
        ),
        (Method::PUT, get(""), "{", "the body is not valid JSON"),
        (Method::PUT, get(""), "[]", "the body is not a JSON object"),
        (
            Method::PATCH,
            get("book.title=x"),
            "{}",
            "the body carries this field",
        ),
    ] {
        let status = refused(method, &uri, body);
        assert_eq!(status.code(), Code::InvalidArgument, "{uri}: {status:?}");
        assert!(status.message().contains(message), "{uri}: {status:?}");
    }
}

/// A value of the type an OpenAPI parameter's schema says, as text for a path or query.
fn sample(schema: &serde_json::Value, document: &serde_json::Value) -> String {
    if let Some(target) = schema["$ref"].as_str() {
        let name = target.trim_start_matches("#/components/schemas/");
        let enumeration = &document["components"]["schemas"][name]["enum"];
        return enumeration[1].as_str().expect("an enum's names").to_owned();
    }
    match (schema["type"].as_str(), schema["format"].as_str()) {
        (Some("array"), _) => sample(&schema["items"], document),
        (Some("integer"), _) | (Some("string"), Some("int64" | "uint64")) => "7".to_owned(),
        (Some("number"), _) => "1.5".to_owned(),
        (Some("boolean"), _) => "true".to_owned(),
        (Some("string"), Some("date-time")) => "2024-01-01T00:00:00Z".to_owned(),
        (Some("string"), _) if schema.get("pattern").is_some() => "1.5s".to_owned(),
        (Some("string"), _) => "x".to_owned(),
        other => panic!("no sample for {other:?}"),
    }
}

#[test]
fn the_openapi_document_reaches_every_rule_with_every_parameter() {
    let document: serde_json::Value = serde_json::from_str(OPENAPI).expect("OPENAPI is JSON");
    assert_eq!(document["openapi"], "3.1.0");
    let routes = routes();
    let mut reached = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let id = operation["operationId"].as_str().unwrap();
            let parameters = operation["parameters"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            // Each path parameter replaced by a value of its type, every query parameter set.
            let mut uri = path.clone();
            let mut query = Vec::new();
            for parameter in &parameters {
                let name = parameter["name"].as_str().unwrap();
                let value = sample(&parameter["schema"], &document);
                match parameter["in"].as_str() {
                    Some("path") => uri = uri.replace(&format!("{{{name}}}"), &value),
                    Some("query") => query.push(format!("{name}={value}")),
                    other => panic!("{id}: a parameter in {other:?}"),
                }
            }
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let Lookup::Found(found) = routes.find(&method, &uri) else {
                panic!("{id}: {method} {uri} finds no rule");
            };
            let rule = found.value();
            let expected = id.trim_start_matches("Echo_");
            let expected = expected.rsplit_once('_').map_or(expected, |(name, _)| name);
            assert_eq!(rule.method, expected, "{method} {uri}");
            let body = match rule.body {
                Body::None => "",
                _ if rule.request.message == "google.api.HttpBody" => "",
                _ => "{}",
            };
            // The binder refuses a parameter naming no field, so each one the document lists
            // sets its field, with a value of the type it says.
            let json = request_json(
                rule,
                &found.bindings().unwrap(),
                Some(&query.join("&")),
                body.as_bytes(),
                BindOptions {
                    reject_unknown_parameters: true,
                },
            )
            .unwrap_or_else(|status| panic!("{id}: {uri}?{}: {status:?}", query.join("&")));
            if rule.request.message == "transcoding.v1.EchoRequest" {
                let request: EchoRequest = decode_json(&json, DecodeOptions::default())
                    .unwrap_or_else(|status| panic!("{id}: {status:?}"));
                if query.iter().any(|parameter| parameter.starts_with("big=")) {
                    assert_eq!(request.big, 7, "{id}");
                }
            }
            reached.push(id.to_owned());
        }
    }
    assert_eq!(reached.len(), HTTP_RULES.len(), "{reached:?}");
}
