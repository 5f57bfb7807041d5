//! The build-time checks of `google.api.http` rules, as a build script meets them: small
//! protos importing the bundled `google/api/annotations.proto` (nothing vendored) compiled
//! through the library, each mistake a build error that names the method and says what is
//! wrong.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under the system's temporary one.
fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "fastgrpc-build-http-rules-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compiles a proto whose service `Svc` has `methods`: the generated file, or the error.
fn compile(methods: &str) -> Result<String, String> {
    let dir = scratch();
    let proto = format!(
        r#"syntax = "proto3";
package checks;
import "google/api/annotations.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Page {{ int32 size = 1; }}
message Req {{
  string name = 1;
  repeated int32 ids = 2;
  Page page = 3;
  google.protobuf.Timestamp since = 4;
  google.protobuf.Int32Value limit = 5;
  map<string, string> labels = 6;
  uint32 count = 7;
  repeated Page pages = 8;
  oneof choice {{ string first = 9; sint64 second = 10; }}
  optional fixed32 third = 11;
}}
service Svc {{
{methods}
}}
"#
    );
    std::fs::write(dir.join("checks.proto"), proto).unwrap();
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let result = fastgrpc_build::configure()
        .out_dir(&out)
        .emit_rerun_if_changed(false)
        .compile_protos(&[dir.join("checks.proto")], &[&dir]);
    let generated = result
        .map(|()| std::fs::read_to_string(out.join("checks.rs")).unwrap())
        .map_err(|error| error.to_string());
    std::fs::remove_dir_all(&dir).unwrap();
    generated
}

/// Asserts that `methods` fail to compile with an error holding each of `expected`.
fn fails(methods: &str, expected: &[&str]) {
    let error = compile(methods).expect_err("the rules are refused");
    for part in expected {
        assert!(error.contains(part), "{part:?} is not in:\n{error}");
    }
}

#[test]
fn valid_rules_become_the_servers_table() {
    let code = compile(
        r#"rpc Get(Req) returns (Req) { option (google.api.http) = {
             get: "/v1/{name=shelves/*}" additional_bindings { post: "/v1/{page.size}:x" body: "*" } }; }
           rpc Other(Req) returns (Req) { option (google.api.http) = { custom { kind: "HEAD" path: "/v1/{name}" } }; }
           rpc Plain(Req) returns (Req);"#,
    )
    .unwrap();
    assert!(
        code.contains("pub static HTTP_RULES: &[rest::Rule]"),
        "{code}"
    );
    assert!(code.contains("fn http_rules(&self) -> &'static [rest::Rule]"));
    // The server hands its OpenAPI document to the runtime, which serves it if asked.
    assert!(code.contains("fn openapi(&self)"), "{code}");
    assert!(code.contains("Some(OPENAPI)"), "{code}");
    assert_eq!(code.matches("rest::Rule {").count(), 3);
    for part in [
        r#"path: "/checks.Svc/Get""#,
        r#"text: "/v1/{page.size}:x""#,
        r#"field: &["page", "size"]"#,
        r#"verb: Some("x")"#,
        "body: rest::Body::All",
        r#"rest::HttpMethod::Custom("HEAD")"#,
        "static CHECKS_REQ_FIELDS: rest::FieldTable",
        "kind: rest::FieldKind::Message(&CHECKS_PAGE_FIELDS)",
        r#"json_name: "since","#,
    ] {
        assert!(code.contains(part), "{part:?} is not in the generated code");
    }
    assert!(!code.contains("/checks.Svc/Plain\","), "Plain has no rule");
}

#[test]
fn a_variable_must_name_a_field_of_the_request() {
    fails(
        r#"rpc Get(Req) returns (Req) { option (google.api.http) = { get: "/v1/{nme}" }; }"#,
        &["checks.Svc.Get: GET \"/v1/{nme}\": checks.Req has no field `nme`"],
    );
    fails(
        r#"rpc Get(Req) returns (Req) { option (google.api.http) = { get: "/v1/{page.nope}" }; }"#,
        &["checks.Page has no field `nope`"],
    );
}

#[test]
fn a_path_binds_only_singular_fields_of_primitive_types() {
    for (variable, reason) in [
        ("ids", "`ids` is repeated"),
        ("labels", "`labels` is repeated"),
        ("page", "`page` is a message"),
        ("since", "`since` is a message"),
        ("limit", "`limit` is a message (a wrapper)"),
        (
            "pages.size",
            "`pages` in `pages.size` is not a singular message field",
        ),
        (
            "name.x",
            "`name` in `name.x` is not a singular message field",
        ),
    ] {
        let methods = format!(
            r#"rpc Get(Req) returns (Req) {{ option (google.api.http) = {{ get: "/v1/{{{variable}}}" }}; }}"#
        );
        fails(&methods, &["checks.Svc.Get", reason]);
    }
    fails(
        r#"rpc Get(Req) returns (Req) { option (google.api.http) = { get: "/v1/{count=a/*}" }; }"#,
        &["`count` spans several segments, so it binds a string field"],
    );
    fails(
        r#"rpc Get(Req) returns (Req) { option (google.api.http) = { get: "/v1/{name}/{name}" }; }"#,
        &["`name` is bound twice"],
    );
}

#[test]
fn bodies_follow_the_method_and_name_fields_that_exist() {
    for verb in ["get", "delete"] {
        let methods = format!(
            r#"rpc Get(Req) returns (Req) {{ option (google.api.http) = {{ {verb}: "/v1/x" body: "*" }}; }}"#
        );
        fails(&methods, &["checks.Svc.Get", "request has no body"]);
    }
    fails(
        r#"rpc Post(Req) returns (Req) { option (google.api.http) = { post: "/v1/x" body: "nope" }; }"#,
        &["checks.Svc.Post: POST \"/v1/x\": the body is `nope`, which checks.Req does not have"],
    );
    fails(
        r#"rpc Post(Req) returns (Req) { option (google.api.http) = { post: "/v1/{name}" body: "name" }; }"#,
        &["the body is `name`, which the path binds"],
    );
    fails(
        r#"rpc Post(Req) returns (Page) { option (google.api.http) = { post: "/v1/x" response_body: "nope" }; }"#,
        &["the response body is `nope`, which checks.Page does not have"],
    );
}

#[test]
fn methods_whose_client_streams_are_refused_and_server_streams_are_not() {
    for (name, request, reply) in [
        ("Up", "stream Req", "Req"),
        ("Both", "stream Req", "stream Req"),
    ] {
        let methods = format!(
            r#"rpc {name}({request}) returns ({reply}) {{ option (google.api.http) = {{ post: "/v1/x" body: "*" }}; }}"#
        );
        fails(
            &methods,
            &[&format!(
                "checks.Svc.{name}: POST \"/v1/x\": the client streams its requests"
            )],
        );
    }
    let code = compile(
        r#"rpc Down(Req) returns (stream Req) { option (google.api.http) = { get: "/v1/x" }; }"#,
    )
    .unwrap();
    assert!(code.contains("server_streaming: true"), "{code}");
}

#[test]
fn field_tables_carry_what_the_protobuf_binding_needs() {
    let code =
        compile(r#"rpc Get(Req) returns (Req) { option (google.api.http) = { get: "/v1/x" }; }"#)
            .unwrap();
    let code: String = code.split_whitespace().collect();
    for (field, number, encoding, oneof) in [
        ("first", 9, "Plain", "Some(\"choice\")"),
        ("second", 10, "ZigZag", "Some(\"choice\")"),
        // proto3 `optional` is a oneof of its own in the descriptor, and no choice.
        ("third", 11, "Fixed", "None"),
        ("limit", 5, "Wrapped", "None"),
    ] {
        let wanted = format!("name:\"{field}\",json_name:\"{field}\",");
        let at = code
            .find(&wanted)
            .unwrap_or_else(|| panic!("{field}: {code}"));
        let rest = &code[at..];
        let entry = &rest[..rest.find('}').unwrap()];
        assert!(
            entry.contains(&format!(
                "number:{number}u32,encoding:rest::Encoding::{encoding},oneof:{oneof}"
            )),
            "{entry}"
        );
    }
}

#[test]
fn two_rules_that_match_the_same_requests_are_refused() {
    fails(
        r#"rpc A(Req) returns (Req) { option (google.api.http) = { get: "/v1/{name}" }; }
           rpc B(Req) returns (Req) { option (google.api.http) = { get: "/v1/{page.size=*}" }; }"#,
        &["checks.Svc.A and checks.Svc.B: both answer GET /v1/{page.size=*}"],
    );
    fails(
        r#"rpc A(Req) returns (Req) { option (google.api.http) = {
             post: "/v1/x:go" body: "*" additional_bindings { post: "/v1/x:go" } }; }"#,
        &["checks.Svc.A and checks.Svc.A: both answer POST /v1/x:go"],
    );
    // Another method, another verb, or a literal where the other has a variable: no conflict.
    compile(
        r#"rpc A(Req) returns (Req) { option (google.api.http) = { get: "/v1/{name}" }; }
           rpc B(Req) returns (Req) { option (google.api.http) = { post: "/v1/{name}" body: "*" }; }
           rpc C(Req) returns (Req) { option (google.api.http) = { get: "/v1/{name}:go" }; }
           rpc D(Req) returns (Req) { option (google.api.http) = { get: "/v1/x" }; }"#,
    )
    .unwrap();
}

#[test]
fn malformed_rules_are_refused_and_every_failure_is_listed() {
    fails(
        r#"rpc A(Req) returns (Req) { option (google.api.http) = { get: "/v1/**/x" }; }
           rpc B(Req) returns (Req) { option (google.api.http) = { custom { kind: "GE T" path: "/v1/b" } }; }
           rpc C(Req) returns (Req) { option (google.api.http) = {
             get: "/v1/c" additional_bindings { get: "/v1/d" additional_bindings { get: "/v1/e" } } }; }
           rpc D(Req) returns (Req) { option (google.api.http) = { body: "*" }; }"#,
        &[
            "checks.Svc.A: GET \"/v1/**/x\": the path template does not parse: `**` is not the last",
            "checks.Svc.B: GE T \"/v1/b\": a custom method's kind is an HTTP method's name",
            "checks.Svc.C: GET \"/v1/d\": an additional binding cannot have additional bindings",
            "checks.Svc.D: a google.api.http rule without an HTTP method and path",
        ],
    );
}
