# Shared by run.sh and ecosystem.sh (sourced, not run): the Python venv, a free loopback port,
# and starting a server in the background that is stopped when the script exits.
#
# Environment: PYTHON, the interpreter used to create the venv (default: python3; see
# scripts/python-venv.sh).

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(git -C "$script_dir" rev-parse --show-toplevel 2>/dev/null || (cd "$script_dir/../.." && pwd))"
cd "$repo_root"

log() { echo "$(basename "$0"): $*" >&2; }

source scripts/python-venv.sh
venv=target/interop-venv
python_venv "$venv" interop/python/requirements.txt

# A free loopback port; the tiny window before the server binds it is acceptable for a test.
free_port() {
    "$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

server_pid=""
server_log=""
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

# start_server LOG PORT COMMAND...: runs COMMAND in the background (output to LOG) and waits,
# bounded, until PORT on loopback accepts TCP connections. Sets server_pid.
start_server() {
    server_log="$1"
    local port="$2"
    shift 2
    log "starting $*"
    "$@" >"$server_log" 2>&1 &
    server_pid=$!
    local deadline=$((SECONDS + 30))
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
}
