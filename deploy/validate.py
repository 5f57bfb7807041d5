#!/usr/bin/env python3
"""Checks the deployment files under deploy/: every YAML and JSON file parses, and the facts
that keep a rollout graceful still hold across files.

    python deploy/validate.py [DEPLOY_DIR]

Run through deploy/validate.sh, which installs the dependencies (deploy/requirements.txt).
Exits 1 and lists what is wrong when a check fails. The checks, by file:

- every *.yaml / *.yml (all documents) and *.json parses; Kubernetes objects have apiVersion,
  kind and metadata.name, and no two share a kind and name;
- schemas: every Kubernetes object validates strictly (no unknown fields) against the API of
  the oldest Kubernetes version the files are meant for and the newest one kubernetes-validate
  knows; envoy/envoy.yaml loads as an Envoy Bootstrap message (envoy-data-plane: field names,
  enum values and the types inside typed_config are checked against Envoy's API) and uses no
  field that API marks deprecated;
- kubernetes/: the greeter Deployment runs several replicas; its container has a port named
  grpc; readiness and liveness are native gRPC probes (no other handler) on that port's
  number, readiness for helloworld.Greeter and liveness for the whole server (empty name);
  the server listens on all interfaces at that port; --max-connection-age and --drain-grace
  are set; terminationGracePeriodSeconds exceeds the preStop sleep plus any --shutdown-delay
  plus the drain grace, and the liveness probe takes longer than delay and grace to give up;
  every flag in args is one examples/greeter_server.rs parses; --metrics-addr listens on all
  interfaces at the container port named metrics, where the pod's prometheus.io annotations
  point; a headless Service and any
  other Service select the pods and target the grpc port; a PodDisruptionBudget leaves
  replicas running;
- envoy/envoy.yaml: the admin interface listens on loopback; each routed cluster speaks
  HTTP/2 upstream, resolves the headless Service by DNS (STRICT_DNS or LOGICAL_DNS) on the
  Service's port, balances round robin or least request, health-checks with gRPC, and drops
  hosts that leave DNS at once; each route sets an explicit timeout and retries on
  unavailable; every typed_config names its @type;
- the Envoy Deployment mounts the ConfigMap generated from envoy/envoy.yaml, exposes the
  listener's port, and gives its preStop hook less than its grace period;
- kustomization.yaml: every file it lists exists.
"""

from __future__ import annotations

import functools
import importlib
import json
import pathlib
import pkgutil
import re
import sys
import warnings
from typing import Any

import kubernetes_validate
import yaml

DEPLOYMENT = "greeter"
CONTAINER = "greeter"
HEADLESS_SERVICE = "greeter-headless"
READINESS_SERVICE = "helloworld.Greeter"
ENVOY_CONFIG = "envoy/envoy.yaml"
ENVOY_DEPLOYMENT = "greeter-envoy"
EXAMPLE_SOURCE = "examples/greeter_server.rs"

HTTP_PROTOCOL_OPTIONS = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
# Kubernetes defaults where a field is left out.
DEFAULT_GRACE_SECONDS = 30
# The oldest Kubernetes the manifests target: native gRPC probes are GA since 1.27, the preStop
# sleep action is on by default (beta) since 1.30.
OLDEST_KUBERNETES = "1.30"


Docs = dict[str, list[Any]]


def load(root: pathlib.Path) -> tuple[Docs, list[str]]:
    """Parses every YAML and JSON file under `root`: {relative path: [documents]}, errors."""
    files: Docs = {}
    errors = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in (".yaml", ".yml", ".json"):
            continue
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".json":
                docs = [json.loads(text)]
            else:
                docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
        except (yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError) as error:
            errors.append(f"{rel}: does not parse: {error}")
            continue
        if not docs:
            errors.append(f"{rel}: holds no document")
            continue
        files[rel] = docs
    return files, errors


class Checks:
    """Collects failures; `ok` counts the checks that held."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.ok = 0

    def that(self, condition: bool, where: str, message: str) -> bool:
        if condition:
            self.ok += 1
        else:
            self.failures.append(f"{where}: {message}")
        return condition

    def fail(self, where: str, message: str) -> None:
        self.that(False, where, message)


def check(files: Docs, example_source: str) -> Checks:
    """Runs every check over parsed files (as `load` returns them)."""
    c = Checks()
    objects = kubernetes_objects(files, c)
    check_kubernetes_schemas(objects, c)
    deployment = objects.get(("Deployment", DEPLOYMENT))
    pod: dict[str, Any] = {}
    if c.that(deployment is not None, "kubernetes", f"no Deployment named {DEPLOYMENT}"):
        where, deployment = deployment
        pod = check_deployment(deployment, where, example_source, c)
    if pod:
        check_services(objects, pod, c)
        check_disruption_budget(objects, pod, c)
    if c.that(ENVOY_CONFIG in files, ENVOY_CONFIG, "missing or does not parse"):
        check_envoy_schema(files[ENVOY_CONFIG][0], c)
        service_port = pod.get("service_ports", {}).get(HEADLESS_SERVICE)
        listener_ports = check_envoy(files[ENVOY_CONFIG][0], service_port, c)
        check_envoy_deployment(objects, files, listener_ports, c)
    check_kustomization(files, c)
    return c


def kubernetes_objects(files: Docs, c: Checks) -> dict[tuple[str, str], tuple[str, dict]]:
    """{(kind, name): (file, object)} for every document that looks like a Kubernetes object."""
    objects: dict[tuple[str, str], tuple[str, dict]] = {}
    for rel, docs in files.items():
        if rel == ENVOY_CONFIG:
            continue
        for doc in docs:
            if not isinstance(doc, dict) or "kind" not in doc:
                continue
            kind = doc.get("kind")
            name = (doc.get("metadata") or {}).get("name")
            c.that(bool(doc.get("apiVersion")), rel, f"{kind} without apiVersion")
            if kind == "Kustomization":
                continue
            if not c.that(bool(name), rel, f"{kind} without metadata.name"):
                continue
            c.that((kind, name) not in objects, rel, f"{kind} {name} defined twice")
            objects[(kind, name)] = (rel, doc)
    return objects


def check_kubernetes_schemas(objects: dict, c: Checks) -> None:
    versions = sorted({OLDEST_KUBERNETES, kubernetes_validate.latest_version()})
    for (kind, name), (where, obj) in objects.items():
        for version in versions:
            problem = kubernetes_schema_problem(json.dumps(obj, sort_keys=True), version)
            c.that(problem is None, where, f"{kind} {name}: {problem}")


@functools.cache
def kubernetes_schema_problem(obj_json: str, version: str) -> str | None:
    """What is wrong with an object (as JSON) for a Kubernetes version, or None. Cached: the
    tests check the same unchanged objects many times."""
    try:
        kubernetes_validate.validate(json.loads(obj_json), version, strict=True)
        return None
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(part) for part in error.path)
        return f"is not valid Kubernetes {version}: {path}: {error.message}"
    except (
        kubernetes_validate.SchemaNotFoundError,
        kubernetes_validate.utils.VersionNotSupportedError,
    ) as error:
        return error.message


def check_envoy_schema(config: Any, c: Checks) -> None:
    """Loads the config as Envoy's Bootstrap message, which rejects unknown fields and values."""
    problem, deprecated = envoy_schema_problems(json.dumps(config, sort_keys=True))
    c.that(problem is None, ENVOY_CONFIG, f"is not a valid Envoy bootstrap: {problem}")
    c.that(not deprecated, ENVOY_CONFIG, f"uses fields Envoy's API deprecates: {deprecated}")


@functools.cache
def envoy_schema_problems(config_json: str) -> tuple[str | None, list[str]]:
    """(why the config is not a Bootstrap or None, deprecated fields it uses). Cached like
    kubernetes_schema_problem."""
    problem = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        try:
            envoy_bootstrap().from_dict(json.loads(config_json))
        except (KeyError, ValueError, TypeError) as error:
            problem = str(error)
    deprecated = sorted({str(w.message) for w in caught if "is deprecated" in str(w.message)})
    return problem, deprecated


@functools.cache
def envoy_bootstrap():
    """The Bootstrap message class, with every Envoy message registered (typed_config needs the
    extensions' types)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import envoy_data_plane
        from envoy_data_plane.envoy.config.bootstrap.v3 import Bootstrap

    with warnings.catch_warnings():
        # The generated classes trip pydantic's own deprecation notices; they are not ours.
        warnings.simplefilter("ignore")
        for module in pkgutil.walk_packages(envoy_data_plane.__path__, "envoy_data_plane."):
            importlib.import_module(module.name)
    return Bootstrap


def selects(selector: dict | None, labels: dict) -> bool:
    """Whether a label selector (matchLabels form or a plain map) selects `labels`."""
    if not selector:
        return False
    wanted = selector["matchLabels"] if "matchLabels" in selector else selector
    return all(labels.get(key) == value for key, value in wanted.items())


def flag_values(args: list[str]) -> dict[str, str | None]:
    """`--flag value` pairs of a container's args (a flag without a value maps to None)."""
    flags: dict[str, str | None] = {}
    i = 0
    while i < len(args):
        arg = str(args[i])
        if arg.startswith("--"):
            takes_value = i + 1 < len(args) and not str(args[i + 1]).startswith("--")
            flags[arg] = str(args[i + 1]) if takes_value else None
            i += 2 if takes_value else 1
        else:
            i += 1
    return flags


def seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def check_grpc_probe(
    probe: dict | None, kind: str, port: int, service: str, where: str, c: Checks
) -> None:
    if not c.that(isinstance(probe, dict), where, f"no {kind}"):
        return
    handlers = [h for h in PROBE_HANDLERS if h in probe]
    c.that(handlers == ["grpc"], where, f"{kind} must be a grpc probe only, has {handlers}")
    grpc = probe.get("grpc") or {}
    c.that(
        grpc.get("port") == port,
        where,
        f"{kind} probes port {grpc.get('port')!r}, the grpc container port is {port} "
        "(gRPC probes take a number, not a port name)",
    )
    c.that(
        (grpc.get("service") or "") == service,
        where,
        f"{kind} asks about service {grpc.get('service')!r}, expected {service!r}",
    )


def prestop_sleep(container: dict) -> float:
    """Seconds the container's preStop hook sleeps (a sleep action, or `sleep N` commands)."""
    hook = ((container.get("lifecycle") or {}).get("preStop")) or {}
    if "sleep" in hook:
        return float((hook["sleep"] or {}).get("seconds", 0))
    command = " ".join(str(part) for part in ((hook.get("exec") or {}).get("command") or []))
    return float(sum(float(n) for n in re.findall(r"\bsleep\s+(\d+(?:\.\d+)?)", command)))


def check_deployment(obj: dict, where: str, example_source: str, c: Checks) -> dict[str, Any]:
    """Checks the greeter Deployment; returns what the other checks need about its pods."""
    where = f"{where}: Deployment {DEPLOYMENT}"
    spec = obj.get("spec") or {}
    c.that((spec.get("replicas") or 1) >= 2, where, "runs fewer than 2 replicas")
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    c.that(selects(spec.get("selector"), labels), where, "selector does not match the pod labels")
    pod_spec = template.get("spec") or {}
    containers = {ct.get("name"): ct for ct in pod_spec.get("containers") or []}
    container = containers.get(CONTAINER)
    if not c.that(container is not None, where, f"no container named {CONTAINER}"):
        return {}
    ports = {p.get("name"): p for p in container.get("ports") or []}
    grpc_port = ports.get("grpc")
    if not c.that(grpc_port is not None, where, "no container port named grpc"):
        return {}
    port = grpc_port.get("containerPort")
    c.that(grpc_port.get("protocol", "TCP") == "TCP", where, "the grpc port is not TCP")

    readiness = container.get("readinessProbe")
    check_grpc_probe(readiness, "readinessProbe", port, READINESS_SERVICE, where, c)
    check_grpc_probe(container.get("livenessProbe"), "livenessProbe", port, "", where, c)
    if container.get("startupProbe") is not None:
        check_grpc_probe(container.get("startupProbe"), "startupProbe", port, "", where, c)

    c.that("command" not in container, where, "overrides the image's entrypoint (the server)")
    args = [str(a) for a in container.get("args") or []]
    flags = flag_values(args)
    addr = flags.get("--addr") or ""
    host, _, addr_port = addr.rpartition(":")
    c.that(
        host in ("0.0.0.0", "[::]"),
        where,
        f"--addr {addr!r}: the server must listen on all interfaces, probes come to the pod IP",
    )
    c.that(addr_port == str(port), where, f"--addr {addr!r} is not the grpc port {port}")
    for flag in flags:
        c.that(
            f'"{flag}"' in example_source,
            where,
            f"{flag} is not a flag of {EXAMPLE_SOURCE}",
        )
    check_metrics(template, ports, flags, where, c)
    age = seconds(flags.get("--max-connection-age"))
    c.that(age is not None and age > 0, where, "--max-connection-age SECS is not set")
    grace = seconds(flags.get("--drain-grace"))
    # --shutdown-delay: after the signal the server keeps serving, health NOT_SERVING, first.
    delay = seconds(flags.get("--shutdown-delay")) or 0.0
    if c.that(grace is not None and grace > 0, where, "--drain-grace SECS is not set"):
        sleep = prestop_sleep(container)
        period = pod_spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        c.that(
            period > sleep + delay + grace,
            where,
            f"terminationGracePeriodSeconds {period} must exceed the preStop sleep ({sleep:g} s) "
            f"plus --shutdown-delay ({delay:g} s) plus --drain-grace ({grace:g} s), or the "
            "kubelet kills calls still draining",
        )
        liveness = container.get("livenessProbe") or {}
        failing = liveness.get("periodSeconds", 10) * liveness.get("failureThreshold", 3)
        c.that(
            failing > delay + grace,
            where,
            f"livenessProbe gives up after {failing} s of failures, within the shutdown delay "
            f"and drain grace ({delay + grace:g} s) during which the server is NOT_SERVING or "
            "refuses new connections",
        )
    return {"labels": labels, "port": port, "replicas": spec.get("replicas") or 1}


def check_metrics(template: dict, ports: dict, flags: dict, where: str, c: Checks) -> None:
    """--metrics-addr listens on all interfaces at the container port named metrics, and the
    pod's prometheus.io annotations send the scraper there."""
    addr = flags.get("--metrics-addr")
    if not c.that(addr is not None, where, "--metrics-addr is not set: nothing to scrape"):
        return
    host, _, addr_port = addr.rpartition(":")
    c.that(host in ("0.0.0.0", "[::]"), where, f"--metrics-addr {addr!r}: not all interfaces")
    metrics_port = (ports.get("metrics") or {}).get("containerPort")
    c.that(
        str(metrics_port) == addr_port,
        where,
        f"no container port named metrics at --metrics-addr's port {addr_port}",
    )
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    c.that(annotations.get("prometheus.io/scrape") == "true", where, "pods not marked for scraping")
    c.that(
        annotations.get("prometheus.io/port") == addr_port,
        where,
        f"prometheus.io/port {annotations.get('prometheus.io/port')!r} is not {addr_port}",
    )
    c.that(annotations.get("prometheus.io/path") == "/metrics", where, "prometheus.io/path is not /metrics")


def check_services(objects: dict, pod: dict[str, Any], c: Checks) -> None:
    pod["service_ports"] = {}
    headless = objects.get(("Service", HEADLESS_SERVICE))
    if c.that(headless is not None, "kubernetes", f"no Service named {HEADLESS_SERVICE}"):
        where, svc = headless
        c.that(
            (svc.get("spec") or {}).get("clusterIP") == "None",
            f"{where}: Service {HEADLESS_SERVICE}",
            "is not headless (clusterIP: None): its DNS name must list the pods",
        )
    for (kind, name), (where, svc) in objects.items():
        spec = svc.get("spec") or {}
        if kind != "Service" or not selects(spec.get("selector"), pod["labels"]):
            continue
        where = f"{where}: Service {name}"
        grpc_ports = [p for p in spec.get("ports") or [] if p.get("name") == "grpc"]
        if not c.that(len(grpc_ports) == 1, where, "has no port named grpc"):
            continue
        service_port = grpc_ports[0]
        c.that(
            service_port.get("targetPort", service_port.get("port")) in ("grpc", pod["port"]),
            where,
            f"targets {service_port.get('targetPort')!r}, not the pods' grpc port",
        )
        c.that(
            service_port.get("appProtocol") in (None, "kubernetes.io/h2c"),
            where,
            "appProtocol of a gRPC port should be kubernetes.io/h2c",
        )
        pod["service_ports"][name] = service_port.get("port")
    c.that(
        HEADLESS_SERVICE in pod["service_ports"],
        "kubernetes",
        f"Service {HEADLESS_SERVICE} does not select the {DEPLOYMENT} pods",
    )


def check_disruption_budget(objects: dict, pod: dict[str, Any], c: Checks) -> None:
    for (kind, name), (where, pdb) in objects.items():
        spec = pdb.get("spec") or {}
        if kind != "PodDisruptionBudget" or not selects(spec.get("selector"), pod["labels"]):
            continue
        where = f"{where}: PodDisruptionBudget {name}"
        if isinstance(spec.get("minAvailable"), int):
            c.that(
                spec["minAvailable"] < pod["replicas"], where, "minAvailable blocks every eviction"
            )
        if isinstance(spec.get("maxUnavailable"), int):
            c.that(
                0 < spec["maxUnavailable"] < pod["replicas"],
                where,
                "maxUnavailable must let some but not all replicas go",
            )


def typed_configs(node: Any, path: str = ""):
    """Every (path, value) under a key named typed_config, recursively."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "typed_config":
                yield f"{path}.{key}", value
            yield from typed_configs(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from typed_configs(value, f"{path}[{i}]")


def check_envoy(config: Any, service_port: int | None, c: Checks) -> list[int]:
    """Checks envoy.yaml; returns the listeners' ports."""
    where = ENVOY_CONFIG
    if not c.that(isinstance(config, dict), where, "is not a mapping"):
        return []
    admin = ((config.get("admin") or {}).get("address") or {}).get("socket_address") or {}
    if admin:
        c.that(
            admin.get("address") in ("127.0.0.1", "::1"),
            where,
            "the admin interface must listen on loopback only",
        )
    for path, typed in typed_configs(config):
        c.that(isinstance(typed, dict) and "@type" in typed, where, f"{path} has no @type")

    resources = config.get("static_resources") or {}
    clusters = {cl.get("name"): cl for cl in resources.get("clusters") or []}
    listener_ports = []
    routed = set()
    for listener in resources.get("listeners") or []:
        port = ((listener.get("address") or {}).get("socket_address") or {}).get("port_value")
        listener_ports.append(port)
        for chain in listener.get("filter_chains") or []:
            for flt in chain.get("filters") or []:
                hcm = flt.get("typed_config") or {}
                for vhost in ((hcm.get("route_config") or {}).get("virtual_hosts")) or []:
                    for route in vhost.get("routes") or []:
                        action = route.get("route") or {}
                        cluster = action.get("cluster")
                        rwhere = f"{where}: route to {cluster}"
                        if not c.that(cluster in clusters, rwhere, "no such cluster"):
                            continue
                        routed.add(cluster)
                        c.that(
                            "timeout" in action,
                            rwhere,
                            "no explicit timeout (Envoy's default of 15 s cuts streaming calls)",
                        )
                        retry_on = ((action.get("retry_policy") or {}).get("retry_on")) or ""
                        c.that(
                            "unavailable" in retry_on.split(","),
                            rwhere,
                            "does not retry on unavailable",
                        )
    c.that(bool(routed), where, "no route leads to a cluster")
    for name in sorted(routed):
        check_envoy_cluster(clusters[name], service_port, c)
    return listener_ports


def check_envoy_cluster(cluster: dict, service_port: int | None, c: Checks) -> None:
    where = f"{ENVOY_CONFIG}: cluster {cluster.get('name')}"
    options = (cluster.get("typed_extension_protocol_options") or {}).get(HTTP_PROTOCOL_OPTIONS)
    http2 = ((options or {}).get("explicit_http_config") or {}).get("http2_protocol_options")
    c.that(
        http2 is not None,
        where,
        f"does not speak HTTP/2 upstream ({HTTP_PROTOCOL_OPTIONS} explicit_http_config "
        "http2_protocol_options)",
    )
    c.that(
        cluster.get("type") in ("STRICT_DNS", "LOGICAL_DNS"),
        where,
        "must resolve the headless Service by DNS (STRICT_DNS or LOGICAL_DNS)",
    )
    c.that(
        cluster.get("lb_policy", "ROUND_ROBIN") in ("ROUND_ROBIN", "LEAST_REQUEST"),
        where,
        "balances neither round robin nor least request",
    )
    addresses = [
        ((ep.get("endpoint") or {}).get("address") or {}).get("socket_address") or {}
        for group in ((cluster.get("load_assignment") or {}).get("endpoints")) or []
        for ep in group.get("lb_endpoints") or []
    ]
    if c.that(bool(addresses), where, "has no endpoint"):
        for address in addresses:
            host = str(address.get("address", ""))
            c.that(
                host == HEADLESS_SERVICE or host.startswith(f"{HEADLESS_SERVICE}."),
                where,
                f"endpoint {host!r} is not the headless Service {HEADLESS_SERVICE}",
            )
            c.that(
                service_port is None or address.get("port_value") == service_port,
                where,
                f"endpoint port {address.get('port_value')} is not the Service's {service_port}",
            )
    checks = cluster.get("health_checks") or []
    c.that(
        any("grpc_health_check" in hc for hc in checks),
        where,
        "has no gRPC health check (grpc.health.v1.Health)",
    )
    c.that(
        cluster.get("ignore_health_on_host_removal") is True,
        where,
        "keeps sending calls to pods that left DNS while their health checks still pass "
        "(set ignore_health_on_host_removal)",
    )


def check_envoy_deployment(objects: dict, files: Docs, listener_ports: list[int], c: Checks):
    found = objects.get(("Deployment", ENVOY_DEPLOYMENT))
    if found is None:
        return
    where, obj = found
    where = f"{where}: Deployment {ENVOY_DEPLOYMENT}"
    pod_spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    generated = {
        gen.get("name"): gen
        for kustomization in files.get("kustomization.yaml") or []
        for gen in kustomization.get("configMapGenerator") or []
    }
    volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
    config_volumes = [
        name
        for name, v in volumes.items()
        if any(
            str(f).split("=", 1)[-1] == ENVOY_CONFIG
            for f in (generated.get((v.get("configMap") or {}).get("name")) or {}).get("files", [])
        )
    ]
    c.that(
        bool(config_volumes),
        where,
        f"mounts no ConfigMap generated from {ENVOY_CONFIG} (kustomization.yaml)",
    )
    for container in pod_spec.get("containers") or []:
        ports = [p.get("containerPort") for p in container.get("ports") or []]
        c.that(
            set(listener_ports) <= set(ports),
            where,
            f"container ports {ports} do not expose the listener ports {listener_ports}",
        )
        sleep = prestop_sleep(container)
        period = pod_spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        c.that(period > sleep, where, f"preStop sleeps {sleep:g} s of a {period} s grace period")


def check_kustomization(files: Docs, c: Checks) -> None:
    docs = files.get("kustomization.yaml")
    if not docs:
        return
    kustomization = docs[0]
    listed = list(kustomization.get("resources") or [])
    for gen in kustomization.get("configMapGenerator") or []:
        listed += [str(f).split("=", 1)[-1] for f in gen.get("files") or []]
    for rel in listed:
        c.that(rel in files, "kustomization.yaml", f"lists {rel}, which is not a parsed file here")


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parent
    repo = root.resolve().parent
    files, errors = load(root)
    example = repo / EXAMPLE_SOURCE
    example_source = example.read_text(encoding="utf-8") if example.exists() else ""
    result = check(files, example_source)
    failures = errors + result.failures
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"deploy: {len(files)} files parsed; {result.ok} checks passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
