//! REST transcoding end to end: `transcoding.v1.Echo` (`proto/transcoding/v1/echo.proto`,
//! served by `protos::TranscodingEcho`) called with plain HTTP requests over a real socket,
//! over HTTP/1.1 and HTTP/2 alike, each case on one connection that goes on after failures:
//! every kind of binding, `response_body`, `google.api.HttpBody` both ways, reply streams as
//! lines and as events, routing's 404 and 405, bad input, the deadline, a panic, interceptors
//! and CORS; gRPC and Connect calls to the same server unchanged; and the OpenAPI document
//! served, one service's or several merged, with every route the server answers in it.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use fastgrpc::codegen::rest::{Body, FieldTable, HttpMethod, Rule, Segment, Template, Variable};
use fastgrpc::service::{FastService, RequestBody};
use fastgrpc::{Request, Status};
use prost::Message;
use protos::TranscodingEcho;
use protos::transcoding::v1::EchoRequest;
use protos::transcoding::v1::echo_server::{EchoServer, OPENAPI};
use serde_json::{Value, json};
use support::TestServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One connection to the server, over HTTP/1.1 (kept alive; with the server's address, to open
/// another when an answer closes it) or HTTP/2.
enum Client {
    Http1(TcpStream, SocketAddr),
    Http2(h2::client::SendRequest<Bytes>),
}

/// An answer: its status, headers (names in lower case) and whole body.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|error| panic!("{error}: {:?}", String::from_utf8_lossy(&self.body)))
    }

    /// The `google.rpc.Status` of a failure, checked to come with `http` and JSON.
    fn status(&self, http: u16) -> Value {
        assert_eq!(self.status, http, "{self:?}");
        assert_eq!(self.header("content-type"), Some("application/json"));
        let status = self.json();
        assert!(status["code"].is_i64(), "{status}");
        assert!(status["message"].is_string(), "{status}");
        status
    }
}

impl Client {
    async fn connect(server: &TestServer, http2: bool) -> Client {
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        if !http2 {
            return Client::Http1(tcp, server.addr);
        }
        let (client, connection) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Client::Http2(client)
    }

    async fn get(&mut self, uri: &str) -> Reply {
        self.send("GET", uri, &[], b"").await
    }

    async fn send(
        &mut self,
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let reply = match self {
            Client::Http1(tcp, _) => http1(tcp, method, uri, headers, body),
            Client::Http2(client) => {
                return tokio::time::timeout(
                    Duration::from_secs(10),
                    http2(client, method, uri, headers, body),
                )
                .await
                .expect("an answer within 10 s");
            }
        };
        let reply = tokio::time::timeout(Duration::from_secs(10), reply)
            .await
            .expect("an answer within 10 s");
        // An answer that closes its connection (one given before its request's body was read):
        // the next request goes on a new one.
        if let Client::Http1(tcp, addr) = self
            && reply.header("connection") == Some("close")
        {
            *tcp = TcpStream::connect(*addr).await.unwrap();
        }
        reply
    }
}

async fn http1(
    tcp: &mut TcpStream,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut head = format!(
        "{method} {uri} HTTP/1.1\r\nhost: test\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    tcp.write_all(&bytes).await.unwrap();
    let mut raw = Vec::new();
    let mut chunk = [0; 16 * 1024];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let no_content = head.split(' ').nth(1) == Some("204");
            let whole = match head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
            {
                Some(len) => raw.len() >= end + 4 + len.trim().parse::<usize>().unwrap(),
                None => no_content || raw.ends_with(b"\r\n0\r\n\r\n"),
            };
            if whole {
                let response = support::http1::responses(&raw).pop().unwrap();
                return Reply {
                    status: response.status,
                    headers: response.headers,
                    body: response.body,
                };
            }
        }
        let n = tcp.read(&mut chunk).await.unwrap();
        assert!(
            n > 0,
            "closed inside a response: {:?}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&chunk[..n]);
    }
}

async fn http2(
    client: &mut h2::client::SendRequest<Bytes>,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut request = http::Request::builder()
        .method(method)
        .uri(format!("http://test{uri}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut ready = client.clone().ready().await.unwrap();
    let (response, mut send) = ready
        .send_request(request.body(()).unwrap(), body.is_empty())
        .unwrap();
    if !body.is_empty() {
        send.send_data(Bytes::copy_from_slice(body), true).unwrap();
    }
    let (parts, mut recv) = response.await.unwrap().into_parts();
    let mut data = BytesMut::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.unwrap();
        let _ = recv.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    Reply {
        status: parts.status.as_u16(),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
            .collect(),
        body: data.to_vec(),
    }
}

async fn echo_server() -> TestServer {
    TestServer::start(fastgrpc::Server::builder().add_service(EchoServer::new(TranscodingEcho)))
        .await
}

/// Runs `case` with a client of each HTTP version on `server`.
async fn over_both<F>(server: &TestServer, case: F)
where
    F: AsyncFn(&mut Client),
{
    for http2 in [false, true] {
        let mut client = Client::connect(server, http2).await;
        case(&mut client).await;
    }
}

#[tokio::test]
async fn every_kind_of_binding_reaches_its_method() {
    let server = echo_server().await;
    over_both(&server, async |client: &mut Client| {
        // Path variables, and every kind of query parameter.
        let reply = client
            .get(
                "/v1/shelves/1/books/2?page.size=10&page.token=t%20u&ids=1&ids=2&displayName=x\
                 &genre=FICTION&big=9007199254740993&since=2024-01-01T00:00:00Z&verbose=true\
                 &limit=5&interval=1.5s&update_mask=book.title,displayName",
            )
            .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(
            reply.json(),
            json!({
                "name": "shelves/1/books/2", "page": {"size": 10, "token": "t u"},
                "ids": [1, 2], "displayName": "x", "genre": "FICTION",
                "big": "9007199254740993", "since": "2024-01-01T00:00:00Z", "verbose": true,
                "limit": 5, "interval": "1.500s", "updateMask": "book.title,displayName",
            })
        );
        // `**` keeps encoded slashes; a single segment decodes everything.
        let reply = client.get("/v1/files/a/b%2Fc/d%20e.txt").await;
        assert_eq!(reply.json(), json!({"path": "a/b%2Fc/d e.txt"}));
        // `body: "book"` with the path's `book.name` inside it.
        let reply = client
            .send(
                "PATCH",
                "/v1/shelves/1/books/2?verbose=true",
                &[("content-type", "application/json")],
                br#"{"title": "T", "pages": "300", "genre": "HISTORY"}"#,
            )
            .await;
        assert_eq!(
            reply.json(),
            json!({"book": {"name": "shelves/1/books/2", "title": "T", "pages": "300",
                "genre": "HISTORY"}, "verbose": true})
        );
        let reply = client
            .send("POST", "/v1/shelves/1/books", &[], br#"{"title": "t"}"#)
            .await;
        assert_eq!(
            reply.json(),
            json!({"parent": "shelves/1", "book": {"title": "t"}})
        );
        // `body: "*"`: the path's field wins over the body's.
        let reply = client
            .send(
                "PUT",
                "/v1/shelves/1/books/2",
                &[],
                br#"{"name": "ignored", "ids": [7]}"#,
            )
            .await;
        assert_eq!(
            reply.json(),
            json!({"name": "shelves/1/books/2", "ids": [7]})
        );
        // A custom verb.
        let reply = client
            .send(
                "POST",
                "/v1/shelves/1/books/2:archive",
                &[],
                br#"{"verbose": true}"#,
            )
            .await;
        assert_eq!(
            reply.json(),
            json!({"name": "shelves/1/books/2", "verbose": true})
        );
        let reply = client
            .send("DELETE", "/v1/shelves/1/books/2", &[], b"")
            .await;
        assert_eq!((reply.status, reply.json()), (200, json!({})));
        // Additional bindings, one a POST of JSON whose path is no `/package.Service/Method`.
        let reply = client.get("/v1/search?parent=p&page.size=2").await;
        assert_eq!(reply.json(), json!({"parent": "p", "page": {"size": 2}}));
        let reply = client.get("/v1/shelves/3/search").await;
        assert_eq!(reply.json(), json!({"parent": "shelves/3"}));
        let reply = client
            .send(
                "POST",
                "/v1/search:query",
                &[("content-type", "application/json")],
                br#"{"count": 2}"#,
            )
            .await;
        assert_eq!(reply.json(), json!({"count": 2}));
    })
    .await;
    server.stop().await;
}

/// Trailing metadata reaches a REST client as `grpc-trailer-` headers, whether the handler
/// wrote the answer (a plain reply) or it was translated (a `response_body` reply).
#[tokio::test]
async fn trailing_metadata_is_sent_as_grpc_trailer_headers() {
    let server = echo_server().await;
    over_both(&server, async |client: &mut Client| {
        let asked = [
            ("content-type", "application/json"),
            ("x-echo-trailer", "t1"),
        ];
        let reply = client
            .send("POST", "/v1/shelves/1/books", &asked, br#"{"title": "T"}"#)
            .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.header("grpc-trailer-x-echo-trailer"), Some("t1"));
        assert_eq!(reply.header("grpc-status"), None, "{reply:?}");
        let reply = client
            .send(
                "GET",
                "/v1/shelves/1/books/2/book?book.title=T",
                &asked[1..],
                b"",
            )
            .await;
        assert_eq!(reply.json(), json!({"title": "T"}));
        assert_eq!(reply.header("grpc-trailer-x-echo-trailer"), Some("t1"));
        let reply = client.get("/v1/shelves/1/books/2/book").await;
        assert_eq!(reply.header("grpc-trailer-x-echo-trailer"), None);
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn response_body_and_http_body_shape_the_http_body() {
    let server = echo_server().await;
    over_both(&server, async |client: &mut Client| {
        // The reply's `book` alone.
        let reply = client
            .get("/v1/shelves/1/books/2/book?book.title=T&verbose=true")
            .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.json(), json!({"title": "T"}));
        // A reply that is a google.api.HttpBody: its bytes, its content type.
        let reply = client.get("/v1/shelves/1/books/2/raw").await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-type"), Some("text/plain"));
        assert_eq!(reply.body, b"shelves/1/books/2");
        // A request that is one: the body as it came, not JSON.
        let upload = vec![0xff; 3000];
        let reply = client
            .send(
                "POST",
                "/v1/upload",
                &[("content-type", "application/octet-stream")],
                &upload,
            )
            .await;
        assert_eq!(
            reply.json(),
            json!({"title": "application/octet-stream", "pages": "3000"})
        );
        let reply = client
            .send(
                "POST",
                "/v1/upload",
                &[("content-type", "text/plain")],
                b"{",
            )
            .await;
        assert_eq!(reply.json(), json!({"title": "text/plain", "pages": "1"}));
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn reply_streams_are_lines_or_events_with_a_last_error() {
    let server = echo_server().await;
    over_both(&server, async |client: &mut Client| {
        let reply = client
            .get("/v1/shelves/1/books/2:watch?count=3&interval=0.01s&failCode=10")
            .await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-type"), Some("application/x-ndjson"));
        let text = String::from_utf8(reply.body.clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 4, "{text}");
        for line in &lines[..3] {
            assert_eq!(line["name"], "shelves/1/books/2");
            assert_eq!(line["count"], 3);
        }
        assert_eq!(lines[3]["error"]["code"], 10, "{text}");
        assert_eq!(lines[3]["error"]["message"], "watch failed");
        assert_eq!(lines[3]["error"]["details"][0]["reason"], "ECHO");
        // Ending well: no error line.
        let reply = client.get("/v1/shelves/1/books/2:watch?count=2").await;
        assert_eq!(String::from_utf8(reply.body).unwrap().lines().count(), 2);
        // Events, when asked for.
        let reply = client
            .send(
                "GET",
                "/v1/shelves/1/books/2:watch?count=2&failCode=9",
                &[("accept", "text/event-stream")],
                b"",
            )
            .await;
        assert_eq!(reply.header("content-type"), Some("text/event-stream"));
        let text = String::from_utf8(reply.body).unwrap();
        let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 3, "{text}");
        assert!(events[0].starts_with("data: {\"name\":\"shelves/1/books/2\""));
        let error = events[2].strip_prefix("event: error\ndata: ").unwrap();
        let error: Value = serde_json::from_str(error).unwrap();
        assert_eq!(error["error"]["code"], 9);
        // A stream that fails before its first message is a plain failure.
        let reply = client
            .get("/v1/shelves/1/books/2:watch?count=0&failCode=5")
            .await;
        assert_eq!(reply.status(404)["code"], 5);
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn a_stream_of_http_bodies_is_their_bytes_with_the_first_one_s_content_type() {
    let server = echo_server().await;
    over_both(&server, async |client: &mut Client| {
        let reply = client
            .get("/v1/shelves/1/books/2/pieces?count=3&interval=0.01s")
            .await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-type"), Some("text/plain"));
        assert_eq!(
            String::from_utf8(reply.body).unwrap(),
            "piece 0 of shelves/1/books/2;piece 1 of shelves/1/books/2;\
             piece 2 of shelves/1/books/2;",
            "the bytes as they are: no delimiter, no JSON"
        );
        // Without a message there is no content type to take: an HttpBody's default.
        let reply = client.get("/v1/shelves/1/books/2/pieces?count=0").await;
        assert_eq!(reply.status, 200);
        assert_eq!(
            reply.header("content-type"),
            Some("application/octet-stream")
        );
        assert!(reply.body.is_empty());
        // A failure after the first piece ends the bytes with the error's line, as
        // grpc-gateway does; before it, the answer is the failure.
        let reply = client
            .get("/v1/shelves/1/books/2/pieces?count=1&failCode=10")
            .await;
        let text = String::from_utf8(reply.body).unwrap();
        let error = text
            .strip_prefix("piece 0 of shelves/1/books/2;")
            .expect("the piece first");
        let error: Value = serde_json::from_str(error.trim_end()).unwrap();
        assert_eq!(error["error"]["message"], "download failed");
        let reply = client
            .get("/v1/shelves/1/books/2/pieces?count=0&failCode=5")
            .await;
        assert_eq!(reply.status(404)["code"], 5);
        // Asked for events, the pieces are events' data, as any stream's messages.
        let reply = client
            .send(
                "GET",
                "/v1/shelves/1/books/2/pieces?count=2",
                &[("accept", "text/event-stream")],
                b"",
            )
            .await;
        assert_eq!(reply.header("content-type"), Some("text/event-stream"));
        assert_eq!(
            String::from_utf8(reply.body).unwrap(),
            "data: piece 0 of shelves/1/books/2;\n\ndata: piece 1 of shelves/1/books/2;\n\n"
        );
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn routing_and_bad_input_are_4xx_with_a_google_rpc_status() {
    let server = echo_server().await;
    over_both(&server, async |client: &mut Client| {
        let reply = client.get("/v1/nothing/here").await;
        assert_eq!(reply.status(404)["code"], 5);
        let reply = client.send("POST", "/v1/shelves/1/books/2", &[], b"").await;
        assert_eq!(reply.status(405)["code"], 12);
        assert_eq!(reply.header("allow"), Some("DELETE, GET, PATCH, PUT"));
        // An unannotated method is not reachable by REST.
        assert_eq!(client.get("/transcoding.v1.Echo/Hidden").await.status, 405);
        let failure = client.get("/v1/fail/7?message=no").await;
        let status = failure.status(403);
        assert_eq!(
            status,
            json!({"code": 7, "message": "no", "details": [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "ECHO", "domain": "transcoding.v1"}]})
        );
        let get = |query: &str| format!("/v1/shelves/1/books/2?{query}");
        for (uri, message) in [
            (get("ids=x"), "query parameter `ids`: \"x\" is not an int32"),
            (get("genre=NOPE"), "not a value of transcoding.v1.Genre"),
            (get("since=yesterday"), "query parameter `since`"),
            (get("verbose=true&verbose=false"), "given more than once"),
            (get("display_name=%zz"), "display_name"),
            ("/v1/shelves/%FF/books/2".to_owned(), "percent-encoding"),
            ("/v1/fail/x".to_owned(), "the path's `code`"),
        ] {
            let reply = client.get(&uri).await;
            let status = reply.status(400);
            assert_eq!(status["code"], 3, "{uri}: {status}");
            let text = status["message"].as_str().unwrap();
            assert!(text.contains(message), "{uri}: {text}");
        }
        for (method, uri, body, message) in [
            ("PUT", "/v1/shelves/1/books/2", &b"{"[..], "not valid JSON"),
            ("PUT", "/v1/shelves/1/books/2", b"[]", "not a JSON object"),
            ("GET", "/v1/shelves/1/books/2", b"{}", "takes no body"),
        ] {
            let reply = client.send(method, uri, &[], body).await;
            let status = reply.status(400);
            assert!(
                status["message"].as_str().unwrap().contains(message),
                "{status}"
            );
        }
        // More parameters than a query may have (a longer query than it may have is cut
        // short by the HTTP layers' own limits on a request's head first).
        let many = get(&"x=1&".repeat(300));
        let reply = client.get(&many).await;
        assert_eq!(reply.status(400)["code"], 3);
        // The connection goes on.
        assert_eq!(client.get("/v1/search?parent=p").await.status, 200);
    })
    .await;
    server.stop().await;
}

/// A body too large to be read before the call starts is read by the call and bound then.
#[tokio::test]
async fn a_large_body_is_bound_once_it_has_all_come() {
    let server = echo_server().await;
    over_both(&server, async |client: &mut Client| {
        let name = "x".repeat(300_000);
        let body = format!(r#"{{"displayName": "{name}"}}"#);
        let reply = client
            .send("PUT", "/v1/shelves/1/books/2", &[], body.as_bytes())
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.header("content-type"));
        let echoed = reply.json();
        assert_eq!(echoed["name"], "shelves/1/books/2");
        assert_eq!(echoed["displayName"].as_str().map(str::len), Some(300_000));
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn a_body_over_the_service_s_limit_is_refused() {
    let server = TestServer::start(
        fastgrpc::Server::builder()
            .add_service(EchoServer::new(TranscodingEcho).max_decoding_message_size(1024)),
    )
    .await;
    over_both(&server, async |client: &mut Client| {
        let body = format!(r#"{{"displayName": "{}"}}"#, "x".repeat(2000));
        let reply = client
            .send("PUT", "/v1/shelves/1/books/2", &[], body.as_bytes())
            .await;
        assert_eq!(reply.status(429)["code"], 8);
        let reply = client.send("POST", "/v1/upload", &[], &[7; 2000]).await;
        assert_eq!(reply.status(429)["code"], 8);
        // One too large to be read before the call starts: refused as it is read (over
        // HTTP/1.1, the connection then closes and the client opens another).
        let body = format!(r#"{{"displayName": "{}"}}"#, "x".repeat(300_000));
        let reply = client
            .send("PUT", "/v1/shelves/1/books/2", &[], body.as_bytes())
            .await;
        assert_eq!(reply.status(429)["code"], 8);
        assert_eq!(client.get("/v1/search").await.status, 200);
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn the_server_s_timeout_and_a_panic_answer_in_rest_s_form() {
    let server = TestServer::start(
        fastgrpc::Server::builder()
            .timeout(Duration::from_millis(200))
            .add_service(EchoServer::new(TranscodingEcho)),
    )
    .await;
    over_both(&server, async |client: &mut Client| {
        let reply = client.get("/v1/shelves/1/books/2?interval=10s").await;
        assert_eq!(reply.status(504)["code"], 4);
        // A stream under way when the deadline passes ends with an error line.
        let reply = client
            .get("/v1/shelves/1/books/2:watch?count=100&interval=0.05s")
            .await;
        assert_eq!(reply.status, 200);
        let text = String::from_utf8(reply.body).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["error"]["code"], 4, "{text}");
        assert_eq!(client.get("/v1/search").await.status, 200);
    })
    .await;
    server.stop().await;
    // Without the short timeout, which a call waiting its turn on a busy machine could
    // outlast before its handler ran.
    let server = echo_server().await;
    over_both(&server, async |client: &mut Client| {
        let reply = client.get("/v1/shelves/1/books/panic").await;
        assert_eq!(reply.status(500)["code"], 13);
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn interceptors_see_the_grpc_method_and_the_headers_and_cors_applies() {
    let deny = |request: Request<()>| -> Result<Request<()>, Status> {
        let method = request
            .extensions()
            .get::<fastgrpc::service::CalledMethod>()
            .unwrap();
        assert_eq!(method.service(), "transcoding.v1.Echo");
        match request.metadata().get("x-deny") {
            Some(_) => Err(Status::permission_denied(format!("no {}", method.method()))),
            None => Ok(request),
        }
    };
    let server = TestServer::start(
        fastgrpc::Server::builder()
            .add_service(EchoServer::with_interceptor(TranscodingEcho, deny)),
    )
    .await;
    over_both(&server, async |client: &mut Client| {
        let reply = client
            .send("GET", "/v1/search", &[("x-deny", "1")], b"")
            .await;
        assert_eq!(reply.status(403)["message"], "no Search");
        let reply = client
            .send(
                "GET",
                "/v1/search",
                &[("origin", "https://page.example")],
                b"",
            )
            .await;
        assert_eq!(reply.status, 200);
        assert!(
            reply.header("access-control-allow-origin").is_some(),
            "{reply:?}"
        );
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn grpc_and_connect_calls_on_the_same_server_are_unchanged() {
    let server = echo_server().await;
    let request = EchoRequest {
        name: "n".into(),
        ..EchoRequest::default()
    };
    let frame = support::frame(&request.encode_to_vec());
    let reply = support::raw_grpc(server.addr, "/transcoding.v1.Echo/Hidden", frame).await;
    assert_eq!(reply.grpc_status(), Some("0"));
    assert_eq!(
        EchoRequest::decode(&reply.body[5..]).unwrap(),
        request,
        "{reply:?}"
    );
    let reply = support::raw_grpc(server.addr, "/transcoding.v1.Echo/Nope", Bytes::new()).await;
    assert_eq!(reply.grpc_status(), Some("12"));
    over_both(&server, async |client: &mut Client| {
        let reply = client
            .send(
                "POST",
                "/transcoding.v1.Echo/Get",
                &[("content-type", "application/json")],
                br#"{"name": "c"}"#,
            )
            .await;
        assert_eq!((reply.status, reply.json()), (200, json!({"name": "c"})));
        let reply = client
            .send(
                "POST",
                "/transcoding.v1.Echo/Fail",
                &[("content-type", "application/json")],
                br#"{"code": 5}"#,
            )
            .await;
        assert_eq!(reply.json()["code"], "not_found", "Connect's error");
    })
    .await;
    server.stop().await;
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// A body compressed with an encoding the service accepts (gzip by default) is decompressed
/// before it is bound, whether it came whole or is read by the handler; another encoding is
/// 415 with the encodings accepted, and a corrupt or too large one is refused.
#[tokio::test]
async fn a_compressed_body_is_decompressed_before_it_is_bound() {
    let server = TestServer::start(
        fastgrpc::Server::builder()
            .add_service(EchoServer::new(TranscodingEcho).max_decoding_message_size(400_000)),
    )
    .await;
    over_both(&server, async |client: &mut Client| {
        let gzipped = [
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ];
        let reply = client
            .send(
                "PUT",
                "/v1/shelves/1/books/2",
                &gzipped,
                &gzip(br#"{"displayName": "d", "name": "ignored"}"#),
            )
            .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(
            reply.json(),
            json!({"name": "shelves/1/books/2", "displayName": "d"})
        );
        // An `HttpBody` takes the body decompressed; one of 150 KB that hardly compresses is
        // not read before the call starts over HTTP/1.1.
        let mut noise = Vec::with_capacity(150_000);
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        while noise.len() < 150_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            noise.extend_from_slice(&seed.to_le_bytes());
        }
        for body in [&[0u8; 3000][..], &noise] {
            let reply = client
                .send(
                    "POST",
                    "/v1/upload",
                    &[("content-type", "application/octet-stream"), gzipped[1]],
                    &gzip(body),
                )
                .await;
            assert_eq!(
                reply.json(),
                json!({"title": "application/octet-stream", "pages": body.len().to_string()})
            );
        }
        let reply = client
            .send(
                "PUT",
                "/v1/shelves/1/books/2",
                &[gzipped[0], ("content-encoding", "deflate")],
                b"x",
            )
            .await;
        assert_eq!(reply.status(415)["code"], 12);
        assert_eq!(reply.header("accept-encoding"), Some("identity,gzip"));
        let reply = client
            .send("PUT", "/v1/shelves/1/books/2", &gzipped, b"not gzip")
            .await;
        assert_eq!(reply.status(400)["code"], 3);
        // Small on the wire, over the limit once decompressed.
        let reply = client
            .send(
                "PUT",
                "/v1/shelves/1/books/2",
                &gzipped,
                &gzip(&[b' '; 500_000]),
            )
            .await;
        assert_eq!(reply.status(429)["code"], 8);
        assert_eq!(client.get("/v1/search").await.status, 200);
    })
    .await;
    server.stop().await;
}

/// A REST call's body is bound before its handler reads it, and REST's reply is plain JSON:
/// gRPC's or HTTP's encoding headers on the request neither make the handler decompress the
/// bound message nor compress the reply, on a service that would compress for gRPC.
#[tokio::test]
async fn encoding_headers_do_not_reach_a_rest_call_s_handler() {
    let gzip = fastgrpc::CompressionEncoding::Gzip;
    let server = TestServer::start(
        fastgrpc::Server::builder().add_service(
            EchoServer::new(TranscodingEcho)
                .accept_compressed(gzip)
                .send_compressed(gzip),
        ),
    )
    .await;
    over_both(&server, async |client: &mut Client| {
        let headers = [
            ("grpc-encoding", "gzip"),
            ("grpc-accept-encoding", "gzip"),
            ("accept-encoding", "gzip"),
        ];
        let reply = client
            .send("GET", "/v1/shelves/1/books/2?verbose=true", &headers, b"")
            .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.header("content-encoding"), None, "{reply:?}");
        assert_eq!(
            reply.json(),
            json!({"name": "shelves/1/books/2", "verbose": true})
        );
        let reply = client
            .send(
                "POST",
                "/v1/shelves/1/books",
                &[("content-type", "application/json"), headers[0], headers[1]],
                br#"{"title": "T"}"#,
            )
            .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(
            reply.json(),
            json!({"parent": "shelves/1", "book": {"title": "T"}})
        );
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn transcoding_turned_off_leaves_rest_paths_unanswered() {
    let server = TestServer::start(
        fastgrpc::Server::builder()
            .rest_transcoding(false)
            .add_service(EchoServer::new(TranscodingEcho)),
    )
    .await;
    over_both(&server, async |client: &mut Client| {
        assert_eq!(client.get("/v1/search").await.status, 405);
        let reply = client
            .send(
                "POST",
                "/v1/search:query",
                &[("content-type", "application/json")],
                b"{}",
            )
            .await;
        assert_ne!(reply.status, 200);
    })
    .await;
    server.stop().await;
}

/// A value for each wildcard of `template`, as a request's path: the path a request for the
/// rule would have.
fn path_of(template: &Template<'_>) -> String {
    let mut path = String::new();
    for (at, segment) in template.segments.iter().enumerate() {
        path.push('/');
        match segment {
            Segment::Literal(text) => path.push_str(text),
            Segment::Any | Segment::Rest => path.push_str(&format!("s{at}")),
        }
    }
    if path.is_empty() {
        path.push('/');
    }
    if let Some(verb) = template.verb {
        path.push(':');
        path.push_str(verb);
    }
    path
}

/// Whether `path` is one of the OpenAPI path template `pattern` (`/v1/shelves/{shelves}:x`):
/// each `{parameter}` one or more characters of a segment, neither `/` nor `:`.
fn openapi_matches(pattern: &str, path: &str) -> bool {
    match pattern.split_once('{') {
        None => pattern == path,
        Some((literal, rest)) => {
            let Some(path) = path.strip_prefix(literal) else {
                return false;
            };
            let Some((_, after)) = rest.split_once('}') else {
                return false;
            };
            let taken = path.find(['/', ':']).unwrap_or(path.len());
            (1..=taken).any(|end| openapi_matches(after, &path[end..]))
        }
    }
}

/// Checks that `document` has an operation for each of `rules` (its path and method, the
/// operation named after the rule's method) and no other: every route the server answers is
/// in the document it serves.
fn assert_document_covers(document: &Value, rules: &[&Rule]) {
    let paths = document["paths"]
        .as_object()
        .expect("the document has paths");
    let mut operations = 0;
    for item in paths.values() {
        for (key, operation) in item.as_object().unwrap() {
            if key == "x-fastgrpc-other-methods" {
                operations += operation.as_object().unwrap().len();
            } else if operation.get("operationId").is_some() {
                operations += 1;
            }
        }
    }
    assert_eq!(operations, rules.len(), "one operation per rule");
    for rule in rules {
        let path = path_of(&rule.template);
        let method = rule.http_method.as_str();
        let found: Vec<&Value> = paths
            .iter()
            .filter(|(pattern, _)| openapi_matches(pattern, &path))
            .filter_map(|(_, item)| match method {
                "GET" | "PUT" | "POST" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS" | "TRACE" => {
                    item.get(method.to_ascii_lowercase())
                }
                _ => item["x-fastgrpc-other-methods"].get(method),
            })
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{method} {} ({path}) of {}: {found:?}",
            rule.template.text,
            rule.path
        );
        let id = found[0]["operationId"].as_str().unwrap();
        let named = id.rsplit_once('_').is_some_and(|(head, tail)| {
            tail == rule.method
                || (tail.parse::<u32>().is_ok() && head.ends_with(&format!("_{}", rule.method)))
        });
        assert!(named, "{id} is not {}'s", rule.path);
    }
}

#[tokio::test]
async fn the_openapi_document_is_served_and_has_every_route() {
    let server = TestServer::start(
        fastgrpc::Server::builder()
            .add_service(EchoServer::new(TranscodingEcho))
            .openapi_path("/openapi.json"),
    )
    .await;
    let echo = EchoServer::new(TranscodingEcho);
    let rules: Vec<&Rule> = echo.http_rules().iter().collect();
    over_both(&server, async |client: &mut Client| {
        let reply = client.get("/openapi.json").await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let document = reply.json();
        assert_eq!(document["openapi"], "3.1.0");
        assert_eq!(
            reply.body,
            OPENAPI.as_bytes(),
            "one service's document as it is"
        );
        assert_document_covers(&document, &rules);
        // A query changes nothing; other methods are refused in REST's form.
        assert_eq!(client.get("/openapi.json?x=1").await.status, 200);
        let reply = client.send("POST", "/openapi.json", &[], b"{}").await;
        assert_eq!(reply.status(405)["code"], 12);
        assert_eq!(reply.header("allow"), Some("GET"));
        // CORS as configured: a page of another origin may read it.
        let reply = client
            .send(
                "GET",
                "/openapi.json",
                &[("origin", "https://docs.example")],
                b"",
            )
            .await;
        assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
        let reply = client
            .send(
                "OPTIONS",
                "/openapi.json",
                &[
                    ("origin", "https://docs.example"),
                    ("access-control-request-method", "GET"),
                ],
                b"",
            )
            .await;
        assert_eq!(reply.status, 204);
        // The REST routes are still served beside it.
        assert_eq!(client.get("/v1/search").await.status, 200);
    })
    .await;
    server.stop().await;
}

/// A service of hand-written REST tables and document (what `fastgrpc-build` would generate
/// for `other.v1.Things`), to host beside Echo: its calls are never made.
struct Things {
    rules: &'static [Rule],
}

impl fastgrpc::service::NamedService for Things {
    const NAME: &'static str = "other.v1.Things";
}

impl FastService for Things {
    fn call(&self, _: http::Request<RequestBody>) -> fastgrpc::service::ResponseFuture {
        fastgrpc::FastFuture::ok(http::Response::new(fastgrpc::service::ResponseBody::empty()))
    }

    fn http_rules(&self) -> &'static [Rule] {
        self.rules
    }

    fn openapi(&self) -> Option<&'static str> {
        Some(
            r##"{"openapi":"3.1.0","info":{"title":"other.v1.Things","version":"v1"},
            "tags":[{"name":"Things"}],"paths":{"/v1/search":{"post":{"operationId":"Things_Post",
            "responses":{"200":{"description":"OK"}}}},"/v2/things/{id}":{"get":{
            "operationId":"Things_Get","parameters":[{"name":"id","in":"path","required":true,
            "schema":{"type":"string"}}],"responses":{"200":{"description":"OK","content":{
            "application/json":{"schema":{"$ref":"#/components/schemas/other.v1.Thing"}}}}}}}},
            "components":{"schemas":{"other.v1.Thing":{"type":"object"}}}}"##,
        )
    }
}

static EMPTY: FieldTable = FieldTable {
    message: "other.v1.Thing",
    fields: &[],
};

const fn thing_rule(
    path: &'static str,
    method: &'static str,
    http_method: HttpMethod,
    template: Template<'static>,
) -> Rule {
    Rule {
        path,
        method,
        http_method,
        template,
        body: Body::None,
        response_body: None,
        request: &EMPTY,
        response: "other.v1.Thing",
        server_streaming: false,
    }
}

static THINGS_RULES: &[Rule] = &[
    thing_rule(
        "/other.v1.Things/Get",
        "Get",
        HttpMethod::Get,
        Template {
            text: "/v2/things/{id}",
            segments: &[
                Segment::Literal("v2"),
                Segment::Literal("things"),
                Segment::Any,
            ],
            variables: &[Variable {
                field: &["id"],
                start: 2,
                end: 3,
            }],
            verb: None,
        },
    ),
    // Echo's `/v1/search` answers GET: this one shares its path item.
    thing_rule(
        "/other.v1.Things/Post",
        "Post",
        HttpMethod::Post,
        Template {
            text: "/v1/search",
            segments: &[Segment::Literal("v1"), Segment::Literal("search")],
            variables: &[],
            verb: None,
        },
    ),
];

static AT_THE_DOCUMENT_RULES: &[Rule] = &[thing_rule(
    "/other.v1.Things/Get",
    "Get",
    HttpMethod::Get,
    Template {
        text: "/openapi.json",
        segments: &[Segment::Literal("openapi.json")],
        variables: &[],
        verb: None,
    },
)];

#[tokio::test]
async fn several_services_documents_are_served_as_one() {
    let server = TestServer::start(
        fastgrpc::Server::builder()
            .add_service(EchoServer::new(TranscodingEcho))
            .add_service(Things {
                rules: THINGS_RULES,
            })
            .openapi_path("/openapi.json"),
    )
    .await;
    let echo = EchoServer::new(TranscodingEcho);
    let rules: Vec<&Rule> = echo.http_rules().iter().chain(THINGS_RULES).collect();
    over_both(&server, async |client: &mut Client| {
        let reply = client.get("/openapi.json").await;
        assert_eq!(reply.status, 200, "{reply:?}");
        let document = reply.json();
        assert_document_covers(&document, &rules);
        assert_eq!(
            document["info"]["title"],
            "transcoding.v1.Echo, other.v1.Things"
        );
        let schemas = &document["components"]["schemas"];
        assert!(schemas["transcoding.v1.Book"].is_object());
        assert!(schemas["other.v1.Thing"].is_object());
        let search = &document["paths"]["/v1/search"];
        assert_eq!(search["get"]["operationId"], "Echo_Search");
        assert_eq!(search["post"]["operationId"], "Things_Post");
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn a_rule_at_the_document_s_path_or_a_relative_path_fails_serving() {
    for (rules, path, message) in [
        (
            AT_THE_DOCUMENT_RULES,
            "/openapi.json",
            "also GET /openapi.json",
        ),
        (THINGS_RULES, "openapi.json", "must start with `/`"),
    ] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let served = fastgrpc::Server::builder()
            .add_service(Things { rules })
            .openapi_path(path)
            .serve_with_listener(listener, std::future::pending());
        let error = tokio::time::timeout(Duration::from_secs(10), served)
            .await
            .expect("refused at once")
            .unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains(message), "{error}");
    }
    // Without transcoding, nothing is served there, and nothing is refused.
    let server = TestServer::start(
        fastgrpc::Server::builder()
            .rest_transcoding(false)
            .add_service(EchoServer::new(TranscodingEcho))
            .openapi_path("/openapi.json"),
    )
    .await;
    let mut client = Client::connect(&server, false).await;
    assert_ne!(client.get("/openapi.json").await.status, 200);
    server.stop().await;
}
