//! The OpenAPI document of a server's REST face, served at the path the builder names
//! (`Builder::openapi_path`): the documents `fastgrpc-build` generated for the hosted services
//! (`FastService::openapi`), one as it is, several merged into one.
//!
//! Only a REST call reaches it (a request in no protocol of gRPC's, to a path that is no
//! hosted `/package.Service/Method`), so the dispatcher has already answered a CORS preflight
//! and adds its headers to the answer as it does to any REST answer.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Method};
use serde_json::{Map, Value};

use crate::body::ResponseBody;
use crate::protocol::rest;

/// The document and the path it is served at.
pub(crate) struct OpenApi {
    path: Box<str>,
    document: Bytes,
}

impl OpenApi {
    /// The document of `documents` (each a service's, in the order the services were added),
    /// served at `path`; `None` when there is none.
    pub(crate) fn new(path: &str, documents: &[&'static str]) -> Result<Option<OpenApi>, String> {
        if !path.starts_with('/') {
            return Err(format!(
                "the OpenAPI document's path must start with `/`: {path:?}"
            ));
        }
        let document = match documents {
            [] => return Ok(None),
            // One service's document is served as it was generated, byte for byte.
            [one] => Bytes::from_static(one.as_bytes()),
            several => Bytes::from(merge(several)?),
        };
        Ok(Some(OpenApi {
            path: path.into(),
            document,
        }))
    }

    /// The path the document is served at.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The answer to a request for the document: the document to a GET, 405 to any other
    /// method (a HEAD too: an HTTP/2 answer to it would carry the body).
    pub(crate) fn answer(&self, method: &Method) -> http::Response<ResponseBody> {
        if method != Method::GET {
            return rest::method_not_allowed(method, &["GET"]);
        }
        let mut response = http::Response::new(ResponseBody::whole(self.document.clone()));
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

/// The path item's member holding the operations of methods OpenAPI does not name.
const OTHER_METHODS: &str = "x-fastgrpc-other-methods";

/// One document of several services' documents: their `paths` and `components` together
/// (each path's operations from every document that has the path; of two schemas of one
/// name, the first, since a name is a message's full proto name), their tags one after the
/// other, and an `info` naming them all.
fn merge(documents: &[&str]) -> Result<Vec<u8>, String> {
    let mut parsed = Vec::with_capacity(documents.len());
    for document in documents {
        let value: Value = serde_json::from_str(document)
            .map_err(|error| format!("a service's OpenAPI document is not JSON: {error}"))?;
        match value {
            Value::Object(object) => parsed.push(object),
            _ => return Err("a service's OpenAPI document is not a JSON object".to_owned()),
        }
    }
    let info_of = |key: &str| -> Vec<String> {
        let mut values: Vec<String> = Vec::new();
        for document in &parsed {
            if let Some(value) = document
                .get("info")
                .and_then(|info| info.get(key))
                .and_then(Value::as_str)
                && !values.iter().any(|seen| seen == value)
            {
                values.push(value.to_owned());
            }
        }
        values
    };
    let mut info = Map::new();
    info.insert("title".into(), info_of("title").join(", ").into());
    info.insert("version".into(), info_of("version").join(", ").into());
    let mut merged = Map::new();
    let version = parsed[0]
        .get("openapi")
        .cloned()
        .unwrap_or_else(|| "3.1.0".into());
    merged.insert("openapi".into(), version);
    merged.insert("info".into(), Value::Object(info));
    let mut tags: Vec<Value> = Vec::new();
    let mut paths = Map::new();
    let mut components = Map::new();
    for document in parsed {
        for tag in document
            .get("tags")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !tags.iter().any(|seen| seen.get("name") == tag.get("name")) {
                tags.push(tag.clone());
            }
        }
        if let Some(Value::Object(more)) = document.get("paths") {
            for (path, item) in more {
                match (paths.get_mut(path), item) {
                    (Some(Value::Object(have)), Value::Object(item)) => {
                        join(have, item, |key| key == OTHER_METHODS);
                    }
                    (None, _) => {
                        paths.insert(path.clone(), item.clone());
                    }
                    _ => {}
                }
            }
        }
        if let Some(Value::Object(more)) = document.get("components") {
            join(&mut components, more, |_| true);
        }
    }
    if !tags.is_empty() {
        merged.insert("tags".into(), Value::Array(tags));
    }
    merged.insert("paths".into(), Value::Object(paths));
    if !components.is_empty() {
        merged.insert("components".into(), Value::Object(components));
    }
    serde_json::to_vec(&Value::Object(merged))
        .map_err(|error| format!("the merged OpenAPI document: {error}"))
}

/// Adds to `have` the members of `more` it does not have; for the keys `nested` names, where
/// both have an object, the members of `more`'s that `have`'s lacks. So a path item gets the
/// operations of both (and the custom methods of `x-fastgrpc-other-methods`), and
/// `components` the schemas of both.
fn join(have: &mut Map<String, Value>, more: &Map<String, Value>, nested: fn(&str) -> bool) {
    for (key, value) in more {
        match (have.get_mut(key), value) {
            (Some(Value::Object(inner)), Value::Object(value)) if nested(key) => {
                join(inner, value, |_| false);
            }
            (Some(_), _) => {}
            (None, _) => {
                have.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHELVES: &str = r#"{"openapi":"3.1.0","info":{"title":"a.v1.Shelves","version":"v1",
        "description":"Shelves."},"tags":[{"name":"Shelves"}],
        "paths":{"/v1/shelves":{"get":{"operationId":"Shelves_List"}},
                 "/v1/x":{"x-fastgrpc-other-methods":{"PURGE":{"operationId":"Shelves_Purge"}}}},
        "components":{"schemas":{"a.v1.Shelf":{"type":"object"},"google.rpc.Status":{"type":"object"}}}}"#;
    const BOOKS: &str = r#"{"openapi":"3.1.0","info":{"title":"a.v1.Books","version":"v1"},
        "tags":[{"name":"Books"}],
        "paths":{"/v1/shelves":{"post":{"operationId":"Books_Create"}},
                 "/v1/x":{"x-fastgrpc-other-methods":{"LOCK":{"operationId":"Books_Lock"}}},
                 "/v1/books":{"get":{"operationId":"Books_List"}}},
        "components":{"schemas":{"a.v1.Book":{"type":"object"},"google.rpc.Status":{"type":"string"}}}}"#;

    #[test]
    fn one_document_is_served_as_it_is_and_several_are_merged() {
        let one = OpenApi::new("/openapi.json", &[SHELVES]).unwrap().unwrap();
        assert_eq!(one.document, SHELVES.as_bytes());
        assert!(OpenApi::new("/openapi.json", &[]).unwrap().is_none());
        assert!(OpenApi::new("openapi.json", &[SHELVES]).is_err());

        let merged = merge(&[SHELVES, BOOKS]).unwrap();
        let merged: Value = serde_json::from_slice(&merged).unwrap();
        assert_eq!(merged["openapi"], "3.1.0");
        assert_eq!(
            merged["info"],
            serde_json::json!({"title": "a.v1.Shelves, a.v1.Books", "version": "v1"})
        );
        assert_eq!(
            merged["tags"],
            serde_json::json!([{"name": "Shelves"}, {"name": "Books"}])
        );
        let paths = &merged["paths"];
        assert_eq!(paths["/v1/shelves"]["get"]["operationId"], "Shelves_List");
        assert_eq!(paths["/v1/shelves"]["post"]["operationId"], "Books_Create");
        assert_eq!(paths["/v1/books"]["get"]["operationId"], "Books_List");
        let other = &paths["/v1/x"]["x-fastgrpc-other-methods"];
        assert_eq!(other["PURGE"]["operationId"], "Shelves_Purge");
        assert_eq!(other["LOCK"]["operationId"], "Books_Lock");
        let schemas = &merged["components"]["schemas"];
        assert_eq!(schemas["a.v1.Shelf"]["type"], "object");
        assert_eq!(schemas["a.v1.Book"]["type"], "object");
        assert_eq!(schemas["google.rpc.Status"]["type"], "object", "the first");
    }

    #[test]
    fn only_get_is_answered() {
        let openapi = OpenApi::new("/openapi.json", &[SHELVES]).unwrap().unwrap();
        let response = openapi.answer(&Method::GET);
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        let response = openapi.answer(&Method::POST);
        assert_eq!(response.status(), 405);
        assert_eq!(response.headers()[http::header::ALLOW], "GET");
    }
}
