//! The unary call chain: `unmarshal -> impl -> marshal -> recover` on [`FastFuture`].
//!
//! When the request body is complete and the user's method answers without waiting, each step
//! runs at once on the caller's thread and the finished response comes back ready: no box, no
//! task, no waker. The first step that is really pending turns the rest of the chain into one
//! ordinary future, with the same result.

use std::future::Future;

use prost::Message;
use tonic::Status;

use super::{HandlerConfig, ResponseFuture, tonic_request};
use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::codec::{self, FRAME_HEADER_LEN};
use crate::metadata::Trailers;
use crate::status;

/// Serves one unary call: decodes the request, calls `method`, encodes its reply.
///
/// `method` is the user's implementation, already bound to the service instance; it receives a
/// [`tonic::Request`] carrying the request metadata and extensions.
pub fn unary<Req, Resp, M, F>(
    request: http::Request<RequestBody>,
    config: &HandlerConfig,
    method: M,
) -> ResponseFuture
where
    Req: Message + Default + Send + 'static,
    Resp: Message + Send + 'static,
    M: FnOnce(tonic::Request<Req>) -> F + Send + 'static,
    F: Future<Output = Result<tonic::Response<Resp>, Status>> + Send + 'static,
{
    let (parts, body) = request.into_parts();
    unmarshal::<Req>(body, config.max_receive_message_size)
        .and_then(move |message| FastFuture::from_future(method(tonic_request(parts, message))))
        .and_then(|response| FastFuture::ready(marshal(response)))
        .recover(|status| status::response(&status))
}

/// Decodes the request at once when its body is complete; waits for the rest otherwise.
pub(super) fn unmarshal<M: Message + Default + Send + 'static>(
    body: RequestBody,
    max_message_size: usize,
) -> FastFuture<M, Status> {
    match body.into_complete() {
        Ok(data) => FastFuture::ready(codec::decode_unary(data, max_message_size)),
        Err(body) => FastFuture::boxed(async move {
            let data = body.collect(FRAME_HEADER_LEN + max_message_size).await?;
            codec::decode_unary(data, max_message_size)
        }),
    }
}

/// Encodes a reply into the complete HTTP response: headers, one message, trailers.
pub(super) fn marshal<M: Message>(
    response: tonic::Response<M>,
) -> Result<http::Response<ResponseBody>, Status> {
    let (metadata, message, mut extensions) = response.into_parts();
    let frame = codec::encode(&message)?;
    let mut trailers = status::sanitized(Trailers::take(&mut extensions));
    trailers.extend(status::ok_trailers());
    let mut response = http::Response::new(ResponseBody::unary(frame, trailers));
    *response.headers_mut() = status::ok_headers(metadata.into_headers());
    *response.extensions_mut() = extensions;
    Ok(response)
}
