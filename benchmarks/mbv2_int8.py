"""An int8 MobileNetV2 backbone frozen in flash, a float head fine-tuned on a Cortex-M7.

    python benchmarks/mbv2_int8.py [--board mps2-an500] [--steps 2] [--markdown]

Keras MobileNetV2(alpha=0.35, weights=None, include_top=False) at 128x128x3, quantized to
int8 by TensorFlow's converter (tests/convert/fixtures/int8/mbv2_035_128.tflite, made by
tests/convert/make_int8_fixtures.py), imported with ``new_head=10, int8_input=True``:
mean -> Dense(10) -> Softmax in float after the int8 backbone, the camera frame fed as int8.

1. Plans (host, exact for the device): the head alone, and the head with the depthwise
   convolution of the last inverted-residual block (``train_from="block_16"``: block 16 and
   Conv_1 run in float, the depthwise and the head train).
2. Builds ``microtrain firmware`` for the board with 4 random int8 frames and 10 classes
   (batch 1, SGD, one epoch), runs it under QEMU and replays it on the host: the weight CRCs
   must be equal (host = device, bit for bit).
3. Counts the instructions of one train step (boards/app/bench.c, the QEMU plugin of
   benchmarks/qemu_plugin) and reports flash (.text + .rodata: code, model image, data) and
   RAM (.data + .bss, the arena among it, + the stack the run measured: arm_cost.measured_ram).

No weights are downloaded: the backbone has random weights (the memory and the cost do
not depend on them; accuracy is measured on the same network trained on synthetic gratings,
benchmarks/sparse_accuracy.py's ``mbv2`` case, and on digits, benchmarks/digits_int8.py).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import microtrain
from microtrain.tools import firmware
from microtrain.tools.firmware_training import FirmwareError, TrainingSpec

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import arm_cost  # noqa: E402

MBV2 = os.path.join(REPO_ROOT, "tests", "convert", "fixtures", "int8", "mbv2_035_128.tflite")
TINY_TRAINING = {"model": "MobileNetV2-w0.35 (tiny-training, STM32F746)",
                 "peak_sram": 141 * 1024, "step_ms": 373,
                 "full_update_bytes": int(2.9 * 1024 * 1024)}


def plan_of(model, batch_size=1, mask=None):
    with microtrain.TrainSession(model) as session:
        if mask is None:
            session.compile("sgd", "categorical_crossentropy", batch_size=batch_size)
        else:
            session.compile("sgd", "categorical_crossentropy", batch_size=batch_size,
                            trainable=mask)
        return session.memory_plan()


def variants():
    """(name, converted model, trainable layers or None, what trains)."""
    head = microtrain.convert(MBV2, new_head=10, int8_input=True)
    block = microtrain.convert(MBV2, new_head=10, int8_input=True, train_from="block_16")
    # block 16's depthwise and the head's Dense, by the file's layer names; Conv_1
    # (112 -> 1280) runs in float between them, frozen, and carries the gradient
    chosen = ["block_16_depthwise", "new_head"]
    return [("head (Dense 1280->10)", head, None, "head"),
            ("block_16 depthwise + head", block, chosen, "block 16 dw, head")]


def run_board(board, steps, work_dir, model_bytes, name):
    os.makedirs(work_dir, exist_ok=True)
    model_path = os.path.join(work_dir, name + ".mtm")
    with open(model_path, "wb") as handle:
        handle.write(model_bytes)
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (4, 128, 128, 3)).astype(np.int8)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 4)]
    data_path = os.path.join(work_dir, "frames.npz")
    np.savez(data_path, x=x, y=y)
    spec = TrainingSpec(epochs=1, optimizer="sgd", learning_rate=0.01,
                        loss="categorical_crossentropy", batch_size=1)
    record = firmware.package(model_path, data_path, spec, work_dir)
    source = firmware.find_source_dir(REPO_ROOT)
    data_dir, build_dir = os.path.join(work_dir, "data"), os.path.join(work_dir, "build-" + board)
    info = firmware.build(source, board, data_dir, build_dir, bench_steps=steps,
                          cache={"MT_STACK_BYTES": ""})
    status, text, errors = firmware.run(info, "firmware", timeout=1200)
    device = firmware.parse_output(text)
    host = record["host_reference"]
    if status != 0 or device["crc32"] != host["crc32"] or device["epochs"] != host["epochs"]:
        raise FirmwareError("the device differs from the host (status %d):\n%s%s"
                            % (status, text, errors))
    plugin = arm_cost.build_plugin(work_dir)
    base = arm_cost.count_instructions(info, "bench_base", plugin)
    total = arm_cost.count_instructions(info, "bench", plugin)
    flash, _, sections = arm_cost.flash_and_ram(info["firmware"])
    ram = arm_cost.measured_ram(info["firmware"], text, lambda reserved: firmware.build(
        source, board, data_dir, build_dir, bench_steps=steps,
        cache={"MT_STACK_BYTES": reserved}, targets=("microtrain_firmware",)))
    return {"crc32": "0x%08x" % host["crc32"], "per_step": (total - base) / float(steps),
            "flash_bytes": flash, "ram_bytes": ram["ram_used"], "ram": ram,
            "image_bytes": len(model_bytes), "arena_bytes": record["plan"]["total_bytes"],
            "sections": sections}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="mps2-an500")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--work-dir", default=os.path.join(REPO_ROOT, "build", "mbv2-int8"))
    parser.add_argument("--plans-only", action="store_true", help="no firmware, no QEMU")
    parser.add_argument("--json", help="write the measurements to this file")
    args = parser.parse_args(argv)
    results = []
    for name, model, mask, what in variants():
        model_bytes = model.to_bytes()
        plan = plan_of(model, mask=mask)
        row = {"variant": name, "trains": what, "plan": plan, "image_bytes": len(model_bytes)}
        print("%s: arena %d bytes (int8 share %d, trained weights %d, metadata %d), "
              "image %d bytes" % (name, plan["total_bytes"], plan["int8_activation_bytes"],
                                  plan["weight_bytes"], plan["metadata_bytes"],
                                  len(model_bytes)))
        if not args.plans_only and mask is None:
            board = run_board(args.board, args.steps, os.path.join(args.work_dir, "head"),
                              model_bytes, "mbv2_head")
            row["board"] = board
            print("  %s: host = device (weights crc32 %s); %d instructions per train step; "
                  "flash %d bytes (image %d); RAM %d bytes (.data + .bss %d, stack measured %d)"
                  % (args.board, board["crc32"], round(board["per_step"]),
                     board["flash_bytes"], board["image_bytes"], board["ram_bytes"],
                     board["ram"]["static"], board["ram"]["stack_measured"]))
        results.append(row)
    print("tiny-training (published): %s, peak SRAM %d bytes, %d ms per step"
          % (TINY_TRAINING["model"], TINY_TRAINING["peak_sram"], TINY_TRAINING["step_ms"]))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
