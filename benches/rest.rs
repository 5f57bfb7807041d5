//! REST transcoding's per-request steps, in process: finding a request's rule among a
//! server's (`Routes::find` and the path's bindings), and the request of `transcoding.v1.Echo`'s
//! `Get` built from path and query and decoded: in protobuf (`request_proto`, then prost), as
//! the server binds a request without a body, or as JSON (`request_json`, then the JSON
//! codec), as it binds one whose JSON body is merged in.
//!
//! | row | what is timed |
//! |---|---|
//! | `rest_find_10` | `GET /v1/shelves/1/books/2` among 10 rules: `find`, then its binding (`name`) |
//! | `rest_find_500` | the same among 500 rules, sharing its first segment and its shape |
//! | `rest_bind` | `Get`'s `EchoRequest` from that path and `page.size=10&ids=1&ids=2&displayName=x&genre=FICTION&big=9007199254740993&since=2024-01-01T00:00:00Z&verbose=true`: binding, the protobuf written, decoded |
//! | `rest_bind_json` | the same, the JSON written and decoded |
//! | `rest_bind_light` | `rest_bind` with the whole-server benchmark's query, `page.size=10&verbose=true` |
//! | `rest_bind_light_json` | the same as JSON |
//!
//! The 500 rules are the shapes of a large API (`protos::large_api_rules`):
//! `/v1/projects/*/res<i>/*`, `/v1/res<i>/*`, `/v1/res<i>/*/items`, `/v<i>/things/**`,
//! `/v1/res<i>:act`, with `Get`'s rule among them.
//!
//! Run: `cargo bench --bench rest` (about 15 s). Instruction counts: with
//! `FASTGRPC_BENCH_ITERS=N` the binary skips criterion and runs the row named by `ROW` N times;
//! under callgrind with `--toggle-collect='*::serve'`, the difference of two N per call, as
//! `benches/protojson.rs` says.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use fastgrpc::codegen::rest::Rule;
use fastgrpc::internals::codec::{DecodeOptions, decode_json};
use fastgrpc::internals::rest::{BindOptions, Lookup, Routes, request_json, request_proto};
use prost::Message as _;
use protos::transcoding::v1::EchoRequest;
use protos::transcoding::v1::echo_server::HTTP_RULES;

const PATH: &str = "/v1/shelves/1/books/2";
const QUERY: &str = "page.size=10&ids=1&ids=2&displayName=x&genre=FICTION&big=9007199254740993\
                     &since=2024-01-01T00:00:00Z&verbose=true";
/// The query of the whole-server benchmark (`benches/instructions.sh rest`).
const LIGHT_QUERY: &str = "page.size=10&verbose=true";

/// What a route is in the benchmark: `Get`'s rule, or one of the others.
type Route = Option<&'static Rule>;

/// `count` routes: `Get`'s rule and `count - 1` of the shapes a large API has
/// ([`protos::large_api_rules`], which the whole-server benchmark serves too).
fn routes(count: usize) -> Routes<Route> {
    let get = HTTP_RULES
        .iter()
        .find(|rule| rule.method == "Get")
        .expect("Echo has Get");
    let others = protos::large_api_rules(count - 1)
        .iter()
        .map(|rule| (rule.http_method, rule.template, None));
    Routes::new(std::iter::once((get.http_method, get.template, Some(get))).chain(others))
        .expect("the benchmark's routes fit together")
}

struct Find {
    routes: Routes<Route>,
}

impl Find {
    #[inline(never)]
    fn serve(&self, path: &str) -> usize {
        match self.routes.find(&http::Method::GET, path) {
            Lookup::Found(found) => found.bindings().expect("valid").len(),
            other => panic!("{path}: {other:?}"),
        }
    }

    fn iterate(&self, iterations: u64) {
        assert_eq!(self.serve(PATH), 1);
        for _ in 0..iterations {
            black_box(self.serve(black_box(PATH)));
        }
    }
}

struct Bind {
    routes: Routes<Route>,
    /// Bound as JSON rather than protobuf.
    json: bool,
}

impl Bind {
    #[inline(never)]
    fn serve(&self, path: &str, query: &str) -> EchoRequest {
        let Lookup::Found(found) = self.routes.find(&http::Method::GET, path) else {
            panic!("{path} is found");
        };
        let rule = found.value().expect("Get's rule");
        let bindings = found.bindings().expect("valid");
        let options = BindOptions::default();
        if self.json {
            let json = request_json(rule, &bindings, Some(query), b"", options).expect("binds");
            decode_json(&json, DecodeOptions::default()).expect("decodes")
        } else {
            let proto = request_proto(rule, &bindings, Some(query), options).expect("binds");
            EchoRequest::decode(&proto[..]).expect("decodes")
        }
    }

    fn iterate(&self, iterations: u64, query: &str) {
        let request = self.serve(PATH, query);
        assert_eq!(request.name, "shelves/1/books/2");
        assert!(request.verbose);
        for _ in 0..iterations {
            drop(black_box(self.serve(black_box(PATH), black_box(query))));
        }
    }
}

fn main() {
    let find_10 = Find { routes: routes(10) };
    let find_500 = Find {
        routes: routes(500),
    };
    assert_eq!((find_10.routes.len(), find_500.routes.len()), (10, 500));
    let bind = Bind {
        routes: routes(10),
        json: false,
    };
    let bind_json = Bind {
        routes: routes(10),
        json: true,
    };

    if let Ok(iterations) = std::env::var("FASTGRPC_BENCH_ITERS") {
        let iterations: u64 = iterations
            .parse()
            .expect("FASTGRPC_BENCH_ITERS is a number");
        match std::env::var("ROW").unwrap_or_default().as_str() {
            "rest_find_10" => find_10.iterate(iterations),
            "rest_find_500" => find_500.iterate(iterations),
            "rest_bind" => bind.iterate(iterations, QUERY),
            "rest_bind_json" => bind_json.iterate(iterations, QUERY),
            "rest_bind_light" => bind.iterate(iterations, LIGHT_QUERY),
            "rest_bind_light_json" => bind_json.iterate(iterations, LIGHT_QUERY),
            other => panic!(
                "ROW={other:?}: expected rest_find_10, rest_find_500, rest_bind, \
                 rest_bind_json, rest_bind_light or rest_bind_light_json"
            ),
        }
        return;
    }

    find_10.iterate(10);
    find_500.iterate(10);
    for bind in [&bind, &bind_json] {
        bind.iterate(10, QUERY);
        bind.iterate(10, LIGHT_QUERY);
    }
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
        .configure_from_args();
    criterion.bench_function("rest_find_10", |b| {
        b.iter(|| find_10.serve(black_box(PATH)))
    });
    criterion.bench_function("rest_find_500", |b| {
        b.iter(|| find_500.serve(black_box(PATH)))
    });
    criterion.bench_function("rest_bind", |b| {
        b.iter(|| bind.serve(black_box(PATH), black_box(QUERY)))
    });
    criterion.bench_function("rest_bind_json", |b| {
        b.iter(|| bind_json.serve(black_box(PATH), black_box(QUERY)))
    });
    criterion.bench_function("rest_bind_light", |b| {
        b.iter(|| bind.serve(black_box(PATH), black_box(LIGHT_QUERY)))
    });
    criterion.final_summary();
}
