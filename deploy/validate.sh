#!/usr/bin/env bash
# Validates the deployment files (deploy/validate.py), then checks that the validator still
# catches broken edits (deploy/validate_test.py). Its dependencies (PyYAML and the Kubernetes
# and Envoy schemas, deploy/requirements.txt) come from PyPI into a venv kept in
# target/deploy-venv, reinstalled only when the requirements change.
#
# Environment: PYTHON, the interpreter that creates the venv (default: python3).
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$script_dir/.."

source scripts/python-venv.sh
venv=target/deploy-venv
python_venv "$venv" deploy/requirements.txt

"$venv/bin/python" deploy/validate.py deploy
"$venv/bin/python" -m unittest --quiet deploy/validate_test.py
