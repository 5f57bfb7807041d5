//! The oracles of REST transcoding: the template parser (`fastgrpc-build`'s) with the
//! runtime's matcher, and the query parser with the binding of path, query and body.

use fastgrpc::Code;
use fastgrpc::codegen::rest::{HttpMethod, Rule, Segment, Template, Variable};
use fastgrpc::internals::codec::{DecodeOptions, decode_json, write_json};
use fastgrpc::internals::rest::{
    BindOptions, Lookup, MAX_QUERY_LEN, MAX_QUERY_PARAMS, Routes, parse_query, request_json,
    request_proto,
};
use fastgrpc_build::internals as build;
use protos::google::api::HttpBody;
use protos::transcoding::v1::echo_server::HTTP_RULES;
use protos::transcoding::v1::{EchoRequest, FailRequest};
use serde::Serialize;
use serde::de::DeserializeOwned;

// ---------------------------------------------------------------------------------------------
// rest_template: [template...]
//   the bytes, if UTF-8, as a `google.api.http` path template

/// The template parser on any text: what it accepts is within its bounds, writes to a
/// canonical form that parses back the same, and makes a route the runtime's matcher takes
/// and finds again for a path built from the template, each variable bound to what was put
/// in its place.
pub fn rest_template(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(parsed) = build::parse(text) else {
        return;
    };
    assert!(text.len() <= build::MAX_TEMPLATE_LEN);
    assert!(parsed.segments.len() <= build::MAX_SEGMENTS);
    assert!(parsed.variables.len() <= build::MAX_VARIABLES);
    assert!(
        parsed
            .variables
            .iter()
            .all(|variable| variable.field.len() <= build::MAX_FIELD_DEPTH)
    );
    let written = parsed.to_string();
    assert_eq!(
        build::parse(&written).as_ref(),
        Ok(&parsed),
        "{text:?} written as {written:?}"
    );

    // The runtime's form of the template, as generated code has it.
    let segments: Vec<Segment<'_>> = parsed
        .segments
        .iter()
        .map(|segment| match segment {
            build::Segment::Literal(literal) => Segment::Literal(literal),
            build::Segment::Any => Segment::Any,
            build::Segment::Rest => Segment::Rest,
        })
        .collect();
    let fields: Vec<Vec<&str>> = parsed
        .variables
        .iter()
        .map(|variable| variable.field.iter().map(String::as_str).collect())
        .collect();
    let variables: Vec<Variable<'_>> = parsed
        .variables
        .iter()
        .zip(&fields)
        .map(|(variable, field)| Variable {
            field,
            start: variable.start,
            end: variable.end,
        })
        .collect();
    let template = Template {
        text,
        segments: &segments,
        variables: &variables,
        verb: parsed.verb.as_deref(),
    };
    let routes = Routes::new([(HttpMethod::Get, template, ())])
        .unwrap_or_else(|error| panic!("{text:?} parses but does not route: {error}"));

    // A path it matches: literals percent-encoded, `*` as `w<index>`, `**` as `r/s`.
    let mut path = String::new();
    let mut values = Vec::new();
    for (index, segment) in parsed.segments.iter().enumerate() {
        let value = match segment {
            build::Segment::Literal(literal) => literal.clone(),
            build::Segment::Any => format!("w{index}"),
            build::Segment::Rest => "r/s".to_owned(),
        };
        path.push('/');
        path.push_str(&encode(&value));
        values.push(value);
    }
    if path.is_empty() {
        path.push('/');
    }
    if let Some(verb) = &parsed.verb {
        path.push(':');
        path.push_str(&encode(verb));
    }
    let found = match routes.find(&http::Method::GET, &path) {
        Lookup::Found(found) => found,
        other => panic!("{text:?} does not match {path:?}: {other:?}"),
    };
    let bindings = found.bindings().expect("the path is valid UTF-8");
    for (binding, variable) in bindings.iter().zip(&parsed.variables) {
        let expected = values[variable.start..variable.end].join("/");
        assert_eq!(binding.value, expected, "{text:?} bound from {path:?}");
        assert!(
            binding
                .field
                .iter()
                .map(|name| &**name)
                .eq(variable.field.iter().map(String::as_str))
        );
    }
    match routes.find(&http::Method::DELETE, &path) {
        Lookup::MethodNotAllowed(allowed) => assert_eq!(allowed, ["GET"]),
        other => panic!("DELETE {path:?} finds {other:?}"),
    }
}

/// `text` with every byte but the unreserved ones percent-encoded, and `/` kept.
fn encode(text: &str) -> String {
    let mut out = String::new();
    for &byte in text.as_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// rest_query: [method " "] path ["?" query] ["\n" body]
//   a request to `transcoding.v1.Echo`'s rules (GET when the first word is not a method)

/// A request's path, query and body bound by `transcoding.v1.Echo`'s generated rules: the
/// query parses as an independent reading of it does (or is refused for its bounds or its
/// encoding); a refusal is `INVALID_ARGUMENT`; what binding accepts with no body, the JSON
/// codec decodes as the method's request, with each path variable in its field; and bound in
/// protobuf instead, as the server binds a request without a body, it is the same message.
pub fn rest_query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (head, body) = text.split_once('\n').unwrap_or((text, ""));
    let word = head.split_once(' ').and_then(|(method, target)| {
        let upper = method.bytes().all(|byte| byte.is_ascii_uppercase());
        let method = http::Method::from_bytes(method.as_bytes()).ok()?;
        upper.then_some((method, target))
    });
    let (method, target) = word.unwrap_or((http::Method::GET, head));
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    };
    if let Some(query) = query {
        check_query(query);
    }

    let routes = Routes::new(
        HTTP_RULES
            .iter()
            .map(|rule| (rule.http_method, rule.template, rule)),
    )
    .expect("Echo's rules route");
    let found = match routes.find(&method, path) {
        Lookup::Found(found) => found,
        Lookup::MethodNotAllowed(allowed) => {
            assert!(!allowed.is_empty() && !allowed.contains(&method.as_str()));
            return;
        }
        Lookup::NotFound => return,
    };
    let rule: &Rule = found.value();
    let bindings = match found.bindings() {
        Ok(bindings) => bindings,
        Err(status) => return assert_eq!(status.code(), Code::InvalidArgument, "{status:?}"),
    };
    let json = match request_json(
        rule,
        &bindings,
        query,
        body.as_bytes(),
        BindOptions::default(),
    ) {
        Ok(json) => json,
        Err(status) => return assert_eq!(status.code(), Code::InvalidArgument, "{status:?}"),
    };
    if body.is_empty() {
        let proto = request_proto(rule, &bindings, query, BindOptions::default())
            .unwrap_or_else(|status| panic!("bound as JSON but not in protobuf: {status:?}"));
        match rule.method {
            "Fail" => same_message::<FailRequest>(&json, &proto),
            "Upload" => same_message::<HttpBody>(&json, &proto),
            _ => same_message::<EchoRequest>(&json, &proto),
        }
    }
    let written = match rule.method {
        "Fail" => decode::<FailRequest>(&json, body.is_empty()),
        "Upload" => decode::<HttpBody>(&json, body.is_empty()),
        _ => decode::<EchoRequest>(&json, body.is_empty()),
    };
    let Some(written) = written else {
        return;
    };
    // Each string variable's value is in its field (left out when empty, as ProtoJSON does).
    for binding in &bindings {
        let mut value = &written;
        for name in binding.field.iter() {
            value = value.get(&**name).unwrap_or(&serde_json::Value::Null);
        }
        match value {
            serde_json::Value::String(text) => assert_eq!(*text, binding.value),
            serde_json::Value::Null => assert!(binding.value.is_empty() || rule.method == "Fail"),
            _ => {}
        }
    }
}

/// Decodes `json` as `M`, which must succeed when nothing came from a body (whose fields
/// binding does not read); the message written back as JSON.
fn decode<M: DeserializeOwned + Serialize + 'static>(
    json: &[u8],
    must: bool,
) -> Option<serde_json::Value> {
    match decode_json::<M>(json, DecodeOptions::default()) {
        Ok(message) => {
            let mut out = Vec::new();
            write_json(&message, &mut out).expect("a decoded message writes");
            Some(serde_json::from_slice(&out).expect("what is written is JSON"))
        }
        Err(status) => {
            assert!(
                !must,
                "bound without a body, but the codec refuses {}: {status:?}",
                String::from_utf8_lossy(json)
            );
            assert_eq!(status.code(), Code::InvalidArgument);
            None
        }
    }
}

/// The request bound as `json` and in protobuf (`proto`) is one message.
fn same_message<M>(json: &[u8], proto: &[u8])
where
    M: DeserializeOwned + prost::Message + Default + PartialEq + std::fmt::Debug + 'static,
{
    let from_json: M = decode_json(json, DecodeOptions::default())
        .unwrap_or_else(|status| panic!("bound without a body, but refused: {status:?}"));
    let from_proto = M::decode(proto).expect("what is bound in protobuf decodes");
    assert_eq!(from_proto, from_json, "{}", String::from_utf8_lossy(json));
}

/// `parse_query` against an independent reading of `query`.
fn check_query(query: &str) {
    let parsed = parse_query(query);
    let reference = reference_query(query);
    match (parsed, reference) {
        (Ok(params), Some(expected)) => {
            assert!(query.len() <= MAX_QUERY_LEN && params.len() <= MAX_QUERY_PARAMS);
            let params: Vec<(String, String)> = params
                .into_iter()
                .map(|param| (param.name.into_owned(), param.value.into_owned()))
                .collect();
            assert_eq!(params, expected, "{query:?}");
        }
        (Err(status), expected) => {
            assert_eq!(status.code(), Code::InvalidArgument);
            assert!(
                query.len() > MAX_QUERY_LEN
                    || expected.is_none_or(|expected| expected.len() > MAX_QUERY_PARAMS),
                "{query:?} refused: {status:?}"
            );
        }
        (Ok(params), None) => panic!("{query:?} has a bad escape, but parses: {params:?}"),
    }
}

/// The parameters of a form-encoded query, or `None` if an escape or the UTF-8 is bad.
fn reference_query(query: &str) -> Option<Vec<(String, String)>> {
    query
        .split('&')
        .map(|piece| piece.split_once('=').unwrap_or((piece, "")))
        .filter(|(name, _)| !name.is_empty())
        .map(|(name, value)| Some((form_decode(name)?, form_decode(value)?)))
        .collect()
}

fn form_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::new();
    let mut rest = text.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        rest = tail;
        match first {
            b'+' => bytes.push(b' '),
            b'%' => {
                let [high, low, tail @ ..] = rest else {
                    return None;
                };
                if !high.is_ascii_hexdigit() || !low.is_ascii_hexdigit() {
                    return None;
                }
                let pair = [*high, *low];
                bytes.push(u8::from_str_radix(std::str::from_utf8(&pair).ok()?, 16).ok()?);
                rest = tail;
            }
            byte => bytes.push(byte),
        }
    }
    String::from_utf8(bytes).ok()
}
