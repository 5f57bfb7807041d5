#!/usr/bin/env bash
# h2spec (summerwind/h2spec: RFC 9113 and RFC 7541, 146 cases) against fastgrpc's HTTP/2 engine
# as `greeter_server` serves it with its defaults (release build). Loopback only.
#
#   bash interop/h2spec/run.sh
#
# The runner is $H2SPEC, else `h2spec` on PATH. Exits 0 only when every case passed.
set -euo pipefail

# Found before moving to the repository's root, so that a relative $H2SPEC works.
h2spec=${H2SPEC:-$(command -v h2spec || true)}
[[ -n "$h2spec" ]] && h2spec=$(realpath -- "$h2spec" 2>/dev/null || true)
cd "$(dirname "$0")/../.."
if [[ -z "$h2spec" || ! -x "$h2spec" ]]; then
  echo "h2spec not found: set H2SPEC to its path or put it on PATH." >&2
  echo "It is released at github.com/summerwind/h2spec (releases: a static binary per platform)." >&2
  exit 2
fi

cargo build --quiet --release --example greeter_server
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
"$target/release/examples/greeter_server" --addr "127.0.0.1:$port" >"$log" 2>&1 &
pid=$!
cleanup() {
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$log"
}
trap cleanup EXIT

# Bounded wait until the server accepts.
for _ in $(seq 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { echo "greeter_server exited:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.1
done

out=$(mktemp)
status=0
"$h2spec" -h 127.0.0.1 -p "$port" -o 2 >"$out" 2>&1 || status=$?
summary=$(grep -E '^[0-9]+ tests, [0-9]+ passed' "$out" || true)
if [[ "$summary" != "146 tests, 146 passed"* ]]; then
  cat "$out"
  rm -f "$out"
  echo "h2spec: expected 146 tests, 146 passed; got: ${summary:-no summary} (exit $status)" >&2
  exit 1
fi
rm -f "$out"
echo "h2spec: $summary"
