"""Checks the example greeter_server's standard services with grpcio's own clients.

- Server reflection, as `grpcurl list` / `describe` use it: the service list over v1alpha
  (grpcio-reflection's client) and v1 (the same messages on the v1 method path), then a call
  to helloworld.Greeter/SayHello built only from the descriptors reflection returned.
- Health, as a Kubernetes gRPC probe asks it: SERVING for "" and helloworld.Greeter,
  NOT_FOUND for an unknown service; then, after SIGTERM to the server (started with a
  shutdown delay), NOT_SERVING while it still answers, and finally the server exits.

Usage: ecosystem.py --server_port PORT --server_pid PID
"""

import argparse
import os
import signal
import sys
import time

import grpc
from google.protobuf import descriptor_pool, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

TIMEOUT = 5
EXPECTED_SERVICES = {
    "helloworld.Greeter",
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
}


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def services_v1alpha(channel):
    return set(ProtoReflectionDescriptorDatabase(channel).get_services())


def services_v1(channel):
    # grpc.reflection.v1 has the same messages as v1alpha; only the package differs.
    info = channel.stream_stream(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    (response,) = list(info(iter([request]), timeout=TIMEOUT))
    return {service.name for service in response.list_services_response.service}


def call_through_reflection(channel):
    """What `grpcurl -d '{"name": ...}' helloworld.Greeter/SayHello` does."""
    pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    method = pool.FindServiceByName("helloworld.Greeter").FindMethodByName("SayHello")
    check(method.input_type.full_name == "helloworld.HelloRequest", method.input_type.full_name)
    request_class = message_factory.GetMessageClass(method.input_type)
    reply_class = message_factory.GetMessageClass(method.output_type)
    say_hello = channel.unary_unary(
        "/helloworld.Greeter/SayHello",
        request_serializer=request_class.SerializeToString,
        response_deserializer=reply_class.FromString,
    )
    reply = say_hello(request_class(name="reflection"), timeout=TIMEOUT)
    check(reply.message == "Hello reflection!", f"reply {reply.message!r}")


def health_status(channel, service):
    stub = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service=service)
    return stub.Check(request, timeout=TIMEOUT).status


def check_health(channel):
    serving = health_pb2.HealthCheckResponse.SERVING
    for service in ["", "helloworld.Greeter"]:
        status = health_status(channel, service)
        check(status == serving, f"health of {service!r}: {status}")
    try:
        health_status(channel, "no.such.Service")
        raise AssertionError("an unknown service got a health status")
    except grpc.RpcError as error:
        check(error.code() == grpc.StatusCode.NOT_FOUND, f"unknown service: {error.code()}")


def check_drain(channel, server_pid):
    """SIGTERM: NOT_SERVING while the shutdown delay lasts, then the process ends."""
    os.kill(server_pid, signal.SIGTERM)
    not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
    deadline = time.monotonic() + TIMEOUT
    while True:
        status = health_status(channel, "helloworld.Greeter")
        if status == not_serving:
            break
        check(time.monotonic() < deadline, f"still {status} {TIMEOUT} s after SIGTERM")
        time.sleep(0.05)
    check(health_status(channel, "") == not_serving, "overall health not NOT_SERVING")
    deadline = time.monotonic() + 3 * TIMEOUT
    while time.monotonic() < deadline:
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError("the server did not exit after its shutdown delay")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server_host", default="127.0.0.1")
    parser.add_argument("--server_port", type=int, required=True)
    parser.add_argument("--server_pid", type=int, required=True)
    args = parser.parse_args()

    target = f"{args.server_host}:{args.server_port}"
    steps = [
        ("reflection v1alpha lists the services", lambda ch: check(
            services_v1alpha(ch) == EXPECTED_SERVICES, f"v1alpha: {services_v1alpha(ch)}")),
        ("reflection v1 lists the services", lambda ch: check(
            services_v1(ch) == EXPECTED_SERVICES, f"v1: {services_v1(ch)}")),
        ("a call built from reflected descriptors", call_through_reflection),
        ("health: SERVING, NOT_FOUND", check_health),
        ("SIGTERM: NOT_SERVING, then exit", lambda ch: check_drain(ch, args.server_pid)),
    ]
    failed = 0
    with grpc.insecure_channel(target) as channel:
        for name, step in steps:
            try:
                step(channel)
                print(f"PASS {name}")
            except Exception as error:  # report every failing step, not only the first
                failed += 1
                print(f"FAIL {name}: {error!r}")
    print(f"ecosystem: {len(steps) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
