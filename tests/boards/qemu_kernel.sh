#!/usr/bin/env bash
# QEMU launcher for pytest-embedded-qemu on the Cortex-M and RISC-V machines.
#
# The plugin runs `<this script> <qemu_cli_args...> -qmp ... -drive file=<image>,if=mtd,format=raw`;
# the mps2 and virt machines reject an if=mtd drive (that is for ESP32 flash images). The conftest puts
# the real QEMU program first in qemu_cli_args; this script turns the drive back into
# `-kernel <image>` (an ELF that QEMU loads at its link addresses) and execs the command, so
# pytest-embedded's process is QEMU itself and its exit status is the firmware's.
set -euo pipefail
args=()
while (($#)); do
  if [[ "$1" == "-drive" && $# -ge 2 && "$2" == file=*,if=mtd* ]]; then
    image="${2#file=}"
    args+=(-kernel "${image%%,if=mtd*}")
    shift 2
  else
    args+=("$1")
    shift
  fi
done
exec "${args[@]}"
