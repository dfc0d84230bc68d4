#!/usr/bin/env bash
# Install what the RISC-V targets need on a Debian machine (run as root), skipping what is
# there: riscv64-unknown-elf-gcc (its rv32imac/ilp32 and rv32imafc/ilp32f multilibs build the
# RV32 firmware), picolibc for it (Debian's bare-metal RISC-V C library; the toolchain files
# cmake/toolchains/rv32*.cmake use its specs) and qemu-system-riscv32 (the virt machine of the
# rv32imac-qemu and rv32imafc-qemu boards, in qemu-system-misc).
# Usage: bash tools/setup_riscv.sh
# A missing QEMU or toolchain is installed here, never skipped by the tests.
set -euo pipefail

apt_packages=()
need() { # need PROGRAM_OR_FILE PACKAGE...
  local probe="$1"
  shift
  if [[ "$probe" == /* ]]; then
    [ -e "$probe" ] && return 0
  else
    command -v "$probe" >/dev/null && return 0
  fi
  apt_packages+=("$@")
}
need riscv64-unknown-elf-gcc gcc-riscv64-unknown-elf
need /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs picolibc-riscv64-unknown-elf
need qemu-system-riscv32 qemu-system-misc
if ((${#apt_packages[@]})); then
  echo "setup_riscv: installing ${apt_packages[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${apt_packages[@]}"
fi
