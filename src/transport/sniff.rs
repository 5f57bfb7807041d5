//! Telling HTTP/2 from HTTP/1.1 on a new connection by its first bytes, so that one listener
//! serves both.
//!
//! An HTTP/1.1 client starts with a request line, whose method is one of HTTP's
//! ([`HTTP1_METHODS`]); an HTTP/2 client with the preface `PRI * HTTP/2.0…` (RFC 9113 §3.4
//! reserves `PRI`). Reading the bytes until they start with a method and a space, or can no
//! longer, decides: after five bytes for a `POST`. Bytes that start no HTTP/1.1 request go to
//! the HTTP/2 engine, which answers anything but its preface with GOAWAY PROTOCOL_ERROR
//! (h2spec §3.5 expects it). The bytes read are handed back first by [`Sniffed`], so the
//! chosen server sees the connection whole.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// The protocol a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Http2,
    Http1,
}

/// The request methods of HTTP/1.1 (RFC 9110 §9, and PATCH, RFC 5789), each with the space
/// that ends it. No other first bytes are an HTTP/1.1 request this server could answer.
const HTTP1_METHODS: [&[u8]; 9] = [
    b"GET ",
    b"POST ",
    b"OPTIONS ",
    b"HEAD ",
    b"PUT ",
    b"DELETE ",
    b"PATCH ",
    b"CONNECT ",
    b"TRACE ",
];

/// The longest of [`HTTP1_METHODS`]: what sniffing reads at most.
const SNIFF_LEN: usize = 8;

/// What `read` tells: `Some` once it is the start of an HTTP/1.1 request or cannot become one.
fn decide(read: &[u8]) -> Option<Protocol> {
    let mut may_become = false;
    for method in HTTP1_METHODS {
        let n = read.len().min(method.len());
        if read[..n] == method[..n] {
            if n == method.len() {
                return Some(Protocol::Http1);
            }
            may_become = true;
        }
    }
    (!may_become).then_some(Protocol::Http2)
}

/// Reads the first bytes of `io` until they tell its protocol. `None` if the peer closes the
/// connection (or it fails) before.
pub(crate) async fn sniff<IO>(mut io: IO) -> Option<(Protocol, Sniffed<IO>)>
where
    IO: AsyncRead + Unpin,
{
    let mut read = [0u8; SNIFF_LEN];
    let mut len = 0;
    let protocol = loop {
        if len > 0
            && let Some(protocol) = decide(&read[..len])
        {
            break protocol;
        }
        match io.read(&mut read[len..]).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => len += n,
        }
    };
    Some((
        protocol,
        Sniffed {
            io,
            read,
            start: 0,
            end: len,
        },
    ))
}

/// A connection whose first bytes were read to tell its protocol, handing them back first.
#[derive(Debug)]
pub(crate) struct Sniffed<IO> {
    io: IO,
    /// `read[start..end]` is still to be handed back.
    read: [u8; SNIFF_LEN],
    start: usize,
    end: usize,
}

impl<IO: AsyncRead + Unpin> AsyncRead for Sniffed<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.start < self.end {
            let n = (self.end - self.start).min(buf.remaining());
            let start = self.start;
            buf.put_slice(&self.read[start..start + n]);
            self.start += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Sniffed<IO> {
    write_through_to_io!();

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn sniffed(sent: &[u8], in_pieces_of: usize) -> (Protocol, Vec<u8>) {
        let (mut client, server) = tokio::io::duplex(64);
        let sent = sent.to_vec();
        let writer = tokio::spawn(async move {
            for piece in sent.chunks(in_pieces_of) {
                client.write_all(piece).await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        let (protocol, mut io) = sniff(server).await.expect("decided");
        writer.await.unwrap();
        let mut all = Vec::new();
        io.read_to_end(&mut all).await.unwrap();
        (protocol, all)
    }

    #[tokio::test]
    async fn the_preface_is_http2_a_request_line_http1_and_nothing_is_lost() {
        let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        let request = b"POST /svc/Method HTTP/1.1\r\nhost: x\r\n\r\n";
        let options = b"OPTIONS /svc/Method HTTP/1.1\r\n\r\n";
        for pieces in [1, 2, 3, 64] {
            assert_eq!(
                sniffed(preface, pieces).await,
                (Protocol::Http2, preface.to_vec())
            );
            assert_eq!(
                sniffed(request, pieces).await,
                (Protocol::Http1, request.to_vec())
            );
            assert_eq!(
                sniffed(options, pieces).await,
                (Protocol::Http1, options.to_vec())
            );
        }
    }

    #[tokio::test]
    async fn every_method_is_http1_and_other_bytes_are_http2() {
        for method in HTTP1_METHODS {
            let mut request = method.to_vec();
            request.extend_from_slice(b"/ HTTP/1.1\r\n\r\n");
            assert_eq!(sniffed(&request, 1).await, (Protocol::Http1, request));
        }
        // Not a request line: the HTTP/2 engine answers it (GOAWAY), as it does any bad preface.
        for garbage in [
            &b"INVALID CONNECTION PREFACE\r\n\r\n"[..],
            b"GETX",
            b"\x16\x03\x01",
        ] {
            assert_eq!(
                sniffed(garbage, 1).await,
                (Protocol::Http2, garbage.to_vec()),
                "{garbage:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_connection_closed_before_deciding_is_dropped() {
        let (client, server) = tokio::io::duplex(64);
        drop(client);
        assert!(sniff(server).await.is_none());
    }
}
