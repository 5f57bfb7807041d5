//! What a connection has to write, in order: small frames copied into one buffer, and large
//! DATA payloads kept as the `Bytes` they came in, so that a reply stream's batches and a large
//! reply's frames reach the socket without being copied again. Everything goes out in one
//! vectored write (or a few, past [`WRITE_SLICES`] pieces).

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::AsyncWrite;

use super::frame;

/// A DATA payload at least this long is written from its own buffer, not copied.
const ZERO_COPY_FROM: usize = 4 * 1024;

/// The most buffers one vectored write takes.
const WRITE_SLICES: usize = 64;

#[derive(Default)]
pub(crate) struct Output {
    /// What comes after `queued`: frames written by `frame::put_*`.
    pub(crate) buf: BytesMut,
    /// What comes first, in order: runs of `buf` frozen, and large payloads.
    queued: VecDeque<Bytes>,
    queued_len: usize,
}

impl Output {
    pub(crate) fn new(buf: BytesMut) -> Output {
        Output {
            buf,
            ..Output::default()
        }
    }

    /// Bytes not written yet.
    pub(crate) fn len(&self) -> usize {
        self.queued_len + self.buf.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A DATA frame: a large payload goes out from its own buffer, a small one is copied.
    pub(crate) fn put_data(&mut self, stream: u32, data: Bytes, end_stream: bool) {
        if data.len() < ZERO_COPY_FROM {
            return frame::put_data(&mut self.buf, stream, &data, end_stream);
        }
        frame::put_data_head(&mut self.buf, stream, data.len(), end_stream);
        let frames = self.buf.split().freeze();
        self.queued_len += frames.len() + data.len();
        self.queued.push_back(frames);
        self.queued.push_back(data);
    }

    /// Writes until everything is written (`Ok(())`) or the socket takes no more for now.
    pub(crate) fn poll_write<IO: AsyncWrite + Unpin>(
        &mut self,
        io: &mut IO,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        while !self.is_empty() {
            let written = if self.queued.is_empty() {
                Pin::new(&mut *io).poll_write(cx, &self.buf)
            } else {
                // In order: the queued buffers, then `buf` if all of them fit.
                let mut slices = [io::IoSlice::new(&[]); WRITE_SLICES];
                let mut count = 0;
                for chunk in self.queued.iter().take(WRITE_SLICES) {
                    slices[count] = io::IoSlice::new(chunk);
                    count += 1;
                }
                if count < WRITE_SLICES {
                    slices[count] = io::IoSlice::new(&self.buf);
                    count += 1;
                }
                Pin::new(&mut *io).poll_write_vectored(cx, &slices[..count])
            };
            match std::task::ready!(written) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(written) => self.advance(written),
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Drops the first `written` bytes.
    fn advance(&mut self, mut written: usize) {
        while written > 0 {
            let Some(front) = self.queued.front_mut() else {
                let _ = self.buf.split_to(written);
                return;
            };
            let taken = written.min(front.len());
            front.advance(taken);
            self.queued_len -= taken;
            written -= taken;
            if front.is_empty() {
                self.queued.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most `limit` bytes a write, vectored or not, and keeps them.
    struct Slow {
        limit: usize,
        got: Vec<u8>,
    }

    impl AsyncWrite for Slow {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = buf.len().min(self.limit);
            self.got.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let mut left = self.limit;
            for buf in bufs {
                let n = buf.len().min(left);
                self.got.extend_from_slice(&buf[..n]);
                left -= n;
            }
            Poll::Ready(Ok(self.limit - left))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn frames_and_payloads_go_out_in_order_however_the_socket_takes_them() {
        let large = Bytes::from(vec![9u8; ZERO_COPY_FROM]);
        let mut expected = BytesMut::new();
        frame::put_data(&mut expected, 1, b"small", false);
        frame::put_data(&mut expected, 1, &large, false);
        frame::put_data(&mut expected, 3, &large, true);
        frame::put_ping(&mut expected, true, *b"12345678");
        for limit in [1, 7, 100, 5_000, 1 << 20] {
            let mut out = Output::new(BytesMut::new());
            out.put_data(1, Bytes::from_static(b"small"), false);
            out.put_data(1, large.clone(), false);
            out.put_data(3, large.clone(), true);
            frame::put_ping(&mut out.buf, true, *b"12345678");
            assert_eq!(out.len(), expected.len());
            let mut socket = Slow {
                limit,
                got: Vec::new(),
            };
            let mut cx = Context::from_waker(std::task::Waker::noop());
            assert!(out.poll_write(&mut socket, &mut cx).is_ready());
            assert_eq!(socket.got, expected, "{limit} bytes a write");
            assert!(out.is_empty());
        }
    }
}
