# Sourced by the scripts that run Python tools (interop/python/*.sh, deploy/validate.sh):
# `python_venv DIR REQUIREMENTS` makes a venv in DIR (under target/) with REQUIREMENTS from
# PyPI, reinstalling only when the venv is new or the requirements changed.
#
# Environment: PYTHON, the interpreter that creates the venv (default: python3).

python_venv() {
    local venv="$1" requirements="$2"
    local stamp="$venv/.requirements.stamp"
    mkdir -p "$(dirname "$venv")"
    if [[ ! -x "$venv/bin/python" ]]; then
        echo "$(basename "$0"): creating venv $venv" >&2
        rm -rf "$venv"
        "${PYTHON:-python3}" -m venv "$venv"
    fi
    if ! cmp -s "$requirements" "$stamp"; then
        echo "$(basename "$0"): installing $requirements" >&2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
        # Written only after a successful install, so a failed one is retried next run.
        cp "$requirements" "$stamp"
    fi
}
