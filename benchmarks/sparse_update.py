"""What ``microtrain.sparse_update`` picks for MLPerf Tiny's int8 reference models under a
RAM budget (docs/memory.md, "Sparse update").

    python benchmarks/sparse_update.py [--budget 262144] [--batch-size 1] [--model FILE ...]
                                       [--board mps2-an500]

Each int8 file of examples/models/mlperf_tiny is converted with ``train_from`` its last block
(benchmarks/mlperf_tiny.py's MODELS: the block's first layer), so the block is float and
everything before it stays int8 and frozen; then, at batch 1 with SGD and the task's loss:
the arena of the head alone, of the whole last block, and of the scheme ``sparse_update``
picks under the budget (the core's plan; the scheme printed as JSON). With ``--board``, the
scheme also fine-tunes on that board under QEMU (``microtrain.tools.firmware``: 4 random rows
of the file's input range, batch 1, one epoch of SGD, benchmarks/mlperf_tiny.py's task)
against its replay on the host: the weights' CRC and the RAM the firmware takes.
"""

import argparse
import os
import sys
import time

import microtrain

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mlperf_tiny as table  # noqa: E402

MODELS = ["kws_ref_model.tflite", "vww_96_int8.tflite", "pretrainedResnet_quant.tflite",
          "ad01_int8.tflite"]


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


def board_run(name, model, scheme, board, work_dir):
    """The scheme fine-tuned on ``board`` against the host: {"crc32", "host_crc32", "equal",
    "ram_used", "ram"} (or "error")."""
    import numpy as np
    from microtrain.tools import firmware
    from microtrain.tools.firmware_training import FirmwareError, TrainingSpec
    ram, stack = table.board_memory(board)
    folder = os.path.join(work_dir, name.split(".")[0])
    os.makedirs(folder, exist_ok=True)
    model_path = os.path.join(folder, "model.mtm")
    model.save(model_path)
    x = table.task_rows(name, table.BOARD_ROWS, seed=3)
    data_path = os.path.join(folder, "rows.npz")
    np.savez(data_path, x=x, y=table.task_targets(name, model, x))
    spec = TrainingSpec(epochs=1, optimizer="sgd", learning_rate=table.LEARNING_RATE,
                        loss=table.loss_of(name), batch_size=1, trainable=scheme)
    try:
        record = firmware.package(model_path, data_path, spec, folder)
        info = firmware.build(firmware.find_source_dir(table.REPO_ROOT), board,
                              os.path.join(folder, "data"),
                              os.path.join(work_dir, "build-" + board), ops=record["ops"])
        status, text, errors = firmware.run(info, timeout=1200)
    except FirmwareError as error:
        return {"error": str(error)}
    device, host = firmware.parse_output(text), record["host_reference"]
    return {"crc32": device["crc32"], "host_crc32": host["crc32"], "ram": ram,
            "equal": status == 0 and device == host,
            "ram_used": table.firmware_ram(info["firmware"]) + stack}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=256 * 1024)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--model", action="append", choices=MODELS)
    parser.add_argument("--board", help="also fine-tune the scheme on this board (QEMU)")
    parser.add_argument("--work-dir", default=os.path.join(table.REPO_ROOT, "build",
                                                           "sparse-update"))
    args = parser.parse_args(argv)
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
            board = board_run(name, table.block_model(name), row["scheme"], args.board,
                              args.work_dir)
            if "error" in board:
                print("  %s: %s" % (args.board, board["error"]))
                continue
            print("  %s: weights CRC 0x%08x, host 0x%08x: %s; RAM %d of %d bytes"
                  % (args.board, board["crc32"] or 0, board["host_crc32"],
                     "host = device" if board["equal"] else "DIFFERENT", board["ram_used"],
                     board["ram"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
