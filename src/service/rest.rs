//! REST transcoding (`google.api.http`) served beside gRPC and Connect, by the same handlers.
//!
//! When the server is built, the rules of every hosted service go into one matcher
//! ([`RestRoutes`]). A request is REST when its content type is none of gRPC's and its path
//! names no hosted service (`POST /v1/search:query` with `application/json` looks like
//! Connect by its content type, but its path is no `/package.Service/Method`): the dispatcher
//! marks its call so ([`mark`]) before anything can answer it, so that a refusal, a panic and
//! a deadline are answered in REST's form (`protocol/rest.rs`) as any other protocol's are.
//!
//! The router then serves it here ([`serve`]): the rule its method and path find (404, or 405
//! with `Allow`), its request message from the path's variables, the query and the body (in
//! protobuf, `rest::request_proto`, unless a JSON body is merged in, `rest::request_json`; a
//! `google.api.HttpBody` takes the body as it is), and a call of the rule's method on its
//! service, as a unary call of `/package.Service/Method` answered in JSON, through the
//! interceptors, observation and handler every call goes through. The gRPC-form answer (JSON
//! messages) becomes REST's here: the reply alone, or a stream of lines, events, or the bytes
//! of `google.api.HttpBody` replies.
//!
//! A body that is not whole yet is read by the handler, as a Connect call's is: it is bound
//! then, in the body the handler reads ([`BindLater`]). A body compressed with an encoding
//! the service accepts (`content-encoding`, as the service's `accept_compressed` allows for
//! gRPC and Connect) is decompressed, within the service's size limit, before it is bound;
//! another encoding is refused with 415 and the encodings accepted.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue};
use http_body::{Body as _, Frame};
use tonic::{Code, Status};

use super::router::Router;
use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::call::Call;
use crate::codec::{FRAME_HEADER_LEN, FrameHeader};
use crate::compression::{self, CompressionEncoding, EncodingHeaders};
use crate::handler::ResponseFuture;
use crate::protocol::{Format, Protocol, rest};
use crate::rest::{BindOptions, Binding, Body, Field, FieldKind, HTTP_BODY, Lookup, Routes, Rule};
use crate::status;

/// The rules of every hosted service in one matcher: each rule with the index of its service
/// in the router.
pub(crate) struct RestRoutes {
    routes: Routes<Route>,
}

/// What a rule leads to: the router's index of its service, the rule, and the gRPC path of
/// its method as a `Uri`, made once rather than parsed for every call.
struct Route {
    service: usize,
    rule: &'static Rule,
    grpc_path: http::Uri,
}

impl RestRoutes {
    /// The matcher of `services`' rules (each a router index and its service's rules); `None`
    /// when no service has any. Two rules that match the same requests are refused, naming
    /// both methods.
    pub(crate) fn new(
        services: impl Iterator<Item = (usize, &'static [Rule])>,
    ) -> Result<Option<RestRoutes>, String> {
        let rules: Vec<(usize, &'static Rule)> = services
            .flat_map(|(index, rules)| rules.iter().map(move |rule| (index, rule)))
            .collect();
        if rules.is_empty() {
            return Ok(None);
        }
        let routes = Routes::new(rules.iter().map(|&(service, rule)| {
            let grpc_path = http::Uri::from_static(rule.path);
            let route = Route {
                service,
                rule,
                grpc_path,
            };
            (rule.http_method, rule.template, route)
        }))
        .map_err(|error| match error {
            crate::rest::RouteError::Conflict { first, second } => format!(
                "the google.api.http rules of {} and {} both answer {} {}",
                rules[first].1.path,
                rules[second].1.path,
                rules[second].1.http_method.as_str(),
                rules[second].1.template.text
            ),
            other => format!("a google.api.http rule the server cannot use: {other}"),
        })?;
        Ok(Some(RestRoutes { routes }))
    }

    /// The rule a `method` request of `path` finds, if any.
    pub(crate) fn rule_for(&self, method: &http::Method, path: &str) -> Option<&'static Rule> {
        match self.routes.find(method, path) {
            Lookup::Found(found) => Some(found.value().rule),
            _ => None,
        }
    }
}

/// Marks `call` as a REST call if it is one: the server has rules, its content type is none
/// of gRPC's, and its path names no service of `router`. A gRPC call costs a comparison.
#[inline]
pub(crate) fn mark(router: &Router, request: &http::Request<RequestBody>, call: &mut Call) {
    if let Some(wire) = call.wire()
        && matches!(
            wire.protocol,
            Protocol::Grpc | Protocol::GrpcWeb | Protocol::GrpcWebText | Protocol::Rest { .. }
        )
    {
        return;
    }
    if !router.transcodes() || router.hosts(request.uri().path()) {
        return;
    }
    let events = request.headers().get_all(ACCEPT).iter().any(|value| {
        value
            .as_bytes()
            .windows(17)
            .any(|w| w == b"text/event-stream")
    });
    call.become_rest(events);
}

/// Serves `request`, a REST call: the rule it matches, its request message bound, the rule's
/// method called on its service, and the answer in REST's form.
pub(crate) fn serve(
    router: &Router,
    routes: &RestRoutes,
    request: http::Request<RequestBody>,
    call: &mut Call,
) -> ResponseFuture {
    let events = matches!(
        call.wire_or_grpc().protocol,
        Protocol::Rest { events: true, .. }
    );
    let (mut parts, body) = request.into_parts();
    let found = match routes.routes.find(&parts.method, parts.uri.path()) {
        Lookup::Found(found) => found,
        Lookup::MethodNotAllowed(allowed) => {
            return FastFuture::ok(rest::method_not_allowed(&parts.method, &allowed));
        }
        Lookup::NotFound => {
            let status = Status::not_found(format!(
                "no route for {} {}",
                status::excerpt(parts.method.as_str()),
                status::excerpt(parts.uri.path())
            ));
            return FastFuture::ok(call.failure(&status));
        }
    };
    let route = found.value();
    let (index, rule) = (route.service, route.rule);
    let service = router.service(index);
    let limit = service.max_request_size();
    let body = body.into_whole();
    // The body's `content-encoding`: none, or one the service accepts. Another is refused as
    // HTTP refuses a content coding it does not know (`rest::unsupported_encoding`).
    let encoding = match &body {
        // Most REST calls are GETs: no body, nothing that could be compressed.
        Ok(data) if data.is_empty() => None,
        _ => {
            let accepted = service.accepted_encodings();
            let names = EncodingHeaders::CONNECT_UNARY;
            match compression::request_encoding(&parts.headers, names, accepted) {
                Ok(encoding) => encoding,
                Err(status) => {
                    return FastFuture::ok(rest::unsupported_encoding(&status, accepted));
                }
            }
        }
    };
    let bound = found.bindings().and_then(|bindings| {
        let input = Input {
            rule,
            query: parts.uri.query(),
            content_type: parts.headers.get(CONTENT_TYPE),
            encoding,
            limit,
        };
        let format = input.format(matches!(&body, Ok(data) if data.is_empty()));
        if format == Format::Proto {
            call.bound_in_proto();
        }
        match body {
            Ok(data) => input
                .bind(&bindings, &data, format)
                .map(|message| RequestBody::whole(message.into())),
            Err(body) => Ok(RequestBody::new(BindLater {
                read: Box::pin(crate::codec::collect_bare(body, limit)),
                bindings: bindings
                    .iter()
                    .map(|binding| (binding.field.to_vec(), binding.value.to_string()))
                    .collect(),
                rule,
                query: input.query.map(str::to_owned),
                content_type: input.content_type.cloned(),
                encoding,
                format,
                limit,
                done: false,
            })),
        }
    });
    let body = match bound {
        Ok(body) => body,
        Err(status) => return FastFuture::ok(call.failure(&status)),
    };
    // The call the rule stands for: a unary JSON call of its method, with the request's
    // headers as its metadata (none of which names an encoding to a REST call's handler).
    parts.method = http::Method::POST;
    parts.uri = route.grpc_path.clone();
    let request = http::Request::from_parts(parts, body);
    // A reply that is the whole JSON message, the common case, the handler writes in REST's
    // form itself; one of a `response_body`, an `HttpBody` or a stream is translated here.
    let plain =
        !rule.server_streaming && rule.response_body.is_none() && rule.response != HTTP_BODY;
    if plain {
        call.ask_own_form();
    }
    let response = router.serve_service(index, request, call);
    if call.answered_in_own_form() {
        return response;
    }
    response.and_then(move |response| answer(response, rule, events))
}

/// What a REST request's message is bound from, besides the path's variables and the body.
struct Input<'a> {
    rule: &'static Rule,
    query: Option<&'a str>,
    content_type: Option<&'a HeaderValue>,
    /// What the body is compressed with, if anything.
    encoding: Option<CompressionEncoding>,
    limit: usize,
}

impl Input<'_> {
    /// The format the request message is bound in: protobuf, which the handler decodes for a
    /// fraction of what JSON costs, unless a JSON body has to be merged with the path and the
    /// query (`empty` says the body is known to be empty).
    fn format(&self, empty: bool) -> Format {
        match empty || http_body_target(self.rule).is_some() {
            true => Format::Proto,
            false => Format::Json,
        }
    }

    /// The request message, in `format` (as [`format`](Self::format) chose), from the path's
    /// `bindings`, the query and `body`.
    fn bind(
        &self,
        bindings: &[Binding<'_, '_>],
        body: &[u8],
        format: Format,
    ) -> Result<Vec<u8>, Status> {
        if body.len() > self.limit {
            return Err(crate::codec::too_large(body.len(), self.limit));
        }
        let decompressed;
        let body = match self.encoding {
            Some(encoding) => {
                decompressed = compression::decompress(encoding, body, self.limit).map_err(
                    // Corrupt input is the client's request, not the server's fault.
                    |status| match status.code() {
                        Code::Internal => Status::invalid_argument(status.message()),
                        _ => status,
                    },
                )?;
                &decompressed[..]
            }
            None => body,
        };
        let rule = self.rule;
        let options = BindOptions::default();
        if format == Format::Json {
            return crate::rest::request_json(rule, bindings, self.query, body, options);
        }
        match http_body_target(rule) {
            None if body.is_empty() => {
                crate::rest::request_proto(rule, bindings, self.query, options)
            }
            None => Err(Status::internal("a REST body bound as if there were none")),
            // A `google.api.HttpBody` takes the body as it is: its bytes and content type.
            Some(target) => {
                // With the request itself the body, the query can set nothing.
                let query = target.and(self.query);
                let mut request = crate::rest::request_proto(rule, bindings, query, options)?;
                let content_type = self
                    .content_type
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or_default();
                let field = target.map(|field| field.number);
                crate::rest::append_http_body(&mut request, field, content_type, body)?;
                Ok(request)
            }
        }
    }
}

/// Where `rule` puts the body as a `google.api.HttpBody`: `Some(None)` when the request is
/// one (`body: "*"`), `Some(field)` for a body field of that type, `None` otherwise.
fn http_body_target(rule: &Rule) -> Option<Option<&'static Field>> {
    match rule.body {
        Body::All if rule.request.message == HTTP_BODY => Some(None),
        Body::Field(name) => rule
            .request
            .field(name)
            .filter(|field| {
                matches!(field.kind, FieldKind::Message(table) if table.message == HTTP_BODY)
            })
            .map(Some),
        _ => None,
    }
}

/// A REST request's body still arriving, read whole (within the limit, as a Connect body is:
/// `codec::collect_bare`) and bound into the request message's JSON, which is what the
/// handler then reads; a failure is the body's error, which the handler answers with.
struct BindLater {
    read: Pin<Box<dyn Future<Output = Result<Bytes, Status>> + Send>>,
    bindings: Vec<(Vec<Box<str>>, String)>,
    rule: &'static Rule,
    query: Option<String>,
    content_type: Option<HeaderValue>,
    encoding: Option<CompressionEncoding>,
    format: Format,
    limit: usize,
    done: bool,
}

impl http_body::Body for BindLater {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let read = ready!(this.read.as_mut().poll(cx));
        this.done = true;
        let bindings: Vec<Binding<'_, '_>> = this
            .bindings
            .iter()
            .map(|(field, value)| Binding {
                field,
                value: Cow::Borrowed(value),
            })
            .collect();
        let input = Input {
            rule: this.rule,
            query: this.query.as_deref(),
            content_type: this.content_type.as_ref(),
            encoding: this.encoding,
            limit: this.limit,
        };
        Poll::Ready(Some(read.and_then(|body| {
            input
                .bind(&bindings, &body, this.format)
                .map(|message| Frame::data(Bytes::from(message)))
        })))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// The gRPC-form answer of a REST call's method in REST's form.
fn answer(
    response: http::Response<ResponseBody>,
    rule: &'static Rule,
    events: bool,
) -> ResponseFuture {
    if rule.server_streaming {
        return stream_answer(response, rule, events);
    }
    let (head, mut body) = response.into_parts();
    match body.take_whole() {
        Some((message, trailers)) => FastFuture::ok(whole(head, message, trailers, rule)),
        None => FastFuture::boxed(async move {
            Ok(match super::connect::gather(body).await {
                Ok((message, trailers)) => whole(head, message, trailers, rule),
                Err(status) => rest::failure(&status),
            })
        }),
    }
}

/// REST's form of a whole unary gRPC-form answer: its one message (without its frame's
/// header) as the reply, or its status as the failure.
fn whole(
    head: http::response::Parts,
    frame: Option<Bytes>,
    trailers: Option<HeaderMap>,
    rule: &Rule,
) -> http::Response<ResponseBody> {
    let status_map = trailers.as_ref().unwrap_or(&head.headers);
    if status::code_of(status::status_in(status_map)) != Code::Ok {
        let status = Status::from_header_map(status_map)
            .unwrap_or_else(|| Status::internal("the reply carries no status"));
        return rest::failure(&status);
    }
    let Some(mut frame) = frame.filter(|frame| frame.len() >= FRAME_HEADER_LEN) else {
        return rest::failure(&Status::internal("the reply carries no message"));
    };
    if frame[0] != 0 {
        return rest::failure(&Status::internal("the reply is compressed"));
    }
    frame.advance(FRAME_HEADER_LEN);
    match rest::reply_body(frame, rule) {
        Ok((body, content_type)) => {
            let headers = crate::protocol::connect::metadata_only(head.headers);
            let mut response = rest::reply(headers, trailers.as_ref(), body, content_type);
            *response.extensions_mut() = head.extensions;
            response
        }
        Err(status) => rest::failure(&status),
    }
}

/// REST's form of a reply stream: a failure before its first message as a unary call's
/// failure (so the answer's head waits for that message), otherwise HTTP 200 and the messages
/// as `StreamForm` says, and a status other than `OK` a last line (or event).
fn stream_answer(
    response: http::Response<ResponseBody>,
    rule: &'static Rule,
    events: bool,
) -> ResponseFuture {
    let form = StreamForm::of(rule, events);
    let (head, mut body) = response.into_parts();
    if body.is_end_stream() {
        let status = Status::from_header_map(&head.headers);
        return FastFuture::ok(match status.filter(|status| status.code() != Code::Ok) {
            Some(status) => rest::failure(&status),
            None => streamed(head, None, BytesMut::new(), rule, form),
        });
    }
    FastFuture::boxed(async move {
        let mut first = BytesMut::new();
        let status = loop {
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        first.extend_from_slice(&data);
                        if holds_a_message(&first) {
                            return Ok(streamed(head, Some(body), first, rule, form));
                        }
                    }
                    Err(frame) => {
                        break Status::from_header_map(&frame.into_trailers().unwrap_or_default());
                    }
                },
                Some(Err(status)) => break Some(status),
                None => break None,
            }
        };
        Ok(match status.filter(|status| status.code() != Code::Ok) {
            Some(status) => rest::failure(&status),
            None => streamed(head, None, first, rule, form),
        })
    })
}

/// How a reply stream is written: each message a line of JSON, or an event's data; a stream
/// of `google.api.HttpBody` messages as their bytes, one after another, with the content type
/// of the first (what a download of a large file in pieces wants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamForm {
    Lines,
    Events,
    Bytes,
}

impl StreamForm {
    fn of(rule: &Rule, events: bool) -> StreamForm {
        if events {
            StreamForm::Events
        } else if rule.response == HTTP_BODY {
            StreamForm::Bytes
        } else {
            StreamForm::Lines
        }
    }
}

/// The length `buf`'s first frame declares, if its header is there; its message is compressed
/// (which a REST reply never is) if the flag is set.
fn declared_len(buf: &[u8]) -> Option<(bool, usize)> {
    FrameHeader::peek(buf).map(|(flag, len)| (flag != 0, len))
}

/// Whether `buf` begins with a whole frame, or with a frame header the stream refuses (too
/// large, or compressed): what the answer's head waits for.
fn holds_a_message(buf: &[u8]) -> bool {
    declared_len(buf).is_some_and(|(compressed, len)| {
        compressed || len > MAX_PENDING || buf.len() >= FRAME_HEADER_LEN + len
    })
}

/// The answer of a reply stream under way: `head`'s metadata, and the rest of the stream (its
/// body, if it has not ended, after what arrived of it already, `pending`) as `form` says.
fn streamed(
    head: http::response::Parts,
    inner: Option<ResponseBody>,
    pending: BytesMut,
    rule: &'static Rule,
    form: StreamForm,
) -> http::Response<ResponseBody> {
    let mut headers = crate::protocol::connect::metadata_only(head.headers);
    headers.remove(http::header::ACCEPT_ENCODING);
    let content_type = match form {
        StreamForm::Lines => rest::NDJSON,
        StreamForm::Events => rest::EVENT_STREAM,
        StreamForm::Bytes => first_content_type(&pending, rule),
    };
    headers.insert(CONTENT_TYPE, content_type);
    let messages = Messages {
        inner,
        pending,
        rule,
        form,
    };
    let mut response = ResponseBody::new(messages).with_headers(headers);
    *response.extensions_mut() = head.extensions;
    response
}

/// The content type of the `google.api.HttpBody` whose frame begins `buf`; the default of an
/// `HttpBody` without one when there is none (a stream without messages).
fn first_content_type(buf: &[u8], rule: &Rule) -> HeaderValue {
    let message = match declared_len(buf) {
        Some((false, len)) if buf.len() >= FRAME_HEADER_LEN + len => {
            Bytes::copy_from_slice(&buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + len])
        }
        _ => return rest::OCTET_STREAM,
    };
    match rest::reply_body(message, rule) {
        Ok((_, Some(content_type))) => content_type,
        _ => rest::OCTET_STREAM,
    }
}

/// The most of a reply stream's message held while its frame arrives in pieces.
const MAX_PENDING: usize = 64 * 1024 * 1024;

/// A gRPC-form reply stream of JSON messages in REST's form ([`StreamForm`]), its status, if
/// not `OK`, as a last line or event.
struct Messages {
    /// `None` once the stream has ended.
    inner: Option<ResponseBody>,
    /// What arrived of frames not yet whole.
    pending: BytesMut,
    rule: &'static Rule,
    form: StreamForm,
}

impl Messages {
    /// The whole frames in `pending`, in REST's form.
    fn written(&mut self) -> Result<BytesMut, Status> {
        let mut out = BytesMut::new();
        while let Some((compressed, len)) = declared_len(&self.pending) {
            if compressed {
                return Err(Status::internal("the reply is compressed"));
            }
            if len > MAX_PENDING {
                return Err(Status::resource_exhausted("a reply message is too large"));
            }
            if self.pending.len() < FRAME_HEADER_LEN + len {
                break;
            }
            self.pending.advance(FRAME_HEADER_LEN);
            let message = self.pending.split_to(len).freeze();
            let (body, _) = rest::reply_body(message, self.rule)?;
            match self.form {
                StreamForm::Bytes => out.extend_from_slice(&body),
                StreamForm::Lines | StreamForm::Events => {
                    rest::stream_message(&body, self.form == StreamForm::Events, &mut out)
                }
            }
        }
        Ok(out)
    }

    /// The stream's end with `status`: nothing for `OK`, else its last line (or event).
    fn end(&mut self, status: Option<Status>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        self.inner = None;
        let events = self.form == StreamForm::Events;
        match status.filter(|status| status.code() != Code::Ok) {
            Some(status) => Poll::Ready(Some(Ok(Frame::data(rest::ending(&status, events))))),
            None => Poll::Ready(None),
        }
    }
}

impl http_body::Body for Messages {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        loop {
            if !this.pending.is_empty() {
                match this.written() {
                    Ok(written) if written.is_empty() => {}
                    Ok(written) => return Poll::Ready(Some(Ok(Frame::data(written.freeze())))),
                    Err(status) => return this.end(Some(status)),
                }
            }
            let Some(inner) = this.inner.as_mut() else {
                return Poll::Ready(None);
            };
            match ready!(Pin::new(inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.pending.extend_from_slice(&data),
                    Err(frame) => {
                        let trailers = frame.into_trailers().unwrap_or_default();
                        return this.end(Status::from_header_map(&trailers));
                    }
                },
                Some(Err(status)) => return this.end(Some(status)),
                None => return this.end(None),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_none()
    }
}

/// `response` to a REST call, in REST's form if it is a refusal in gRPC's (trailers-only,
/// `content-type: application/grpc`), as a tower layer around the router makes them; as it is
/// otherwise.
pub(crate) fn in_rest_form(response: http::Response<ResponseBody>) -> http::Response<ResponseBody> {
    let grpc_refusal = response.body().is_end_stream()
        && response.headers().get(CONTENT_TYPE) == Some(&crate::status::GRPC_CONTENT_TYPE);
    match grpc_refusal
        .then(|| Status::from_header_map(response.headers()))
        .flatten()
    {
        Some(status) => rest::failure(&status),
        None => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_header(flag: u8, len: u32) -> Vec<u8> {
        let mut header = vec![flag];
        header.extend_from_slice(&len.to_be_bytes());
        header
    }

    #[test]
    fn a_reply_stream_s_answer_waits_for_a_whole_frame_or_one_it_refuses() {
        assert_eq!(declared_len(&[0, 0, 0]), None, "a header in pieces");
        assert!(!holds_a_message(&[0, 0, 0]));

        let mut frame = frame_header(0, 3);
        assert_eq!(declared_len(&frame), Some((false, 3)));
        frame.extend_from_slice(b"ab");
        assert!(!holds_a_message(&frame), "two bytes of three");
        frame.push(b'c');
        assert!(holds_a_message(&frame));
        assert!(holds_a_message(&frame_header(0, 0)), "an empty message");

        // What the stream refuses is not waited for: the answer says so at once.
        assert_eq!(declared_len(&frame_header(1, 9)), Some((true, 9)));
        assert!(holds_a_message(&frame_header(1, 9)), "compressed");
        let too_large = u32::try_from(MAX_PENDING + 1).unwrap();
        assert!(
            holds_a_message(&frame_header(0, too_large)),
            "over the bound"
        );
        assert!(!holds_a_message(&frame_header(0, too_large - 1)));
    }
}
