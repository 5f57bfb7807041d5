//! Flow control, both ways: request DATA against the windows we announced, window given back
//! as the data is read, and the client's SETTINGS that change what we may send.
//!
//! Invariant: no window exceeds 2^31-1; DATA beyond a window is a flow-control error, on the
//! stream or the connection; every byte received is given back to the connection window once,
//! whether a call read it or it was dropped.

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Connection;
use super::streams::{Closed, Recv};
use crate::http2::calls::Calls;
use crate::http2::frame::{self, FrameError, Reason, Settings};
use crate::http2::mail::RecvEnd;

impl<IO, C> Connection<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Calls,
{
    pub(super) fn data(
        &mut self,
        id: u32,
        end_stream: bool,
        data: Bytes,
        flow_len: usize,
    ) -> Result<(), FrameError> {
        self.check_not_idle(id, "DATA on an idle stream")?;
        if flow_len as i64 > self.recv_window {
            return Err(FrameError::Connection(
                Reason::FLOW_CONTROL_ERROR,
                "DATA beyond the connection window",
            ));
        }
        self.recv_window -= flow_len as i64;
        let Some(stream) = self.streams.get_mut(&id) else {
            // A stream already closed: the data is dropped, its window given back.
            self.release_connection(flow_len);
            return self.on_closed_stream(id, "DATA on a closed stream");
        };
        if !stream.recv_open {
            self.release_connection(flow_len);
            self.reset(id, Reason::STREAM_CLOSED, "DATA after END_STREAM");
            return Ok(());
        }
        if flow_len as i64 > stream.recv_window {
            self.release_connection(flow_len);
            self.reset(
                id,
                Reason::FLOW_CONTROL_ERROR,
                "DATA beyond the stream window",
            );
            return Ok(());
        }
        stream.recv_window -= flow_len as i64;
        stream.received += data.len() as u64;
        if stream.content_length.is_some_and(|length| {
            stream.received > length || (end_stream && stream.received != length)
        }) {
            self.release_connection(flow_len);
            self.reset(
                id,
                Reason::PROTOCOL_ERROR,
                "DATA disagrees with content-length",
            );
            return Ok(());
        }
        // Padding is never read: credit it back at once.
        let padding = flow_len - data.len();
        let mut release = padding;
        match &mut stream.recv {
            Recv::Before(received) => {
                if !data.is_empty() {
                    received.push(data);
                }
            }
            Recv::Shared(shared) => {
                if !data.is_empty() {
                    shared.push(data);
                }
            }
            Recv::Dropped => release += data.len(),
        }
        if end_stream {
            stream.recv_open = false;
            if let Recv::Shared(shared) = &stream.recv {
                shared.end(RecvEnd::Done(None));
            }
        }
        let done = !stream.recv_open && stream.answered();
        if release > 0 {
            self.release(id, release);
        }
        if done {
            self.streams.remove(&id);
            self.closed(id, Closed::Ended);
        }
        Ok(())
    }

    /// Gives `bytes` of window back on `id` and the connection, sending WINDOW_UPDATEs once
    /// half a window has come back (coalesced: a few per window, not one per frame). A stream
    /// whose reply was sent gets no more window: at that point it is told to stop instead.
    pub(super) fn release(&mut self, id: u32, bytes: usize) {
        let half_stream = self.config.initial_stream_window_size / 2;
        let mut unwanted = false;
        if let Some(stream) = self.streams.get_mut(&id)
            && stream.recv_open
        {
            stream.recv_unreleased += bytes as u32;
            if stream.recv_unreleased >= half_stream.max(1) {
                if stream.answered() {
                    unwanted = true;
                } else {
                    frame::put_window_update(&mut self.out.buf, id, stream.recv_unreleased);
                    stream.recv_window += stream.recv_unreleased as i64;
                    stream.recv_unreleased = 0;
                }
            }
        }
        self.release_connection(bytes);
        if unwanted {
            self.stop_sending(id);
        }
    }

    pub(super) fn release_connection(&mut self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.recv_unreleased += bytes as u32;
        let half = self.config.initial_connection_window_size.max(65_535) / 2;
        if self.recv_unreleased >= half {
            frame::put_window_update(&mut self.out.buf, 0, self.recv_unreleased);
            self.recv_window += self.recv_unreleased as i64;
            self.recv_unreleased = 0;
        }
    }

    pub(super) fn apply_settings(&mut self, settings: Settings) -> Result<(), FrameError> {
        if let Some(size) = settings.header_table_size {
            self.encoder.set_peer_table_size(size as usize);
        }
        if let Some(size) = settings.max_frame_size {
            self.peer_max_frame_size = size as usize;
        }
        if let Some(window) = settings.initial_window_size {
            let delta = window as i64 - self.peer_initial_window;
            self.peer_initial_window = window as i64;
            for stream in self.streams.values_mut() {
                stream.send_window += delta;
                if stream.send_window > frame::MAX_WINDOW as i64 {
                    return Err(FrameError::Connection(
                        Reason::FLOW_CONTROL_ERROR,
                        "a stream window above 2^31-1",
                    ));
                }
            }
            if delta > 0 {
                self.flush_all_pending();
                self.ready.extend(self.streams.keys());
            }
        }
        Ok(())
    }
}
