"""What ``microtrain.sparse_update`` picks for MLPerf Tiny's int8 reference models under a
RAM budget (docs/memory.md, "Sparse update").

    python benchmarks/sparse_update.py [--budget 262144] [--batch-size 1] [--model FILE ...]
                                       [--board mps2-an500|mps3-an547] [--int8 [--steps 2]]

Each int8 file of examples/models/mlperf_tiny is converted with ``train_from`` its last block
(benchmarks/mlperf_tiny.py's MODELS: the block's first layer), so the block is float and
everything before it stays int8 and frozen; then, at batch 1 with SGD and the task's loss:
the arena of the head alone, of the whole last block, and of the scheme ``sparse_update``
picks under the budget (the core's plan; the scheme printed as JSON). With ``--board``, the
scheme also fine-tunes on that board under QEMU (``microtrain.tools.firmware``: 4 random rows
of the file's input range, batch 1, one epoch of SGD, benchmarks/mlperf_tiny.py's task)
against its replay on the host: the weights' CRC, the RAM the firmware takes (.data +
.bss, the arena among them, + the stack it measured: the high-water mark of its painted stack,
which the firmware is then linked again to reserve, rounded up, plus 1 KiB) and its flash
(text, rodata and the data's load image, as benchmarks/mbv2_int8.py counts it).

With ``--int8``, the last block's int8 layers train in place instead (``int8_train``: int8
weights updated with QAS, ops/qas.c) and the picker chooses among them; MobileNetV2-w0.35
(tests/convert/fixtures/int8/mbv2_035_128.tflite, new_head=10, int8_input=True, from block 16)
is added at 256, 240, 128 and 120 KiB (``--mbv2-budget`` for some of them; at a budget where
its float head does not train whole, the head is int8 trained in place: ``int8_head``), and
with ``--board`` each scheme's step is also counted in instructions (boards/app/bench.c,
``--steps`` steps, as benchmarks/mbv2_int8.py counts).
"""

import argparse
import os
import sys
import time

import microtrain
from microtrain.tools.sparse_update import _layers_with_weights

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mlperf_tiny as table  # noqa: E402

MODELS = ["kws_ref_model.tflite", "vww_96_int8.tflite", "pretrainedResnet_quant.tflite",
          "ad01_int8.tflite"]
MBV2 = "mbv2_035_128.tflite"
MBV2_PATH = os.path.join(table.REPO_ROOT, "tests", "convert", "fixtures", "int8", MBV2)
MBV2_FROM = "block_16"  # its last inverted-residual block, with Conv_1 and the new head
# 240 and 120 KiB: arenas whose board RAM with the measured stack and the firmware's other
# data (about 10 KiB) stays within 256 and 128 KiB
MBV2_BUDGETS = (256 * 1024, 240 * 1024, 128 * 1024, 120 * 1024)
TINY_TRAINING = "tiny-training (MobileNetV2-w0.35, STM32F746): 141 KB peak SRAM, 373 ms a step"


def measure(name, budget, batch_size):
    model = table.block_model(name)
    loss = table.loss_of(name)
    with microtrain.TrainSession(model) as session:
        def total(trainable):
            return session.plan_memory("sgd", loss, batch_size, trainable)["total_bytes"]

        head = total(1)
        block = total("all")
        start = time.time()
        try:
            scheme = microtrain.sparse_update(session, budget, batch_size, "sgd", loss)
        except ValueError as error:
            return {"model": name, "head": head, "block": block, "error": str(error)}
        seconds = time.time() - start
        session.compile("sgd", loss, batch_size=batch_size, trainable=scheme)
        plan = session.memory_plan()
        return {"model": name, "head": head, "block": block, "scheme": scheme,
                "total": plan["total_bytes"], "seconds": seconds,
                "layers": [row for row in plan["layers"] if row["trains"] != "none"]}


def board_run(name, model, scheme, board, work_dir, loss, x, y, steps=None):
    """The scheme fine-tuned on ``board`` (4 rows x, targets y, batch 1, one epoch of SGD)
    against the host: {"crc32", "host_crc32", "equal", "ram_used", "ram"} (or "error"); with
    ``steps``, also "per_step": the instructions of one train step (boards/app/bench.c run
    ``steps`` steps, less its base, counted by benchmarks/qemu_plugin as mbv2_int8.py does)."""
    import numpy as np
    import arm_cost
    from microtrain.tools import firmware
    from microtrain.tools.firmware_training import FirmwareError, TrainingSpec
    ram, stack = table.board_memory(board)
    folder = os.path.join(work_dir, name.split(".")[0])
    os.makedirs(folder, exist_ok=True)
    model_path = os.path.join(folder, "model.mtm")
    model.save(model_path)
    data_path = os.path.join(folder, "rows.npz")
    np.savez(data_path, x=x, y=y)
    spec = TrainingSpec(epochs=1, optimizer="sgd", learning_rate=table.LEARNING_RATE,
                        loss=loss, batch_size=1, trainable=scheme)
    try:
        record = firmware.package(model_path, data_path, spec, folder)
        info = firmware.build(firmware.find_source_dir(table.REPO_ROOT), board,
                              os.path.join(folder, "data"),
                              os.path.join(folder, "build-" + board), ops=record["ops"],
                              plan_buffers=record["plan_buffers"], bench_steps=steps,
                              cache={"MT_STACK_BYTES": ""})
        status, text, errors = firmware.run(info, timeout=1200)
        device, host = firmware.parse_output(text), record["host_reference"]
        result = {"crc32": device["crc32"], "host_crc32": host["crc32"], "ram": ram,
                  "equal": status == 0 and device == host, "stack_allowance": stack,
                  "flash": arm_cost.flash_and_ram(info["firmware"])[0]}
        result.update(arm_cost.measured_ram(
            info["firmware"], text, lambda reserved: firmware.build(
                firmware.find_source_dir(table.REPO_ROOT), board, os.path.join(folder, "data"),
                os.path.join(folder, "build-" + board), ops=record["ops"],
                plan_buffers=record["plan_buffers"], bench_steps=steps,
                cache={"MT_STACK_BYTES": reserved}, targets=("microtrain_firmware",))))
        if steps:
            plugin = arm_cost.build_plugin(folder)
            base = arm_cost.count_instructions(info, "bench_base", plugin)
            result["per_step"] = (arm_cost.count_instructions(info, "bench", plugin) - base) \
                / float(steps)
    except FirmwareError as error:
        return {"error": str(error)}
    return result


# ------------------------------------------------------------------ int8 layers trained in place

def int8_model(name, int8_head=False):
    """The file with its last block's int8 layers trained in place (``int8_train``, QAS):
    MLPerf Tiny's from benchmarks/mlperf_tiny.py's block start; MobileNetV2-w0.35 with a new
    head of 10 classes (float, or with ``int8_head`` int8 trained in place), the camera frame
    fed as int8, from block 16 (its expand, depthwise and project, Conv_1 and the head)."""
    if name == MBV2:
        return microtrain.convert(MBV2_PATH, new_head=10, int8_input=True, train_from=MBV2_FROM,
                                  int8_train=True, int8_head=int8_head)
    return microtrain.convert(table.path_of(name), train_from=table.block_start(name),
                              int8_train=True)


def mbv2_model(budget, path=MBV2_PATH, **options):
    """MobileNetV2 for ``budget``: its new head float where the float head trains whole within
    the budget, else int8 trained in place (``int8_head``: 12,800 bytes of weights where the
    float head's weight and gradient are 102,400), so that the head learns (a new head left
    at its random weights stays at chance, docs/memory.md); (model, int8_head)."""
    def model(int8_head):
        return microtrain.convert(path, new_head=10, int8_input=True, train_from=MBV2_FROM,
                                  int8_train=True, int8_head=int8_head, **options)
    float_head = model(False)
    with microtrain.TrainSession(float_head) as session:
        head = _layers_with_weights(session)[0][0]
        fits = session.plan_memory("sgd", int8_loss(MBV2), 1, {head: "all"})["total_bytes"] \
            <= budget
    return (float_head, False) if fits else (model(True), True)


def int8_loss(name):
    return "categorical_crossentropy" if name == MBV2 else table.loss_of(name)


def int8_rows(name, model):
    """(x, y): benchmarks/mlperf_tiny.py's task rows, or 4 random int8 frames and one-hot
    targets of 10 classes for MobileNetV2 (mbv2_int8.py's)"""
    import numpy as np
    if name == MBV2:
        rng = np.random.default_rng(0)
        x = rng.integers(-128, 128, (table.BOARD_ROWS, 128, 128, 3)).astype(np.int8)
        return x, np.eye(10, dtype=np.float32)[rng.integers(0, 10, table.BOARD_ROWS)]
    x = table.task_rows(name, table.BOARD_ROWS, seed=3)
    return x, table.task_targets(name, model, x)


def measure_int8(name, model, budget):
    """What sparse_update picks for the int8 model under ``budget`` (batch 1, SGD): the
    scheme, its plan's figures and per layer what trains, or "error" (nothing fits)."""
    loss = int8_loss(name)
    try:
        scheme = microtrain.sparse_update(model, budget, 1, "sgd", loss)
    except ValueError as error:
        with microtrain.TrainSession(model) as session:  # what holds the RAM even so
            last = _layers_with_weights(session)[0][0]  # the picker's first: the head
            plan = session.plan_memory("sgd", loss, 1, {last: "bias"})
        return {"model": name, "budget": budget, "error": str(error), "plan": plan}
    with microtrain.TrainSession(model) as session:
        session.compile("sgd", loss, batch_size=1, trainable=scheme)
        plan = session.memory_plan()
    return {"model": name, "budget": budget, "scheme": scheme, "plan": plan,
            "layers": [row for row in plan["layers"] if row["trains"] != "none"]}


def print_int8(row):
    plan = row["plan"]
    print("%s, int8 in place, budget %d:" % (row["model"], row["budget"]))
    if "error" in row:
        print("  %s" % row["error"])
        print("  the head's bias alone: arena %d bytes, of which int8 activations %d, metadata "
              "(scales) %d" % (plan["total_bytes"], plan["int8_activation_bytes"],
                               plan["metadata_bytes"]))
        return
    print("  arena %d bytes: int8 activations %d, trained weights %d, gradients %d, "
          "optimizer %d, metadata %d" % (plan["total_bytes"], plan["int8_activation_bytes"],
                                         plan["weight_bytes"], plan["gradient_bytes"],
                                         plan["optimizer_bytes"], plan["metadata_bytes"]))
    for layer in row["layers"]:
        print("    layer %-28s %-20s %8d bytes" % (layer["label"], layer["trains"],
                                                 layer["bytes"]))
    print("  scheme: %s" % row["scheme"])


def run_int8(args):
    cases = [(name, args.budget) for name in args.model or MODELS if name != MBV2]
    if not args.model or MBV2 in args.model:
        cases += [(MBV2, budget) for budget in args.mbv2_budget or MBV2_BUDGETS]
    for name, budget in cases:
        if name == MBV2:
            model, int8_head = mbv2_model(budget)
            if int8_head:
                print("%s at %d: the float head does not fit whole; the new head is int8, "
                      "trained in place (int8_head)" % (name, budget))
        else:
            model = int8_model(name)
        row = measure_int8(name, model, budget)
        print_int8(row)
        if args.board and "error" not in row:
            x, y = int8_rows(name, model)
            board = board_run(name, model, row["scheme"], args.board,
                              os.path.join(args.work_dir, "int8-%d" % budget), int8_loss(name),
                              x, y, steps=args.steps)
            print_board(args.board, board)
    print(TINY_TRAINING)


def print_board(board_name, board):
    if "error" in board:
        print("  %s: %s" % (board_name, board["error"]))
        return
    stack = "stack measured %d (linked with %d reserved)" % (board["stack_measured"],
                                                           board["stack_reserved"])
    print("  %s: weights CRC 0x%08x, host 0x%08x: %s; RAM %d of %d bytes (.data + .bss %d, "
          "%s), flash %d%s"
          % (board_name, board["crc32"] or 0, board["host_crc32"],
             "host = device" if board["equal"] else "DIFFERENT", board["ram_used"],
             board["ram"], board["static"], stack, board["flash"],
             "; %d instructions a step" % round(board["per_step"])
             if "per_step" in board else ""))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=256 * 1024)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--model", action="append", choices=MODELS + [MBV2],
                        help="these files only (%s: with --int8, at its budgets)" % MBV2)
    parser.add_argument("--board", help="also fine-tune the scheme on this board (QEMU)")
    parser.add_argument("--int8", action="store_true",
                        help="the last blocks' int8 layers trained in place (QAS), and "
                             "MobileNetV2-w0.35 at 256, 240, 128 and 120 KiB")
    parser.add_argument("--mbv2-budget", type=int, action="append",
                        help="--int8: MobileNetV2 at these budgets only (default: %s)"
                        % ", ".join(str(b) for b in MBV2_BUDGETS))
    parser.add_argument("--steps", type=int, default=2,
                        help="--int8 --board: train steps the instruction count runs")
    parser.add_argument("--work-dir", default=os.path.join(table.REPO_ROOT, "build",
                                                           "sparse-update"))
    args = parser.parse_args(argv)
    if args.model and MBV2 in args.model and not args.int8:
        parser.error("--model %s: MobileNetV2-w0.35 is measured with --int8 only" % MBV2)
    if args.int8:
        run_int8(args)
        return 0
    for name in args.model or MODELS:
        row = measure(name, args.budget, args.batch_size)
        print("%s: head %d bytes, last block whole %d bytes" % (name, row["head"], row["block"]))
        if "error" in row:
            print("  %s" % row["error"])
            continue
        print("  sparse_update under %d: %d bytes (%.1f s to choose)"
              % (args.budget, row["total"], row["seconds"]))
        for layer in row["layers"]:
            print("    layer %-28s %-20s %8d bytes" % (layer["label"], layer["trains"],
                                                     layer["bytes"]))
        print("  scheme: %s" % row["scheme"])
        if args.board:
            model = table.block_model(name)
            x = table.task_rows(name, table.BOARD_ROWS, seed=3)
            print_board(args.board, board_run(name, model, row["scheme"], args.board,
                                              args.work_dir, table.loss_of(name), x,
                                              table.task_targets(name, model, x)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
