#!/usr/bin/env bash
# Checks the greeter_server example's health and reflection services with grpcio's own
# clients (grpcio-health-checking, grpcio-reflection): see ecosystem.py.
#
#   interop/python/ecosystem.sh
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

cargo build --example greeter_server
port="$(free_port)"
# A shutdown delay long enough for the client to see NOT_SERVING after it sends SIGTERM.
start_server target/ecosystem-server.log "$port" \
    target/debug/examples/greeter_server --addr "127.0.0.1:$port" --shutdown-delay 1

status=0
"$venv/bin/python" interop/python/ecosystem.py --server_port "$port" --server_pid "$server_pid" \
    || status=$?
if ((status != 0)); then
    show_server_log
fi
exit "$status"
