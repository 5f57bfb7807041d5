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

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gen_dir=target/interop-python-gen

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

port="${INTEROP_PORT:-$(free_port)}"
start_server target/interop-server.log "$port" "$server_bin" --port "$port"

# --- Client. Extra arguments come last so they can override --test_case.
status=0
"$venv/bin/python" interop/python/client.py --server_host 127.0.0.1 --server_port "$port" \
    --gen_dir "$gen_dir" --test_case all "$@" || status=$?
if ((status != 0)); then
    show_server_log
fi
exit "$status"
