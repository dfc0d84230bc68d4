#!/usr/bin/env bash
# The test command: set up (tools/setup_host.sh --test), then
#   1. build micro_core and the C tests with -Werror, run them with ctest;
#   2. run the Python tests (pytest) against the installed package.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source tools/setup_host.sh --test

build="$root/build/host-tests"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMT_BUILD_TESTS=ON >/dev/null
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure

cd "$root"
python -m pytest -q tests
