//! ProtoJSON decode and encode of one message, through the functions a server calls for an
//! `application/json` (or `+json`) call: `codec::decode_unary` of a request frame and
//! `codec::encode_reply` of a reply, in process.
//!
//! | row | what is timed |
//! |---|---|
//! | `json_hello_decode` | `HelloRequest` from the frame of `{"name":"world"}` |
//! | `json_hello_encode` | `HelloReply { message: "Hello world!" }` as a JSON frame |
//! | `json_scalars_decode` | a `jsontest.Scalars` with every kind of field set, from its JSON frame |
//! | `json_scalars_encode` | the same message as a JSON frame |
//!
//! Run: `cargo bench --bench protojson` (about 20 s).
//!
//! Instruction counts: with `FASTGRPC_BENCH_ITERS=N` the binary skips criterion and runs the
//! row named by `ROW` N times (after checking its result once). Under callgrind, collect only
//! the timed step, a non-inlined `serve`, and take the difference of two N:
//!
//! ```text
//! cargo bench --bench protojson --no-run   # prints target/release/deps/protojson-<hash>
//! FASTGRPC_BENCH_ITERS=1000 ROW=json_hello_decode valgrind --tool=callgrind \
//!     --toggle-collect='*::serve' --callgrind-out-file=/tmp/cg.1000 target/release/deps/protojson-<hash>
//! # and 2000; instructions per call: (Ir(2000) - Ir(1000)) / 1000
//! ```

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{BatchSize, Criterion};
use fastgrpc::internals::codec::{
    self, DEFAULT_MAX_RECEIVE_MESSAGE_SIZE, FRAME_HEADER_LEN, Format,
};
use protos::helloworld::{HelloReply, HelloRequest};
use protos::jsontest::{Color, Nested, Scalars, scalars};

/// `json` as one uncompressed request frame.
fn frame(json: &[u8]) -> Bytes {
    let mut frame = vec![0; FRAME_HEADER_LEN];
    frame[1..].copy_from_slice(&(json.len() as u32).to_be_bytes());
    frame.extend_from_slice(json);
    frame.into()
}

/// A `Scalars` with every kind of field set.
fn scalars() -> Scalars {
    Scalars {
        i32: -12,
        i64: 1_234_567_890_123,
        u64: 42,
        s64: -7,
        f64: 9,
        d: 2.5,
        f: -0.75,
        b: true,
        s: "a string of some length".into(),
        by: vec![1, 2, 3, 4, 5, 6, 7, 8],
        color: Color::Green.into(),
        snake_case_name: "snake".into(),
        maybe: Some(0),
        many: vec![1, 2, 3],
        // One entry each: a map's order in JSON is its HashMap's, which differs between maps.
        counts: [("a".to_owned(), 1)].into(),
        names: [(1, "one".to_owned())].into(),
        choice: Some(scalars::Choice::Text("chosen".into())),
        child: Some(Nested {
            value: "nested".into(),
        }),
        u32: 7,
        colors: vec![Color::Red.into(), Color::Green.into()],
        ..Default::default()
    }
}

struct Decode<M> {
    name: &'static str,
    frame: Bytes,
    expected: M,
}

struct Encode<M> {
    message: M,
    expected: Bytes,
}

impl<M> Decode<M>
where
    M: prost::Message
        + Default
        + PartialEq
        + std::fmt::Debug
        + fastgrpc::codegen::serde::de::DeserializeOwned
        + 'static,
{
    #[inline(never)]
    fn serve(&self, frame: Bytes) -> M {
        codec::decode_unary(frame, DEFAULT_MAX_RECEIVE_MESSAGE_SIZE, None, Format::Json)
            .expect("decodes")
    }

    fn run(&self, c: &mut Criterion) {
        c.bench_function(self.name, |b| {
            b.iter_batched(
                || self.frame.clone(),
                |frame| self.serve(frame),
                BatchSize::SmallInput,
            )
        });
    }

    fn iterate(&self, iterations: u64) {
        assert_eq!(self.serve(self.frame.clone()), self.expected);
        for _ in 0..iterations {
            drop(black_box(self.serve(black_box(self.frame.clone()))));
        }
    }
}

impl<M: prost::Message + fastgrpc::codegen::serde::Serialize + 'static> Encode<M> {
    #[inline(never)]
    fn serve(&self) -> Bytes {
        codec::encode_reply(
            &self.message,
            Format::Json,
            None,
            DEFAULT_MAX_RECEIVE_MESSAGE_SIZE,
        )
        .expect("encodes")
    }

    fn run(&self, name: &str, c: &mut Criterion) {
        c.bench_function(name, |b| b.iter(|| self.serve()));
    }

    fn iterate(&self, iterations: u64) {
        assert_eq!(self.serve(), self.expected);
        for _ in 0..iterations {
            drop(black_box(self.serve()));
        }
    }
}

fn main() {
    let hello = HelloRequest {
        name: "world".into(),
    };
    let hello_decode = Decode {
        name: "json_hello_decode",
        frame: frame(br#"{"name":"world"}"#),
        expected: hello,
    };
    let reply = HelloReply {
        message: "Hello world!".into(),
    };
    let hello_encode = Encode {
        expected: frame(br#"{"message":"Hello world!"}"#),
        message: reply,
    };
    let scalars_json = {
        let mut json = Vec::new();
        codec::write_json(&scalars(), &mut json).unwrap();
        json
    };
    let scalars_decode = Decode {
        name: "json_scalars_decode",
        frame: frame(&scalars_json),
        expected: scalars(),
    };
    let scalars_encode = Encode {
        expected: frame(&scalars_json),
        message: scalars(),
    };

    if let Ok(iterations) = std::env::var("FASTGRPC_BENCH_ITERS") {
        let iterations: u64 = iterations
            .parse()
            .expect("FASTGRPC_BENCH_ITERS is a number");
        match std::env::var("ROW").unwrap_or_default().as_str() {
            "json_hello_decode" => hello_decode.iterate(iterations),
            "json_hello_encode" => hello_encode.iterate(iterations),
            "json_scalars_decode" => scalars_decode.iterate(iterations),
            "json_scalars_encode" => scalars_encode.iterate(iterations),
            other => panic!(
                "ROW={other:?}: expected json_hello_decode, json_hello_encode, \
                 json_scalars_decode or json_scalars_encode"
            ),
        }
        return;
    }

    hello_decode.iterate(10);
    hello_encode.iterate(10);
    scalars_decode.iterate(10);
    scalars_encode.iterate(10);
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
        .configure_from_args();
    hello_decode.run(&mut criterion);
    hello_encode.run("json_hello_encode", &mut criterion);
    scalars_decode.run(&mut criterion);
    scalars_encode.run("json_scalars_encode", &mut criterion);
    criterion.final_summary();
}
