"""``microtrain micropython``: run a MicroPython script on microtrain's MicroPython firmware.

    microtrain micropython --board mps2-an500 [--data HOST=GUEST ...] [--out HOSTDIR=/GUEST]
        script.py [args ...]
    python -m microtrain.tools.micropython ...           (the same, without the console script)

The runner's options come before the script; everything after the script is the script's
(its sys.argv[1:]), so a script may take options of the same names (examples/
micropython_digits.py has its own --data).

Boards (``micropython_runner.run.BOARDS``: every Cortex-M board the core runs on and RISC-V
virt, under QEMU, and MicroPython's unix port), with the firmware tools/micropython/
build_firmware.sh builds into build/micropython/<board>/ of the source tree (found from the
current directory or $MICROTRAIN_SOURCE_DIR; or $MICROTRAIN_MICROPYTHON_DIR/<board>/; or
--firmware). A board's missing firmware is built on first use in the source tree (a minute
or two; the test command builds unix, mps2-an500, mps2-an385 and rv32imac-qemu beforehand):

    mps2-an385     Cortex-M3, soft float                    build/micropython/mps2-an385/firmware.elf
    mps2-an386     Cortex-M4F (FPv4-SP)                     build/micropython/mps2-an386/firmware.elf
    mps2-an500     Cortex-M7 (FPv5-D16)                     build/micropython/mps2-an500/firmware.elf
    mps2-an505     Cortex-M33 (FPv5-SP), secure state       build/micropython/mps2-an505/firmware.elf
    mps3-an547     Cortex-M55 (Helium, FPv5), secure state  build/micropython/mps3-an547/firmware.elf
    rv32imac-qemu  RV32IMAC under qemu-system-riscv32       build/micropython/rv32imac-qemu/firmware.elf
    unix           MicroPython's unix port on the host      build/micropython/unix/micropython

Each has microtrain's pure modules frozen and the native backend ``_microtrain`` built in, so
``import microtrain`` and ``microtrain.backend.loader.load()`` work as on a device.

Files: every ``--data HOST=GUEST`` copies file HOST to the absolute path GUEST, which must
lie in a directory (``/data/digits.mtm``, not ``/digits.mtm``). The files of each top-level
directory become one read-only ROMFS image (MicroPython's ``vfs.VfsRom``, 16-byte aligned
file data, so a file's ``memoryview`` can be read in place) mounted at that directory: on the
boards QEMU loads the images into RAM the firmware does not otherwise use (PSRAM on the mps2
boards, DDR on the AN547, DRAM on RISC-V virt); on unix they are read from temporary files.

Files back: ``--out HOSTDIR=/out`` gives the script a writable directory ``/out``; what it
holds when the script ends is copied into HOSTDIR (created if missing). It is a littlefs RAM
disk of 1 MiB: in that RAM on the boards, its files sent back over the UART; on the heap on
unix, its files then written to HOSTDIR. (Mounting HOSTDIR as ``vfs.VfsPosix(HOSTDIR)``
would be simpler on unix, but MicroPython 1.28's VfsPosix with a root builds both paths of
``rename`` in one buffer, so the atomic writes of ``save_checkpoint`` fail there.) Close what
you write: MicroPython does not flush a file it has not closed.

Running: the script's text goes to the board through MicroPython's raw REPL on the UART,
inside a small launcher that mounts the images, sets ``sys.argv = [script name, args...]``
and runs the script as ``__main__``. Its output is copied to stdout as it arrives; an
uncaught exception's traceback goes to stderr. The exit status is the script's: 0, the code
of ``sys.exit(code)``, or 1 after an uncaught exception; 124 when ``--timeout`` runs out.
"""

import argparse
import sys

from .. import _arguments
from ..micropython_runner.romfs import RunnerError
from ..micropython_runner.run import BOARDS, ENV_FIRMWARE_DIR, ensure_firmware, run


def _parser():
    parser = argparse.ArgumentParser(
        prog="microtrain micropython",
        usage="microtrain micropython --board BOARD [--data HOST=GUEST ...] [--out "
              "HOSTDIR=/GUESTDIR] [options] script.py [args ...]",
        description="Run a MicroPython script on microtrain's MicroPython firmware: %s under "
                    "QEMU, or the unix port. The runner's options come before the script; "
                    "what follows the script is its own." % ", ".join(
                        b for b in sorted(BOARDS) if b != "unix"))
    parser.add_argument("--board", required=True, choices=sorted(BOARDS))
    parser.add_argument("--data", action="append", default=[], metavar="HOST=GUEST",
                        help="put file HOST at GUEST (e.g. /data/x.bin) on the board")
    parser.add_argument("--out", metavar="HOSTDIR=/GUESTDIR",
                        help="a writable directory for the script (e.g. out=/out); its files "
                             "are copied to HOSTDIR when the script ends")
    parser.add_argument("--firmware", help="the firmware file (default: build/micropython/"
                                           "<board>/ of the source tree, or $%s/<board>/)"
                                           % ENV_FIRMWARE_DIR)
    parser.add_argument("--build", action="store_true",
                        help="bring the firmware up to date first (tools/micropython/"
                             "build_firmware.sh; a missing one is built anyway)")
    parser.add_argument("--timeout", type=_arguments.positive_float, default=600,
                        help="seconds (default 600)")
    parser.add_argument("script", help="the script; everything after it is its sys.argv[1:]")
    return parser


_TAKES_VALUE = ("--board", "--data", "--out", "--firmware", "--timeout")


def split_command_line(argv):
    """(runner options with the script, the script's arguments): the first word that is
    neither an option nor an option's value is the script, and every word after it is the
    script's, whatever its name."""
    ours = []
    i = 0
    while i < len(argv):
        item = argv[i]
        if item in _TAKES_VALUE and i + 1 < len(argv):
            ours += [item, argv[i + 1]]
            i += 2
        elif item.startswith("-"):
            ours.append(item)
            i += 1
        else:
            return ours + [item], list(argv[i + 1:])
    return ours, []


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, script_args = split_command_line(argv)
    args = _parser().parse_args(ours)
    try:
        firmware = ensure_firmware(args.board, args.firmware, build=args.build)
        return run(args.board, args.script, args.data, script_args, firmware,
                   args.timeout, args.out)
    except (RunnerError, OSError, ValueError) as error:
        sys.stderr.write("microtrain micropython: %s\n" % error)
        return 2


if __name__ == "__main__":
    sys.exit(main())
