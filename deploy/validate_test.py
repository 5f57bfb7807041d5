"""Breaks the real deployment files in memory, one edit at a time, and expects validate.py to
notice each break (run by deploy/validate.sh)."""

from __future__ import annotations

import copy
import pathlib
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import validate  # noqa: E402

FILES, LOAD_ERRORS = validate.load(HERE)
EXAMPLE = (HERE.parent / validate.EXAMPLE_SOURCE).read_text(encoding="utf-8")


def find(files, kind, name):
    for docs in files.values():
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == kind:
                if (doc.get("metadata") or {}).get("name") == name:
                    return doc
    raise LookupError(f"{kind} {name}")


def greeter_container(files):
    deployment = find(files, "Deployment", validate.DEPLOYMENT)
    return deployment["spec"]["template"]["spec"]["containers"][0]


def set_flag(container, flag, value):
    args = container["args"]
    i = args.index(flag)
    if value is None:
        del args[i : i + 2]
    else:
        args[i + 1] = value


def envoy_config(files):
    return files[validate.ENVOY_CONFIG][0]


def envoy_cluster(files):
    return envoy_config(files)["static_resources"]["clusters"][0]


def envoy_route(files):
    listener = envoy_config(files)["static_resources"]["listeners"][0]
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    return hcm["route_config"]["virtual_hosts"][0]["routes"][0]["route"]


class ValidateTest(unittest.TestCase):
    def failures_after(self, edit):
        files = copy.deepcopy(FILES)
        edit(files)
        return validate.check(files, EXAMPLE).failures

    def assert_caught(self, edit, expected):
        failures = self.failures_after(edit)
        self.assertTrue(
            any(expected in failure for failure in failures),
            f"expected a failure mentioning {expected!r}, got {failures}",
        )

    def test_the_files_as_committed_pass(self):
        self.assertEqual(LOAD_ERRORS, [])
        self.assertEqual(validate.check(FILES, EXAMPLE).failures, [])

    def test_a_file_that_does_not_parse_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            (pathlib.Path(tmp) / "broken.yaml").write_text("a: [1, 2\nb: c\n")
            (pathlib.Path(tmp) / "broken.json").write_text('{"a": }')
            _, errors = validate.load(pathlib.Path(tmp))
        self.assertEqual(len(errors), 2, errors)

    def test_misspelled_kubernetes_field(self):
        def edit(files):
            probe = greeter_container(files)["readinessProbe"]
            probe["periodSecond"] = probe.pop("periodSeconds")

        self.assert_caught(edit, "'periodSecond' was unexpected")

    def test_misspelled_envoy_field(self):
        self.assert_caught(
            lambda f: envoy_cluster(f).update(ignore_health_on_hostremoval=True),
            "Unknown field 'ignore_health_on_hostremoval'",
        )

    def test_misspelled_envoy_field_inside_typed_config(self):
        def edit(files):
            listener = envoy_config(files)["static_resources"]["listeners"][0]
            listener["filter_chains"][0]["filters"][0]["typed_config"]["drain_timeot"] = "5s"

        self.assert_caught(edit, "Unknown field 'drain_timeot'")

    def test_unknown_envoy_enum_value(self):
        self.assert_caught(
            lambda f: envoy_cluster(f).update(lb_policy="LEAST_REQUESTS"),
            "LEAST_REQUESTS",
        )

    def test_deprecated_envoy_field(self):
        self.assert_caught(
            lambda f: envoy_cluster(f).update(dns_refresh_rate="5s"),
            "deprecates",
        )

    def test_readiness_probe_on_another_port(self):
        self.assert_caught(
            lambda f: greeter_container(f)["readinessProbe"]["grpc"].update(port=8080),
            "readinessProbe probes port 8080",
        )

    def test_readiness_probe_by_port_name(self):
        self.assert_caught(
            lambda f: greeter_container(f)["readinessProbe"]["grpc"].update(port="grpc"),
            "take a number",
        )

    def test_readiness_probe_for_another_service(self):
        self.assert_caught(
            lambda f: greeter_container(f)["readinessProbe"]["grpc"].update(service="x.Y"),
            "readinessProbe asks about service 'x.Y'",
        )

    def test_liveness_probe_that_is_not_grpc(self):
        def edit(files):
            probe = greeter_container(files)["livenessProbe"]
            del probe["grpc"]
            probe["tcpSocket"] = {"port": 50051}

        self.assert_caught(edit, "livenessProbe must be a grpc probe")

    def test_grace_period_shorter_than_the_drain(self):
        def edit(files):
            deployment = find(files, "Deployment", validate.DEPLOYMENT)
            deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 20

        self.assert_caught(edit, "terminationGracePeriodSeconds 20 must exceed")

    def test_drain_grace_longer_than_the_grace_period(self):
        self.assert_caught(
            lambda f: set_flag(greeter_container(f), "--drain-grace", "60"),
            "must exceed",
        )

    def test_liveness_that_gives_up_while_draining(self):
        self.assert_caught(
            lambda f: greeter_container(f)["livenessProbe"].update(failureThreshold=1),
            "livenessProbe gives up after 10 s",
        )

    def test_shutdown_delay_beyond_the_grace_period(self):
        self.assert_caught(
            lambda f: greeter_container(f)["args"].extend(["--shutdown-delay", "10"]),
            "plus --shutdown-delay (10 s)",
        )

    def test_missing_drain_grace(self):
        self.assert_caught(
            lambda f: set_flag(greeter_container(f), "--drain-grace", None),
            "--drain-grace SECS is not set",
        )

    def test_missing_max_connection_age(self):
        self.assert_caught(
            lambda f: set_flag(greeter_container(f), "--max-connection-age", None),
            "--max-connection-age SECS is not set",
        )

    def test_server_on_loopback(self):
        self.assert_caught(
            lambda f: set_flag(greeter_container(f), "--addr", "127.0.0.1:50051"),
            "must listen on all interfaces",
        )

    def test_metrics_on_loopback(self):
        self.assert_caught(
            lambda f: set_flag(greeter_container(f), "--metrics-addr", "127.0.0.1:9464"),
            "--metrics-addr '127.0.0.1:9464': not all interfaces",
        )

    def test_scrape_annotation_on_another_port(self):
        def edit(files):
            deployment = next(
                doc for doc in files["kubernetes/deployment.yaml"] if doc["kind"] == "Deployment"
            )
            deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] = "9000"

        self.assert_caught(edit, "prometheus.io/port '9000' is not 9464")

    def test_flag_the_example_does_not_know(self):
        self.assert_caught(
            lambda f: greeter_container(f)["args"].extend(["--max-age", "5"]),
            "--max-age is not a flag",
        )

    def test_service_that_is_not_headless(self):
        self.assert_caught(
            lambda f: find(f, "Service", validate.HEADLESS_SERVICE)["spec"].pop("clusterIP"),
            "is not headless",
        )

    def test_service_targeting_another_port(self):
        def edit(files):
            find(files, "Service", "greeter")["spec"]["ports"][0]["targetPort"] = 8080

        self.assert_caught(edit, "targets 8080")

    def test_envoy_without_http2_upstream(self):
        self.assert_caught(
            lambda f: envoy_cluster(f).pop("typed_extension_protocol_options"),
            "does not speak HTTP/2 upstream",
        )

    def test_envoy_with_a_static_cluster(self):
        self.assert_caught(lambda f: envoy_cluster(f).update(type="STATIC"), "by DNS")

    def test_envoy_without_grpc_health_checks(self):
        def edit(files):
            check = envoy_cluster(files)["health_checks"][0]
            del check["grpc_health_check"]
            check["tcp_health_check"] = {}

        self.assert_caught(edit, "no gRPC health check")

    def test_envoy_without_retries_on_unavailable(self):
        def edit(files):
            envoy_route(files)["retry_policy"]["retry_on"] = "connect-failure,refused-stream"

        self.assert_caught(edit, "does not retry on unavailable")

    def test_envoy_with_the_default_route_timeout(self):
        self.assert_caught(lambda f: envoy_route(f).pop("timeout"), "no explicit timeout")

    def test_envoy_pointing_elsewhere(self):
        def edit(files):
            lb = envoy_cluster(files)["load_assignment"]["endpoints"][0]["lb_endpoints"][0]
            lb["endpoint"]["address"]["socket_address"]["address"] = "greeter.default.svc"

        self.assert_caught(edit, "is not the headless Service")

    def test_envoy_admin_reachable_from_outside(self):
        def edit(files):
            envoy_config(files)["admin"]["address"]["socket_address"]["address"] = "0.0.0.0"

        self.assert_caught(edit, "admin interface must listen on loopback")


if __name__ == "__main__":
    unittest.main()
