//! Cross-origin calls from browsers (CORS) to gRPC-Web methods: which pages may call, the
//! preflight `OPTIONS` answer, and the headers that let a page read an answer's status.

use std::time::Duration;

use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, InvalidHeaderValue, ORIGIN, VARY,
};
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::body::ResponseBody;

/// Which web pages (origins) may call a server's gRPC-Web methods from a browser, and what
/// they may read of the answers. Set with [`Builder::web_cors`](crate::Server); the default is
/// [`Cors::any_origin`].
///
/// ```
/// use fastgrpc::service::Cors;
///
/// // Only the app's own pages, with their cookies.
/// let cors = Cors::origins(["https://app.example.com"])
///     .unwrap()
///     .allow_credentials(true)
///     .expose_headers(["x-request-id"]);
/// # let _ = fastgrpc::Server::builder().web_cors(cors);
/// ```
#[derive(Debug, Clone)]
pub struct Cors {
    origins: Origins,
    credentials: bool,
    /// `grpc-status`, `grpc-message`, `grpc-status-details-bin` and the configured names,
    /// joined once.
    exposed: HeaderValue,
    max_age: HeaderValue,
}

#[derive(Debug, Clone)]
enum Origins {
    Any,
    Listed(Vec<HeaderValue>),
}

/// What a page may read of an answer besides the CORS-safelisted headers: the gRPC status.
const STATUS_HEADERS: &str = "grpc-status,grpc-message,grpc-status-details-bin";

impl Default for Cors {
    fn default() -> Self {
        Cors::any_origin()
    }
}

impl Cors {
    /// Pages of any origin may call, without credentials (`Access-Control-Allow-Origin: *`:
    /// browsers send no cookies and no client certificates with such calls). The default.
    pub fn any_origin() -> Self {
        Cors {
            origins: Origins::Any,
            credentials: false,
            exposed: HeaderValue::from_static(STATUS_HEADERS),
            max_age: HeaderValue::from(24 * 60 * 60),
        }
    }

    /// Only pages of these origins (such as `https://app.example.com`: scheme, host and port
    /// as browsers send them in `Origin`) may call. Calls from pages of the server's own
    /// origin need no CORS and are always served.
    pub fn origins<I>(origins: I) -> Result<Self, InvalidHeaderValue>
    where
        I: IntoIterator<Item: AsRef<str>>,
    {
        let origins = origins
            .into_iter()
            .map(|origin| HeaderValue::try_from(origin.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Cors {
            origins: Origins::Listed(origins),
            ..Cors::any_origin()
        })
    }

    /// No page of another origin may call.
    pub fn same_origin_only() -> Self {
        Cors {
            origins: Origins::Listed(Vec::new()),
            ..Cors::any_origin()
        }
    }

    /// Lets the listed origins' pages send credentials (cookies, client certificates). Ignored
    /// with [`any_origin`](Self::any_origin): credentials are never allowed to every page.
    pub fn allow_credentials(mut self, allow: bool) -> Self {
        self.credentials = allow;
        self
    }

    /// Lets pages read these response headers (custom metadata) too, besides the status.
    ///
    /// # Panics
    /// If a name is not a valid header name.
    pub fn expose_headers<I>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item: AsRef<str>>,
    {
        let mut exposed = String::from(STATUS_HEADERS);
        for name in names {
            let name = HeaderName::try_from(name.as_ref()).expect("a valid header name");
            exposed.push(',');
            exposed.push_str(name.as_str());
        }
        self.exposed = HeaderValue::try_from(exposed).expect("header names are valid text");
        self
    }

    /// How long a browser may keep a preflight's answer (default: a day).
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = HeaderValue::from(max_age.as_secs());
        self
    }

    /// The `Access-Control-Allow-Origin` for a page of `origin`, if it may call.
    fn allowed(&self, origin: &HeaderValue) -> Option<HeaderValue> {
        match &self.origins {
            Origins::Any => Some(HeaderValue::from_static("*")),
            Origins::Listed(listed) => listed.contains(origin).then(|| origin.clone()),
        }
    }

    /// Adds to `headers` what lets a page of `origin` read the answer, if it may call.
    fn allow(&self, origin: &HeaderValue, headers: &mut HeaderMap) -> bool {
        let Some(allowed) = self.allowed(origin) else {
            return false;
        };
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
        if let Origins::Listed(_) = self.origins {
            headers.append(VARY, HeaderValue::from_static("origin"));
            if self.credentials {
                headers.insert(
                    ACCESS_CONTROL_ALLOW_CREDENTIALS,
                    HeaderValue::from_static("true"),
                );
            }
        }
        true
    }

    /// The headers a gRPC-Web answer to a page of `origin` carries.
    pub(crate) fn answer(&self, origin: &HeaderValue, headers: &mut HeaderMap) {
        if self.allow(origin, headers) {
            headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, self.exposed.clone());
        }
    }

    /// The answer to a preflight `OPTIONS` from a page of `origin`: 204 with what it may send,
    /// or 403 if it may not call.
    pub(crate) fn preflight(
        &self,
        origin: &HeaderValue,
        request: &HeaderMap,
    ) -> http::Response<ResponseBody> {
        let mut response = http::Response::new(ResponseBody::empty());
        if !self.allow(origin, response.headers_mut()) {
            *response.status_mut() = http::StatusCode::FORBIDDEN;
            return response;
        }
        *response.status_mut() = http::StatusCode::NO_CONTENT;
        let headers = response.headers_mut();
        headers.insert(
            ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, OPTIONS"),
        );
        // Whatever headers the page's call will send (content-type, x-grpc-web, grpc-timeout,
        // its own metadata): they are metadata to the server, as over gRPC.
        if let Some(asked) = request.get(ACCESS_CONTROL_REQUEST_HEADERS) {
            headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        headers.insert(ACCESS_CONTROL_MAX_AGE, self.max_age.clone());
        response
    }
}

/// The `Origin` of a cross-origin request, if it is one.
pub(crate) fn origin(headers: &HeaderMap) -> Option<&HeaderValue> {
    crate::metadata::header(headers, &ORIGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(value: &'static str) -> HeaderValue {
        HeaderValue::from_static(value)
    }

    #[test]
    fn any_origin_never_comes_with_credentials() {
        let cors = Cors::any_origin().allow_credentials(true);
        let mut headers = HeaderMap::new();
        cors.answer(&origin("https://evil.example"), &mut headers);
        assert_eq!(headers[ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert!(headers.get(ACCESS_CONTROL_ALLOW_CREDENTIALS).is_none());
        assert_eq!(headers[ACCESS_CONTROL_EXPOSE_HEADERS], STATUS_HEADERS);
    }

    #[test]
    fn listed_origins_are_echoed_with_credentials_and_others_get_nothing() {
        let cors = Cors::origins(["https://app.example"])
            .unwrap()
            .allow_credentials(true)
            .expose_headers(["x-request-id"]);
        let mut headers = HeaderMap::new();
        cors.answer(&origin("https://app.example"), &mut headers);
        assert_eq!(headers[ACCESS_CONTROL_ALLOW_ORIGIN], "https://app.example");
        assert_eq!(headers[ACCESS_CONTROL_ALLOW_CREDENTIALS], "true");
        assert_eq!(headers[VARY], "origin");
        assert_eq!(
            headers[ACCESS_CONTROL_EXPOSE_HEADERS],
            "grpc-status,grpc-message,grpc-status-details-bin,x-request-id"
        );
        let mut headers = HeaderMap::new();
        cors.answer(&origin("https://evil.example"), &mut headers);
        assert!(headers.is_empty());
        let refused = cors.preflight(&origin("https://evil.example"), &HeaderMap::new());
        assert_eq!(refused.status(), http::StatusCode::FORBIDDEN);
        assert!(Cors::origins(["not\na value"]).is_err());
    }
}
