#!/usr/bin/env bash
# The Connect conformance suite (connectrpc/conformance, `connectconformance --mode server`)
# against fastgrpc: builds the server under test (this folder's crate, on fastgrpc's public
# API), then runs every case that server.yaml's features imply. Loopback only.
#
#   bash interop/connect/conformance/run.sh [more connectconformance flags, e.g. --run PATTERN]
#
# The runner is $CONNECTCONFORMANCE, else `connectconformance` on PATH. Exits as the runner
# does: 0 only when every case passed.
set -euo pipefail

# Found before moving into this folder, so that a relative $CONNECTCONFORMANCE works.
runner=${CONNECTCONFORMANCE:-$(command -v connectconformance || true)}
[[ -n "$runner" ]] && runner=$(realpath -- "$runner" 2>/dev/null || true)
cd "$(dirname "$0")"
if [[ -z "$runner" || ! -x "$runner" ]]; then
  cat >&2 <<'HELP'
connectconformance not found: set CONNECTCONFORMANCE to its path or put it on PATH.
It is the runner of github.com/connectrpc/conformance: download connectconformance from that
repository's releases (v1.0.5 is what server.yaml was written for), or, with Go,
`go install connectrpc.com/conformance/cmd/connectconformance@v1.0.5`.
HELP
  exit 2
fi

# A debug build: the suite's time is its delays and timeouts, not the server's CPU.
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
cargo build --quiet -p fastgrpc-conformance --bin conformance_server
server="$target/debug/conformance_server"

exec "$runner" --mode server --conf server.yaml -v -p 2 "$@" -- "$server"
