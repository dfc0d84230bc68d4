#!/usr/bin/env bash
# Install what the RISC-V targets need on a Debian machine (run as root), skipping what is
# there: riscv64-unknown-elf-gcc (its rv32imac/ilp32 and rv32imafc/ilp32f multilibs build the
# RV32 firmware), picolibc for it (Debian's bare-metal RISC-V C library; the toolchain files
# cmake/toolchains/rv32*.cmake use its specs) and qemu-system-riscv32 (the virt machine of the
# rv32imac-qemu and rv32imafc-qemu boards, in qemu-system-misc).
# Usage: bash tools/setup_riscv.sh
# A missing QEMU or toolchain is installed here, never skipped by the tests.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/apt_needs.sh"
need riscv64-unknown-elf-gcc gcc-riscv64-unknown-elf
need /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs picolibc-riscv64-unknown-elf
need qemu-system-riscv32 qemu-system-misc
install_needed setup_riscv
