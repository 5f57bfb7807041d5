//! What a connection and the tasks of its calls hand each other, and nothing more: the
//! connection's task owns every stream, and these are the only ways in and out.
//!
//! - [`Outbox`]: replies of calls that finished in tasks of their own, the streams whose
//!   reply bodies have something to send (woken by the bodies' wakers), and the flow-control
//!   credit that request bodies gave back as their handlers read them. One per connection;
//!   the connection drains it on every poll.
//! - [`Inbox`]: one per stream that outlives the poll it started in (a request body
//!   still arriving, or a call finishing in a task): the data received and not yet read, how
//!   the request ended, and whether the client reset the stream.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

use bytes::Bytes;
use futures_util::task::AtomicWaker;
use http::HeaderMap;

use super::frame::Reason;

/// A reply a call's task hands back to the connection.
pub(crate) struct Finished<R> {
    pub(crate) stream: u32,
    pub(crate) reply: R,
}

/// What a stream's reader and its reply body's waker tell the connection, whatever its replies
/// are.
pub(crate) trait Mail: Send + Sync {
    /// The stream's reply body has something to send.
    fn ready(&self, stream: u32);
    /// The stream's reader took `bytes` of its request body: window to give back.
    fn consumed(&self, stream: u32, bytes: usize);
}

struct Mailbox<R> {
    finished: Vec<Finished<R>>,
    /// Streams whose reply body woke up.
    ready: Vec<u32>,
    /// Bytes handlers read of request bodies, by stream: window to give back.
    consumed: Vec<(u32, usize)>,
    /// The connection task is gone: nothing it is sent will be sent.
    closed: bool,
}

impl<R> Default for Mailbox<R> {
    fn default() -> Self {
        Mailbox {
            finished: Vec::new(),
            ready: Vec::new(),
            consumed: Vec::new(),
            closed: false,
        }
    }
}

/// See the module docs.
pub(crate) struct Outbox<R> {
    mailbox: Mutex<Mailbox<R>>,
    /// Something was put in the mailbox since the connection last took from it: the
    /// connection looks at this before it takes the lock, so a poll with no mail locks nothing.
    mail: std::sync::atomic::AtomicBool,
    waker: AtomicWaker,
}

impl<R> Default for Outbox<R> {
    fn default() -> Self {
        Outbox {
            mailbox: Mutex::default(),
            mail: std::sync::atomic::AtomicBool::new(false),
            waker: AtomicWaker::new(),
        }
    }
}

/// What the connection takes out of its outbox in one go.
pub(crate) struct Taken<R> {
    pub(crate) finished: Vec<Finished<R>>,
    pub(crate) ready: Vec<u32>,
    pub(crate) consumed: Vec<(u32, usize)>,
}

impl<R> Default for Taken<R> {
    fn default() -> Self {
        Taken {
            finished: Vec::new(),
            ready: Vec::new(),
            consumed: Vec::new(),
        }
    }
}

impl<R> Outbox<R> {
    fn lock(&self) -> MutexGuard<'_, Mailbox<R>> {
        self.mailbox
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers the connection's waker; call before taking, so nothing is missed.
    pub(crate) fn register(&self, waker: &Waker) {
        self.waker.register(waker);
    }

    /// Swaps the mailbox's contents with `into`'s (cleared) buffers: no allocation once they
    /// have grown.
    pub(crate) fn take(&self, into: &mut Taken<R>) {
        into.finished.clear();
        into.ready.clear();
        into.consumed.clear();
        if !self.mail.swap(false, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let mut mailbox = self.lock();
        std::mem::swap(&mut mailbox.finished, &mut into.finished);
        std::mem::swap(&mut mailbox.ready, &mut into.ready);
        std::mem::swap(&mut mailbox.consumed, &mut into.consumed);
    }

    /// Marks the connection gone; what is sent after this is dropped.
    pub(crate) fn close(&self) {
        let mut mailbox = self.lock();
        mailbox.closed = true;
        mailbox.finished.clear();
    }

    pub(crate) fn finish(&self, finished: Finished<R>) {
        {
            let mut mailbox = self.lock();
            if mailbox.closed {
                return;
            }
            mailbox.finished.push(finished);
        }
        self.mail.store(true, std::sync::atomic::Ordering::Release);
        self.waker.wake();
    }
}

impl<R: Send> Mail for Outbox<R> {
    fn ready(&self, stream: u32) {
        self.lock().ready.push(stream);
        self.mail.store(true, std::sync::atomic::Ordering::Release);
        self.waker.wake();
    }

    fn consumed(&self, stream: u32, bytes: usize) {
        self.lock().consumed.push((stream, bytes));
        self.mail.store(true, std::sync::atomic::Ordering::Release);
        self.waker.wake();
    }
}

/// A waker for one stream's reply body: it tells the connection which stream to poll.
pub(crate) struct StreamWaker {
    pub(crate) stream: u32,
    pub(crate) outbox: Arc<dyn Mail>,
}

impl Wake for StreamWaker {
    fn wake(self: Arc<Self>) {
        self.outbox.ready(self.stream);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.outbox.ready(self.stream);
    }
}

/// How a request body ended.
#[derive(Debug)]
pub(crate) enum RecvEnd {
    /// END_STREAM, with trailers if the client sent any.
    Done(Option<HeaderMap>),
    /// The client reset the stream, or the connection is gone.
    Reset(Reason),
}

#[derive(Default)]
struct RecvState {
    chunks: VecDeque<Bytes>,
    end: Option<RecvEnd>,
    /// The request body's reader.
    body_waker: Option<Waker>,
    /// The call's task, waiting to learn of a reset.
    call_waker: Option<Waker>,
    reset: Option<Reason>,
}

/// See the module docs.
pub(crate) struct Inbox {
    stream: u32,
    outbox: Arc<dyn Mail>,
    state: Mutex<RecvState>,
}

impl Inbox {
    pub(crate) fn new(stream: u32, outbox: Arc<dyn Mail>) -> Arc<Inbox> {
        Arc::new(Inbox {
            stream,
            outbox,
            state: Mutex::new(RecvState::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, RecvState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Data of the request body arrived (from the connection).
    pub(crate) fn push(&self, data: Bytes) {
        let waker = {
            let mut state = self.lock();
            state.chunks.push_back(data);
            state.body_waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The request body ended, or the stream was reset (from the connection).
    pub(crate) fn end(&self, end: RecvEnd) {
        let wakers = {
            let mut state = self.lock();
            if let RecvEnd::Reset(reason) = end {
                state.reset = Some(reason);
            }
            if state.end.is_none() {
                state.end = Some(end);
            }
            (state.body_waker.take(), state.call_waker.take())
        };
        for waker in [wakers.0, wakers.1].into_iter().flatten() {
            waker.wake();
        }
    }

    /// Ready with the reason once the client has reset the stream.
    pub(crate) fn poll_reset(&self, cx: &mut Context<'_>) -> Poll<Reason> {
        let mut state = self.lock();
        match state.reset {
            Some(reason) => Poll::Ready(reason),
            None => {
                state.call_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// The next piece of the request body: data, then how it ended. Data taken is credited
    /// back to the client's flow-control windows.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Result<Bytes, RecvEnd>> {
        let mut state = self.lock();
        if let Some(data) = state.chunks.pop_front() {
            drop(state);
            self.outbox.consumed(self.stream, data.len());
            return Poll::Ready(Ok(data));
        }
        match state.end.take() {
            Some(end) => {
                // Later polls see the end again, without trailers.
                state.end = Some(match &end {
                    RecvEnd::Done(_) => RecvEnd::Done(None),
                    RecvEnd::Reset(reason) => RecvEnd::Reset(*reason),
                });
                Poll::Ready(Err(end))
            }
            None => {
                state.body_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        // Data never read still counts against the client's window: give it back.
        let unread: usize = self.lock().chunks.iter().map(Bytes::len).sum();
        if unread > 0 {
            self.outbox.consumed(self.stream, unread);
        }
    }
}
