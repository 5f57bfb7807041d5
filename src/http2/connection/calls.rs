//! Starting calls: the requests whose heads arrived, in order, each answered in the poll that
//! read it if its call is ready (no box, spawn or waker), the rest finished in a task that hands
//! the response back through the [`Outbox`](crate::http2::shared::Outbox).
//!
//! Invariant: a call starts once, from its stream's head, which it takes; a stream the client
//! reset before its call started starts nothing.

use std::sync::Arc;
use std::task::Context;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use super::Connection;
use super::streams::{Received, Recv};
use crate::body::RequestBody;
use crate::deadline::Deadline;
use crate::handler::{ResponseFuture, clock};
use crate::http2::shared::{Finished, Outbox, StreamShared};
use crate::transport::{Started, finish_call, start_call};

/// Completes a call that did not answer at once, in its task, and hands its response to the
/// connection; drops it when the client resets the stream first.
pub(super) async fn finish_pending(
    response: ResponseFuture,
    stream: u32,
    shared: Arc<StreamShared>,
    outbox: Arc<Outbox>,
    deadline: Option<Deadline>,
) {
    let reset = std::future::poll_fn(|cx| shared.poll_reset(cx));
    if let Some((response, deadline)) = finish_call(response, deadline, reset).await {
        outbox.finish(Finished {
            stream,
            response,
            deadline,
        });
    }
}

impl<IO> Connection<IO>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    /// Takes what the calls' tasks and bodies sent: finished responses, woken bodies, and
    /// request data read (window to give back).
    pub(super) fn take_outbox(&mut self, _cx: &mut Context<'_>) {
        let mut taken = std::mem::take(&mut self.taken);
        self.outbox.take(&mut taken);
        for (id, bytes) in taken.consumed.drain(..) {
            self.release(id, bytes);
        }
        self.ready.append(&mut taken.ready);
        for finished in taken.finished.drain(..) {
            let Finished {
                stream,
                response,
                deadline,
            } = finished;
            self.respond(stream, response, deadline);
        }
        self.taken = taken;
    }

    /// Starts the queued calls, inline while the budget lasts; `true` if it ran out (the rest
    /// wait for the next poll, which the caller asks for at once).
    pub(super) fn start_calls(
        &mut self,
        cx: &mut Context<'_>,
        serving_since: &mut Option<std::time::Instant>,
        budget: Duration,
    ) -> bool {
        if self.queue.is_empty() {
            return false;
        }
        if self.shared.connection.max_connection_idle.is_some() {
            self.activity.touch();
        }
        let mut now = std::time::Instant::now();
        let spent_at = *serving_since.get_or_insert_with(|| now + budget);
        while let Some(id) = self.queue.pop_front() {
            clock::open_call(now);
            self.start_call(id, cx);
            now = clock::close_call();
            if now >= spent_at {
                return true;
            }
        }
        false
    }

    pub(super) fn start_call(&mut self, id: u32, _cx: &mut Context<'_>) {
        let Some(stream) = self.streams.get_mut(&id) else {
            // Reset by the client before its call started.
            return;
        };
        let Some(parts) = stream.head.take() else {
            return;
        };
        let chunks = match std::mem::replace(&mut stream.recv, Recv::Dropped) {
            Recv::Before(chunks) => chunks,
            other => {
                stream.recv = other;
                Received::default()
            }
        };
        let received = chunks.len();
        let body = if stream.recv_open {
            let shared = StreamShared::new(id, Arc::clone(&self.outbox));
            for chunk in chunks.into_chunks() {
                shared.push(chunk);
            }
            stream.recv = Recv::Shared(Arc::clone(&shared));
            stream.shared = Some(Arc::clone(&shared));
            RequestBody::engine(shared)
        } else {
            RequestBody::complete(chunks.join())
        };
        let deadline = stream.deadline;
        if !stream.recv_open {
            // The handler owns the whole body now: its window goes back at once.
            self.release_connection(received);
        }
        let request = http::Request::from_parts(parts, body);
        match start_call(&self.shared, self.connect_info.as_ref(), request, deadline) {
            Started::Ready(response, deadline) => self.respond(id, response, deadline),
            Started::Pending(pending) => {
                let stream = self.streams.get_mut(&id).expect("present above");
                let shared = Arc::clone(
                    stream
                        .shared
                        .get_or_insert_with(|| StreamShared::new(id, Arc::clone(&self.outbox))),
                );
                let outbox = Arc::clone(&self.outbox);
                self.activity
                    .spawn(finish_pending(pending, id, shared, outbox, deadline));
            }
        }
    }
}
