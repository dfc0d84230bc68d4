#!/usr/bin/env bash
# What the wasm32 target and the MicroPython tests need, skipping what is there:
#   clang-14, wasm-ld-14 (lld-14) and wasi-libc from Debian, for `cmake --preset wasm32-wasi`;
#   Node + npm, and MicroPython's WebAssembly port from npm into tools/micropython/node_modules
#   (pinned by tools/micropython/package-lock.json).
# Usage: bash tools/setup_wasm.sh   (as root on Debian 12)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

apt_packages=()
command -v clang-14 >/dev/null || apt_packages+=(clang-14)
command -v wasm-ld-14 >/dev/null || apt_packages+=(lld-14)
[ -f /usr/include/wasm32-wasi/stdlib.h ] || apt_packages+=(wasi-libc)
command -v node >/dev/null || apt_packages+=(nodejs)
command -v npm >/dev/null || apt_packages+=(npm)
if ((${#apt_packages[@]})); then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${apt_packages[@]}"
fi

port="$root/tools/micropython/node_modules/@micropython/micropython-webassembly-pyscript"
if [ ! -f "$port/micropython.mjs" ]; then
  (cd "$root/tools/micropython" && npm ci --no-audit --no-fund)
fi
