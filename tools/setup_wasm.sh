#!/usr/bin/env bash
# What the wasm32 target and the MicroPython tests need, skipping what is there:
#   clang-14, wasm-ld-14 (lld-14) and wasi-libc from Debian, for `cmake --preset wasm32-wasi`;
#   Node + npm, and MicroPython's WebAssembly port from npm into tools/micropython/node_modules
#   (pinned by tools/micropython/package-lock.json).
# Usage: bash tools/setup_wasm.sh   (as root on Debian 12)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

source "$root/tools/apt_needs.sh"
need clang-14 clang-14
need wasm-ld-14 lld-14
need /usr/include/wasm32-wasi/stdlib.h wasi-libc
need node nodejs
need npm npm
install_needed setup_wasm

port="$root/tools/micropython/node_modules/@micropython/micropython-webassembly-pyscript"
if [ ! -f "$port/micropython.mjs" ]; then
  (cd "$root/tools/micropython" && npm ci --no-audit --no-fund)
fi
