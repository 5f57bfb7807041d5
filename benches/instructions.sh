#!/usr/bin/env bash
# Instructions the whole server runs per call or per message, under callgrind (valgrind):
# deterministic, unlike CPU time on a noisy machine. Each figure is the difference of two runs
# of different lengths, so start-up and shutdown cancel out.
#
#   bash benches/instructions.sh unary       # SayHello one at a time (h2load -c 1 -m 1),
#                                            # greeter_server --always-inline
#   bash benches/instructions.sh streaming   # StreamingOutputCall of 1,000 replies of 100
#                                            # bytes, 8 at a time: interop_server and
#                                            # tonic_streaming_server
#   bash benches/instructions.sh connect-h1  # SayHello as Connect `application/proto` over
#                                            # HTTP/1.1, one at a time: greeter_server and
#                                            # connectrpc_greeter_server, and plain hyper
#                                            # (hyper_floor_server) as the floor
#
# Loopback only; every run is bounded by a request count and a `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "valgrind missing: apt-get install valgrind" >&2; exit 1; }
command -v h2load >/dev/null || { echo "h2load missing: apt-get install nghttp2-client" >&2; exit 1; }
cargo build --release --quiet --example greeter_server --example interop_server \
  --example tonic_streaming_server --example connectrpc_greeter_server --example hyper_floor_server \
  --example transcoding_server

port=${PORT:-50071}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

wait_for_port() {
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return
    sleep 0.2
  done
  echo "the server did not start" >&2; exit 1
}

# How h2load sends each call: gRPC over HTTP/2 unless a mode says otherwise.
request_args=(-H 'content-type: application/grpc' -H 'te: trailers')

# instructions N STREAMS PATH -- SERVER...: the instructions of SERVER (all its threads) while
# it answers N calls of $work/body to PATH (POSTs; GETs when the body is empty), STREAMS at a
# time, plus its start and end.
instructions() {
  local calls=$1 streams=$2 path=$3; shift 4
  local data=()
  [[ -s "$work/body" ]] && data=(-d "$work/body")
  rm -f "$work"/callgrind.*
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.%p" "$@" >/dev/null 2>&1 &
  local pid=$!
  wait_for_port
  timeout 300 h2load -n "$calls" -c 1 -m "$streams" "${data[@]}" \
    "${request_args[@]}" "http://127.0.0.1:$port$path" |
    grep -q "$calls succeeded" || echo "not every call succeeded" >&2
  kill -INT "$pid"; wait "$pid" || true
  cat "$work"/callgrind.* | awk '/^summary/ { sum += $2 } END { print sum }'
}

# per NAME UNIT SHORT LONG EACH STREAMS PATH -- SERVER...: (long run - short run) / units.
per() {
  local name=$1 unit=$2 short=$3 long=$4 each=$5 streams=$6 path=$7; shift 7
  local a b
  a=$(instructions "$short" "$streams" "$path" "$@")
  b=$(instructions "$long" "$streams" "$path" "$@")
  printf '%-22s %8d instructions/%s\n' "$name" $(( (b - a) / ((long - short) * each) )) "$unit"
}

case "${1:-unary}" in
  unary)
    # HelloRequest { name: "world" }
    printf '\x00\x00\x00\x00\x07\x0a\x05world' > "$work/body"
    per fastgrpc call 3000 13000 1 1 /helloworld.Greeter/SayHello -- \
      target/release/examples/greeter_server --addr "127.0.0.1:$port" --workers 1 \
      --always-inline ;;
  streaming)
    # StreamingOutputCallRequest with 1,000 response_parameters { size: 100 }
    printf '\x00\x00\x00\x0f\xa0' > "$work/body"
    for _ in $(seq 1000); do printf '\x12\x02\x08\x64' >> "$work/body"; done
    path=/grpc.testing.TestService/StreamingOutputCall
    TOKIO_WORKER_THREADS=1 per fastgrpc message 20 120 1000 8 "$path" -- \
      target/release/examples/interop_server --port "$port"
    per tonic message 20 120 1000 8 "$path" -- \
      target/release/examples/tonic_streaming_server --addr "127.0.0.1:$port" --workers 1 ;;
  connect-h1)
    printf '\x0a\x05world' > "$work/body"
    request_args=(-H 'content-type: application/proto' --h1)
    per fastgrpc call 3000 13000 1 1 /helloworld.Greeter/SayHello -- \
      target/release/examples/greeter_server --addr "127.0.0.1:$port" --workers 1
    per connectrpc call 3000 13000 1 1 /helloworld.Greeter/SayHello -- \
      target/release/examples/connectrpc_greeter_server --addr "127.0.0.1:$port" --workers 1
    per hyper-floor call 3000 13000 1 1 /helloworld.Greeter/SayHello -- \
      target/release/examples/hyper_floor_server --addr "127.0.0.1:$port" --workers 1 ;;
  rest)
    server=(target/release/examples/transcoding_server --addr "127.0.0.1:$port" --workers 1
      --always-inline)
    # The same EchoRequest both ways; Echo's Get answers it back.
    rest_path='/v1/shelves/1/books/2?page.size=10&verbose=true'
    connect_json='{"name":"shelves/1/books/2","page":{"size":10},"verbose":true}'
    for transport in h1 h2c; do
      transport_args=()
      [[ $transport == h1 ]] && transport_args=(--h1)
      : > "$work/body"
      request_args=("${transport_args[@]}")
      per "rest-get-$transport" call 3000 13000 1 1 "$rest_path" -- "${server[@]}"
      printf '%s' "$connect_json" > "$work/body"
      request_args=(-H 'content-type: application/json' "${transport_args[@]}")
      per "connect-json-$transport" call 3000 13000 1 1 /transcoding.v1.Echo/Get -- "${server[@]}"
    done
    # Echo's 15 rules, then 500.
    : > "$work/body"
    request_args=()
    per "rest-get-h2c-500-rules" call 3000 13000 1 1 "$rest_path" -- "${server[@]}" \
      --extra-routes 485 ;;
  *) echo "usage: bash benches/instructions.sh [unary|streaming|connect-h1|rest]" >&2; exit 2 ;;
esac
