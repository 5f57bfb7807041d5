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

venv=target/deploy-venv
requirements=deploy/requirements.txt
stamp="$venv/.requirements.stamp"
python="${PYTHON:-python3}"

log() { echo "validate.sh: $*" >&2; }

mkdir -p target
if [[ ! -x "$venv/bin/python" ]]; then
    log "creating venv $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi
if ! cmp -s "$requirements" "$stamp"; then
    log "installing $requirements"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    # Written only after a successful install, so a failed one is retried next run.
    cp "$requirements" "$stamp"
fi

"$venv/bin/python" deploy/validate.py deploy
"$venv/bin/python" -m unittest --quiet deploy/validate_test.py
