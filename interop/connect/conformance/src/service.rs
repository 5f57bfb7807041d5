//! `connectrpc.conformance.v1.ConformanceService` as the suite's `testing_servers.md` asks: each
//! call echoes what the server saw of it (request headers, timeout, the request messages) and
//! answers as the request's response definition says (headers, trailers, data, an error with
//! details, a delay). `Unimplemented` is left out, so the generated server answers it
//! `unimplemented`.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use fastgrpc::service::ConnectGet;
use fastgrpc::types::Any;
use fastgrpc::{
    BoxStream, Code, Deadline, ErrorHeaders, Request, Response, Status, Streaming, Trailers,
};
use futures_util::StreamExt;
use prost::Message;
use tonic::metadata::MetadataMap;

use crate::pb;
use pb::conformance_payload::RequestInfo;
use pb::conformance_service_server::ConformanceService;
use pb::unary_response_definition::Response as UnaryOutcome;

/// The service. It keeps no state: each call's request says all.
pub struct Conformance;

impl ConformanceService for Conformance {
    type ServerStreamStream = BoxStream<pb::ServerStreamResponse>;
    type BidiStreamStream = BoxStream<pb::BidiStreamResponse>;

    async fn unary(
        &self,
        request: Request<pb::UnaryRequest>,
    ) -> Result<Response<pb::UnaryResponse>, Status> {
        let seen = Seen::of(&request);
        let message = request.into_inner();
        let requests = vec![packed(&message, "UnaryRequest")];
        let payload = answer_unary(seen, requests, message.response_definition).await?;
        Ok(payload.map(|payload| pb::UnaryResponse {
            payload: Some(payload),
        }))
    }

    async fn idempotent_unary(
        &self,
        request: Request<pb::IdempotentUnaryRequest>,
    ) -> Result<Response<pb::IdempotentUnaryResponse>, Status> {
        let seen = Seen::of(&request);
        let message = request.into_inner();
        let requests = vec![packed(&message, "IdempotentUnaryRequest")];
        let payload = answer_unary(seen, requests, message.response_definition).await?;
        Ok(payload.map(|payload| pb::IdempotentUnaryResponse {
            payload: Some(payload),
        }))
    }

    async fn client_stream(
        &self,
        request: Request<Streaming<pb::ClientStreamRequest>>,
    ) -> Result<Response<pb::ClientStreamResponse>, Status> {
        let seen = Seen::of(&request);
        let mut messages = request.into_inner();
        let mut requests = Vec::new();
        let mut definition = None;
        while let Some(message) = messages.message().await? {
            if requests.is_empty() {
                definition = message.response_definition.clone();
            }
            requests.push(packed(&message, "ClientStreamRequest"));
        }
        let payload = answer_unary(seen, requests, definition).await?;
        Ok(payload.map(|payload| pb::ClientStreamResponse {
            payload: Some(payload),
        }))
    }

    async fn server_stream(
        &self,
        request: Request<pb::ServerStreamRequest>,
    ) -> Result<Response<Self::ServerStreamStream>, Status> {
        let seen = Seen::of(&request);
        let message = request.into_inner();
        let requests = vec![packed(&message, "ServerStreamRequest")];
        let Some(definition) = message.response_definition else {
            return Ok(Response::new(futures_util::stream::empty().boxed()));
        };
        let replies = Replies::new(&definition, seen.info(requests));
        let replies = futures_util::stream::unfold(replies, |mut replies| async move {
            let next = replies.next().await?;
            Some((
                next.map(|payload| pb::ServerStreamResponse {
                    payload: Some(payload),
                }),
                replies,
            ))
        });
        Ok(with_metadata(Response::new(replies.boxed()), &definition))
    }

    async fn bidi_stream(
        &self,
        request: Request<Streaming<pb::BidiStreamRequest>>,
    ) -> Result<Response<Self::BidiStreamStream>, Status> {
        let seen = Seen::of(&request);
        let mut messages = request.into_inner();
        // The first request says how to answer, headers included, so it is read before the
        // answer's head is given.
        let Some(first) = messages.message().await? else {
            return Ok(Response::new(futures_util::stream::empty().boxed()));
        };
        let definition = first.response_definition.clone().unwrap_or_default();
        let full_duplex = first.full_duplex;
        let requests = vec![packed(&first, "BidiStreamRequest")];
        let mut response = if full_duplex {
            full_duplex_replies(seen, definition.clone(), requests, messages)
        } else {
            half_duplex_replies(seen, definition.clone(), requests, messages)
        };
        if first.response_definition.is_some() {
            response = with_metadata(response, &definition);
        }
        Ok(response)
    }
}

/// What the server saw of a call besides its messages: its headers and its timeout.
struct Seen {
    headers: Vec<pb::Header>,
    timeout_ms: Option<i64>,
    /// A Connect GET's query parameters, by name.
    query: Option<Vec<pb::Header>>,
}

impl Seen {
    fn of<T>(request: &Request<T>) -> Seen {
        Seen {
            headers: headers_of(request.metadata()),
            timeout_ms: request
                .extensions()
                .get::<Deadline>()
                .map(|deadline| deadline.remaining().as_millis() as i64),
            query: request.extensions().get::<ConnectGet>().map(query_params),
        }
    }

    fn info(&self, requests: Vec<Any>) -> RequestInfo {
        RequestInfo {
            request_headers: self.headers.clone(),
            timeout_ms: self.timeout_ms,
            requests,
            connect_get_info: self
                .query
                .clone()
                .map(|query_params| pb::conformance_payload::ConnectGetInfo { query_params }),
        }
    }
}

/// A Connect GET's query parameters, as headers are reported: each name once, with its values.
fn query_params(get: &ConnectGet) -> Vec<pb::Header> {
    let mut params: Vec<pb::Header> = Vec::new();
    for (name, value) in get.parameters() {
        match params.iter_mut().find(|param| param.name == name) {
            Some(param) => param.value.push(value),
            None => params.push(pb::Header {
                name,
                value: vec![value],
            }),
        }
    }
    params
}

/// The answer of a call with one reply (unary, client streaming): the payload with the
/// response definition's headers and trailers, after its delay; or its error, with the request
/// info in its details, the trailers in its metadata and the headers apart (`ErrorHeaders`).
async fn answer_unary(
    seen: Seen,
    requests: Vec<Any>,
    definition: Option<pb::UnaryResponseDefinition>,
) -> Result<Response<pb::ConformancePayload>, Status> {
    let info = seen.info(requests);
    let Some(definition) = definition else {
        return Ok(Response::new(pb::ConformancePayload {
            data: Vec::new(),
            request_info: Some(info),
        }));
    };
    if definition.response_delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(definition.response_delay_ms.into())).await;
    }
    let data = match definition.response {
        Some(UnaryOutcome::Error(error)) => {
            let mut status = status_of(error, Some(&info));
            *status.metadata_mut() = metadata_of(&definition.response_trailers);
            let headers = metadata_of(&definition.response_headers);
            return Err(ErrorHeaders::attach(status, headers));
        }
        Some(UnaryOutcome::ResponseData(data)) => data,
        None => Vec::new(),
    };
    let mut response = Response::new(pb::ConformancePayload {
        data,
        request_info: Some(info),
    });
    *response.metadata_mut() = metadata_of(&definition.response_headers);
    if !definition.response_trailers.is_empty() {
        response
            .extensions_mut()
            .insert(Trailers(metadata_of(&definition.response_trailers)));
    }
    Ok(response)
}

/// `response` with the headers and trailers of a stream's response definition.
fn with_metadata<T>(
    mut response: Response<T>,
    definition: &pb::StreamResponseDefinition,
) -> Response<T> {
    *response.metadata_mut() = metadata_of(&definition.response_headers);
    if !definition.response_trailers.is_empty() {
        response
            .extensions_mut()
            .insert(Trailers(metadata_of(&definition.response_trailers)));
    }
    response
}

/// The replies a stream's response definition asks for, in order, then its error: each reply
/// after the definition's delay; the request info in the first reply, or in the error's details
/// if there is no reply.
struct Replies {
    data: VecDeque<Vec<u8>>,
    delay: Duration,
    error: Option<pb::Error>,
    /// Until the first reply or the error takes it.
    info: Option<RequestInfo>,
}

impl Replies {
    fn new(definition: &pb::StreamResponseDefinition, info: RequestInfo) -> Replies {
        Replies {
            data: definition.response_data.iter().cloned().collect(),
            delay: Duration::from_millis(definition.response_delay_ms.into()),
            error: definition.error.clone(),
            info: Some(info),
        }
    }

    /// The next reply, or the error once the replies are sent, or `None` at the end.
    async fn next(&mut self) -> Option<Result<pb::ConformancePayload, Status>> {
        if let Some(data) = self.data.pop_front() {
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            return Some(Ok(pb::ConformancePayload {
                data,
                request_info: self.info.take(),
            }));
        }
        let error = self.error.take()?;
        Some(Err(status_of(error, self.info.take().as_ref())))
    }
}

/// Half duplex: every request is read first, then the replies go out as for a server stream.
fn half_duplex_replies(
    seen: Seen,
    definition: pb::StreamResponseDefinition,
    mut requests: Vec<Any>,
    mut messages: Streaming<pb::BidiStreamRequest>,
) -> Response<BoxStream<pb::BidiStreamResponse>> {
    let replies = async_stream_of(async move {
        while let Some(message) = messages.message().await? {
            requests.push(packed(&message, "BidiStreamRequest"));
        }
        Ok(Replies::new(&definition, seen.info(requests)))
    });
    Response::new(replies)
}

/// A stream of the replies that `start` gives, or of its error.
fn async_stream_of(
    start: impl Future<Output = Result<Replies, Status>> + Send + 'static,
) -> BoxStream<pb::BidiStreamResponse> {
    let state = Some(Box::pin(start));
    futures_util::stream::unfold(
        (state, None::<Replies>),
        |(mut start, mut replies)| async move {
            if let Some(start) = start.take() {
                match start.await {
                    Ok(ready) => replies = Some(ready),
                    Err(status) => return Some((Err(status), (None, None))),
                }
            }
            let next = replies.as_mut()?.next().await?;
            Some((next.map(bidi_reply), (None, replies)))
        },
    )
    .boxed()
}

fn bidi_reply(payload: pb::ConformancePayload) -> pb::BidiStreamResponse {
    pb::BidiStreamResponse {
        payload: Some(payload),
    }
}

/// Full duplex: a reply for each request as it arrives (the first with the whole request info,
/// the others with the requests since the last reply); once the replies run out, or the client
/// ends its stream, the replies left and then the error.
fn full_duplex_replies(
    seen: Seen,
    definition: pb::StreamResponseDefinition,
    requests: Vec<Any>,
    messages: Streaming<pb::BidiStreamRequest>,
) -> Response<BoxStream<pb::BidiStreamResponse>> {
    let mut replies = Replies::new(&definition, RequestInfo::default());
    // Each reply's info is set as it goes (`FullDuplex::reply`).
    replies.info = None;
    let state = FullDuplex {
        seen,
        replies,
        requests,
        echoed: false,
        messages: Some(messages),
    };
    let replies = futures_util::stream::unfold(state, |mut state| async move {
        let next = state.next().await?;
        Some((next.map(bidi_reply), state))
    });
    Response::new(replies.boxed())
}

struct FullDuplex {
    seen: Seen,
    replies: Replies,
    /// Requests read since the last reply.
    requests: Vec<Any>,
    /// Whether the whole request info (headers, timeout) went out, with a reply or the error.
    echoed: bool,
    /// `None` once the client's stream ended or the replies ran out.
    messages: Option<Streaming<pb::BidiStreamRequest>>,
}

impl FullDuplex {
    async fn next(&mut self) -> Option<Result<pb::ConformancePayload, Status>> {
        if self.messages.is_some() {
            if self.requests.is_empty() {
                match self.messages.as_mut()?.message().await {
                    Ok(Some(message)) => {
                        self.requests.push(packed(&message, "BidiStreamRequest"));
                    }
                    Ok(None) => self.messages = None,
                    Err(status) => {
                        self.messages = None;
                        return Some(Err(status));
                    }
                }
            }
            if self.messages.is_some() && self.replies.data.is_empty() {
                // Nothing left to answer with: the error, if any, ends the call.
                self.messages = None;
            }
            if self.messages.is_some() {
                return self.reply().await;
            }
        }
        if !self.echoed {
            // Nothing sent yet: the whole request info goes with the first of the replies
            // left, or with the error if there is none.
            self.echoed = true;
            self.replies.info = Some(self.seen.info(std::mem::take(&mut self.requests)));
        }
        self.replies.next().await
    }

    /// The next reply, echoing the requests read since the last one.
    async fn reply(&mut self) -> Option<Result<pb::ConformancePayload, Status>> {
        let requests = std::mem::take(&mut self.requests);
        self.replies.info = Some(if !self.echoed {
            self.echoed = true;
            self.seen.info(requests)
        } else {
            RequestInfo {
                requests,
                ..RequestInfo::default()
            }
        });
        let reply = self.replies.next().await;
        // Later replies carry no request info unless `reply` sets one.
        self.replies.info = None;
        reply
    }
}

/// `error` as a status, with `info` (if any) after its own details, in the
/// `grpc-status-details-bin` form (`google.rpc.Status`).
fn status_of(error: pb::Error, info: Option<&RequestInfo>) -> Status {
    let mut details = error.details;
    if let Some(info) = info {
        details.push(Any {
            type_url: type_url("ConformancePayload.RequestInfo"),
            value: info.encode_to_vec(),
        });
    }
    let message = error.message.unwrap_or_default();
    let encoded = RpcStatus {
        code: error.code,
        message: message.clone(),
        details,
    }
    .encode_to_vec();
    Status::with_details(Code::from(error.code), message, Bytes::from(encoded))
}

/// `google.rpc.Status`: what gRPC's `grpc-status-details-bin` carries, and fastgrpc turns into
/// Connect's error details.
#[derive(Clone, PartialEq, Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<Any>,
}

fn type_url(message: &str) -> String {
    format!("type.googleapis.com/connectrpc.conformance.v1.{message}")
}

fn packed(message: &impl Message, name: &str) -> Any {
    Any {
        type_url: type_url(name),
        value: message.encode_to_vec(),
    }
}

/// The request's metadata as the suite's headers: each name once, with its values in order.
fn headers_of(metadata: &MetadataMap) -> Vec<pb::Header> {
    let headers = metadata.clone().into_headers();
    headers
        .keys()
        .map(|name| pb::Header {
            name: name.as_str().to_owned(),
            value: headers
                .get_all(name)
                .iter()
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
                .collect(),
        })
        .collect()
}

/// The suite's headers as metadata, values as given (a `-bin` header's value is already
/// base64).
fn metadata_of(headers: &[pb::Header]) -> MetadataMap {
    let mut map = http::HeaderMap::new();
    for header in headers {
        let Ok(name) = http::HeaderName::from_bytes(header.name.as_bytes()) else {
            continue;
        };
        for value in &header.value {
            if let Ok(value) = http::HeaderValue::from_str(value) {
                map.append(name.clone(), value);
            }
        }
    }
    MetadataMap::from_headers(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition(data: &[&[u8]], error: Option<pb::Error>) -> pb::StreamResponseDefinition {
        pb::StreamResponseDefinition {
            response_data: data.iter().map(|data| data.to_vec()).collect(),
            error,
            ..Default::default()
        }
    }

    fn info(headers: &[(&str, &str)]) -> RequestInfo {
        RequestInfo {
            request_headers: headers
                .iter()
                .map(|(name, value)| pb::Header {
                    name: (*name).into(),
                    value: vec![(*value).into()],
                })
                .collect(),
            ..RequestInfo::default()
        }
    }

    #[tokio::test]
    async fn a_stream_echoes_the_request_in_its_first_reply_only() {
        let mut replies = Replies::new(&definition(&[b"a", b"b"], None), info(&[("x", "1")]));
        let first = replies.next().await.unwrap().unwrap();
        assert_eq!(first.data, b"a");
        assert_eq!(first.request_info, Some(info(&[("x", "1")])));
        let second = replies.next().await.unwrap().unwrap();
        assert_eq!(
            (second.data.as_slice(), second.request_info),
            (&b"b"[..], None)
        );
        assert!(replies.next().await.is_none());
    }

    #[tokio::test]
    async fn an_error_with_no_reply_before_it_carries_the_request_info() {
        let error = pb::Error {
            code: pb::Code::ResourceExhausted as i32,
            message: Some("no".into()),
            details: Vec::new(),
        };
        let mut replies = Replies::new(&definition(&[], Some(error)), info(&[("x", "1")]));
        let status = replies.next().await.unwrap().unwrap_err();
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(status.message(), "no");
        let details = RpcStatus::decode(status.details()).unwrap();
        assert_eq!(details.details.len(), 1);
        assert_eq!(
            RequestInfo::decode(&details.details[0].value[..]).unwrap(),
            info(&[("x", "1")])
        );
        assert!(replies.next().await.is_none());
    }

    #[test]
    fn headers_keep_every_value_in_order() {
        let headers = [pb::Header {
            name: "x-multi".into(),
            value: vec!["1".into(), "2".into()],
        }];
        let metadata = metadata_of(&headers);
        assert_eq!(headers_of(&metadata), headers);
    }
}
