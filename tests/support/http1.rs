//! A raw HTTP/1.1 client: requests written byte for byte, answers parsed as they come (sized
//! or chunked), for what a browser, curl or a broken client sends.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An HTTP/1.1 request's bytes: `method` to `path`, with `content_type`, a `content-length`,
/// the `extra` headers and `body`.
pub fn request(
    method: &str,
    path: &str,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: test\r\n\
         content-type: {content_type}\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// One parsed HTTP/1.1 response.
#[derive(Debug)]
pub struct Http1Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Http1Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Parses the responses in `raw`, one after another (chunked or sized bodies).
pub fn responses(mut raw: &[u8]) -> Vec<Http1Response> {
    let mut parsed = Vec::new();
    while !raw.is_empty() {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a whole head")
            + 4;
        let head = std::str::from_utf8(&raw[..end]).unwrap();
        raw = &raw[end..];
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .filter(|line| !line.is_empty())
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.to_ascii_lowercase(), value.trim().to_owned())
            })
            .collect();
        let mut response = Http1Response {
            status,
            headers,
            body: Vec::new(),
        };
        if response.header("transfer-encoding") == Some("chunked") {
            loop {
                let line_end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
                let size =
                    usize::from_str_radix(std::str::from_utf8(&raw[..line_end]).unwrap(), 16)
                        .unwrap();
                raw = &raw[line_end + 2..];
                if size == 0 {
                    raw = &raw[2..];
                    break;
                }
                response.body.extend_from_slice(&raw[..size]);
                raw = &raw[size + 2..];
            }
        } else {
            let len: usize = response
                .header("content-length")
                .map_or(0, |v| v.parse().unwrap());
            response.body = raw[..len].to_vec();
            raw = &raw[len..];
        }
        parsed.push(response);
    }
    parsed
}

/// Sends `bytes` on a new connection to `addr` and reads until the server closes it
/// (bounded).
pub async fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(bytes).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut raw))
        .await
        .expect("the server answers and closes within 10 s")
        .unwrap();
    raw
}

/// Reads one sized response (one with a `content-length`) from `tcp` (a connection, or its read
/// half), on a connection where no other response follows it unasked; `None` if the server
/// closes (or resets) the connection first. Bounded: 10 s.
pub async fn read_sized(tcp: &mut (impl AsyncRead + Unpin)) -> Option<Http1Response> {
    let mut raw = Vec::new();
    let mut chunk = [0; 4096];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .expect("a sized response")
                .trim()
                .parse()
                .unwrap();
            if raw.len() >= end + 4 + len {
                assert_eq!(raw.len(), end + 4 + len, "bytes after the response");
                return responses(&raw).pop();
            }
        }
        let read = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut chunk))
            .await
            .expect("a response or the close within 10 s");
        match read {
            Ok(0) | Err(_) if raw.is_empty() => return None,
            Ok(0) | Err(_) => panic!("closed inside a response: {raw:?}"),
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
        }
    }
}
