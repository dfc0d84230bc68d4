#!/usr/bin/env bash
# The test command: set up (tools/setup_host.sh --test, tools/setup_arm.sh,
# tools/setup_riscv.sh), then
#   1. build micro_core and the C tests with -Werror, run them with ctest;
#   2. cross-build them for ARM Linux (32 and 64 bit) and run them under qemu-user (ctest);
#   3. run the Python tests (pytest) against the installed package, including the board
#      tests (tests/boards): the example firmware fine-tunes under QEMU on every Cortex-M
#      and RISC-V board and must compute the host's bits exactly; before them the core is built for
#      wasm32 (preset wasm32-wasi), and MicroPython on Node trains the digits MLP through the
#      pure facade modules over it, matching the host bit for bit (tests/test_micropython_wasm.py);
#      and MicroPython 1.28 firmware with the native module _microtrain (unix port, QEMU
#      mps2-an500/an385, rv32imac-qemu) fine-tunes with the host's bits (tests/micropython);
#   4. run the C and Python tests again under AddressSanitizer + UBSan, then fuzz the image
#      reader, the session and the checkpoint reader for a bounded time (60 s of a core each,
#      side by side: 90 s on two cores).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Each stage prints when it starts (seconds since this script began: where the budget goes).
stage() { echo "== $(date -u +%H:%M:%S) +${SECONDS}s: $*"; }
build="$root/build/host-tests"
host_build() {
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMT_BUILD_TESTS=ON >/dev/null
  cmake --build "$build"
}
stage "setup"
# pip installs the Python packages on one core for minutes: where the machine already has
# CMake, Ninja and a C compiler, the host build of step 1 (which needs no Python) compiles on
# the other core meanwhile, its output kept for step 1.
early_pid=""
if command -v cmake >/dev/null && command -v ninja >/dev/null && command -v cc >/dev/null; then
  mkdir -p "$build"
  host_build >"$build.log" 2>&1 &
  early_pid=$!
fi
source tools/setup_host.sh --test
bash tools/setup_arm.sh
bash tools/setup_riscv.sh

# The C tests run a program each on one core (under qemu-user on ARM): one per core at a time
# (the sanitizer run does the same), no longer one after the other with the second core idle.
cores="$(nproc 2>/dev/null || echo 1)"
stage "host build and ctest"
if [ -n "$early_pid" ]; then
  early_status=0
  wait "$early_pid" || early_status=$?
  cat "$build.log"
  ((early_status == 0)) || { echo "run_tests: the host build failed" >&2; exit "$early_status"; }
else
  host_build
fi
ctest --test-dir "$build" --output-on-failure -j"$cores"

for preset in arm-linux-gnueabihf aarch64-linux-gnu; do
  stage "ARM Linux $preset: build and ctest under qemu-user"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset" -j"$cores"
done

# The core as a WebAssembly module (preset wasm32-wasi), which tests/test_micropython_wasm.py
# drives from a real MicroPython on Node (tools/setup_wasm.sh: clang-14, lld-14, wasi-libc,
# node/npm and the npm MicroPython port, each only when missing).
stage "wasm32 build"
bash tools/setup_wasm.sh
cmake --preset wasm32-wasi >/dev/null
cmake --build --preset wasm32-wasi

# MicroPython v1.28.0 firmware with microtrain (unix port, QEMU mps2-an500, mps2-an385 and
# rv32imac-qemu) for tests/micropython (build_firmware.sh says where MicroPython's source comes
# from: a cached or vendored tarball, else GitHub); incremental, seconds when built.
stage "MicroPython firmware"
command -v make >/dev/null || { apt-get update && apt-get install -y --no-install-recommends make; }
# Only the firmware the tests run (tests/micropython/mp_setup.py; the fleet's device client is
# mps2-an500); `microtrain micropython --board` builds any other board on first use.
bash tools/micropython/build_firmware.sh unix mps2-an500 mps2-an385 rv32imac-qemu

cd "$root"
# Two workers (pytest-xdist), a test file each at a time (its module fixtures build into
# folders of its own). Most tests wait on one QEMU, one compiler or one Python thread, so the
# two cores share the run; the folders several files build into are locked (tests/boards/
# board_setup.py build_lock, build_firmware.sh's flock), and so are the fleet tests and
# examples, which check the whole machine for leftover processes (tests/machine_wide.py).
stage "pytest"
python -m pytest -q -n 2 --dist loadfile --durations=30 tests  # the slowest 30: where the budget goes

stage "sanitizers"
bash tools/run_sanitizers.sh
# A fixed seed: a slower CI machine explores a prefix of the same sequence a developer ran.
stage "fuzz"
FUZZ_ARGS="-seed=20261130" bash tools/run_fuzz.sh 60
stage "done"
