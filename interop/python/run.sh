#!/usr/bin/env bash
# Runs the grpcio (C-core) interop client against fastgrpc's interop_server example.
#
#   interop/python/run.sh [client.py args...]    e.g. --test_case large_unary, --test_case compression
#
# Environment:
#   INTEROP_PORT        port for the server (default: a free loopback port)
#   INTEROP_SERVER_BIN  serve with this binary (given --port PORT) instead of building the example
#   PYTHON              interpreter used to create the venv (default: python3)
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(git -C "$script_dir" rev-parse --show-toplevel 2>/dev/null || (cd "$script_dir/../.." && pwd))"
cd "$repo_root"

venv=target/interop-venv
gen_dir=target/interop-python-gen
requirements=interop/python/requirements.txt
stamp="$venv/.requirements.stamp"
server_log=target/interop-server.log
python="${PYTHON:-python3}"

log() { echo "run.sh: $*" >&2; }

# --- Python environment: reinstall only when the venv is new or requirements changed.
mkdir -p target
if [[ ! -x "$venv/bin/python" ]]; then
    log "creating venv $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi
if ! cmp -s "$requirements" "$stamp"; then
    log "installing $requirements"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    # Written only after a successful install, so a failed one is retried next run.
    cp "$requirements" "$stamp"
fi

# --- Stubs: regenerated every run (cheap) so they always match proto/.
rm -rf "$gen_dir"
mkdir -p "$gen_dir"
"$venv/bin/python" -m grpc_tools.protoc -Iproto --python_out="$gen_dir" --grpc_python_out="$gen_dir" \
    proto/grpc/testing/*.proto

# --- Server.
if [[ -n "${INTEROP_SERVER_BIN:-}" ]]; then
    server_bin="$INTEROP_SERVER_BIN"
else
    cargo build --example interop_server
    server_bin=target/debug/examples/interop_server
fi

if [[ -n "${INTEROP_PORT:-}" ]]; then
    port="$INTEROP_PORT"
else
    # Ask the kernel for a free loopback port; the tiny window before the server
    # binds it is acceptable for a test run.
    port="$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi

server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        # Give it a moment to exit cleanly, then insist.
        for _ in $(seq 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

show_server_log() {
    log "server log ($server_log):"
    tail -n 50 "$server_log" >&2 || true
}

# The server's output goes to a file so the client's summary stays the last line.
log "starting $server_bin --port $port"
"$server_bin" --port "$port" >"$server_log" 2>&1 &
server_pid=$!

# Wait (bounded) until the port accepts TCP connections.
deadline=$((SECONDS + 30))
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        log "server exited before listening on 127.0.0.1:$port"
        show_server_log
        exit 1
    fi
    if ((SECONDS >= deadline)); then
        log "server did not listen on 127.0.0.1:$port within 30 s"
        show_server_log
        exit 1
    fi
    sleep 0.2
done

# --- Client. Extra arguments come last so they can override --test_case.
status=0
"$venv/bin/python" interop/python/client.py --server_host 127.0.0.1 --server_port "$port" \
    --gen_dir "$gen_dir" --test_case all "$@" || status=$?
if ((status != 0)); then
    show_server_log
fi
exit "$status"
