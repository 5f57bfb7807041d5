#!/usr/bin/env bash
# The browser test: builds the page (npm packages, buf, esbuild), starts two greeter servers,
# the REST transcoding example (for watch.html's EventSource) and a static file server for the
# pages (another origin), and drives headless Chromium (Debian's `chromium`) through them with
# puppeteer-core. Loopback only; every wait is bounded.
#
#   bash examples/web/run.sh
set -euo pipefail
cd "$(dirname "$0")"

command -v chromium >/dev/null || { echo "chromium missing: apt-get install chromium" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build

# From the workspace root, as every other script builds: built from examples/, cargo would
# resolve another feature set and build the whole tree again.
(cd ../.. && cargo build --quiet --example greeter_server --example transcoding_server)
examples="${CARGO_TARGET_DIR:-../../target}/debug/examples"
server=$examples/greeter_server
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  # Bounded: the servers drain within their 1 s grace.
  for _ in $(seq 50); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && return
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# Free ports in the ephemeral range, chosen by the kernel.
read -r open refusing rest page < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')

# A 1 s drain grace: the page's health stream stays open until the server stops.
"$server" --addr "127.0.0.1:$open" --drain-grace 1 >/dev/null 2>&1 & pids+=($!)
"$server" --addr "127.0.0.1:$refusing" --drain-grace 1 --web-origin https://elsewhere.example \
  >/dev/null 2>&1 & pids+=($!)
"$examples/transcoding_server" --addr "127.0.0.1:$rest" >/dev/null 2>&1 & pids+=($!)
python3 -m http.server "$page" --bind 127.0.0.1 --directory . >/dev/null 2>&1 & pids+=($!)
for port in "$open" "$refusing" "$rest" "$page"; do
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
done

timeout 120 node browser_test.mjs "http://127.0.0.1:$page/index.html" \
  "http://127.0.0.1:$open" "http://127.0.0.1:$refusing" "http://127.0.0.1:$rest"
