"""``microtrain firmware``: turn a model image and a dataset into firmware that fine-tunes on
a device, build it for a board, and run it under QEMU against the host.

    microtrain firmware --board mps2-an386 --model M.mtm --data D.npz --epochs 3 \\
        --out build/fw [--run]
    microtrain firmware --sources-only --model M.mtm --data D.npz --epochs 3 --out build/fw
    microtrain firmware --board mps2-an500 --model kws_int8.tflite --new-head 5 \\
        --data keywords.npz --out build/kws --run       (an int8 backbone, a new float head)
    microtrain firmware --board mps2-an500 --model M.mtm --data D.npz --budget 262144 \
        --batch-size 1 --out build/fw --run   (a sparse update that fits; or --trainable-scheme
                                              SCHEME.json, one saved: SparseScheme.to_json)
    python -m microtrain.tools.firmware ...            (the same, without the console script)

What it does:

1. Reads the model as ``TrainSession`` does (a .tflite/.circle/.onnx file is converted to
   .mtm; an int8 .tflite with ``--train-from`` (``--int8-after``, ``--int8-train``,
   ``--int8-master-weights``), ``--new-head`` (``--int8-head``) and
   ``--int8-input``, the options of ``microtrain.convert``) and plans the arena with the
   host library for it and the training configuration (``mt_plan`` is target-independent:
   the host's figure is the device's, exactly).
2. Writes ``<out>/data/mt_firmware_data.c`` and ``.h``: the model image as a const array
   (flash), the dataset rows as float32 bit patterns, ``MT_FW_ARENA_BYTES`` and the
   configuration as C, and ``<out>/firmware.json`` (the plan, the training settings and
   ``host_reference``: what the example firmware prints, computed on the host).
   ``boards/app/`` (the example firmware) is built on them; a firmware of your own uses them
   the same way (``examples/cmake_user_project/`` is a template).
   With ``--sources-only`` it stops here: no CMake, no toolchain, no source tree, only this
   package and its host library; ``--board`` is not needed.
3. Builds with CMake, preset ``<board>`` of the source tree's CMakePresets.json, in
   ``<out>/build``, the core with the kernels of the model's ops only (CMake's ``MT_OPS``;
   ``--all-ops`` builds every kernel): each kernel table entry keeps its kernels alive through
   ``--gc-sections``, so a core with every op costs flash the model never uses. Boards: the
   folders of ``boards/`` with a preset (mps2-an385 Cortex-M3, mps2-an386 Cortex-M4F,
   mps2-an500 Cortex-M7, mps2-an505 Cortex-M33, mps3-an547 Cortex-M55 with Helium,
   rv32imac-qemu RISC-V RV32IMAC, rv32imafc-qemu RISC-V RV32IMAFC), and the hosted presets
   host, arm-linux-gnueabihf, aarch64-linux-gnu (board ``posix``).
4. With ``--run``: runs the firmware (qemu-system-arm or qemu-system-riscv32, or qemu-user
   for ARM Linux), replays the identical sequence of core calls on the host through ctypes
   (``host_reference``), prints both weight CRCs and returns 0 only if the run exited 0 and
   every printed bit (per-epoch losses, accuracy counts, weight CRC) equals the host's.

Dataset (``.npz``): ``x`` [N, *input shape] and ``y`` [N, *output shape] (one-hot or
regression targets), or ``y`` [N] integer labels for sparse categorical cross-entropy; for a
model whose input is int8, ``x`` holds int8 values (-128..127; rows of any length: the C
sources hold them back to back);
optionally ``x_eval`` and ``y_eval`` for the per-epoch evaluation (default: the training
rows). Rows are used in file order every epoch (shuffle before saving if you want); the last
batch may be partial and is masked exactly by the core.

The sequence both sides run, per epoch: train_step on each batch of B rows (loss_sum +=
loss * n in float32), set_epoch, eval_step on each evaluation batch (counting correct
predictions), mean losses = loss_sum / rows in float32. The weight CRC is zlib.crc32 over
every weight tensor in ``mt_session_param`` order (``TrainSession.get_weights()``),
little-endian float32.

The source tree (boards/, micro_core/, CMakePresets.json; steps 3 and 4 only) is found
through ``--source-dir``, the environment variable ``MICROTRAIN_SOURCE_DIR``, or by looking
upwards from the current directory and from this file.
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

from .. import _arguments, _files, _model_source, config as _config, losses as _losses
from .. import ops as _ops
from .. import optimizers as _optimizers
from ..nn import image as _image
from ..train_session import TrainSession

from . import arena as _arena, sparse_update as _sparse_update
from .firmware_sources import DATA_HEADER, DATA_SOURCE, write_sources
from .firmware_training import (Dataset, FirmwareError, TrainingSpec, host_reference,
                                int8_input)

ENV_SOURCE_DIR = "MICROTRAIN_SOURCE_DIR"

# Exit statuses of the example firmware (MT_FW_EXIT_* of boards/app/fw_app.h)
EXIT_OK = 0
EXIT_CORE_ERROR = 1
EXIT_PLAN_MISMATCH = 2


# ------------------------------------------------------------------ build and run


def find_source_dir(explicit=None):
    """The microtrain source tree: explicit, $MICROTRAIN_SOURCE_DIR, or found upwards."""
    def is_source(path):
        return all(os.path.exists(os.path.join(path, p))
                   for p in ("CMakePresets.json", "boards", "micro_core"))

    for candidate in (explicit, os.environ.get(ENV_SOURCE_DIR)):
        if candidate:
            if not is_source(candidate):
                raise FirmwareError("%s is not a microtrain source tree (no CMakePresets.json, "
                                    "boards/ and micro_core/)" % candidate)
            return os.path.abspath(candidate)
    for start in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        path = start
        while True:
            if is_source(path):
                return path
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    raise FirmwareError("cannot find the microtrain source tree (boards/, micro_core/); "
                        "pass --source-dir or set %s" % ENV_SOURCE_DIR)


def board_presets(source_dir):
    """Names of the configure presets that build firmware (every visible one)."""
    presets = json.loads(_files.read_file(os.path.join(source_dir, "CMakePresets.json"),
                                          "CMake's presets").decode("utf-8"))
    return [p["name"] for p in presets["configurePresets"] if not p.get("hidden")]


def _run_checked(command, what, cwd=None, quiet=True):
    result = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE if quiet else None,
                            stderr=subprocess.STDOUT if quiet else None, text=True)
    if result.returncode != 0:
        raise FirmwareError("%s failed (%s, status %d)%s"
                            % (what, " ".join(command), result.returncode,
                               ":\n" + result.stdout if quiet else ""))


def build(source_dir, board, data_dir, build_dir, bench_steps=None, ops=None, targets=None,
          cache=None, plan_buffers=None):
    """Configure preset ``board`` in ``build_dir`` on the generated data and build the
    firmware and benchmark programs; return microtrain_board.json (paths, how to run).
    ``ops``: the op names to build kernels for (CMake's MT_OPS, e.g. ["dense", "relu",
    "softmax"]); None builds every op. ``targets``: the CMake targets to build instead of
    the three programs (benchmarks/arm_ops.py: microtrain_bench_profile); ``cache``: more
    cache entries for the configure step, {name: value}; ``plan_buffers``: the entries of
    the planner's table (CMake's MT_PLAN_MAX_BUFFERS, package's record["plan_buffers"]: 28
    bytes of stack less each below 256; None: 256)."""
    if board not in board_presets(source_dir):
        raise FirmwareError("unknown board %r; the presets are %s"
                            % (board, ", ".join(board_presets(source_dir))))
    configure = ["cmake", "--preset", board, "-B", os.path.abspath(build_dir),
                 "-DMT_FIRMWARE_DATA_DIR=" + os.path.abspath(data_dir)]
    if bench_steps is not None:
        configure.append("-DMT_BENCH_STEPS=%d" % bench_steps)
    # always given, so a build folder reused with another choice does not keep the old one
    configure.append("-DMT_OPS=" + ";".join(ops or ()))
    configure.append("-DMT_PLAN_MAX_BUFFERS=%s" % (plan_buffers or ""))
    configure += ["-D%s=%s" % item for item in sorted((cache or {}).items())]
    _run_checked(configure, "configuring preset %s" % board, cwd=source_dir)
    targets = targets or ("microtrain_firmware", "microtrain_bench", "microtrain_bench_base")
    _run_checked(["cmake", "--build", os.path.abspath(build_dir), "--target"] + list(targets),
                 "building %s" % board)
    with open(os.path.join(build_dir, "microtrain_board.json")) as handle:
        return json.load(handle)


def run_command(board_info, program="firmware", extra_qemu_args=()):
    """The command line that runs ``program`` (firmware, bench, bench_base) of a build."""
    path = board_info[program]
    if board_info["qemu_program"]:
        return ([board_info["qemu_program"]] + list(board_info["qemu_args"]) +
                list(extra_qemu_args) + ["-kernel", path])
    return list(board_info["emulator"]) + list(extra_qemu_args) + [path]


def run(board_info, program="firmware", timeout=300, extra_qemu_args=()):
    """Run a program of a build; (exit status, console text with "\\n" line ends, stderr)."""
    command = run_command(board_info, program, extra_qemu_args)
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, timeout=timeout)
    except FileNotFoundError:
        raise FirmwareError("%s is not installed (bash tools/setup_arm.sh installs QEMU and "
                            "the ARM toolchains, bash tools/setup_riscv.sh the RISC-V ones)"
                            % command[0]) from None
    except subprocess.TimeoutExpired:
        raise FirmwareError("%s did not finish within %d s" % (" ".join(command), timeout)) \
            from None
    return result.returncode, result.stdout.replace("\r\n", "\n"), result.stderr


_EPOCH_LINE = re.compile(r"^epoch (\d+) train_loss \S+ \(0x([0-9a-f]{8})\) "
                         r"eval_loss \S+ \(0x([0-9a-f]{8})\)(?: accuracy (\d+)/(\d+))?$",
                         re.MULTILINE)
_CRC_LINE = re.compile(r"^weights crc32 0x([0-9a-f]{8})$", re.MULTILINE)
_STACK_LINE = re.compile(r"^stack used (\d+) bytes", re.MULTILINE)
_ARENA_LINE = re.compile(r"^microtrain firmware: model \d+ bytes, arena (\d+) bytes", re.MULTILINE)


def parse_output(text):
    """What a firmware printed, in host_reference()'s shape (None where a line is missing)."""
    arena = _ARENA_LINE.search(text)
    crc = _CRC_LINE.search(text)
    epochs = [{"epoch": int(m.group(1)), "train_loss": int(m.group(2), 16),
               "eval_loss": int(m.group(3), 16),
               "correct": int(m.group(4) or 0), "total": int(m.group(5) or 0)}
              for m in _EPOCH_LINE.finditer(text)]
    return {"arena_bytes": int(arena.group(1)) if arena else None, "epochs": epochs,
            "crc32": int(crc.group(1), 16) if crc else None}


def stack_used(text):
    """The stack a firmware used, in bytes, as it printed it (the high-water mark of the stack
    its startup painted, boards/common/stack_paint.h), or None where it printed none."""
    found = _STACK_LINE.search(text)
    return int(found.group(1)) if found else None


def bits_to_float(bits):
    return float(np.array(bits, dtype="<u4").view("<f4"))


# ------------------------------------------------------------------ command line


def read_model(model_path, conversion=None):
    """(.mtm bytes, source record) of ``--model``: as a session reads it (an .mtm image, or
    a .tflite/.circle/.onnx file converted to .mtm), or, given ``conversion`` (the options
    ``train_from``, ``new_head``, ``int8_input``, ``int8_after``, ``int8_train``,
    ``int8_master_weights``, ``int8_head`` of ``microtrain.convert``, None
    where not given), the foreign file converted with them."""
    options = dict((k, v) for k, v in (conversion or {}).items() if v not in (None, False))
    if not options:
        return _model_source.model_bytes(model_path)
    flags = ", ".join("--" + k.replace("_", "-") for k in sorted(options))
    with open(model_path, "rb") as handle:
        magic = handle.read(4)
    if magic == _image.MAGIC:
        raise FirmwareError("%s is an .mtm image, already converted: %s apply when converting "
                            "a .tflite/.circle/.onnx file (pass that file as --model)"
                            % (model_path, flags))
    from .. import convert as _convert  # CPython's importers (microtrain[convert])
    converted = _convert.convert(model_path, **options)
    return converted.to_bytes(), converted.source


def package(model_path, data_path, spec, out_dir, conversion=None):
    """Plan, replay on the host and write the C sources; returns the firmware.json record.
    ``model_path`` is read as a session reads it: an .mtm image, or a .tflite/.circle/.onnx
    file converted to the .mtm the C sources then hold (with ``conversion``'s options of
    ``microtrain.convert``: read_model)."""
    model_bytes, source = read_model(model_path, conversion)
    dataset = Dataset.load(data_path)
    with TrainSession(model_bytes) as session:
        spec.compile(session)
        plan = session.memory_plan()
        # the planner table the device needs (src/sharing.h): at most one entry per activation
        # and gradient buffer of the plan, which the build sizes it to (build's plan_buffers)
        plan_buffers = sum(1 for b in _arena.plan_buffers(session)
                           if b["kind"] in ("activation", "gradient"))
        config = session.config  # what the generated C sets, field for field
        session_trainable = session.trainable_description()
        data = dataset.conform(session.get_inputs_tensorinfo()[0]["shape"][1:],
                               session.get_outputs_tensorinfo()[0]["shape"][1:],
                               spec.loss.sparse_labels, int8_input(model_bytes))
    reference = host_reference(model_bytes, data, spec)
    op_names = sorted({_ops.name(op.op_type) for op in _image.read_image(model_bytes).ops})
    write_sources(os.path.join(out_dir, "data"), model_bytes, data, spec, config,
                  plan["total_bytes"], os.path.basename(model_path))
    record = {"model": os.path.abspath(model_path), "data": os.path.abspath(data_path),
              "converted_from": source.format if source is not None else None,
              "conversion": dict((k, v) for k, v in (conversion or {}).items()
                                 if v not in (None, False)),
              "epochs": spec.epochs, "batch_size": spec.batch_size,
              "optimizer": spec.optimizer.name, "learning_rate": spec.optimizer.learning_rate,
              "loss": spec.loss.name, "trainable": session_trainable,
              "num_trainable_ops": config["num_trainable_ops"],
              "ops": op_names, "plan": plan, "plan_buffers": plan_buffers,
              "host_reference": reference}
    _files.write_bytes(os.path.join(out_dir, "firmware.json"),
                       json.dumps(record, indent=2).encode("utf-8"))
    return record


def _describe(result):
    lines = []
    for epoch in result["epochs"]:
        line = "  epoch %d  train loss %.6f  eval loss %.6f" % (
            epoch["epoch"], bits_to_float(epoch["train_loss"]), bits_to_float(epoch["eval_loss"]))
        if epoch["total"]:
            line += "  accuracy %d/%d" % (epoch["correct"], epoch["total"])
        lines.append(line)
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    """A usage mistake is one line on stderr and exit status 2, like the other subcommands."""

    def error(self, message):
        sys.stderr.write("%s: error: %s (see %s --help)\n" % (self.prog, message, self.prog))
        raise SystemExit(2)


def _layer_or_index(text):
    """--train-from: an op index (an integer) or a layer's name, passed on as it is."""
    return int(text) if re.match(r"^-?[0-9]+$", text.strip()) else text


def _classes(text):
    if not re.match(r"^[0-9]+$", text.strip()) or int(text) < 2:
        raise argparse.ArgumentTypeError("a number of classes >= 2, got %r" % text)
    return int(text)


def _preset_names():
    """The boards firmware builds for, as the source tree's presets list them (the one list)."""
    try:
        return ", ".join(board_presets(find_source_dir()))
    except (FirmwareError, OSError, ValueError):
        return "mps2-an385, mps2-an500, ... (the source tree was not found)"


# microtrain.convert's yes/no options, each a flag of the same name (--int8-after) passed on as
# it is: (keyword, help)
_CONVERT_SWITCHES = (
    ("int8_after", "with --train-from: that operator alone trains in float, the int8 operators "
                   "after it stay int8 and pass the gradient back"),
    ("int8_input", "the input is the int8 tensor of the leading QUANTIZE: x holds int8 values "
                   "the device need not quantize"),
    ("int8_train", "with --train-from: the int8 operators from there on stay int8 and their int8 "
                   "weights train in place (SGD, QAS)"),
    ("int8_master_weights", "with --int8-train: float master copies of those int8 weights"),
    ("int8_head", "with --new-head: the new head is an int8 FullyConnected trained in place "
                  "(SGD, QAS; 1 byte a weight)"),
)


def _parser():
    parser = _Parser(
        prog="microtrain firmware",
        description="Package a model image and a dataset into firmware that fine-tunes on the "
                    "device; build it for a board and optionally run it under QEMU, or only "
                    "write the C sources (--sources-only).")
    parser.add_argument("--board", help="a configure preset of the source tree's "
                        "CMakePresets.json: %s (not with --sources-only)" % _preset_names())
    parser.add_argument("--model", required=True,
                        help="the model: an .mtm image, or a .tflite/.circle/.onnx file "
                             "(converted as TrainSession converts it)")
    parser.add_argument("--data", required=True,
                        help=".npz with x, y (and x_eval, y_eval); x int8 values for a model "
                             "whose input is int8 (rows of any length)")
    convert = parser.add_argument_group(
        "converting an int8 .tflite",
        "microtrain.convert's options: the int8 layers stay frozen in flash, the float part "
        "trains")
    convert.add_argument("--train-from", type=_layer_or_index, metavar="LAYER",
                         help="where the float part that trains begins: a layer's name "
                              "(block_15) or an op index; default: the model's last layer "
                              "with weights")
    convert.add_argument("--new-head", type=_classes, metavar="CLASSES",
                         help="cut after the last [H, W, C] activation and attach mean -> "
                              "Dense(CLASSES) -> Softmax")
    for keyword, text in _CONVERT_SWITCHES:
        convert.add_argument("--" + keyword.replace("_", "-"), action="store_true", help=text)
    parser.add_argument("--epochs", type=_arguments.positive_int, default=3)
    parser.add_argument("--out", required=True, help="output folder (data/, build/, firmware.json)")
    parser.add_argument("--optimizer", default=_config.DEFAULT_OPTIMIZER,
                        choices=sorted(_optimizers.ALIASES),
                        help="default %s (compile()'s)" % _config.DEFAULT_OPTIMIZER)
    parser.add_argument("--learning-rate", type=_arguments.positive_float, default=None,
                        help="default: the optimizer's (sgd 0.01, adam 0.001)")
    parser.add_argument("--loss", default=_config.DEFAULT_LOSS, choices=sorted(_losses.ALIASES),
                        help="default %s (compile()'s)" % _config.DEFAULT_LOSS)
    parser.add_argument("--batch-size", type=_arguments.positive_int,
                        default=_config.DEFAULT_BATCH_SIZE)
    _arguments.add_trainable(parser)
    _arguments.add_sparse_update(parser)
    parser.add_argument("--num-trainable-ops", dest="num_trainable_ops",
                        type=_arguments.integer(-1),
                        help=argparse.SUPPRESS)  # the earlier spelling, kept for scripts
    parser.add_argument("--sources-only", action="store_true",
                        help="only plan and write <out>/data/mt_firmware_data.{c,h} and "
                             "<out>/firmware.json: no build, no toolchain, no source tree")
    parser.add_argument("--all-ops", action="store_true",
                        help="build the core with every op's kernels, not only the model's")
    parser.add_argument("--run", action="store_true",
                        help="run it (QEMU) and compare with the host, bit for bit")
    parser.add_argument("--timeout", type=_arguments.positive_float, default=300.0,
                        help="seconds for --run")
    parser.add_argument("--source-dir", help="the microtrain source tree (found if omitted)")
    return parser


def _board_source_dir(parser, args):
    """The source tree whose presets build ``--board``, checked before anything is read or
    written: an unknown board is a usage error naming the presets (the one board list)."""
    try:
        source_dir = find_source_dir(args.source_dir)
    except FirmwareError as error:
        raise FirmwareError("--board %s builds firmware from microtrain's source tree: %s "
                            "(or use --sources-only)" % (args.board, error))
    presets = board_presets(source_dir)
    if args.board not in presets:
        parser.error("argument --board: unknown board %r; the presets of %s are %s"
                     % (args.board, source_dir, ", ".join(presets)))
    return source_dir


def main(argv=None):
    """``microtrain firmware ...``; returns the process exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.sources_only and (args.board or args.run):
        parser.error("--sources-only builds nothing: leave out --board and --run")
    if not args.sources_only and not args.board:
        parser.error("--board is required (or --sources-only to only write the C sources)")
    try:
        trainable, num_trainable_ops = _arguments.trainable_choice(args.trainable,
                                                                   args.num_trainable_ops)
        spec = TrainingSpec(args.epochs, args.optimizer, args.learning_rate, args.loss,
                            args.batch_size, num_trainable_ops, trainable)
        source_dir = None if args.sources_only else _board_source_dir(parser, args)
        conversion = {"train_from": args.train_from, "new_head": args.new_head}
        conversion.update((keyword, getattr(args, keyword)) for keyword, _ in _CONVERT_SWITCHES)
        if args.budget is not None or args.trainable_scheme is not None:  # a sparse update
            with TrainSession(read_model(args.model, conversion)[0]) as session:
                spec.trainable = _sparse_update.scheme_from_flags(
                    session, args.budget, args.trainable_scheme, trainable, num_trainable_ops,
                    spec.batch_size, spec.optimizer, spec.loss, args.calibration)
        record = package(args.model, args.data, spec, args.out, conversion)
        reference = record["host_reference"]
        print("arena: %d bytes (mt_plan on the host; the firmware checks it at boot)"
              % record["plan"]["total_bytes"])
        if args.sources_only:
            data_dir = os.path.join(args.out, "data")
            print("sources: %s, %s" % (os.path.join(data_dir, DATA_SOURCE),
                                       os.path.join(data_dir, DATA_HEADER)))
            print("record: %s" % os.path.join(args.out, "firmware.json"))
            print("ops: %s (a core built with -DMT_OPS=\"%s\" links only their kernels)"
                  % (", ".join(record["ops"]), ";".join(record["ops"])))
            print("planner table: %d entries (a core built with -DMT_PLAN_MAX_BUFFERS=%d plans "
                  "this model with %d bytes less stack)" % (
                      record["plan_buffers"], record["plan_buffers"],
                      28 * max(0, 256 - record["plan_buffers"])))
            return 0
        board_info = build(source_dir, args.board, os.path.join(args.out, "data"),
                           os.path.join(args.out, "build"),
                           ops=None if args.all_ops else record["ops"],
                           plan_buffers=record["plan_buffers"])
        print("firmware: %s" % board_info["firmware"])
        if not args.run:
            return 0
        status, text, errors = run(board_info, timeout=args.timeout)
    except (FirmwareError, ValueError, OSError, ImportError) as error:
        print("microtrain firmware: error: %s" % error, file=sys.stderr)
        return 2
    device = parse_output(text)
    where = "QEMU %s" % args.board if board_info["qemu_program"] else args.board
    print("%s:\n%s" % (where, _describe(device)))
    print("host (ctypes):\n%s" % _describe(reference))
    print("weights crc32 on the host:  0x%08x" % reference["crc32"])
    print("weights crc32 on %s: %s" % (args.board, "0x%08x" % device["crc32"]
                                       if device["crc32"] is not None else "(not printed)"))
    if stack_used(text) is not None:
        print("stack used on %s: %d bytes (the painted stack's high-water mark)"
              % (args.board, stack_used(text)))
    same = device == reference
    print("bit-identical: %s" % ("yes" if same else "NO"))
    if status != 0:
        print("microtrain firmware: the firmware exited with status %d\n%s%s"
              % (status, text, errors), file=sys.stderr)
        return 1
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
