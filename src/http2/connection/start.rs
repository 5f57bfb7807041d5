//! Starting calls: the requests whose heads arrived, in order, each answered in the poll that
//! read it if its call is ready (no box, spawn or waker), the rest finished by the layer above
//! in a task that hands the reply back through the [`Outbox`](crate::http2::mail::Outbox).
//!
//! Invariant: a call starts once, from its stream's head, which it takes; a stream the client
//! reset before its call started starts nothing.

use std::sync::Arc;
use std::task::Context;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use super::Connection;
use super::streams::{Received, Recv};
use crate::http2::calls::{Calls, Later, RequestData, Started};
use crate::http2::mail::{Finished, Inbox, Mail};

impl<IO, C> Connection<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Calls,
{
    /// Takes what the calls' tasks and bodies sent: finished replies, woken bodies, and
    /// request data read (window to give back).
    pub(super) fn take_outbox(&mut self, _cx: &mut Context<'_>) {
        let mut taken = std::mem::take(&mut self.taken);
        self.outbox.take(&mut taken);
        for (id, bytes) in taken.consumed.drain(..) {
            self.release(id, bytes);
        }
        self.ready.append(&mut taken.ready);
        for Finished { stream, reply } in taken.finished.drain(..) {
            let (response, call) = reply;
            self.respond(stream, response, call);
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
        self.calls.calls_arrived();
        let mut now = std::time::Instant::now();
        let spent_at = *serving_since.get_or_insert_with(|| now + budget);
        while let Some(id) = self.queue.pop_front() {
            now = self.start_call(id, now, cx);
            if now >= spent_at {
                return true;
            }
        }
        false
    }

    /// Starts the call of stream `id` at `now`; the time after it ran.
    pub(super) fn start_call(
        &mut self,
        id: u32,
        now: std::time::Instant,
        _cx: &mut Context<'_>,
    ) -> std::time::Instant {
        let Some(stream) = self.streams.get_mut(&id) else {
            // Reset by the client before its call started.
            return now;
        };
        let Some((parts, call)) = stream.head.take() else {
            return now;
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
            let shared = Inbox::new(id, Arc::clone(&self.outbox) as Arc<dyn Mail>);
            for chunk in chunks.into_chunks() {
                shared.push(chunk);
            }
            stream.recv = Recv::Shared(Arc::clone(&shared));
            stream.shared = Some(Arc::clone(&shared));
            RequestData::Streaming(shared)
        } else {
            RequestData::Whole(chunks.join())
        };
        if !stream.recv_open {
            // The handler owns the whole body now: its window goes back at once.
            self.release_connection(received);
        }
        let (started, now) = self.calls.start(parts, body, call, now);
        match started {
            Started::Ready((response, call)) => self.respond(id, response, call),
            Started::Pending(pending) => {
                let stream = self.streams.get_mut(&id).expect("present above");
                let outbox = &self.outbox;
                let shared =
                    Arc::clone(stream.shared.get_or_insert_with(|| {
                        Inbox::new(id, Arc::clone(outbox) as Arc<dyn Mail>)
                    }));
                let later = Later {
                    stream: id,
                    shared,
                    outbox: Arc::clone(&self.outbox),
                };
                self.calls.finish_later(pending, later);
            }
        }
        now
    }
}
