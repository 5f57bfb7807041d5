//! A call as every transport runs it: started by [`start_call`] (what handlers may read of the
//! connection given to it, then the dispatcher, which holds it to its deadline and answers a
//! panic), and, on HTTP/2, finished in a task by [`finish_call`] if it did not answer at once
//! (HTTP/1.1 polls a pending call in the future hyper holds for the request).

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::ServerState;
use super::connect_info::ConnectInfo;
use crate::body::{RequestBody, ResponseBody};
use crate::call::Call;
use crate::handler::{ResponseFuture, panic_status};
use crate::service::FastService;

/// How starting a call went: it answered at once (the response, and its call, whose deadline
/// may still hold for the reply body), or it waits, and its transport finishes it.
pub(crate) type Started =
    crate::http2::Started<(http::Response<ResponseBody>, Option<Call>), ResponseFuture>;

/// Starts `call`: gives it what handlers may read of the connection and dispatches it.
pub(crate) fn start_call(
    shared: &ServerState,
    connect_info: Option<&ConnectInfo>,
    mut request: http::Request<RequestBody>,
    call: &mut Call,
) -> Started {
    if let Some(info) = connect_info {
        give_connect_info(request.extensions_mut(), info);
    }
    match shared.service.serve(request, call).into_ready() {
        Ok(Ok(response)) => Started::Ready((response, Some(*call))),
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

/// Runs a call that did not answer at once to its response: `None` when `reset` (the client
/// resetting the stream) completes first. The call's deadline is the dispatcher's.
pub(crate) async fn finish_call<R: std::fmt::Debug>(
    mut answer: ResponseFuture,
    call: Call,
    reset: impl Future<Output = R>,
) -> Option<(http::Response<ResponseBody>, Option<Call>)> {
    let answering = std::future::poll_fn(|cx| poll_contained(&mut answer, &call, cx));
    // The call first: a handler reading its requests sees a reset as CANCELLED.
    tokio::select! {
        biased;
        response = answering => Some((response, Some(call))),
        reason = reset => {
            tracing::debug!(?reason, "client reset the stream; dropping its call");
            None
        }
    }
}

/// Polls a call's pending `answer`; a panic answers `INTERNAL` in the call's protocol: the last
/// line for code of ours (handlers' panics are contained where they run).
pub(crate) fn poll_contained(
    answer: &mut ResponseFuture,
    call: &Call,
    cx: &mut Context<'_>,
) -> Poll<http::Response<ResponseBody>> {
    match panic::catch_unwind(AssertUnwindSafe(|| Pin::new(answer).poll(cx))) {
        Ok(Poll::Ready(Ok(response))) => Poll::Ready(response),
        Ok(Poll::Ready(Err(never))) => match never {},
        Ok(Poll::Pending) => Poll::Pending,
        Err(panic) => Poll::Ready(call.failure(&panic_status(panic))),
    }
}
