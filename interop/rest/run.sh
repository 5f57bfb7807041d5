#!/usr/bin/env bash
# REST transcoding from a real HTTP client: starts examples/transcoding_server on a free loopback
# port and runs check.py, which calls every `google.api.http` binding of
# proto/transcoding/v1/echo.proto with Python's httpx (from PyPI, pinned in requirements.txt,
# in a venv kept in target/rest-venv), over HTTP/1.1 and over HTTP/2 with prior knowledge, and
# checks the answers, the failures and the served OpenAPI document. The server is stopped when
# the script exits, however it exits.
#
# Environment: PYTHON, the interpreter that creates the venv (default: python3);
# CARGO_TARGET_DIR, where cargo builds (default: target).
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$script_dir/../.."

source scripts/python-venv.sh
venv=target/rest-venv
python_venv "$venv" interop/rest/requirements.txt

cargo build --quiet --example transcoding_server
server="${CARGO_TARGET_DIR:-target}/debug/examples/transcoding_server"

port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=target/rest-server.log
"$server" --addr "127.0.0.1:$port" >"$log" 2>&1 &
pid=$!
cleanup() {
  # SIGINT is the example's graceful stop; bounded, then it is killed.
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
trap cleanup EXIT

deadline=$((SECONDS + 30))
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null || ((SECONDS >= deadline)); then
    echo "run.sh: transcoding_server is not listening on 127.0.0.1:$port" >&2
    tail -n 50 "$log" >&2 || true
    exit 1
  fi
  sleep 0.1
done

status=0
timeout 300 "$venv/bin/python" interop/rest/check.py "http://127.0.0.1:$port" \
  proto/transcoding/v1/echo.proto || status=$?
if ((status != 0)); then
  echo "run.sh: server log ($log):" >&2
  tail -n 50 "$log" >&2 || true
fi
exit "$status"
