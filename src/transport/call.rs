//! A call as every transport runs it (HTTP/2 on either engine, HTTP/1.1): started by
//! [`start_call`], and, if it did not answer at once, finished by [`finish_call`] (HTTP/1.1
//! has its own form of the latter, a nameable future for hyper, with the same rules).
//!
//! The deadline is enforced here, the same way for all of them: a call whose deadline has
//! passed before it starts is answered `DEADLINE_EXCEEDED` and never started; one that answers
//! after its deadline is answered `DEADLINE_EXCEEDED` instead; a pending one is dropped when
//! the deadline passes. A reply stream's deadline goes on with its body, which each engine
//! ends the same way.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::time::Duration;

use futures_util::FutureExt;

use super::Shared;
use super::connect_info::ConnectInfo;
use crate::body::{RequestBody, ResponseBody};
use crate::deadline::{self, Deadline};
use crate::handler::{Panic, ResponseFuture, panic_status};
use crate::protocol::Wire;
use tonic::Status;

/// How starting a call went: it answered at once (the response, and the deadline still ahead
/// of its reply body), or it waits, and its transport finishes it (see [`finish_call`]).
pub(crate) type Started =
    crate::http2::Started<(http::Response<ResponseBody>, Option<Deadline>), ResponseFuture>;

/// Starts a call: unless its `deadline` has passed, gives it what handlers may read of the
/// connection and calls the service (a panic answers `INTERNAL`). `wire` is the request's, if
/// the transport read it already.
pub(crate) fn start_call(
    shared: &Shared,
    connect_info: Option<&ConnectInfo>,
    mut request: http::Request<RequestBody>,
    deadline: Option<Deadline>,
    wire: Option<Wire>,
) -> Started {
    if deadline::expired(deadline) {
        // Its client has stopped waiting: the call is not started.
        return Started::Ready((crate::protocol::grpc::status(&deadline::exceeded()), None));
    }
    if let Some(info) = connect_info {
        give_connect_info(request.extensions_mut(), info);
    }
    let response =
        panic::catch_unwind(AssertUnwindSafe(|| shared.service.call_read(request, wire)))
            .unwrap_or_else(|panic| ResponseFuture::ok(panic_response(panic)));
    match response.into_ready() {
        Ok(Ok(_)) if deadline::expired(deadline) => {
            Started::Ready((crate::protocol::grpc::status(&deadline::exceeded()), None))
        }
        Ok(Ok(response)) => Started::Ready((response, deadline)),
        Ok(Err(never)) => match never {},
        Err(pending) => Started::Pending(pending),
    }
}

/// Puts what handlers may read of the connection into a request's extensions.
fn give_connect_info(extensions: &mut http::Extensions, info: &ConnectInfo) {
    #[cfg(feature = "tonic-remote-addr")]
    insert_tonic_connect_info(extensions, info);
    extensions.insert(info.clone());
}

/// What tonic's `Request::remote_addr()` and `local_addr()` read: its `TcpConnectInfo`, for a
/// connection with IP addresses (over TCP, with or without TLS).
#[cfg(feature = "tonic-remote-addr")]
fn insert_tonic_connect_info(extensions: &mut http::Extensions, info: &ConnectInfo) {
    let (local_addr, remote_addr) = (info.local_addr(), info.remote_addr());
    if local_addr.is_some() || remote_addr.is_some() {
        extensions.insert(tonic::transport::server::TcpConnectInfo {
            local_addr,
            remote_addr,
        });
    }
}

/// Runs a call that did not answer at once to its response, on either HTTP/2 engine: `None`
/// when `reset` (the client resetting the stream) completes first; `DEADLINE_EXCEEDED` when
/// the deadline passes first or had passed before the task ran (the call then never starts); a
/// panic becomes `INTERNAL`. The deadline comes back with the response while it still holds
/// for the reply body.
pub(crate) async fn finish_call<R: std::fmt::Debug>(
    response: ResponseFuture,
    deadline: Option<Deadline>,
    reset: impl Future<Output = R>,
) -> Option<(http::Response<ResponseBody>, Option<Deadline>)> {
    let response = if deadline::expired(deadline) {
        Ok(Ok(crate::protocol::grpc::status(&deadline::exceeded())))
    } else {
        let mut response = pin!(AssertUnwindSafe(response).catch_unwind());
        // The call first: a handler reading its requests sees a reset as CANCELLED.
        tokio::select! {
            biased;
            response = response.as_mut() => response,
            reason = reset => {
                tracing::debug!(?reason, "client reset the stream; dropping its call");
                return None;
            }
            () = deadline::passes(deadline) => Ok(Ok(crate::protocol::grpc::status(&deadline::exceeded()))),
        }
    };
    Some(match response {
        Ok(Ok(_)) if deadline::expired(deadline) => {
            (crate::protocol::grpc::status(&deadline::exceeded()), None)
        }
        Ok(Ok(response)) => (response, deadline),
        Ok(Err(never)) => match never {},
        Err(panic) => (panic_response(panic), None),
    })
}

/// The call's deadline, from `grpc-timeout` and the server's default, put where handlers see
/// it (the request head's extensions). A malformed `grpc-timeout` is an error.
pub(crate) fn call_deadline(
    head: &mut http::request::Parts,
    default_timeout: Option<Duration>,
) -> Result<Option<Deadline>, Status> {
    let timeout = match deadline::request_timeout(&head.headers, default_timeout) {
        Ok(None) => return Ok(None),
        // A Connect call's deadline is the router's to enforce, so that it is answered in
        // Connect's form (`service::connect`); `grpc-timeout` is not Connect's header.
        _ if crate::protocol::Wire::of_request(&head.headers).is_connect() => return Ok(None),
        timeout => timeout?,
    };
    let deadline = timeout.map(Deadline::after);
    if let Some(deadline) = deadline {
        head.extensions.insert(deadline);
    }
    Ok(deadline)
}

/// A handler panicked: the call ends with `INTERNAL`; the connection and its other calls live on.
pub(crate) fn panic_response(panic: Panic) -> http::Response<ResponseBody> {
    crate::protocol::grpc::status(&panic_status(panic))
}
