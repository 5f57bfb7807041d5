"""A live rolling deploy: replicas of greeter_server behind a real proxy, under load.

One run starts 3 replicas of `greeter_server` on loopback ports and a proxy in front of them
(HAProxy with a gRPC health check, or nginx with `grpc_pass`), then drives grpcio clients
through the proxy while it restarts each replica gracefully (SIGTERM, wait for the exit, start
it again), and then kills one (SIGKILL) and starts it again. The load mixes three kinds of call:

- `slow`: helloworld.Greeter/SayHello, whose handler computes for `--work-us` (20 ms);
- `fast`: grpc.health.v1.Health/Check, answered at once;
- `watch`: grpc.health.v1.Health/Watch streams, each held open for 2 s by its client, which
  then cancels it (the normal end of a watch).

It asserts:
- no call fails during the graceful restarts;
- after the kill, the only calls that fail are ones in flight at that moment (started before
  it, ended at most a few seconds after);
- each replica exits within the bound its flags give, is served calls again within 10 s of its
  restart (seen in the proxy's access log) and gets a share of them before the next event;
- with `--max-connection-age` and no restarts, no call fails and every replica gets a share.

It prints a table of what each kind of call saw and writes the figures as JSON.

Usage: live.py --proxy haproxy|nginx --scenario NAME --server PATH --out FILE.json
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

HERE = os.path.dirname(os.path.abspath(__file__))
REPLICAS = 3
WORK_US = 20_000
SLOW_CLIENTS = 6
FAST_CLIENTS = 2
WATCH_CLIENTS = 2
WATCH_SECONDS = 2.0
CALL_TIMEOUT = 10.0
# Every replica must be served calls again this soon after its restart.
BACK_WITHIN = 10.0
# A replica's share of the calls between its return and the next event, at least.
MIN_SHARE = 0.15
# What may pass between the kill and the end of a call that was in flight on the replica.
KILL_WINDOW = 5.0
# How soon after the kill a call may still start on the killed replica: a proxy learns that a
# replica died only once it reads the close of each connection it pools to it (seen behind
# nginx: calls that started just after the kill went to the dead replica, in 2 runs of 12).
KILL_NOTICE = 0.5

# What an aged-out connection may live beyond its age and its longest call: the GOAWAYs' and
# the PING's round trips, a cancel's way through the proxy (a client ends its call at once; the
# replica learns it when the proxy forwards it), the sampling of connections every 0.1 s.
DRAIN_MARGIN = 1.5

# name: (replica flags, exit bound in seconds after SIGTERM, restarts?, kill?, seconds of load
# without restarts)
SCENARIOS = {
    # Defaults: no drain grace. Watches end within 2 s (their clients cancel them); the
    # bound is the watch plus the 5 s a silent peer may take, and a margin.
    "defaults": ([], WATCH_SECONDS + 5 + 2, True, True, 0),
    # The flags `docs/DEPLOYMENT.md` gives for running behind a balancer.
    "delay-and-grace": (["--shutdown-delay", "2", "--drain-grace", "5"], 2 + 5 + 2, True, True, 0),
    # Connections aged out under load, no restarts.
    "max-connection-age": (["--max-connection-age", "2"], None, False, False, 12),
}


def log(*parts):
    print(f"live.py [{time.strftime('%H:%M:%S')}]:", *parts, file=sys.stderr, flush=True)


def free_port():
    """A free port below the kernel's ephemeral range. A replica restarts on its port, and while
    it is down the kernel could give that port, were it ephemeral, to one of the proxy's own
    connections to another replica: the restart would then fail to bind, and the sampler would
    count the proxy's connection as one to the replica."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        first_ephemeral = int(f.read().split()[0])
    candidates = list(range(min(10000, first_ephemeral // 2), first_ephemeral))
    random.shuffle(candidates)
    for port in candidates[:200]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # none free below the range: any port will do
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, process, limit=30.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process on port {port} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {limit} s")


class Replica:
    def __init__(self, index, server, flags, workdir):
        self.index = index
        self.port = free_port()
        self.server = server
        self.flags = flags
        self.log_path = os.path.join(workdir, f"replica{index}.log")
        self.process = None

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        command = [self.server, "--addr", self.addr, "--workers", "2", "--work-us", str(WORK_US)]
        command += self.flags
        with open(self.log_path, "a") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        wait_listening(self.port, self.process)

    def stop(self, sig, limit=30.0):
        """Sends `sig` and waits for the exit; returns the seconds it took."""
        sent = time.monotonic()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"replica {self.index} still running {limit} s after {sig!r}")
        return time.monotonic() - sent


class Proxy:
    """A proxy in the foreground, with its config and access log in `workdir`."""

    def __init__(self, kind, replicas, workdir):
        self.kind = kind
        self.port = free_port()
        self.workdir = workdir
        self.replicas = replicas
        self.access_log = os.path.join(workdir, f"{kind}-access.log")
        self.process = None

    def start(self):
        with open(os.path.join(HERE, f"{self.kind}.cfg.in")) as template:
            text = template.read()
        servers = "\n".join(self.server_line(r) for r in self.replicas)
        text = (
            text.replace("@PORT@", str(self.port))
            .replace("@SERVERS@", servers)
            .replace("@DIR@", self.workdir)
            .replace("@ACCESS_LOG@", self.access_log)
        )
        config = os.path.join(self.workdir, f"{self.kind}.cfg")
        with open(config, "w") as out:
            out.write(text)
        if self.kind == "haproxy":
            command = ["haproxy", "-db", "-f", config]
            stdout = open(self.access_log, "w")
        else:
            command = ["nginx", "-p", self.workdir, "-c", config, "-g", "daemon off;"]
            stdout = open(os.path.join(self.workdir, "nginx-stdout.log"), "w")
        self.process = subprocess.Popen(command, stdout=stdout, stderr=subprocess.STDOUT)
        wait_listening(self.port, self.process)

    def server_line(self, replica):
        if self.kind == "haproxy":
            return f"    server r{replica.index} {replica.addr}"
        return f"        server {replica.addr} max_fails=1 fail_timeout=2s;"

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def served(self):
        """(wall time, replica index) of every call the proxy logged as sent to a replica."""
        by_addr = {r.addr: r.index for r in self.replicas}
        by_name = {f"r{r.index}": r.index for r in self.replicas}
        served = []
        with open(self.access_log) as lines:
            for line in lines:
                parts = line.split()
                if len(parts) < 4 or not parts[-1].startswith(("/", "http")):
                    continue
                try:
                    at = float(parts[0])
                except ValueError:
                    continue
                if self.kind == "haproxy":
                    replica = by_name.get(parts[1])
                else:
                    # nginx lists every upstream it tried: the last one answered.
                    replica = by_addr.get(parts[-3].split(",")[-1].strip())
                if replica is not None:
                    served.append((at, replica))
        return served


class Connections:
    """Samples the replicas' established TCP connections (from /proc/net/tcp) until stopped:
    when each was first and last seen, to tell how long connections live.

    A connection is its (replica port, peer port) pair while it is seen sample after sample: the
    proxy reuses a peer port for a new connection once the old one is closed (seen behind nginx:
    one port, two connections 5 s apart), so a pair missing from a sample ends its connection."""

    def __init__(self, ports):
        self.ports = set(ports)
        self.seen = []  # [first, last, replica port] of each connection
        self.open = {}  # (replica port, peer port) -> its entry in `seen`, while established
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while not self.stopping.is_set():
            now = time.time()
            still_open = {}
            with open("/proc/net/tcp") as table:
                next(table)
                for line in table:
                    fields = line.split()
                    local, remote, state = fields[1], fields[2], fields[3]
                    port = int(local.split(":")[1], 16)
                    if state == "01" and port in self.ports:
                        key = (port, int(remote.split(":")[1], 16))
                        entry = self.open.get(key)
                        if entry is None:
                            entry = [now, now, port]
                            self.seen.append(entry)
                        entry[1] = now
                        still_open[key] = entry
            self.open = still_open
            time.sleep(0.1)

    def spans(self, since):
        """Each connection first seen after `since`: (seconds seen for, replica port, seconds
        after `since` first seen)."""
        return [(last - first, port, first - since) for first, last, port in self.seen if first >= since]

    def lifetimes(self, since):
        """Seconds each connection first seen after `since` was seen for."""
        return [lived for lived, _, _ in self.spans(since)]

    def longest(self, since, count):
        """The `count` longest-lived connections of `spans`, rounded."""
        return [(round(lived, 2), port, round(at, 2)) for lived, port, at in sorted(self.spans(since), reverse=True)[:count]]


class Load:
    """Client threads calling through the proxy until stopped; every call is recorded."""

    def __init__(self, target):
        self.target = target
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.calls = []  # (kind, start, end, error or None, detail)
        self.threads = []

    def record(self, kind, start, error, detail=None):
        with self.lock:
            self.calls.append((kind, start, time.time(), error, detail))

    def start(self):
        for kind, count in (("slow", SLOW_CLIENTS), ("fast", FAST_CLIENTS), ("watch", WATCH_CLIENTS)):
            for _ in range(count):
                thread = threading.Thread(target=getattr(self, kind), daemon=True)
                thread.start()
                self.threads.append(thread)

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=CALL_TIMEOUT + WATCH_SECONDS + 5)

    def slow(self):
        with grpc.insecure_channel(self.target) as channel:
            say_hello = channel.unary_unary("/helloworld.Greeter/SayHello")
            name = b"live"
            request = b"\x0a" + bytes([len(name)]) + name  # HelloRequest { name }
            while not self.stopping.is_set():
                start = time.time()
                try:
                    reply = say_hello(request, timeout=CALL_TIMEOUT)
                    error = None if b"Hello live!" in reply else f"unexpected reply {reply!r}"
                except grpc.RpcError as e:
                    error = f"{e.code().name}: {e.details()}"
                self.record("slow", start, error)

    def fast(self):
        with grpc.insecure_channel(self.target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while not self.stopping.is_set():
                start = time.time()
                try:
                    stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=CALL_TIMEOUT)
                    error = None
                except grpc.RpcError as e:
                    error = f"{e.code().name}: {e.details()}"
                self.record("fast", start, error)

    def watch(self):
        with grpc.insecure_channel(self.target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while not self.stopping.is_set():
                start = time.time()
                statuses = []
                stream = stub.Watch(health_pb2.HealthCheckRequest(service=""))
                timer = threading.Timer(WATCH_SECONDS, stream.cancel)
                timer.start()
                error = None
                try:
                    for update in stream:
                        statuses.append(health_pb2.HealthCheckResponse.ServingStatus.Name(update.status))
                    error = "the stream ended before its client cancelled it"
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.CANCELLED:
                        error = f"{e.code().name}: {e.details()}"
                timer.cancel()
                self.record("watch", start, error, statuses)


def run(proxy_kind, scenario, server, workdir):
    flags, exit_bound, restarts, kill, steady = SCENARIOS[scenario]
    replicas = [Replica(i, server, flags, workdir) for i in range(REPLICAS)]
    proxy = Proxy(proxy_kind, replicas, workdir)
    events = []  # (kind, replica, wall time, figures)
    exits = []
    load = None
    try:
        for replica in replicas:
            replica.start()
        proxy.start()
        target = f"127.0.0.1:{proxy.port}"
        wait_serving(target)
        load = Load(target)
        connections = Connections(r.port for r in replicas)
        connections.thread.start()
        started = time.time()
        load.start()
        time.sleep(3)
        if steady:
            time.sleep(steady)
        if restarts:
            for replica in replicas:
                events.append(("sigterm", replica.index, time.time()))
                took = replica.stop(signal.SIGTERM)
                exits.append((replica.index, took))
                log(f"{proxy_kind}/{scenario}: replica {replica.index} exited {took:.2f} s after SIGTERM")
                assert took <= exit_bound, f"replica {replica.index} took {took:.2f} s to exit (bound {exit_bound} s)"
                replica.start()
                events.append(("restarted", replica.index, time.time()))
                time.sleep(4)
        kill_at = None
        if kill:
            victim = replicas[0]
            kill_at = time.time()
            events.append(("sigkill", victim.index, kill_at))
            victim.stop(signal.SIGKILL)
            time.sleep(1)
            victim.start()
            events.append(("restarted", victim.index, time.time()))
            time.sleep(4)
        load.stop()
        ended = time.time()
        connections.stopping.set()
    finally:
        if load:
            load.stopping.set()
        proxy.stop()
        for replica in replicas:
            if replica.process and replica.process.poll() is None:
                replica.stop(signal.SIGTERM)
    served = proxy.served()
    figures = judge(proxy_kind, scenario, load.calls, served, events, exits, kill_at, started, ended)
    lifetimes = sorted(connections.lifetimes(started))
    figures["connections"] = len(lifetimes)
    figures["longest_connection_s"] = round(lifetimes[-1], 2) if lifetimes else None
    if "--max-connection-age" in flags:
        age = float(flags[flags.index("--max-connection-age") + 1])
        # Aged out: none outlives its age (give or take 10%) by more than its drain, which
        # (with no grace) lasts as long as the calls in flight on it, taken as the clients
        # measured them.
        longest_call = max(end - start for _, start, end, _, _ in load.calls)
        bound = age * 1.1 + longest_call + DRAIN_MARGIN
        figures["longest_call_s"] = round(longest_call, 2)
        if lifetimes and lifetimes[-1] > bound:
            for kind in ("slow", "fast", "watch"):
                spans = sorted((end - start, start - started) for k, start, end, _, _ in load.calls if k == kind)
                log(f"{proxy_kind}/{scenario}: longest {kind} calls (s, started at +s): "
                    f"{[(round(a, 2), round(b, 2)) for a, b in spans[-3:]]}")
            log(f"{proxy_kind}/{scenario}: longest connections (s, replica port, first seen at +s): "
                f"{connections.longest(started, 5)}")
        assert lifetimes and lifetimes[-1] <= bound, (
            f"{proxy_kind}/{scenario}: a connection lived {lifetimes[-1]:.2f} s "
            f"(bound {bound:.2f} s: the longest call took {longest_call:.2f} s)"
        )
        assert len(lifetimes) >= REPLICAS * steady / (age * 1.1), (
            f"{proxy_kind}/{scenario}: only {len(lifetimes)} connections in {steady} s"
        )
    return figures


def wait_serving(target, limit=20.0):
    """Until a health check through the proxy succeeds on every replica (the proxy's own checks
    have marked them up)."""
    deadline = time.monotonic() + limit
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        good = 0
        while good < 2 * REPLICAS:
            if time.monotonic() > deadline:
                raise AssertionError(f"the proxy at {target} did not serve within {limit} s")
            try:
                stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
                good += 1
            except grpc.RpcError:
                good = 0
                time.sleep(0.1)
    time.sleep(1)


def judge(proxy_kind, scenario, calls, served, events, exits, kill_at, started, ended):
    name = f"{proxy_kind}/{scenario}"
    failures = [c for c in calls if c[3] is not None]

    def in_flight_at_the_kill(call):
        start, end = call[1], call[2]
        return kill_at is not None and start <= kill_at + KILL_NOTICE and kill_at - 0.05 <= end <= kill_at + KILL_WINDOW

    # Any failure but those of calls in flight on the killed replica.
    unexpected = [c for c in failures if not in_flight_at_the_kill(c)]
    for kind, start, end, error, _ in unexpected[:10]:
        log(f"{name}: FAILED {kind} call at +{start - started:.2f} s, ended +{end - started:.2f} s: {error}")
    assert not unexpected, f"{name}: {len(unexpected)} calls failed that were not in flight at a kill"
    in_flight_at_kill = sum(1 for c in calls if kill_at is not None and c[1] <= kill_at <= c[2])

    # Back within 10 s, with a share of the calls until the next event.
    returns = []
    marks = [e[2] for e in events] + [ended]
    for kind, index, at in events:
        if kind != "restarted":
            continue
        after = [t for t, r in served if r == index and t >= at]
        assert after, f"{name}: replica {index} was never served a call after its restart"
        back = min(after) - at
        assert back <= BACK_WITHIN, f"{name}: replica {index} served again only {back:.2f} s after restart"
        window_end = min(m for m in marks if m > at)
        window = [r for t, r in served if min(after) <= t < window_end]
        share = window.count(index) / max(1, len(window))
        assert share >= MIN_SHARE, f"{name}: replica {index} got {share:.0%} of {len(window)} calls after its return"
        returns.append((index, round(back, 2), round(share, 3)))
    if not events:
        window = [r for t, r in served if started + 1 <= t]
        for index in range(REPLICAS):
            share = window.count(index) / max(1, len(window))
            assert share >= MIN_SHARE, f"{name}: replica {index} got {share:.0%} of {len(window)} calls"
            returns.append((index, None, round(share, 3)))

    figures = {"proxy": proxy_kind, "scenario": scenario, "exits_s": [round(t, 2) for _, t in exits],
               "returns": returns, "in_flight_at_kill": in_flight_at_kill, "kinds": {}}
    for kind in ("slow", "fast", "watch"):
        mine = [c for c in calls if c[0] == kind]
        failed = [c for c in mine if c[3] is not None]
        latencies = sorted(c[2] - c[1] for c in mine if c[3] is None)
        entry = {
            "calls": len(mine),
            "failed_at_kill": len(failed),
            "errors": sorted({c[3] for c in failed}),
        }
        if kind == "watch":
            entry["saw_not_serving"] = sum(1 for c in mine if "NOT_SERVING" in (c[4] or []))
        elif latencies:
            entry["p50_ms"] = round(1000 * latencies[len(latencies) // 2], 1)
            entry["max_ms"] = round(1000 * latencies[-1], 1)
        figures["kinds"][kind] = entry
    assert all(figures["kinds"][k]["calls"] > 0 for k in figures["kinds"]), f"{name}: a kind of call never ran"
    return figures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proxy", choices=["haproxy", "nginx"], required=True)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix=f"live-{args.proxy}-") as workdir:
        try:
            figures = run(args.proxy, args.scenario, os.path.abspath(args.server), workdir)
        except Exception:
            kept = os.path.join(os.path.dirname(os.path.abspath(args.out)), f"failed-{args.proxy}-{args.scenario}")
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(workdir, kept)
            log(f"logs kept in {kept}")
            for name in sorted(os.listdir(workdir)):
                if name.endswith(".log"):
                    with open(os.path.join(workdir, name)) as f:
                        tail = f.readlines()[-15:]
                    log(f"--- {name} (last lines)")
                    sys.stderr.writelines(tail)
            raise
    with open(args.out, "w") as out:
        json.dump(figures, out, indent=1)
    log(f"{args.proxy}/{args.scenario}: ok " + json.dumps(figures))


if __name__ == "__main__":
    main()
