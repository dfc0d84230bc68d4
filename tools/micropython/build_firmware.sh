#!/usr/bin/env bash
# Build MicroPython v1.28.0 with microtrain: the facade's pure modules frozen
# (micropython/manifest.py, which includes py_facade/manifest.py) and the native backend
# _microtrain (micropython/_microtrain/, the C core inside) linked through USER_C_MODULES.
#
#   bash tools/micropython/build_firmware.sh [--variant full|frozen|bare] [PORT ...]
#   bash tools/micropython/build_firmware.sh --list       (the ports it builds, one a line)
#
#   PORT           output                                         MicroPython port and board
#   unix           build/micropython/unix/micropython             ports/unix, standard variant
#   mps2-an500     build/micropython/mps2-an500/firmware.elf      ports/qemu MPS2_AN500 (Cortex-M7, FPv5-D16)
#   mps2-an385     build/micropython/mps2-an385/firmware.elf      ports/qemu MPS2_AN385 (Cortex-M3, soft float)
#   rv32imac-qemu  build/micropython/rv32imac-qemu/firmware.elf   ports/qemu VIRT_RV32 (RV32IMAC, soft float)
#   mps2-an386     build/micropython/mps2-an386/firmware.elf      boards/MPS2_AN386 (Cortex-M4F, FPv4-SP)
#   mps2-an505     build/micropython/mps2-an505/firmware.elf      boards/MPS2_AN505 (Cortex-M33, FPv5-SP)
#   mps3-an547     build/micropython/mps3-an547/firmware.elf      boards/MPS3_AN547 (Cortex-M55, Helium)
#
# The mps boards are every Cortex-M board the core runs on (boards/ of the repository).
# boards/<BOARD>/ here holds microtrain's definitions of those ports/qemu lacks or lays out
# too small (copied into ports/qemu/boards/ before the build); the Python runner's list is
# microtrain.micropython_runner.run.BOARDS, which tests/micropython checks against --list.
# No PORT: all of them. --variant (default full) builds, for the README's size comparison,
# `frozen` (the pure modules, no native module) or `bare` (no microtrain at all) into
# build/micropython/<port>-<variant>/.
#
# The qemu boards use double-precision Python floats (MICROPY_FLOAT_IMPL=double; MPS2_AN385
# and VIRT_RV32 default to single) so that the training loop's sums are the host's doubles,
# and a heap of MICROPY_HEAP_SIZE bytes (default 2 MiB of the mps2 boards' 4 MiB code+data
# RAM, of the AN547's 4 MiB SRAM, of VIRT_RV32's RAM made 8 MiB below; MicroPython's default
# of 140 KiB cannot hold the digits data set).
#
# The qemu builds also enable littlefs (MICROPY_VFS_LFS2=1), in every variant, for the
# writable RAM disk of `microtrain micropython --out` (a script's checkpoints come back that
# way); the boards have no other writable storage.
#
# MicroPython's source, the first of: $MICROPYTHON_TARBALL (a tarball of tag v1.28.0 as `git
# archive` writes it); the copy this script cached in ~/.cache/microtrain/ (or
# $XDG_CACHE_HOME/microtrain) on an earlier run; a shared/vendor/ copy in a folder beside an
# ancestor of the repository; a shallow clone of tag v1.28.0 from
# github.com/micropython/micropython. Its sha256 is checked against the release's, and a
# tarball found anywhere but the cache is cached, so a later clone of the repository on the
# same machine needs no network. Unpacked once into build/micropython/src/; make keeps later
# builds incremental.
# Needs make, gcc, arm-none-eabi-gcc and riscv64-unknown-elf-gcc with picolibc for the boards
# (bash tools/setup_arm.sh, tools/setup_riscv.sh), and python3.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/build/micropython"
src="$out/src/micropython-1.28.0"
jobs="${MICROTRAIN_JOBS:-2}"
heap="${MICROPY_HEAP_SIZE:-2097152}"
variant=full
ports=()
# the ports: unix, ports/qemu's own boards microtrain uses, and microtrain's board definitions
all_ports="unix mps2-an500 mps2-an385 rv32imac-qemu"
for dir in "$root"/tools/micropython/boards/*/; do
  [ -d "$dir" ] && all_ports+=" $(basename "$dir" | tr 'A-Z_' 'a-z-')"
done
while (($#)); do
  case "$1" in
    --variant) variant="$2"; shift 2 ;;
    --list) printf '%s\n' $all_ports; exit 0 ;;
    -h|--help) sed -n '2,44p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "build_firmware: unknown option $1 (--variant, --list)" >&2; exit 2 ;;
    *) case " $all_ports " in
         *" $1 "*) ports+=("$1"); shift ;;
         *) echo "build_firmware: unknown port $1 (ports: $all_ports)" >&2; exit 2 ;;
       esac ;;
  esac
done
((${#ports[@]})) || read -r -a ports <<<"$all_ports"
case "$variant" in full|frozen|bare) ;; *) echo "build_firmware: --variant full|frozen|bare" >&2; exit 2 ;; esac

# One build at a time in build/micropython (two test workers, or a user's two shells, would
# otherwise unpack and make into the same trees): the second waits, then finds them built.
mkdir -p "$out"
exec 9>"$out/.build-lock"
flock 9

# ---- MicroPython's source, once
tarball_name=micropython-1.28.0.tar.gz
tarball_sha256=91c86ac1d48be2ac53a402bb7f26462d2a09382cde434f8def085e333ce93dee
cache="${XDG_CACHE_HOME:-$HOME/.cache}/microtrain"
if [ -z "${MICROPYTHON_TARBALL:-}" ]; then
  if [ -f "$cache/$tarball_name" ]; then
    MICROPYTHON_TARBALL="$cache/$tarball_name"
  else
    dir="$root"
    while [ "$dir" != / ]; do
      if [ -f "$dir/shared/vendor/$tarball_name" ]; then
        MICROPYTHON_TARBALL="$dir/shared/vendor/$tarball_name"
        break
      fi
      dir="$(dirname "$dir")"
    done
  fi
fi
if [ -n "${MICROPYTHON_TARBALL:-}" ] && [ "$MICROPYTHON_TARBALL" != "$cache/$tarball_name" ] &&
   [ ! -f "$cache/$tarball_name" ] &&
   echo "$tarball_sha256  $MICROPYTHON_TARBALL" | sha256sum --check --quiet - 2>/dev/null; then
  mkdir -p "$cache" && cp "$MICROPYTHON_TARBALL" "$cache/$tarball_name.part" &&
    mv "$cache/$tarball_name.part" "$cache/$tarball_name"
fi
if [ ! -e "$src/.microtrain-source" ]; then
  rm -rf "$src" && mkdir -p "$out/src"
  if [ -n "${MICROPYTHON_TARBALL:-}" ]; then
    echo "build_firmware: unpacking $MICROPYTHON_TARBALL"
    echo "$tarball_sha256  $MICROPYTHON_TARBALL" | sha256sum --check --quiet - || {
      echo "build_firmware: $MICROPYTHON_TARBALL is not MicroPython v1.28.0's tarball" >&2
      exit 1; }
    tar xzf "$MICROPYTHON_TARBALL" -C "$out/src"
  else
    echo "build_firmware: no copy of MicroPython v1.28.0's source here (MICROPYTHON_TARBALL," \
      "$cache/, shared/vendor/); cloning it from GitHub"
    git clone --quiet --depth 1 --branch v1.28.0 https://github.com/micropython/micropython.git "$src" || {
      echo "build_firmware: could not clone MicroPython from GitHub (offline?). Give its source" >&2
      echo "  as a tarball instead: MICROPYTHON_TARBALL=/path/to/$tarball_name bash $0" >&2
      echo "  (tag v1.28.0 as GitHub's release archive, sha256 $tarball_sha256)," >&2
      echo "  or put it at $cache/$tarball_name." >&2
      rm -rf "$src"; exit 1; }
  fi
  grep -q "MICROPY_VERSION_MINOR 28$" "$src/py/mpconfig.h" || {
    echo "build_firmware: $src is not MicroPython 1.28" >&2; exit 1; }
  touch "$src/.microtrain-source"
fi
# The version banner comes from git describe: keep git from finding microtrain's own repository.
export GIT_CEILING_DIRECTORIES="$out/src"
make -s -C "$src/mpy-cross" -j"$jobs" >/dev/null
# Freezing checks that the micropython-lib submodule is there even when a manifest needs
# nothing from it (ours requires nothing): an empty stand-in satisfies the check.
stub_lib="$out/src/no-micropython-lib"
mkdir -p "$stub_lib" && touch "$stub_lib/README.md"

# ---- one port
manifest="$root/micropython/manifest.py"
modules="$root/micropython"
build_port() {
  local port="$1" dir="$out/$1"
  [ "$variant" = full ] || dir="$out/$1-$variant"
  local extra=()
  case "$variant" in
    full) extra=(USER_C_MODULES="$modules" FROZEN_MANIFEST="$manifest" MPY_LIB_DIR="$stub_lib") ;;
    frozen) extra=(FROZEN_MANIFEST="$manifest" MPY_LIB_DIR="$stub_lib") ;;
    bare) extra=(FROZEN_MANIFEST=) ;;
  esac
  local args=()
  case "$port" in
    unix)
      args=(-C "$src/ports/unix" VARIANT=standard MICROPY_PY_BTREE=0 MICROPY_PY_SSL=0
            MICROPY_PY_FFI=0 MICROPY_USE_READLINE=0) ;;
    mps*)
      local board
      board="$(echo "$port" | tr 'a-z-' 'A-Z_')"
      if [ -d "$root/tools/micropython/boards/$board" ]; then  # microtrain's definition
        mkdir -p "$src/ports/qemu/boards/$board"
        cp -r --preserve=timestamps "$root/tools/micropython/boards/$board/." \
          "$src/ports/qemu/boards/$board/"
      fi
      args=(-C "$src/ports/qemu" BOARD="$board" MICROPY_FLOAT_IMPL=double
            MICROPY_HEAP_SIZE="$heap" MICROPY_VFS_LFS2=1
            # littlefs stamps files with mp_hal_time_ns(), which ports/qemu lacks: time 0.
            CFLAGS_EXTRA="-D'mp_hal_time_ns()=0'") ;;
    rv32imac-qemu)
      # VIRT_RV32's linker script gives .data and .bss (the heap) 2 MiB at 0x80400000, the
      # stack 64 KiB after them: the same script with 8 MiB of RAM, the stack moving up too.
      local script="$out/src/virt_rv32_8m.ld"
      sed 's/^\( *RAM .*LENGTH = \)2M$/\18M/' "$src/ports/qemu/mcu/rv32/virt.ld" >"$script.new"
      grep -q "LENGTH = 8M$" "$script.new" || {
        echo "build_firmware: VIRT_RV32's virt.ld has no 2 MiB RAM region to enlarge" >&2; exit 1; }
      cmp -s "$script.new" "$script" && rm "$script.new" || mv "$script.new" "$script"
      # The port asks for -march=rv32imac_zicsr, which matches none of Debian's multilibs
      # (the linker then takes the rv64 libgcc and picolibc): -march=rv32imac, with the
      # ISA spec 2.2 in which it includes the CSR instructions the port's startup uses.
      args=(-C "$src/ports/qemu" BOARD=VIRT_RV32 MICROPY_FLOAT_IMPL=double
            MICROPY_HEAP_SIZE="$heap" MICROPY_VFS_LFS2=1 LDSCRIPT="$script"
            RV32_ARCH=rv32imac AFLAGS="-mabi=ilp32 -march=rv32imac -misa-spec=2.2"
            CFLAGS_EXTRA="-D'mp_hal_time_ns()=0'") ;;
  esac
  args+=(BUILD="$dir" "${extra[@]}")
  # make does not notice a changed option (the qstr tables would go stale): start afresh.
  if [ "$(cat "$dir/.microtrain-make-args" 2>/dev/null)" != "${args[*]}" ]; then
    rm -rf "$dir" && mkdir -p "$dir" && printf '%s' "${args[*]}" >"$dir/.microtrain-make-args"
  fi
  echo "build_firmware: $port ($variant) -> ${dir#"$root"/}"
  make -s -j"$jobs" "${args[@]}" >/dev/null
}
for port in "${ports[@]}"; do
  build_port "$port"
done
