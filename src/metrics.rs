//! gRPC's standard server metrics (gRFC A66) through the OpenTelemetry API: the `opentelemetry`
//! feature, turned on for a server by [`Builder::meter_provider`](crate::Builder::meter_provider).
//!
//! The router meters each call where it is a gRPC call (after gRPC-Web is translated, before
//! its answer is translated back) and knows which method it is for. What A66 asks per call is
//! resolved once per method, when the service is added: the method's label, and instruments
//! bound to it (OpenTelemetry's bound instruments skip the attribute lookup that otherwise
//! costs each measurement ~100 ns; `docs/BENCHMARKS.md`). The status-dependent ones are bound
//! on a status's first use, since most methods only ever see a few statuses.
//!
//! A call is recorded once, when it ends, with the status its client got (`observe` decides
//! when and which).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{
    BoundCounter, BoundHistogram, Counter, Histogram, Meter, MeterProvider,
};
use tonic::Code;

/// A66's bucket boundaries for latencies, in seconds.
const LATENCY_BUCKETS: [f64; 41] = [
    0.0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005,
    0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16,
    0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0,
];

/// A66's bucket boundaries for sizes, in bytes.
const SIZE_BUCKETS: [f64; 14] = [
    0.0,
    1024.0,
    2048.0,
    4096.0,
    16384.0,
    65536.0,
    262144.0,
    1048576.0,
    4194304.0,
    16777216.0,
    67108864.0,
    268435456.0,
    1073741824.0,
    4294967296.0,
];

/// The label of every method the server has not registered: a client cannot grow the set of
/// labels by calling made-up methods.
const OTHER: &str = "other";

/// The names A66 gives status codes in `grpc.status`, by code.
const STATUS_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The four server instruments of A66, unbound.
#[derive(Clone)]
pub(crate) struct Instruments {
    started: Counter<u64>,
    duration: Histogram<f64>,
    sent: Histogram<u64>,
    received: Histogram<u64>,
}

impl Instruments {
    /// The instruments, from `provider`'s meter for fastgrpc.
    pub(crate) fn new(provider: &dyn MeterProvider) -> Instruments {
        let scope = opentelemetry::InstrumentationScope::builder("fastgrpc")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Self::from_meter(&provider.meter_with_scope(scope))
    }

    fn from_meter(meter: &Meter) -> Instruments {
        let sizes = |name: &'static str, description: &'static str| {
            meter
                .u64_histogram(name)
                .with_unit("By")
                .with_description(description)
                .with_boundaries(SIZE_BUCKETS.to_vec())
                .build()
        };
        Instruments {
            started: meter
                .u64_counter("grpc.server.call.started")
                .with_unit("{call}")
                .with_description("Number of calls started, whether or not they have ended.")
                .build(),
            duration: meter
                .f64_histogram("grpc.server.call.duration")
                .with_unit("s")
                .with_description(
                    "Time from the arrival of a call's headers to the end of its reply.",
                )
                .with_boundaries(LATENCY_BUCKETS.to_vec())
                .build(),
            sent: sizes(
                "grpc.server.call.sent_total_compressed_message_size",
                "Bytes of reply messages sent per call, compressed, without gRPC or HTTP/2 framing.",
            ),
            received: sizes(
                "grpc.server.call.rcvd_total_compressed_message_size",
                "Bytes of request messages received per call, compressed, without gRPC or HTTP/2 \
                 framing.",
            ),
        }
    }

    /// The metrics of the method `name` (`package.Service/Method`), or of every unregistered
    /// one (`other`).
    pub(crate) fn method(&self, name: Option<String>) -> Arc<MethodMetrics> {
        let label = KeyValue::new("grpc.method", name.unwrap_or_else(|| OTHER.to_owned()));
        Arc::new(MethodMetrics {
            started: self.started.bind(std::slice::from_ref(&label)),
            instruments: self.clone(),
            label,
            ended: Default::default(),
        })
    }
}

impl std::fmt::Debug for Instruments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Instruments")
    }
}

/// One method's instruments, bound to its label.
pub(crate) struct MethodMetrics {
    label: KeyValue,
    started: BoundCounter<u64>,
    instruments: Instruments,
    /// By status code: bound on the status's first call.
    ended: [OnceLock<Ended>; 17],
}

/// A method's instruments for calls that ended with one status.
struct Ended {
    duration: BoundHistogram<f64>,
    sent: BoundHistogram<u64>,
    received: BoundHistogram<u64>,
}

impl MethodMetrics {
    /// Counts a call as started, and meters it until it ends.
    pub(crate) fn start(self: &Arc<Self>, started_at: Instant) -> CallMeter {
        self.started.add(1);
        CallMeter {
            method: Arc::clone(self),
            started_at,
            received: Received::Counted(0),
            sent: 0,
            sent_framing: Framing::default(),
        }
    }

    fn ended(&self, code: Code) -> &Ended {
        let index = (code as usize).min(STATUS_NAMES.len() - 1);
        self.ended[index].get_or_init(|| {
            let attributes = [
                self.label.clone(),
                KeyValue::new("grpc.status", STATUS_NAMES[index]),
            ];
            Ended {
                duration: self.instruments.duration.bind(&attributes),
                sent: self.instruments.sent.bind(&attributes),
                received: self.instruments.received.bind(&attributes),
            }
        })
    }
}

impl std::fmt::Debug for MethodMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MethodMetrics")
            .field(&self.label.value)
            .finish()
    }
}

/// What a call has received: counted at its start (a body complete on arrival), or as its
/// request stream is read (shared with the body).
enum Received {
    Counted(u64),
    Streamed(Arc<AtomicU64>),
}

/// One call's measurements until it ends (`observe::Observed` says when, and how).
pub(crate) struct CallMeter {
    method: Arc<MethodMetrics>,
    started_at: Instant,
    received: Received,
    sent: u64,
    /// Where the reply stream is in its gRPC framing (its frames may split messages anywhere).
    sent_framing: Framing,
}

impl CallMeter {
    /// Counts the request messages in a body that arrived whole, framed as `framing` says.
    pub(crate) fn received_whole(&mut self, body: &[u8], mut framing: Framing) {
        if let Received::Counted(bytes) = &mut self.received {
            *bytes += framing.message_bytes(body);
        }
    }

    /// A counter the request body adds its message bytes to as it is read.
    pub(crate) fn received_stream(&mut self) -> Arc<AtomicU64> {
        let counted = match &self.received {
            Received::Counted(bytes) => *bytes,
            Received::Streamed(shared) => return Arc::clone(shared),
        };
        let shared = Arc::new(AtomicU64::new(counted));
        self.received = Received::Streamed(Arc::clone(&shared));
        shared
    }

    /// Counts the reply message bytes in `data`, a piece of the reply body.
    pub(crate) fn sent(&mut self, data: &[u8]) {
        self.sent += self.sent_framing.message_bytes(data);
    }

    /// Records the call as ended with `code`, at `ended_at`.
    pub(crate) fn end(&self, code: Code, ended_at: Instant) {
        let received = match &self.received {
            Received::Counted(bytes) => *bytes,
            Received::Streamed(shared) => shared.load(Ordering::Relaxed),
        };
        let ended = self.method.ended(code);
        ended.duration.record(
            ended_at
                .saturating_duration_since(self.started_at)
                .as_secs_f64(),
        );
        ended.sent.record(self.sent);
        ended.received.record(received);
    }
}

impl std::fmt::Debug for CallMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallMeter")
            .field("method", &self.method)
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

/// Where a byte stream of gRPC messages is: in a message's 5-byte prefix, or in its bytes.
/// A Connect unary request's body is one bare message: all of it counts.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Framing {
    /// The stream is one bare message, with no prefixes.
    bare: bool,
    /// Bytes of the current prefix seen (0 to 4).
    prefix_seen: u8,
    /// The length bytes of the current prefix seen so far.
    length: [u8; 4],
    /// Message bytes still to come before the next prefix.
    remaining: u64,
}

impl Framing {
    /// The framing of a request: gRPC's, or none for a Connect unary body (`bare`).
    pub(crate) fn of_request(bare: bool) -> Framing {
        Framing {
            bare,
            ..Framing::default()
        }
    }

    /// The message bytes in `data`, the next piece of the stream: everything but prefixes.
    pub(crate) fn message_bytes(&mut self, mut data: &[u8]) -> u64 {
        if self.bare {
            return data.len() as u64;
        }
        // The usual case, a piece that is exactly whole messages: the lengths, read at once.
        let mut bytes = 0;
        while self.prefix_seen == 0 && self.remaining == 0 && data.len() >= 5 {
            let length = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
            let length = u64::from(length);
            let rest = data.len() as u64 - 5;
            if length > rest {
                self.remaining = length - rest;
                return bytes + rest;
            }
            bytes += length;
            data = &data[5 + length as usize..];
        }
        while !data.is_empty() {
            if self.remaining > 0 {
                let taken = self.remaining.min(data.len() as u64);
                bytes += taken;
                self.remaining -= taken;
                data = &data[taken as usize..];
                continue;
            }
            // The prefix: a flag byte, then the length, big-endian.
            if self.prefix_seen > 0 {
                self.length[usize::from(self.prefix_seen) - 1] = data[0];
            }
            data = &data[1..];
            self.prefix_seen += 1;
            if self.prefix_seen == 5 {
                self.prefix_seen = 0;
                self.remaining = u64::from(u32::from_be_bytes(self.length));
            }
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(messages: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for message in messages {
            out.push(0);
            out.extend_from_slice(&(message.len() as u32).to_be_bytes());
            out.extend_from_slice(message);
        }
        out
    }

    #[test]
    fn a_bare_body_is_all_message() {
        let mut framing = Framing::of_request(true);
        assert_eq!(framing.message_bytes(&[0, 0, 0, 0, 9, 1]), 6);
        assert_eq!(framing.message_bytes(b"more"), 4);
    }

    #[test]
    fn message_bytes_exclude_prefixes_however_the_stream_is_split() {
        let stream = framed(&[b"hello", b"", &[7; 300], b"!"]);
        assert_eq!(Framing::default().message_bytes(&stream), 306);
        for split in 0..stream.len() {
            let mut framing = Framing::default();
            let (a, b) = stream.split_at(split);
            assert_eq!(
                framing.message_bytes(a) + framing.message_bytes(b),
                306,
                "{split}"
            );
        }
        let mut framing = Framing::default();
        let one_by_one: u64 = stream.iter().map(|b| framing.message_bytes(&[*b])).sum();
        assert_eq!(one_by_one, 306);
        // A message longer than the piece: the rest is counted in the next pieces.
        let mut framing = Framing::default();
        let long = framed(&[&[1; 1000]]);
        let counted: u64 = long
            .chunks(300)
            .map(|piece| framing.message_bytes(piece))
            .sum();
        assert_eq!(counted, 1000);
    }

    #[test]
    fn status_names_follow_the_codes() {
        for (code, name) in STATUS_NAMES.iter().enumerate() {
            // `Code`'s own names, in CamelCase: `DeadlineExceeded` for `DEADLINE_EXCEEDED`.
            let camel = format!("{:?}", Code::from(code as i32));
            assert_eq!(camel.to_uppercase(), name.replace('_', ""), "code {code}");
        }
    }

    #[test]
    fn grpc_status_values() {
        use crate::status::code_of;
        let value = |text: &'static str| http::HeaderValue::from_static(text);
        assert_eq!(code_of(Some(&value("0"))), Code::Ok);
        assert_eq!(code_of(Some(&value("14"))), Code::Unavailable);
        assert_eq!(code_of(Some(&value("x"))), Code::Unknown);
        assert_eq!(code_of(Some(&value("100"))), Code::Unknown);
        assert_eq!(code_of(Some(&value("1x"))), Code::Unknown);
        assert_eq!(code_of(None), Code::Unknown);
    }
}
