"""``microtrain firmware``: turn a model image and a dataset into firmware that fine-tunes on
a device, build it for a board, and run it under QEMU against the host.

    microtrain firmware --board mps2-an386 --model M.mtm --data D.npz --epochs 3 \\
        --out build/fw [--run]
    microtrain firmware --sources-only --model M.mtm --data D.npz --epochs 3 --out build/fw
    python -m microtrain.tools.firmware ...            (the same, without the console script)

What it does:

1. Plans the arena with the host library for the model and the training configuration
   (``mt_plan`` is target-independent: the host's figure is the device's, exactly).
2. Writes ``<out>/data/mt_firmware_data.c`` and ``.h``: the model image as a const array
   (flash), the dataset rows as float32 bit patterns, ``MT_FW_ARENA_BYTES`` and the
   configuration as C, and ``<out>/firmware.json`` (the plan, the training settings and
   ``host_reference``: what the example firmware prints, computed on the host).
   ``boards/app/`` (the example firmware) is built on them; a firmware of your own uses them
   the same way (``examples/cmake_user_project/`` is a template).
   With ``--sources-only`` it stops here: no CMake, no toolchain, no source tree, only this
   package and its host library; ``--board`` is not needed.
3. Builds with CMake, preset ``<board>`` of the source tree's CMakePresets.json, in
   ``<out>/build``. Boards: the folders of ``boards/`` with a preset (mps2-an385 Cortex-M3,
   mps2-an386 Cortex-M4F, mps2-an500 Cortex-M7, mps2-an505 Cortex-M33, mps3-an547
   Cortex-M55 with Helium), and the hosted
   presets host, arm-linux-gnueabihf, aarch64-linux-gnu (board ``posix``).
4. With ``--run``: runs the firmware (qemu-system-arm, or qemu-user for ARM Linux), replays
   the identical sequence of core calls on the host through ctypes (``host_reference``),
   prints both weight CRCs and returns 0 only if the run exited 0 and every printed bit
   (per-epoch losses, accuracy counts, weight CRC) equals the host's.

Dataset (``.npz``): ``x`` [N, *input shape] and ``y`` [N, *output shape] (one-hot or
regression targets), or ``y`` [N] integer labels for sparse categorical cross-entropy;
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
import struct
import sys
import zlib

import numpy as np

from .. import config as _config, losses as _losses, optimizers as _optimizers
from ..backend import CONFIG_FIELDS
from ..nn import image as _image
from ..train_session import TrainSession

_FLOAT_FIELDS = ("learning_rate", "beta1", "beta2", "epsilon", "momentum", "weight_decay")

ENV_SOURCE_DIR = "MICROTRAIN_SOURCE_DIR"
DATA_HEADER = "mt_firmware_data.h"
DATA_SOURCE = "mt_firmware_data.c"

# MT_FW_ACCURACY values (boards/app/fw_app.h)
ACCURACY_NONE = 0
ACCURACY_ARGMAX_ONE_HOT = 1
ACCURACY_ARGMAX_LABEL = 2
ACCURACY_BINARY = 3

# Exit statuses of the example firmware (MT_FW_EXIT_* of boards/app/fw_app.h)
EXIT_OK = 0
EXIT_CORE_ERROR = 1
EXIT_PLAN_MISMATCH = 2

_WORDS_PER_LINE = 8
_BYTES_PER_LINE = 16


class FirmwareError(Exception):
    """A step of packaging, building or running failed; the message says which and why."""


# ------------------------------------------------------------------ training spec


class TrainingSpec:
    """What the firmware and the host replay both run: configuration and epochs. Names and
    defaults are compile()'s (``microtrain.config``): SGD, MSE, batch 16, the optimizer's
    own learning rate."""

    def __init__(self, epochs=3, optimizer=_config.DEFAULT_OPTIMIZER, learning_rate=None,
                 loss=_config.DEFAULT_LOSS, batch_size=_config.DEFAULT_BATCH_SIZE,
                 num_trainable_ops=-1):
        if int(epochs) < 1:
            raise ValueError("epochs must be at least 1, got %r" % (epochs,))
        self.epochs = int(epochs)
        self.optimizer = _optimizers.get(optimizer)
        if learning_rate is not None:
            settings = self.optimizer.get_config()
            settings["learning_rate"] = learning_rate
            self.optimizer = type(self.optimizer)(**settings)
        self.loss = _losses.get(loss)
        self.batch_size = int(batch_size)
        self.num_trainable_ops = int(num_trainable_ops)

    def compile(self, session):
        session.compile(optimizer=self.optimizer, loss=self.loss, batch_size=self.batch_size,
                        num_trainable_ops=self.num_trainable_ops)


# ------------------------------------------------------------------ dataset


class Dataset:
    """Training and evaluation rows, converted once to the exact arrays both sides use."""

    def __init__(self, x, y, x_eval=None, y_eval=None):
        self.x, self.y = x, y
        self.x_eval = x if x_eval is None else x_eval
        self.y_eval = y if y_eval is None else y_eval

    @classmethod
    def load(cls, path):
        with np.load(path) as archive:
            arrays = {key: archive[key] for key in archive.files}
        for key in ("x", "y"):
            if key not in arrays:
                raise FirmwareError("%s has no array %r (it needs x and y; x_eval and y_eval "
                                    "are optional)" % (path, key))
        if ("x_eval" in arrays) != ("y_eval" in arrays):
            raise FirmwareError("%s has only one of x_eval and y_eval" % path)
        return cls(arrays["x"], arrays["y"], arrays.get("x_eval"), arrays.get("y_eval"))

    def conform(self, input_dims, output_dims, sparse_labels):
        """Check shapes against the model and convert to float32 rows / int32 labels."""
        def rows(x, y, what):
            x = np.asarray(x)
            y = np.asarray(y)
            if x.ndim < 1 or tuple(x.shape[1:]) != tuple(input_dims) or len(x) == 0:
                raise FirmwareError("%s x has shape %s; the model takes (N, %s), N >= 1"
                                    % (what, x.shape, ", ".join(map(str, input_dims))))
            if sparse_labels:
                if y.shape != (len(x),) or y.dtype.kind not in "iu":
                    raise FirmwareError("%s y must be [N] integer labels for sparse "
                                        "categorical cross-entropy, got %s %s"
                                        % (what, y.dtype, y.shape))
                y = y.astype("<i4")
            else:
                if tuple(y.shape) != (len(x),) + tuple(output_dims):
                    raise FirmwareError("%s y has shape %s; output 0 needs (%d, %s)"
                                        % (what, y.shape, len(x),
                                           ", ".join(map(str, output_dims))))
                y = np.ascontiguousarray(y, dtype="<f4")
            return np.ascontiguousarray(x, dtype="<f4"), y

        x, y = rows(self.x, self.y, "training")
        x_eval, y_eval = rows(self.x_eval, self.y_eval, "evaluation")
        return Dataset(x, y, x_eval, y_eval)


def accuracy_kind(loss, output_count):
    """How predictions are scored (MT_FW_ACCURACY) for a loss and output 0's element count."""
    if loss.name == "sparse_categorical_crossentropy":
        return ACCURACY_ARGMAX_LABEL
    if loss.name == "categorical_crossentropy" and output_count > 1:
        return ACCURACY_ARGMAX_ONE_HOT
    if loss.name == "binary_crossentropy":
        return ACCURACY_BINARY
    return ACCURACY_NONE


def _count_correct(kind, outputs, targets):
    """mt_fw_count_correct() of boards/app/fw_app.c, on numpy rows (argmax: first maximum)."""
    outputs = outputs.reshape(len(outputs), -1)
    if kind == ACCURACY_ARGMAX_ONE_HOT:
        return int(np.sum(outputs.argmax(1) == targets.reshape(len(targets), -1).argmax(1)))
    if kind == ACCURACY_ARGMAX_LABEL:
        return int(np.sum(outputs.argmax(1) == targets))
    if kind == ACCURACY_BINARY:
        return int(np.sum((outputs > 0.5) == (targets.reshape(outputs.shape) > 0.5)))
    return 0


def _accuracy_total(kind, rows, output_count):
    if kind == ACCURACY_BINARY:
        return rows * output_count
    return 0 if kind == ACCURACY_NONE else rows


# ------------------------------------------------------------------ host replay


def float_bits(value):
    """The IEEE-754 bit pattern of ``value`` rounded to float32."""
    return int(np.array(value, dtype="<f4").view("<u4"))


def weights_crc32(weights):
    """zlib.crc32 over the weight tensors (as get_weights() lists them), little-endian f32."""
    crc = 0
    for weight in weights:
        crc = zlib.crc32(np.ascontiguousarray(weight, dtype="<f4").tobytes(), crc)
    return crc


def _run_pass(session, x, y, batch_size, train, kind):
    """One pass over rows in order; the float32 loss sum of the firmware and the correct count."""
    loss_sum = np.float32(0.0)
    correct = 0
    for first in range(0, len(x), batch_size):
        stop = min(first + batch_size, len(x))
        n = stop - first
        if train:
            result = session.train_step(x[first:stop], y[first:stop])
        else:
            result = session.eval_step(x[first:stop], y[first:stop])
            correct += _count_correct(kind, session.output_buffer(0)[:n], y[first:stop])
        loss_sum = np.float32(loss_sum + np.float32(result["loss"][0]) * np.float32(n))
    return np.float32(loss_sum / np.float32(len(x))), correct


def host_reference(model_bytes, dataset, spec):
    """Run on the host, through ctypes, exactly what the firmware runs; return what it prints:
    {"arena_bytes", "epochs": [{"epoch", "train_loss", "eval_loss", "correct", "total"}],
    "crc32"} with losses as float32 bit patterns."""
    with TrainSession(model_bytes) as session:
        spec.compile(session)
        output_count = int(np.prod(session.get_outputs_tensorinfo()[0]["shape"][1:]))
        kind = accuracy_kind(spec.loss, output_count)
        data = dataset.conform(session.get_inputs_tensorinfo()[0]["shape"][1:],
                               session.get_outputs_tensorinfo()[0]["shape"][1:],
                               spec.loss.sparse_labels)
        epochs = []
        for epoch in range(1, spec.epochs + 1):
            train_loss, _ = _run_pass(session, data.x, data.y, spec.batch_size, True, kind)
            session.set_epoch(epoch)
            eval_loss, correct = _run_pass(session, data.x_eval, data.y_eval, spec.batch_size,
                                           False, kind)
            epochs.append({"epoch": epoch, "train_loss": float_bits(train_loss),
                           "eval_loss": float_bits(eval_loss), "correct": correct,
                           "total": _accuracy_total(kind, len(data.x_eval), output_count)})
        return {"arena_bytes": session.memory_plan()["total_bytes"], "epochs": epochs,
                "crc32": weights_crc32(session.get_weights())}


# ------------------------------------------------------------------ C sources


def _c_words(array):
    words = np.ascontiguousarray(array).view("<u4").ravel()
    lines = []
    for start in range(0, len(words), _WORDS_PER_LINE):
        lines.append("    " + " ".join("0x%08xu," % w for w in words[start:start + _WORDS_PER_LINE]))
    return "\n".join(lines)


def _c_bytes(data):
    lines = []
    for start in range(0, len(data), _BYTES_PER_LINE):
        lines.append("    " + " ".join("0x%02x," % b for b in data[start:start + _BYTES_PER_LINE]))
    return "\n".join(lines)


def _f32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _c_config_lines(config):
    """Assignments reproducing ``config`` (a compiled session's config dict) field by field,
    floats as exact float32 hex literals."""
    lines = []
    for name in CONFIG_FIELDS:
        value = config[name]
        if name in _FLOAT_FIELDS:
            value = _f32(value)
            lines.append("    cfg->%s = %sf; /* %r */" % (name, value.hex(), value))
        elif name == "trainable_op_mask":
            if value is not None:  # the firmware has no such array
                raise FirmwareError("a trainable op mask is set; the firmware generator "
                                    "supports --num-trainable-ops only")
        else:
            lines.append("    cfg->%s = %d;" % (name, value))
    return "\n".join(lines)


def write_sources(out_dir, model_bytes, dataset, spec, config, arena_bytes, model_name="model"):
    """Write mt_firmware_data.h/.c into ``out_dir``; ``dataset`` already conformed."""
    os.makedirs(out_dir, exist_ok=True)
    info = _image.read_image(model_bytes)
    output_count = int(np.prod(info.tensors[info.outputs[0]].dims))
    input_count = int(np.prod(info.tensors[info.inputs[0]].dims))
    kind = accuracy_kind(spec.loss, output_count)
    target_words = 1 if spec.loss.sparse_labels else output_count
    same_eval = dataset.x_eval is dataset.x
    header = """/* Generated by `microtrain firmware` from %(model)s: do not edit. */
#ifndef MT_FIRMWARE_DATA_H
#define MT_FIRMWARE_DATA_H

#include <stdint.h>

#include "microtrain.h"

/* mt_plan().total_bytes for this model and configuration, computed on the host. */
#define MT_FW_ARENA_BYTES %(arena)du
#define MT_FW_MODEL_BYTES %(model_bytes)du
#define MT_FW_EPOCHS %(epochs)d
#define MT_FW_TRAIN_ROWS %(train_rows)d
#define MT_FW_EVAL_ROWS %(eval_rows)d
#define MT_FW_INPUT_ELEMENTS %(input_count)d  /* float32 words per input row */
#define MT_FW_TARGET_WORDS %(target_words)d    /* 32-bit words per target row */
#define MT_FW_OUTPUT_ELEMENTS %(output_count)d
#define MT_FW_ACCURACY %(kind)d  /* MT_FW_ACCURACY_* of fw_app.h */

/* The model image, 16-byte aligned, in flash. */
extern const uint8_t mt_fw_model[MT_FW_MODEL_BYTES];
/* Rows as IEEE-754 bit patterns (float32 inputs and targets, or int32 labels). */
extern const uint32_t mt_fw_train_x[MT_FW_TRAIN_ROWS * MT_FW_INPUT_ELEMENTS];
extern const uint32_t mt_fw_train_y[MT_FW_TRAIN_ROWS * MT_FW_TARGET_WORDS];
%(eval_decl)s
/* The training configuration, as the host compiled it. */
void mt_fw_train_config(mt_train_config *cfg);

#endif /* MT_FIRMWARE_DATA_H */
""" % {"model": model_name, "arena": arena_bytes, "model_bytes": len(model_bytes),
       "epochs": spec.epochs, "train_rows": len(dataset.x), "eval_rows": len(dataset.x_eval),
       "input_count": input_count, "target_words": target_words, "output_count": output_count,
       "kind": kind,
       "eval_decl": ("/* No evaluation split: evaluate on the training rows. */\n"
                     "#define mt_fw_eval_x mt_fw_train_x\n#define mt_fw_eval_y mt_fw_train_y\n"
                     if same_eval else
                     "extern const uint32_t mt_fw_eval_x[MT_FW_EVAL_ROWS * MT_FW_INPUT_ELEMENTS];\n"
                     "extern const uint32_t mt_fw_eval_y[MT_FW_EVAL_ROWS * MT_FW_TARGET_WORDS];\n")}
    arrays = [("mt_fw_train_x", dataset.x), ("mt_fw_train_y", dataset.y)]
    if not same_eval:
        arrays += [("mt_fw_eval_x", dataset.x_eval), ("mt_fw_eval_y", dataset.y_eval)]
    parts = ["/* Generated by `microtrain firmware` from %s: do not edit. */" % model_name,
             '#include "%s"' % DATA_HEADER, "",
             "const uint8_t mt_fw_model[MT_FW_MODEL_BYTES] __attribute__((aligned(16))) = {",
             _c_bytes(model_bytes), "};", ""]
    for name, array in arrays:
        parts += ["const uint32_t %s[] = {" % name, _c_words(array), "};", ""]
    parts += ["void mt_fw_train_config(mt_train_config *cfg)", "{",
              "    mt_train_config_init(cfg);", _c_config_lines(config), "}", ""]
    _write_if_changed(os.path.join(out_dir, DATA_HEADER), header)
    _write_if_changed(os.path.join(out_dir, DATA_SOURCE), "\n".join(parts))


def _write_if_changed(path, text):
    """Keep the file (and its timestamp: no rebuild) when the text is already there."""
    if os.path.isfile(path):
        with open(path) as handle:
            if handle.read() == text:
                return
    with open(path, "w") as handle:
        handle.write(text)


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
    with open(os.path.join(source_dir, "CMakePresets.json")) as handle:
        presets = json.load(handle)
    return [p["name"] for p in presets["configurePresets"] if not p.get("hidden")]


def _run_checked(command, what, cwd=None, quiet=True):
    result = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE if quiet else None,
                            stderr=subprocess.STDOUT if quiet else None, text=True)
    if result.returncode != 0:
        raise FirmwareError("%s failed (%s, status %d)%s"
                            % (what, " ".join(command), result.returncode,
                               ":\n" + result.stdout if quiet else ""))


def build(source_dir, board, data_dir, build_dir, bench_steps=None, ops=None):
    """Configure preset ``board`` in ``build_dir`` on the generated data and build the
    firmware and benchmark programs; return microtrain_board.json (paths, how to run).
    ``ops``: the op names to build kernels for (CMake's MT_OPS, e.g. ["dense", "relu",
    "softmax"]); None builds every op."""
    if board not in board_presets(source_dir):
        raise FirmwareError("unknown board %r; the presets are %s"
                            % (board, ", ".join(board_presets(source_dir))))
    configure = ["cmake", "--preset", board, "-B", os.path.abspath(build_dir),
                 "-DMT_FIRMWARE_DATA_DIR=" + os.path.abspath(data_dir)]
    if bench_steps is not None:
        configure.append("-DMT_BENCH_STEPS=%d" % bench_steps)
    # always given, so a build folder reused with another choice does not keep the old one
    configure.append("-DMT_OPS=" + ";".join(ops or ()))
    _run_checked(configure, "configuring preset %s" % board, cwd=source_dir)
    _run_checked(["cmake", "--build", os.path.abspath(build_dir), "--target",
                  "microtrain_firmware", "microtrain_bench", "microtrain_bench_base"],
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
                            "the ARM toolchains)" % command[0]) from None
    except subprocess.TimeoutExpired:
        raise FirmwareError("%s did not finish within %d s" % (" ".join(command), timeout)) \
            from None
    return result.returncode, result.stdout.replace("\r\n", "\n"), result.stderr


_EPOCH_LINE = re.compile(r"^epoch (\d+) train_loss \S+ \(0x([0-9a-f]{8})\) "
                         r"eval_loss \S+ \(0x([0-9a-f]{8})\)(?: accuracy (\d+)/(\d+))?$",
                         re.MULTILINE)
_CRC_LINE = re.compile(r"^weights crc32 0x([0-9a-f]{8})$", re.MULTILINE)
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


def bits_to_float(bits):
    return float(np.array(bits, dtype="<u4").view("<f4"))


# ------------------------------------------------------------------ command line


def package(model_path, data_path, spec, out_dir):
    """Plan, replay on the host and write the C sources; returns the firmware.json record."""
    with open(model_path, "rb") as handle:
        model_bytes = handle.read()
    dataset = Dataset.load(data_path)
    with TrainSession(model_bytes) as session:
        spec.compile(session)
        plan = session.memory_plan()
        config = session.config  # what the generated C sets, field for field
        data = dataset.conform(session.get_inputs_tensorinfo()[0]["shape"][1:],
                               session.get_outputs_tensorinfo()[0]["shape"][1:],
                               spec.loss.sparse_labels)
    reference = host_reference(model_bytes, data, spec)
    write_sources(os.path.join(out_dir, "data"), model_bytes, data, spec, config,
                  plan["total_bytes"], os.path.basename(model_path))
    record = {"model": os.path.abspath(model_path), "data": os.path.abspath(data_path),
              "epochs": spec.epochs, "batch_size": spec.batch_size,
              "optimizer": spec.optimizer.name, "learning_rate": spec.optimizer.learning_rate,
              "loss": spec.loss.name, "num_trainable_ops": spec.num_trainable_ops,
              "plan": plan, "host_reference": reference}
    with open(os.path.join(out_dir, "firmware.json"), "w") as handle:
        json.dump(record, handle, indent=2)
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


def _parser():
    parser = _Parser(
        prog="microtrain firmware",
        description="Package a model image and a dataset into firmware that fine-tunes on the "
                    "device; build it for a board and optionally run it under QEMU, or only "
                    "write the C sources (--sources-only).")
    parser.add_argument("--board",
                        help="a CMake preset: mps2-an385, mps2-an386, mps2-an500, mps2-an505, mps3-an547, "
                             "host, arm-linux-gnueabihf, aarch64-linux-gnu (not with "
                             "--sources-only)")
    parser.add_argument("--model", required=True, help="the .mtm model image")
    parser.add_argument("--data", required=True, help=".npz with x, y (and x_eval, y_eval)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", required=True, help="output folder (data/, build/, firmware.json)")
    parser.add_argument("--optimizer", default=_config.DEFAULT_OPTIMIZER,
                        choices=sorted(_optimizers.ALIASES),
                        help="default %s (compile()'s)" % _config.DEFAULT_OPTIMIZER)
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="default: the optimizer's (sgd 0.01, adam 0.001)")
    parser.add_argument("--loss", default=_config.DEFAULT_LOSS, choices=sorted(_losses.ALIASES),
                        help="default %s (compile()'s)" % _config.DEFAULT_LOSS)
    parser.add_argument("--batch-size", type=int, default=_config.DEFAULT_BATCH_SIZE)
    parser.add_argument("--num-trainable-ops", type=int, default=-1,
                        help="train the last N ops (-1: all)")
    parser.add_argument("--sources-only", action="store_true",
                        help="only plan and write <out>/data/mt_firmware_data.{c,h} and "
                             "<out>/firmware.json: no build, no toolchain, no source tree")
    parser.add_argument("--run", action="store_true",
                        help="run it (QEMU) and compare with the host, bit for bit")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for --run")
    parser.add_argument("--source-dir", help="the microtrain source tree (found if omitted)")
    return parser


def main(argv=None):
    """``microtrain firmware ...``; returns the process exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.sources_only and (args.board or args.run):
        parser.error("--sources-only builds nothing: leave out --board and --run")
    if not args.sources_only and not args.board:
        parser.error("--board is required (or --sources-only to only write the C sources)")
    try:
        spec = TrainingSpec(args.epochs, args.optimizer, args.learning_rate, args.loss,
                            args.batch_size, args.num_trainable_ops)
        source_dir = None if args.sources_only else find_source_dir(args.source_dir)
        os.makedirs(args.out, exist_ok=True)
        record = package(args.model, args.data, spec, args.out)
        reference = record["host_reference"]
        print("arena: %d bytes (mt_plan on the host; the firmware checks it at boot)"
              % record["plan"]["total_bytes"])
        if args.sources_only:
            data_dir = os.path.join(args.out, "data")
            print("sources: %s, %s" % (os.path.join(data_dir, DATA_SOURCE),
                                       os.path.join(data_dir, DATA_HEADER)))
            print("record: %s" % os.path.join(args.out, "firmware.json"))
            return 0
        board_info = build(source_dir, args.board, os.path.join(args.out, "data"),
                           os.path.join(args.out, "build"))
        print("firmware: %s" % board_info["firmware"])
        if not args.run:
            return 0
        status, text, errors = run(board_info, timeout=args.timeout)
    except (FirmwareError, ValueError, OSError) as error:
        print("microtrain firmware: error: %s" % error, file=sys.stderr)
        return 2
    device = parse_output(text)
    where = "QEMU %s" % args.board if board_info["qemu_program"] else args.board
    print("%s:\n%s" % (where, _describe(device)))
    print("host (ctypes):\n%s" % _describe(reference))
    print("weights crc32 on the host:  0x%08x" % reference["crc32"])
    print("weights crc32 on %s: %s" % (args.board, "0x%08x" % device["crc32"]
                                       if device["crc32"] is not None else "(not printed)"))
    same = device == reference
    print("bit-identical: %s" % ("yes" if same else "NO"))
    if status != 0:
        print("microtrain firmware: the firmware exited with status %d\n%s%s"
              % (status, text, errors), file=sys.stderr)
        return 1
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
