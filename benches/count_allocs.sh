#!/usr/bin/env bash
# Black-box allocations per request of examples/greeter_server under h2load, counted by an
# LD_PRELOAD malloc counter (benches/count_allocs.c) around the whole process: every thread,
# every allocation that reaches malloc/calloc/realloc/posix_memalign.
#
#   bash benches/count_allocs.sh              # 200,000 requests, 4 connections x 16 streams
#   N=50000 C=1 M=16 bash benches/count_allocs.sh
#   SERVER_ARGS="--always-inline" bash benches/count_allocs.sh   # extra server options
#   LOADER="path/to/client --flag" bash benches/count_allocs.sh     # another load generator,
#       run as `LOADER 127.0.0.1:PORT REQUESTS CONNECTIONS STREAMS`; must print "REQUESTS succeeded"
#
# The server runs pinned to core 0 with one tokio worker, h2load pinned to core 1 (as in
# benches/e2e.sh). After a warm-up run the counter is read (SIGUSR2 makes the preload append a
# dump to a file), the counted run follows, and the counter is read again; the difference over
# the requests is printed, in total and per server thread. Loopback only; h2load is bounded by
# the request count and `timeout 120`; the server is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

n=${N:-200000}
c=${C:-4}
m=${M:-16}
warmup=${WARMUP:-20000}
port=${PORT:-50071}
so=${COUNT_ALLOCS_SO:-/tmp/count_allocs.so}

command -v h2load >/dev/null || { echo "h2load missing: apt-get install nghttp2-client" >&2; exit 1; }
gcc -O2 -shared -fPIC -o "$so" benches/count_allocs.c -ldl
cargo build --release --quiet --example greeter_server
server_bin=${SERVER_BIN:-target/release/examples/greeter_server}

work=$(mktemp -d)
body=$work/body.bin
counts=$work/counts.txt
printf '\x00\x00\x00\x00\x07\x0a\x05world' > "$body"

pid=
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck disable=SC2086
COUNT_ALLOCS_OUT=$counts LD_PRELOAD=$so taskset -c 0 \
  "$server_bin" --addr "127.0.0.1:$port" --workers 1 ${SERVER_ARGS:-} >/dev/null 2>&1 &
pid=$!

for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.05
done

load() {
  local out
  if [[ -n "${LOADER:-}" ]]; then
    # shellcheck disable=SC2086
    read -r -a loader <<<"$LOADER"
    out=$(taskset -c 1 timeout 120 "${loader[0]}" "127.0.0.1:$port" "$1" "$c" "$m" "${loader[@]:1}")
  else
    out=$(taskset -c 1 timeout 120 h2load -n "$1" -c "$c" -m "$m" -d "$body" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$port/helloworld.Greeter/SayHello")
  fi
  grep -q "$1 succeeded" <<<"$out" || { echo "not every request succeeded:" >&2; echo "$out" >&2; exit 1; }
}

# snapshot FILE: asks the server for a dump and copies it (the lines before "end SEQ") to FILE.
seq_no=0
snapshot() {
  seq_no=$((seq_no + 1))
  kill -USR2 "$pid"
  for _ in $(seq 100); do
    grep -qx "end $seq_no" "$counts" 2>/dev/null && break
    sleep 0.02
  done
  awk -v s="$seq_no" '$0 == "end " s { print block; exit } /^total /{ block = $0; next } { block = block "\n" $0 }' \
    "$counts" > "$1"
}

load "$warmup"
sleep 0.2
snapshot "$work/before"
load "$n"
sleep 0.2
snapshot "$work/after"

python3 - "$work/before" "$work/after" "$n" "$c" "$m" <<'PY'
import sys
before, after, n, c, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
def parse(path):
    total, threads = {}, {}
    for line in open(path):
        f = line.split()
        kv = dict(x.split("=", 1) for x in f[1:] if "=" in x)
        if f[0] == "total":
            total = {k: int(v) for k, v in kv.items()}
        elif f[0] == "thread":
            threads[kv["tid"]] = (kv["name"], int(kv["allocs"]))
    return total, threads
t0, th0 = parse(before)
t1, th1 = parse(after)
d = {k: t1[k] - t0.get(k, 0) for k in t1}
print(f"greeter_server, {n} requests, c={c} m={m}: {d['allocs'] / n:.3f} allocations/request "
      f"(malloc {d['malloc'] / n:.3f}, calloc {d['calloc'] / n:.3f}, realloc {d['realloc'] / n:.3f}, "
      f"aligned {d['aligned'] / n:.3f}; frees {d['free'] / n:.3f}; {d['bytes'] / n:.0f} bytes)")
for tid, (name, allocs) in sorted(th1.items(), key=lambda kv: -kv[1][1]):
    diff = allocs - th0.get(tid, (name, 0))[1]
    if diff:
        print(f"  thread {tid:>7} {name:<18} {diff / n:.4f}/request ({diff})")
PY
