#!/usr/bin/env bash
# Install what the ARM targets need on a Debian machine (run as root), skipping what is there:
#   arm-none-eabi-gcc + newlib (Cortex-M firmware), qemu-system-arm (mps2 boards),
#   qemu-user (ARM Linux programs), arm-linux-gnueabihf / aarch64-linux-gnu cross compilers
#   with their C libraries, and pytest-embedded(-qemu) 2.9.3 into the active Python.
# Usage: bash tools/setup_arm.sh [--no-pytest]
#   (after `source tools/setup_host.sh`, so pip is the venv's; --no-pytest: toolchains only)
# A missing QEMU or toolchain is installed here, never skipped by the tests.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/apt_needs.sh"
need arm-none-eabi-gcc gcc-arm-none-eabi
need /usr/lib/arm-none-eabi/newlib/thumb/v7-m/nofp/libc_nano.a libnewlib-arm-none-eabi
need qemu-system-arm qemu-system-arm
need qemu-arm qemu-user
need qemu-aarch64 qemu-user
need arm-linux-gnueabihf-gcc gcc-arm-linux-gnueabihf
need /usr/arm-linux-gnueabihf/include/stdio.h libc6-dev-armhf-cross
need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
need /usr/aarch64-linux-gnu/include/stdio.h libc6-dev-arm64-cross
install_needed setup_arm

[ "${1:-}" = "--no-pytest" ] && exit 0

# pytest-embedded goes into the project's virtual environment, never the system Python.
py="${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${py:-${MICROTRAIN_VENV:-$root/.venv}/bin/python}"
if [ ! -x "$py" ]; then
  echo "setup_arm: no virtual environment; run \`source tools/setup_host.sh --test\` first" >&2
  exit 1
fi
if ! "$py" - <<'PY' 2>/dev/null
from importlib.metadata import version
assert version("pytest-embedded") == version("pytest-embedded-qemu") == "2.9.3"
PY
then
  "$py" -m pip install -q "pytest-embedded==2.9.3" "pytest-embedded-qemu==2.9.3"
fi
