"""What ``microtrain.sparse_update`` picks for MLPerf Tiny's int8 reference models under a
RAM budget (docs/memory.md, "Sparse update").

    python benchmarks/sparse_update.py [--budget 262144] [--batch-size 1] [--model FILE ...]

Each int8 file of examples/models/mlperf_tiny is converted with ``train_from`` its last block
(benchmarks/mlperf_tiny.py's MODELS: the block's first layer), so the block is float and
everything before it stays int8 and frozen; then, at batch 1 with SGD and the task's loss:
the arena of the head alone, of the whole last block, and of the scheme ``sparse_update``
picks under the budget (the core's plan; the scheme printed as JSON).
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=256 * 1024)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--model", action="append", choices=MODELS)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
