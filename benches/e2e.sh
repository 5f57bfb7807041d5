#!/usr/bin/env bash
# End-to-end load over loopback with h2load (Debian's nghttp2-client): fastgrpc's
# greeter_server against tonic_greeter_server (same proto, same handler), side by side.
#
#   bash benches/e2e.sh            # the three load shapes, 3 rounds each: fastgrpc and tonic
#   ROUNDS=1 bash benches/e2e.sh   # quicker
#   SHAPES="200000 4 16" bash benches/e2e.sh   # only these shapes: "requests connections
#                                              # streams", several separated by ';'
#   BASELINE=/path/to/old/greeter_server bash benches/e2e.sh   # also an older build, same run
#   bash benches/e2e.sh heavy      # CPU-heavy handler: inline against spawned (run_inline(false))
#   bash benches/e2e.sh writes     # only the write-syscall counts
#   bash benches/e2e.sh slow       # 64 pipelined 4 ms calls, one worker: first and last answer
#   bash benches/e2e.sh busy       # one connection x 64 streams, 50 us handler, two workers
#   bash benches/e2e.sh mixed      # 1 ms calls and health checks on one connection: checks' p99
#   bash benches/e2e.sh streaming  # server streaming: interop_server against
#                                  # tonic_streaming_server, CPU per reply message
#   bash benches/e2e.sh web        # gRPC-Web unary over HTTP/2 and HTTP/1.1 (h2load --h1),
#                                  # against tonic with tonic-web and accept_http1
#   bash benches/e2e.sh connect    # Connect unary (proto and JSON over h2c, proto over HTTP/1.1)
#                                  # against connectrpc 0.9.1, beside fastgrpc's gRPC unary;
#                                  # plain hyper (hyper_floor_server) as the HTTP/1.1 floor
#   bash benches/e2e.sh rest       # transcoding_server's Get as a REST GET and as a Connect
#                                  # JSON POST of the same request, over h2c (4x16) and
#                                  # HTTP/1.1 (16x1); and the REST GET with 500 rules
#   bash benches/e2e.sh metrics    # light unary with gRFC A66 metrics on and off, and tonic
#   bash benches/e2e.sh large      # unary calls of 1 MiB each way, one connection x 4 streams
#   bash benches/e2e.sh clientstream  # client streaming: 1,000 messages of 100 bytes a call,
#                                  # interop_server against tonic_streaming_server
#   bash benches/e2e.sh idle       # server memory (VmRSS) per idle connection: 1,000 connections
#                                  # that made one call each (benches/idle_connections.py)
#   Instructions per call or per message, under callgrind: benches/instructions.sh.
#
# `streaming`, `large`, `clientstream` and `idle` run fastgrpc beside tonic,
# and end with each server's median over the rounds and its ratio to tonic's.
# `slow`, `busy`, `mixed` and `heavy` run fastgrpc's default (adaptive inline) beside
# `--no-inline`, `--always-inline` and tonic. `slow` and `mixed` use examples/load_probe.rs,
# which times each answer (h2load reports no first-answer time and one latency for all calls).
#
# Each server runs pinned to core 0 with one tokio worker; h2load is pinned to core 1. Every run
# is bounded: a fixed request count and a `timeout`. Reported per run: requests/s, latency p50
# and p99 (from h2load's per-request log), server CPU per request (utime+stime from
# /proc/PID/stat), and write syscalls per request (strace -c, in a separate pass, since strace
# slows the server). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-3}
# PORT=N: another port, for two runs on one machine (each run stops its servers by pid).
port=${PORT:-50061}
body=$(mktemp)
log=$(mktemp)
# The figures of every run, one line each (`medians` reads them), and the reply a mode expects.
results=$(mktemp)
want=$(mktemp)
check=
trap 'rm -f "$body" "$log" "$results" "$want"' EXIT
# HelloRequest { name: "world" } in one gRPC frame.
printf '\x00\x00\x00\x00\x07\x0a\x05world' > "$body"

command -v h2load >/dev/null || { echo "h2load missing: apt-get install nghttp2-client" >&2; exit 1; }
cargo build --release --quiet --example greeter_server --example tonic_greeter_server \
  --example interop_server --example tonic_streaming_server \
  --example load_probe --example connectrpc_greeter_server --example hyper_floor_server \
  --example transcoding_server

fastgrpc=(target/release/examples/greeter_server --addr "127.0.0.1:$port")
tonic=(target/release/examples/tonic_greeter_server --addr "127.0.0.1:$port")

wait_for_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "server did not start" >&2; return 1
}

# check_reply URL: when a mode set `check`, one call with nghttp first, outside the measured
# window: h2load counts any HTTP 200 as a success, a gRPC error in the trailers included, so the
# reply must be the bytes in "$want" and the trailers must say grpc-status 0.
check_reply() {
  [[ -n "$check" ]] || return 0
  local url=$1 got
  got=$(mktemp)
  timeout 30 nghttp -d "$body" "${request_args[@]}" "$url" > "$got" || true
  cmp -s "$got" "$want" || echo "$url: not the expected reply ($(stat -c %s "$got") bytes)" >&2
  timeout 30 nghttp -v -d "$body" "${request_args[@]}" "$url" | grep -aq 'grpc-status: 0$' ||
    echo "$url: no grpc-status 0 in the trailers" >&2
  rm -f "$got"
}

# stream_run NAME PID URL CALLS MESSAGES: CALLS streaming calls of MESSAGES messages each
# (replies or requests, as the body asks), 8 at a time on one connection, against the server
# PID just started; reports server CPU per call and per message.
stream_run() {
  local name=$1 pid=$2 url=$3 calls=$4 messages=$5
  wait_for_port
  check_reply "$url"
  read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  local out
  out=$(taskset -c 1 timeout 120 h2load -n "$calls" -c 1 -m 8 -d "$body" "${request_args[@]}" \
    "$url")
  read -r u2 s2 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  grep -q "$calls succeeded" <<<"$out" || { echo "$name: not every call succeeded" >&2; echo "$out" >&2; }
  python3 - "$results" "$name" "$((u2 - u1 + s2 - s1))" "$(getconf CLK_TCK)" "$calls" \
    "$messages" <<'PY'
import sys
results, name, ticks, hz, calls, messages = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
t = ticks / hz
per_call, per_message = t * 1e6 / calls, t * 1e6 / (calls * messages)
print(f"{name:<34} server CPU {per_call:8.1f} us/call, {per_message:6.3f} us/message, "
      f"{t:5.2f} s in all")
with open(results, "a") as out:
    out.write(f"{name}\tCPU us/call\t{per_call}\tCPU us/message\t{per_message}\n")
PY
}

# idle_run NAME -- SERVER_COMMAND...: the server's VmRSS growth per idle connection, measured
# by benches/idle_connections.py (1,000 connections, one call each, then idle).
idle_run() {
  local name=$1; shift 2
  taskset -c 0 "$@" >/dev/null 2>&1 &
  local pid=$!
  wait_for_port
  local out
  out=$(taskset -c 1 timeout 90 python3 benches/idle_connections.py --port "$port" --pid "$pid" \
    --connections 1000 --name "$name") || echo "$name: the idle client failed" >&2
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  [[ -n "$out" ]] || return 0
  echo "$out"
  local kib
  kib=$(grep -oE '[-0-9.]+ KiB/connection' <<<"$out" | cut -d' ' -f1)
  printf '%s\tKiB/connection\t%s\n' "$name" "$kib" >> "$results"
}

# medians: each server's median over the rounds of every figure recorded in "$results", and
# its ratio to tonic's median of that figure.
medians() {
  python3 - "$results" <<'PY'
import os, re, statistics, sys
servers = {}
for line in open(sys.argv[1]):
    name, *figures = line.rstrip("\n").split("\t")
    server = servers.setdefault(re.sub(r" \(round \d+\)$", "", name), {})
    for label, value in zip(figures[::2], figures[1::2]):
        server.setdefault(label, []).append(float(value))
# The reference the ratios are to: tonic, or the server whose name holds REFERENCE; with
# BY_SHAPE, the server named REFERENCE followed by the same shape ("SERVER SHAPE...").
reference = os.environ.get("REFERENCE", "tonic")
tonic = next((figures for name, figures in servers.items() if reference in name), {})
def reference_of(name):
    if not os.environ.get("BY_SHAPE"):
        return tonic
    return servers.get(f"{reference} {name.split(' ', 1)[1]}", {})
show = lambda value: f"{value:.0f}" if abs(value) >= 100 else f"{value:.3f}"
for name, figures in servers.items():
    parts = []
    peer = reference_of(name)
    for label, values in figures.items():
        median = statistics.median(values)
        ratio = median / statistics.median(peer[label]) if peer.get(label) else float("nan")
        parts.append(f"{label} {show(median)} ({ratio:.2f}x {reference})")
    print(f"{'median ' + name:<34} " + ", ".join(parts))
PY
}

# make_body large|clientstream: the request body h2load sends (gRPC frames: a flag byte, a
# 4-byte big-endian length, the protobuf message) and, in "$want", the reply expected.
make_body() {
  python3 - "$1" "$body" "$want" <<'PY'
import sys
def varint(n):
    out = b""
    while n >= 0x80:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])
field = lambda number, value: bytes([number << 3 | 2]) + varint(len(value)) + value
frame = lambda message: b"\0" + len(message).to_bytes(4, "big") + message
kind, body, want = sys.argv[1:]
if kind == "large":
    # HelloRequest { name } of 1 MiB; the greeters answer "Hello {name}!".
    name = b"x" * (1 << 20)
    request, reply = frame(field(1, name)), frame(field(1, b"Hello " + name + b"!"))
else:
    # 1,000 StreamingInputCallRequest { payload: Payload { body: 100 bytes } } in one request
    # body: one call; the reply is StreamingInputCallResponse { aggregated_payload_size }.
    request = frame(field(1, field(2, bytes(100)))) * 1000
    reply = frame(b"\x08" + varint(100 * 1000))
open(body, "wb").write(request)
open(want, "wb").write(reply)
PY
}

# How h2load sends each request: gRPC over HTTP/2 unless a mode says otherwise; to `path`,
# with "$body" (a POST), or as a GET when the body is empty.
request_args=(-H 'content-type: application/grpc' -H 'te: trailers')
path=/helloworld.Greeter/SayHello

# run NAME REQUESTS CONNECTIONS STREAMS SERVER_CPUS -- SERVER_COMMAND...
run() {
  local name=$1 n=$2 c=$3 m=$4 cpus=$5; shift 6
  # h2load appends to its log: start each run's empty, or its percentiles mix in earlier runs.
  : > "$log"
  taskset -c "$cpus" "$@" >/dev/null 2>&1 &
  local pid=$!
  wait_for_port
  check_reply "http://127.0.0.1:$port$path"
  local data=()
  [[ -s "$body" ]] && data=(-d "$body")
  read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  local out
  out=$(taskset -c 1 timeout 120 h2load -n "$n" -c "$c" -m "$m" "${data[@]}" \
    "${request_args[@]}" --log-file="$log" "http://127.0.0.1:$port$path")
  read -r u2 s2 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  local rps
  rps=$(grep -oE '[0-9.]+ req/s' <<<"$out" | cut -d' ' -f1)
  grep -q "$n succeeded" <<<"$out" || { echo "$name: not every request succeeded" >&2; echo "$out" >&2; }
  python3 - "$log" "$name" "$n" "$rps" "$((u2 - u1 + s2 - s1))" "$(getconf CLK_TCK)" "$results" <<'PY'
import sys
log, name, n, rps, ticks, hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
lat = sorted(int(line.split()[2]) for line in open(log) if line.strip())
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
cpu_us = ticks / hz * 1e6 / n
print(f"{name:<34} {rps:>10.0f} req/s  p50 {pick(0.50):>6} us  p99 {pick(0.99):>6} us  server CPU {cpu_us:6.2f} us/req")
with open(sys.argv[7], "a") as out:
    out.write(f"{name}\treq/s\t{rps}\tCPU us/req\t{cpu_us}\n")
PY
}

# writes NAME REQUESTS CONNECTIONS STREAMS -- SERVER_COMMAND...: write syscalls per request.
writes() {
  local name=$1 n=$2 c=$3 m=$4; shift 5
  local trace; trace=$(mktemp)
  taskset -c 0 strace -f -c -o "$trace" "$@" >/dev/null 2>&1 &
  local pid=$!
  wait_for_port
  taskset -c 1 timeout 120 h2load -n "$n" -c "$c" -m "$m" -d "$body" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$port/helloworld.Greeter/SayHello" >/dev/null
  # Stop the server itself (strace's child): interrupting strace would only detach it.
  pkill -INT -P "$pid"; wait "$pid" 2>/dev/null || true
  python3 - "$trace" "$name" "$n" <<'PY'
import sys
trace, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
calls = 0
for line in open(trace):
    parts = line.split()
    if parts and parts[-1] in ("write", "writev", "sendto", "sendmsg"):
        calls += int(parts[3] if len(parts) == 6 else parts[3])
print(f"{name:<34} {calls / n:.3f} write syscalls/request")
PY
  rm -f "$trace"
}

# probe NAME SERVER_CPUS PROBE_ARGS -- SERVER_COMMAND...: one load_probe run against a server.
probe() {
  local name=$1 cpus=$2 args=$3; shift 4
  taskset -c "$cpus" "$@" >/dev/null 2>&1 &
  local pid=$!
  wait_for_port
  local out
  # shellcheck disable=SC2086
  out=$(timeout 120 target/release/examples/load_probe $args --addr "127.0.0.1:$port" 2>&1) || true
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  while read -r line; do printf '%-34s %s\n' "$name" "$line"; done <<<"$out"
}

# The four ways of serving a CPU-heavy handler, as `run`/`probe` server commands; `peers WORK
# WORKERS` fills the array `servers` (name, then the command) with them.
peers() {
  local work=$1 workers=$2
  servers=(
    "fastgrpc default"   "${fastgrpc[*]} --workers $workers --work-us $work"
    "fastgrpc no-inline" "${fastgrpc[*]} --workers $workers --work-us $work --no-inline"
    "fastgrpc always"    "${fastgrpc[*]} --workers $workers --work-us $work --always-inline"
    "tonic"              "${tonic[*]} --workers $workers --work-us $work"
  )
}

case "${1:-}" in
  streaming)
    # Server streaming: 2,000 calls of 1,000 replies of 100 bytes (StreamingOutputCall), 8 at a
    # time on one connection; server CPU per reply message is the figure.
    printf '\x00\x00\x00\x0f\xa0' > "$body"
    for _ in $(seq 1000); do printf '\x12\x02\x08\x64' >> "$body"; done
    url="http://127.0.0.1:$port/grpc.testing.TestService/StreamingOutputCall"
    for round in $(seq "$rounds"); do
      # One worker, as tonic_streaming_server gets (interop_server takes tokio's default).
      TOKIO_WORKER_THREADS=1 taskset -c 0 \
        target/release/examples/interop_server --port "$port" >/dev/null 2>&1 &
      stream_run "fastgrpc (round $round)" $! "$url" 2000 1000
      taskset -c 0 target/release/examples/tonic_streaming_server --addr "127.0.0.1:$port" \
        --workers 1 >/dev/null 2>&1 &
      stream_run "tonic (round $round)" $! "$url" 2000 1000
    done
    medians
    exit 0
    ;;
  metrics)
    # Light unary (4x16, one worker) with gRFC A66 metrics recorded (`--metrics-addr`, scraped
    # by nobody) and without (compiled in, no meter provider), beside tonic.
    for round in $(seq "$rounds"); do
      run "fastgrpc metrics off (round $round)" 200000 4 16 0 -- "${fastgrpc[@]}" --workers 1
      run "fastgrpc metrics on (round $round)" 200000 4 16 0 -- "${fastgrpc[@]}" --workers 1 \
        --metrics-addr "127.0.0.1:$((port + 1))"
      run "tonic (round $round)" 200000 4 16 0 -- "${tonic[@]}" --workers 1
    done
    medians
    exit 0 ;;
  large)
    # 2,000 unary calls of 1 MiB each way (a 1 MiB name, greeted back), 4 at a time on one
    # connection: both greeters take messages up to 4 MiB by default, as gRPC does.
    make_body large
    check=1
    for round in $(seq "$rounds"); do
      run "fastgrpc (round $round)" 2000 1 4 0 -- "${fastgrpc[@]}" --workers 1
      run "tonic (round $round)" 2000 1 4 0 -- "${tonic[@]}" --workers 1
    done
    medians
    exit 0 ;;
  clientstream)
    # Client streaming: 10,000 StreamingInputCalls of 1,000 messages of 100 bytes, 8 at a time
    # on one connection (that many: CPU is read in ticks of 10 ms). interop_server builds its
    # runtime with Runtime::new(), which takes its worker count from TOKIO_WORKER_THREADS.
    make_body clientstream
    check=1
    url="http://127.0.0.1:$port/grpc.testing.TestService/StreamingInputCall"
    for round in $(seq "$rounds"); do
      TOKIO_WORKER_THREADS=1 taskset -c 0 \
        target/release/examples/interop_server --port "$port" >/dev/null 2>&1 &
      stream_run "fastgrpc (round $round)" $! "$url" 10000 1000
      taskset -c 0 target/release/examples/tonic_streaming_server --addr "127.0.0.1:$port" \
        --workers 1 >/dev/null 2>&1 &
      stream_run "tonic (round $round)" $! "$url" 10000 1000
    done
    medians
    exit 0 ;;
  idle)
    # 1,000 connections held by one client process (and as many descriptors on the server).
    [[ $(ulimit -n) -ge 4096 ]] || ulimit -n 4096
    for round in $(seq "$rounds"); do
      idle_run "fastgrpc (round $round)" -- "${fastgrpc[@]}" --workers 1
      idle_run "tonic (round $round)" -- "${tonic[@]}" --workers 1
    done
    medians
    exit 0 ;;
  heavy)
    # One connection, 16 streams, a handler that computes for 200 us; two workers on two cores.
    peers 200 2
    for round in $(seq "$rounds"); do
      for ((i = 0; i < ${#servers[@]}; i += 2)); do
        # shellcheck disable=SC2086
        run "heavy ${servers[i]} (round $round)" 4000 1 16 0,1 -- ${servers[i + 1]}
      done
    done
    exit 0 ;;
  slow)
    # 64 calls of 4 ms pipelined on one connection, one worker: when do answers arrive?
    peers 4000 1
    for ((i = 0; i < ${#servers[@]}; i += 2)); do
      # shellcheck disable=SC2086
      probe "slow ${servers[i]}" 0 "pipelined --calls 64 --rounds $rounds" -- ${servers[i + 1]}
    done
    exit 0 ;;
  busy)
    # One connection x 64 streams, a 50 us handler, two workers: the rate.
    peers 50 2
    for round in $(seq "$rounds"); do
      for ((i = 0; i < ${#servers[@]}; i += 2)); do
        # shellcheck disable=SC2086
        run "busy ${servers[i]} (round $round)" 20000 1 64 0,1 -- ${servers[i + 1]}
      done
    done
    exit 0 ;;
  web)
    # gRPC-Web unary: over HTTP/2 at 4x16, and over HTTP/1.1 with 16 connections (one
    # request at a time each, as browsers send); one worker, as the light shapes.
    for round in $(seq "$rounds"); do
      request_args=(-H 'content-type: application/grpc-web+proto' -H 'x-grpc-web: 1')
      run "web h2 fastgrpc (round $round)" 200000 4 16 0 -- "${fastgrpc[@]}" --workers 1
      run "web h2 tonic-web (round $round)" 200000 4 16 0 -- "${tonic[@]}" --workers 1 --web
      request_args+=(--h1)
      run "web h1 fastgrpc (round $round)" 100000 16 1 0 -- "${fastgrpc[@]}" --workers 1
      run "web h1 tonic-web (round $round)" 100000 16 1 0 -- "${tonic[@]}" --workers 1 --web
    done
    exit 0 ;;
  connect)
    # Connect unary SayHello, one worker, as the light shapes: 1. proto and 2. JSON over h2c at
    # 4x16, 3. proto over HTTP/1.1 with 16 connections (one call at a time each, as browsers
    # send); fastgrpc against connectrpc 0.9.1 (the Connect project's Rust server), and
    # fastgrpc's own gRPC unary at 4x16 beside them.
    connectrpc=(target/release/examples/connectrpc_greeter_server --addr "127.0.0.1:$port")
    floor=(target/release/examples/hyper_floor_server --addr "127.0.0.1:$port")
    for round in $(seq "$rounds"); do
      printf '\x00\x00\x00\x00\x07\x0a\x05world' > "$body"
      request_args=(-H 'content-type: application/grpc' -H 'te: trailers')
      run "fastgrpc grpc-h2 4x16 (round $round)" 200000 4 16 0 -- "${fastgrpc[@]}" --workers 1
      for server in fastgrpc connectrpc; do
        if [[ $server == fastgrpc ]]; then command=("${fastgrpc[@]}"); else command=("${connectrpc[@]}"); fi
        printf '\x0a\x05world' > "$body"
        request_args=(-H 'content-type: application/proto')
        run "$server connect-proto-h2 4x16 (round $round)" 200000 4 16 0 -- "${command[@]}" --workers 1
        printf '{"name":"world"}' > "$body"
        request_args=(-H 'content-type: application/json')
        run "$server connect-json-h2 4x16 (round $round)" 200000 4 16 0 -- "${command[@]}" --workers 1
        printf '\x0a\x05world' > "$body"
        request_args=(-H 'content-type: application/proto' --h1)
        run "$server connect-proto-h1 16x1 (round $round)" 100000 16 1 0 -- "${command[@]}" --workers 1
      done
      # The floor of shape 3: plain hyper reading, decoding, encoding and answering, with
      # nothing of a framework (examples/hyper_floor_server.rs).
      run "hyper-floor connect-proto-h1 16x1 (round $round)" 100000 16 1 0 -- \
        "${floor[@]}" --workers 1
    done
    echo "against fastgrpc's gRPC unary:"
    REFERENCE="fastgrpc grpc" medians
    echo "against connectrpc, shape by shape:"
    REFERENCE=connectrpc BY_SHAPE=1 medians
    exit 0 ;;
  rest)
    # REST transcoding against Connect JSON, the same call of transcoding.v1.Echo's Get (one
    # worker, adaptive inline as users run it): the REST GET with a path and a query, and the
    # Connect POST of the same EchoRequest; over h2c at 4x16 and over HTTP/1.1 with 16
    # connections; then the REST GET on a server with 500 rules instead of Echo's 15.
    transcoding=(target/release/examples/transcoding_server --addr "127.0.0.1:$port" --workers 1)
    rest_path='/v1/shelves/1/books/2?page.size=10&verbose=true'
    connect_json='{"name":"shelves/1/books/2","page":{"size":10},"verbose":true}'
    for round in $(seq "$rounds"); do
      for transport in h2c h1; do
        if [[ $transport == h2c ]]; then
          shape=(200000 4 16); transport_args=(); label="h2c 4x16"
        else
          shape=(100000 16 1); transport_args=(--h1); label="h1 16x1"
        fi
        : > "$body"; path=$rest_path; request_args=("${transport_args[@]}")
        run "rest $label (round $round)" "${shape[@]}" 0 -- "${transcoding[@]}"
        printf '%s' "$connect_json" > "$body"; path=/transcoding.v1.Echo/Get
        request_args=(-H 'content-type: application/json' "${transport_args[@]}")
        run "connect $label (round $round)" "${shape[@]}" 0 -- "${transcoding[@]}"
      done
      : > "$body"; path=$rest_path; request_args=()
      run "rest-500-rules h2c 4x16 (round $round)" 200000 4 16 0 -- "${transcoding[@]}" \
        --extra-routes 485
    done
    echo "against the Connect JSON POST of the same call, shape by shape:"
    REFERENCE=connect BY_SHAPE=1 medians
    echo "against the REST GET with Echo's 15 rules:"
    REFERENCE="rest h2c 4x16" medians
    exit 0 ;;
  mixed)
    # 8 loops of 1 ms SayHello calls and 8 loops of health checks on one connection, two
    # workers: the checks' latency.
    peers 1000 2
    for round in $(seq "$rounds"); do
      for ((i = 0; i < ${#servers[@]}; i += 2)); do
        # shellcheck disable=SC2086
        probe "mixed ${servers[i]} (round $round)" 0,1 "mixed --slow 8 --fast 8 --seconds 5" -- ${servers[i + 1]}
      done
    done
    exit 0 ;;
esac

count_writes() {
  command -v strace >/dev/null || { echo "strace missing: apt-get install strace" >&2; return 0; }
  writes "fastgrpc c=4 m=16" 50000 4 16 -- "${fastgrpc[@]}" --workers 1
  writes "tonic    c=4 m=16" 50000 4 16 -- "${tonic[@]}" --workers 1
}

if [[ "${1:-}" == writes ]]; then
  count_writes
  exit 0
fi

IFS=';' read -ra shapes <<<"${SHAPES:-20000 1 1;200000 4 16;400000 16 64}"
for shape in "${shapes[@]}"; do
  read -r n c m <<<"$shape"
  for round in $(seq "$rounds"); do
    run "fastgrpc c=$c m=$m (round $round)" "$n" "$c" "$m" 0 -- "${fastgrpc[@]}" --workers 1
    run "tonic    c=$c m=$m (round $round)" "$n" "$c" "$m" 0 -- "${tonic[@]}" --workers 1
    if [[ -n "${BASELINE:-}" ]]; then
      run "baseline c=$c m=$m (round $round)" "$n" "$c" "$m" 0 -- "$BASELINE" \
        --addr "127.0.0.1:$port" --workers 1
    fi
  done
done
[[ -n "${SKIP_WRITES:-}" ]] || count_writes
