#!/usr/bin/env bash
# Miri over the tests of `src/future/`, the one module with `unsafe` (`future/slot.rs`, the
# recycled homes of pending futures): undefined behaviour, leaks and use after free in it are
# errors. Miri needs a nightly toolchain with the `miri` and `rust-src` components; this script
# installs them with rustup when they are missing. A machine that cannot fetch a toolchain
# (no route to rustup's server) skips Miri, saying so; what Miri finds always fails.
#
#   bash scripts/miri.sh
#
# Environment: MIRI_TOOLCHAIN (default: nightly); CARGO_TARGET_DIR (default: target/miri-build,
# kept apart because Miri builds every dependency its own way).
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain="${MIRI_TOOLCHAIN:-nightly}"

if ! rustup component list --toolchain "$toolchain" --installed 2>/dev/null | grep -q '^miri'; then
    echo "miri.sh: installing $toolchain with miri and rust-src (rustup)" >&2
    if ! timeout 600 rustup toolchain install "$toolchain" --profile minimal \
        --component miri,rust-src; then
        echo "miri.sh: SKIPPED: rustup could not install $toolchain with miri here" >&2
        exit 0
    fi
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/miri-build}"
cargo +"$toolchain" miri test -p fastgrpc --lib -- future::
