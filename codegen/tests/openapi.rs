//! The OpenAPI documents `fastgrpc-build` writes for services with `google.api.http` rules,
//! read back as JSON: `proto/transcoding/v1/echo.proto` (every kind of binding) and
//! `tests/protos/shapes.proto` (custom methods, recursive messages, the well-known types).
//! `interop/openapi/run.sh` checks the same documents against the OpenAPI 3.1 specification.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// A fresh directory under the system's temporary one.
fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "fastgrpc-build-openapi-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What one compile produced: the documents written, by file name, and the Rust files.
struct Output {
    documents: Vec<(String, Value)>,
    dir: PathBuf,
}

impl Output {
    fn document(&self, name: &str) -> &Value {
        &self
            .documents
            .iter()
            .find(|(file, _)| file == name)
            .unwrap_or_else(|| panic!("no {name} among {:?}", self.names()))
            .1
    }

    fn names(&self) -> Vec<&str> {
        self.documents
            .iter()
            .map(|(name, _)| name.as_str())
            .collect()
    }

    fn rust(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join("rust").join(file)).unwrap()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn compile(protos: &[&Path], include: &Path) -> Output {
    let dir = scratch();
    let rust = dir.join("rust");
    let openapi = dir.join("openapi");
    std::fs::create_dir_all(&rust).unwrap();
    fastgrpc_build::configure()
        .out_dir(&rust)
        .emit_rerun_if_changed(false)
        .openapi_dir(&openapi)
        .compile_protos(protos, &[include])
        .unwrap();
    let mut documents: Vec<(String, Value)> = std::fs::read_dir(&openapi)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            (
                name,
                serde_json::from_str(&text).expect("the document is JSON"),
            )
        })
        .collect();
    documents.sort_by(|a, b| a.0.cmp(&b.0));
    Output { documents, dir }
}

fn echo() -> Output {
    let protos = Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto");
    compile(&[&protos.join("transcoding/v1/echo.proto")], &protos)
}

/// Every operation of the document: (HTTP method, path, operation).
fn operations(document: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if method == "x-fastgrpc-other-methods" {
                for (method, operation) in operation.as_object().unwrap() {
                    out.push((method.clone(), path.clone(), operation));
                }
            } else {
                out.push((method.to_uppercase(), path.clone(), operation));
            }
        }
    }
    out
}

fn operation<'d>(document: &'d Value, id: &str) -> &'d Value {
    operations(document)
        .into_iter()
        .find(|(_, _, operation)| operation["operationId"] == id)
        .unwrap_or_else(|| panic!("no operation {id}"))
        .2
}

/// The parameters of an operation, by name and place (`path`, `query`).
fn parameter<'d>(operation: &'d Value, name: &str, place: &str) -> Option<&'d Value> {
    operation["parameters"]
        .as_array()?
        .iter()
        .find(|parameter| parameter["name"] == name && parameter["in"] == place)
}

fn parameter_names(operation: &Value, place: &str) -> Vec<String> {
    operation["parameters"]
        .as_array()
        .map(|parameters| {
            parameters
                .iter()
                .filter(|parameter| parameter["in"] == place)
                .map(|parameter| parameter["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Asserts that every `$ref` names a schema of the document's components, and that every
/// `{name}` of a path is a path parameter of each of its operations.
fn assert_consistent(document: &Value) {
    fn refs<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
        match value {
            Value::Object(members) => {
                for (key, value) in members {
                    match (key.as_str(), value) {
                        ("$ref", Value::String(target)) => out.push(target),
                        _ => refs(value, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| refs(item, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    refs(document, &mut found);
    assert!(!found.is_empty());
    for target in found {
        let name = target
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{target} is not a component"));
        assert!(
            document["components"]["schemas"].get(name).is_some(),
            "{target} refers to no schema"
        );
    }
    for (method, path, operation) in operations(document) {
        let mut templated: Vec<String> = path
            .split(['{', '}'])
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect();
        let mut declared = parameter_names(operation, "path");
        templated.sort();
        declared.sort();
        assert_eq!(templated, declared, "{method} {path}");
        for name in declared {
            assert_eq!(
                parameter(operation, &name, "path").unwrap()["required"],
                true
            );
        }
    }
}

#[test]
fn every_binding_of_echo_is_an_operation() {
    let output = echo();
    assert_eq!(output.names(), ["transcoding.v1.Echo.openapi.json"]);
    let document = output.document("transcoding.v1.Echo.openapi.json");
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(document["info"]["title"], "transcoding.v1.Echo");
    assert_eq!(document["info"]["version"], "v1");
    assert_consistent(document);

    let book = "/v1/shelves/{shelves}/books/{books}";
    let expected = [
        ("GET", book.to_owned(), "Echo_Get"),
        ("GET", "/v1/files/{path}".to_owned(), "Echo_GetPath"),
        (
            "POST",
            "/v1/shelves/{shelves}/books".to_owned(),
            "Echo_Create",
        ),
        ("PATCH", book.to_owned(), "Echo_Update"),
        ("PUT", book.to_owned(), "Echo_Replace"),
        ("DELETE", book.to_owned(), "Echo_Delete"),
        ("POST", format!("{book}:archive"), "Echo_Archive"),
        ("GET", "/v1/search".to_owned(), "Echo_Search"),
        (
            "GET",
            "/v1/shelves/{shelves}/search".to_owned(),
            "Echo_Search_1",
        ),
        ("POST", "/v1/search:query".to_owned(), "Echo_Search_2"),
        ("GET", format!("{book}/book"), "Echo_GetBook"),
        ("GET", "/v1/fail/{code}".to_owned(), "Echo_Fail"),
        ("GET", format!("{book}:watch"), "Echo_Watch"),
        ("GET", format!("{book}/raw"), "Echo_Download"),
        ("GET", format!("{book}/pieces"), "Echo_DownloadPieces"),
        ("POST", "/v1/upload".to_owned(), "Echo_Upload"),
    ];
    let mut found: Vec<(String, String, String)> = operations(document)
        .into_iter()
        .map(|(method, path, operation)| {
            assert_eq!(operation["tags"], serde_json::json!(["Echo"]));
            let default = &operation["responses"]["default"]["content"]["application/json"];
            assert_eq!(
                default["schema"]["$ref"],
                "#/components/schemas/google.rpc.Status"
            );
            let id = operation["operationId"].as_str().unwrap().to_owned();
            (method, path, id)
        })
        .collect();
    let mut expected: Vec<(String, String, String)> = expected
        .into_iter()
        .map(|(method, path, id)| (method.to_owned(), path, id.to_owned()))
        .collect();
    found.sort();
    expected.sort();
    assert_eq!(found, expected, "Hidden has no rule, so no operation");
}

#[test]
fn echo_parameters_follow_the_path_the_query_and_the_body() {
    let output = echo();
    let document = output.document("transcoding.v1.Echo.openapi.json");

    // A variable spanning segments is written out, a parameter a wildcard.
    let get = operation(document, "Echo_Get");
    assert_eq!(parameter_names(get, "path"), ["shelves", "books"]);
    let shelves = parameter(get, "shelves", "path").unwrap();
    assert_eq!(shelves["schema"]["type"], "string");
    let description = shelves["description"].as_str().unwrap();
    assert!(
        description.contains("`name`") && description.contains("`shelves/{shelves}/books/{books}`"),
        "{description}"
    );
    // Every field but the one the path sets, nested ones by their path, JSON names; maps
    // (`book.labels`) cannot be set from a query.
    let query = parameter_names(get, "query");
    for name in [
        "parent",
        "book.name",
        "book.pages",
        "book.tags",
        "page.size",
        "page.token",
        "ids",
        "genre",
        "big",
        "since",
        "updateMask",
        "limit",
        "count",
        "interval",
        "failCode",
        "displayName",
    ] {
        assert!(
            query.contains(&name.to_owned()),
            "{name} is not in {query:?}"
        );
    }
    for name in ["name", "book", "page", "book.labels", "update_mask"] {
        assert!(!query.contains(&name.to_owned()), "{name} is in {query:?}");
    }
    let schema = |name: &str| &parameter(get, name, "query").unwrap()["schema"];
    assert_eq!(
        schema("big")["type"],
        "string",
        "64-bit integers are strings"
    );
    assert_eq!(schema("big")["format"], "int64");
    assert_eq!(schema("book.pages")["type"], "string");
    assert_eq!(schema("page.size")["type"], "integer");
    assert_eq!(schema("count")["minimum"], 0);
    assert_eq!(schema("since")["format"], "date-time");
    assert_eq!(schema("updateMask")["type"], "string");
    assert_eq!(schema("limit")["format"], "int32", "a wrapper is its value");
    assert_eq!(schema("interval")["type"], "string");
    assert_eq!(
        schema("genre")["$ref"],
        "#/components/schemas/transcoding.v1.Genre"
    );
    let ids = parameter(get, "ids", "query").unwrap();
    assert_eq!(ids["schema"]["type"], "array");
    assert_eq!(ids["schema"]["items"]["type"], "integer");
    assert_eq!(ids["explode"], true);
    assert_eq!(
        parameter(get, "book.pages", "query").unwrap()["description"],
        "How many pages it has."
    );
    assert!(get.get("requestBody").is_none());

    // A single-segment variable is one parameter, of its field's type.
    let fail = operation(document, "Echo_Fail");
    let code = parameter(fail, "code", "path").unwrap();
    assert_eq!(code["schema"]["type"], "integer");
    assert_eq!(parameter_names(fail, "query"), ["message"]);
    let get_path = operation(document, "Echo_GetPath");
    assert!(
        parameter(get_path, "path", "path").unwrap()["description"]
            .as_str()
            .unwrap()
            .contains("`/`s included")
    );

    // `body: "book"`: the field's schema, and no query parameter within it.
    let create = operation(document, "Echo_Create");
    let body = &create["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(body["$ref"], "#/components/schemas/transcoding.v1.Book");
    let query = parameter_names(create, "query");
    assert!(
        query.iter().all(|name| !name.starts_with("book")),
        "{query:?}"
    );
    assert!(query.contains(&"name".to_owned()) && !query.contains(&"parent".to_owned()));
    // `{book.name}` with `body: "book"`: the rest of the request is the query.
    let update = operation(document, "Echo_Update");
    assert!(parameter(update, "name", "query").is_some());
    assert!(parameter(update, "book.title", "query").is_none());

    // `body: "*"`: no query, and the body is the request without what the path sets.
    let replace = operation(document, "Echo_Replace");
    assert!(parameter_names(replace, "query").is_empty());
    let body = &replace["requestBody"]["content"]["application/json"]["schema"];
    assert!(body["properties"].get("name").is_none(), "{body}");
    assert!(body["properties"].get("displayName").is_some());
    let query_all = operation(document, "Echo_Search_2");
    assert!(query_all.get("parameters").is_none());
    assert_eq!(
        query_all["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/transcoding.v1.EchoRequest"
    );
}

#[test]
fn echo_replies_bytes_and_streams() {
    let output = echo();
    let document = output.document("transcoding.v1.Echo.openapi.json");
    let ok = |id: &str| operation(document, id)["responses"]["200"]["content"].clone();

    assert_eq!(
        ok("Echo_Get")["application/json"]["schema"]["$ref"],
        "#/components/schemas/transcoding.v1.EchoRequest"
    );
    assert_eq!(
        ok("Echo_GetBook")["application/json"]["schema"]["$ref"],
        "#/components/schemas/transcoding.v1.Book",
        "response_body: the reply's field"
    );
    assert_eq!(
        ok("Echo_Delete")["application/json"]["schema"],
        serde_json::json!({"type": "object"}),
        "google.protobuf.Empty"
    );
    assert_eq!(ok("Echo_Download"), serde_json::json!({"*/*": {}}));
    assert_eq!(
        ok("Echo_DownloadPieces"),
        serde_json::json!({"*/*": {}}),
        "a stream of HttpBody replies is bytes too"
    );
    let upload = operation(document, "Echo_Upload");
    assert_eq!(
        upload["requestBody"]["content"],
        serde_json::json!({"*/*": {}})
    );
    let watch = ok("Echo_Watch");
    assert_eq!(
        watch["application/x-ndjson"]["schema"]["$ref"],
        "#/components/schemas/transcoding.v1.EchoRequest"
    );
    assert!(watch.get("text/event-stream").is_some());
    assert_eq!(
        operation(document, "Echo_GetBook")["description"],
        "The reply's `book` alone is the HTTP body."
    );
}

#[test]
fn echo_schemas_are_protojson() {
    let output = echo();
    let document = output.document("transcoding.v1.Echo.openapi.json");
    let schemas = &document["components"]["schemas"];
    let mut names: Vec<&String> = schemas.as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "google.rpc.Status",
            "transcoding.v1.Book",
            "transcoding.v1.EchoRequest",
            "transcoding.v1.Genre",
            "transcoding.v1.Page",
        ],
        "HttpBody is bytes, not a schema"
    );
    let book = &schemas["transcoding.v1.Book"];
    assert_eq!(book["description"], "A book on a shelf.");
    let property = |name: &str| &book["properties"][name];
    assert_eq!(property("pages")["type"], "string");
    assert_eq!(property("pages")["format"], "int64");
    assert_eq!(property("pages")["description"], "How many pages it has.");
    assert_eq!(property("tags")["items"]["type"], "string");
    assert_eq!(property("published")["format"], "date-time");
    assert_eq!(property("labels")["type"], "object");
    assert_eq!(property("labels")["additionalProperties"]["type"], "string");
    let genre = &schemas["transcoding.v1.Genre"];
    assert_eq!(genre["type"], "string");
    assert_eq!(
        genre["enum"],
        serde_json::json!(["GENRE_UNSPECIFIED", "FICTION", "HISTORY"])
    );
    let description = genre["description"].as_str().unwrap();
    assert!(description.starts_with("What a book is about."));
    assert!(description.contains("- `FICTION`: Made up."));
    let request = &schemas["transcoding.v1.EchoRequest"]["properties"];
    for json_name in ["updateMask", "failCode", "displayName"] {
        assert!(request.get(json_name).is_some(), "{json_name}");
    }
    assert!(request.get("update_mask").is_none());
    let status = &schemas["google.rpc.Status"]["properties"];
    assert_eq!(status["code"]["type"], "integer");
    assert_eq!(status["message"]["type"], "string");
    assert_eq!(
        status["details"]["items"]["required"],
        serde_json::json!(["@type"])
    );
    assert_eq!(
        document["info"]["description"],
        "Echoes its requests over REST: the bindings below cover every kind `google.api.http` has."
    );
}

#[test]
fn the_server_module_holds_the_same_document() {
    let output = echo();
    let rust = output.rust("transcoding.v1.rs");
    let file = syn::parse_file(&rust).unwrap();
    let module = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Mod(module) if module.ident == "echo_server" => Some(module),
            _ => None,
        })
        .expect("the server's module");
    let constant = module
        .content
        .as_ref()
        .unwrap()
        .1
        .iter()
        .find_map(|item| match item {
            syn::Item::Const(constant) if constant.ident == "OPENAPI" => Some(constant),
            _ => None,
        })
        .expect("OPENAPI in echo_server");
    let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(text),
        ..
    }) = &*constant.expr
    else {
        panic!("OPENAPI is a string literal");
    };
    let text = text.value();
    assert!(!text.contains('\n'), "the constant is compact");
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(&value, output.document("transcoding.v1.Echo.openapi.json"));
}

#[test]
fn custom_methods_recursive_messages_and_well_known_types() {
    let protos = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/protos");
    let output = compile(&[&protos.join("shapes.proto")], &protos);
    assert_eq!(
        output.names(),
        ["shapes.v2.Tree.openapi.json"],
        "a service without rules has no document"
    );
    let document = output.document("shapes.v2.Tree.openapi.json");
    assert_consistent(document);
    assert_eq!(document["info"]["version"], "v2");
    assert_eq!(document["info"]["description"], "Trees over REST.");

    // HEAD is an OpenAPI method; PURGE and `*` are not, and wait in an extension.
    let nodes = &document["paths"]["/v2/nodes/{id}"];
    assert_eq!(nodes["head"]["operationId"], "Tree_Head");
    assert_eq!(nodes["get"]["operationId"], "Tree_Get");
    assert_eq!(
        nodes["x-fastgrpc-other-methods"]["PURGE"]["operationId"],
        "Tree_Purge"
    );
    assert!(nodes.get("purge").is_none());
    let any = &document["paths"]["/v2/any/{id}"];
    assert_eq!(
        any["x-fastgrpc-other-methods"]["*"]["operationId"],
        "Tree_Anything"
    );
    assert_eq!(any.as_object().unwrap().len(), 1);
    assert_eq!(document["paths"].as_object().unwrap().len(), 4);

    // Get's `{a}` takes the name the shape got first, and says which field it sets.
    let get = &nodes["get"];
    assert_eq!(
        get["description"],
        "Alike `/v2/nodes/{id}` but for the variable's name."
    );
    let id = parameter(get, "id", "path").unwrap();
    assert!(id["description"].as_str().unwrap().starts_with("Sets `a`."));
    // The query: the recursive, repeated, map and JSON-only fields cannot be set from one.
    let mut query = parameter_names(get, "query");
    query.sort();
    assert_eq!(
        query,
        ["b", "big", "blob", "delta", "id", "note", "ratio", "tally"]
    );
    let schema = |name: &str| &parameter(get, name, "query").unwrap()["schema"];
    assert_eq!(schema("big")["type"], "string");
    assert_eq!(schema("big")["format"], "uint64");
    assert_eq!(schema("delta")["format"], "int64");
    assert_eq!(schema("tally")["type"], "string");
    assert_eq!(schema("blob")["contentEncoding"], "base64");
    assert_eq!(schema("ratio")["type"], "number");

    let rest = operation(document, "Tree_Rest");
    assert_eq!(
        operations(document)
            .iter()
            .find(|(_, _, operation)| operation["operationId"] == "Tree_Rest")
            .unwrap()
            .1,
        "/v2/nodes/{nodes}:all"
    );
    assert!(
        parameter(rest, "nodes", "path").unwrap()["description"]
            .as_str()
            .unwrap()
            .contains("`/`s included")
    );
    let put = operation(document, "Tree_Put");
    assert_eq!(
        put["requestBody"]["content"],
        serde_json::json!({"*/*": {}})
    );

    let node = &document["components"]["schemas"]["shapes.v2.Node"];
    assert_eq!(node["description"], "A node of a tree.");
    let property = |name: &str| &node["properties"][name];
    assert_eq!(
        property("parent")["$ref"],
        "#/components/schemas/shapes.v2.Node"
    );
    assert_eq!(
        property("children")["items"]["$ref"],
        "#/components/schemas/shapes.v2.Node"
    );
    assert_eq!(
        property("byId")["additionalProperties"]["$ref"],
        "#/components/schemas/shapes.v2.Node"
    );
    assert_eq!(property("byId")["propertyNames"]["pattern"], "^-?[0-9]+$");
    assert_eq!(
        property("flags")["propertyNames"]["pattern"],
        "^(true|false)$"
    );
    assert!(
        property("a")["description"]
            .as_str()
            .unwrap()
            .contains("oneof `choice`")
    );
    assert!(
        property("note").get("description").is_none(),
        "proto3 optional is no oneof"
    );
    assert_eq!(property("meta")["type"], "object");
    assert_eq!(property("value"), &serde_json::json!({}));
    assert_eq!(property("list")["type"], "array");
    assert_eq!(property("extra")["required"], serde_json::json!(["@type"]));
    assert_eq!(property("big")["type"], "string");
    assert_eq!(property("nothing")["type"], "null");
}
