#!/usr/bin/env bash
# The Connect project's Node client (@connectrpc/connect-node, from npm) against fastgrpc's
# interop_server example: Connect, gRPC and gRPC-Web, binary and JSON, HTTP/1.1 and HTTP/2
# (client.mjs). Installs its npm packages here (package-lock.json), generates the client code
# with buf and protoc-gen-es (npm packages too), then runs the cases; then the essentials again
# through `buf curl` (buf_curl.mjs: connect-go's client). Loopback only.
#
#   bash interop/connect/run.sh
#
set -euo pipefail
cd "$(dirname "$0")"

npm ci --no-audit --no-fund --loglevel=error
npm run --silent generate

cargo build --quiet --example interop_server
server=../../target/debug/examples/interop_server
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=../../target/connect-interop-server.log
"$server" --port "$port" >"$log" 2>&1 &
pid=$!
cleanup() {
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
trap cleanup EXIT

# Bounded wait until the server listens.
for _ in $(seq 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { echo "interop_server exited:" >&2; tail -n 50 "$log" >&2; exit 1; }
  sleep 0.1
done

status=0
timeout 300 node client.mjs "$port" || status=$?
# A second client of the ecosystem, written in Go: connect-go's, inside `buf curl`.
timeout 300 node buf_curl.mjs "$port" || status=$?
if ((status != 0)); then
  echo "server log:" >&2
  tail -n 50 "$log" >&2
fi
exit "$status"
