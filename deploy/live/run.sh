#!/usr/bin/env bash
# The live deployment test (deploy/live/live.py): 3 replicas of greeter_server behind HAProxy
# and behind nginx, restarted one by one under load, one killed, and the same with
# --max-connection-age. HAProxy and nginx come from Debian's packages (installed here when
# missing) and run in the foreground with configs of their own in a temp dir, on loopback
# ports; the clients are grpcio's, from PyPI, in the interop venv.
#
#   deploy/live/run.sh [SCENARIO...]     (default: every scenario, behind both proxies)
#
# Figures go to target/live/PROXY-SCENARIO.json; a failed run keeps its logs beside them.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$script_dir/../.."

if ! command -v haproxy >/dev/null || ! command -v nginx >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy nginx-light >/dev/null
fi

source scripts/python-venv.sh
venv=target/interop-venv
python_venv "$venv" interop/python/requirements.txt

cargo build --example greeter_server
mkdir -p target/live

scenarios=("$@")
if ((${#scenarios[@]} == 0)); then
    scenarios=(defaults delay-and-grace max-connection-age)
fi
for scenario in "${scenarios[@]}"; do
    for proxy in haproxy nginx; do
        echo "== live: $proxy, $scenario"
        "$venv/bin/python" deploy/live/live.py --proxy "$proxy" --scenario "$scenario" \
            --server target/debug/examples/greeter_server --out "target/live/$proxy-$scenario.json"
    done
done
echo "live: ${#scenarios[@]} scenarios x 2 proxies passed"
