#!/usr/bin/env bash
# Validates the OpenAPI 3.1 documents fastgrpc-build generates for the REST transcoding example
# (proto/transcoding/v1/echo.proto) and for the codegen tests' custom methods and well-known
# types (codegen/tests/protos/shapes.proto) with openapi-spec-validator from PyPI
# (requirements.txt, in a venv kept in target/openapi-venv). The documents are written by
# fastgrpc-build's `openapi` example: the same text as the generated servers' `OPENAPI`,
# indented.
#
# Environment: PYTHON, the interpreter that creates the venv (default: python3).
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$script_dir/../.."

source scripts/python-venv.sh
venv=target/openapi-venv
python_venv "$venv" interop/openapi/requirements.txt

out=target/openapi
rm -rf "$out"
cargo run --quiet -p fastgrpc-build --example openapi -- "$out" proto proto/transcoding/v1/echo.proto
cargo run --quiet -p fastgrpc-build --example openapi -- "$out" codegen/tests/protos \
    codegen/tests/protos/shapes.proto
"$venv/bin/python" interop/openapi/validate.py "$out"/*.openapi.json
