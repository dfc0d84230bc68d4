"""What an int8 backbone costs in accuracy: a new head fine-tuned on a float and on an int8
backbone, on the host and on a Cortex-M7, bit for bit.

    python benchmarks/digits_int8.py [--board mps2-an500] [--epochs 40] [--no-board]

1. The backbone (tests/convert/make_int8_fixtures.py, TensorFlow's converter): a small CNN
   pretrained in float on scikit-learn's digits 0-4, then quantized to int8 with digits 0-4
   as the representative dataset. Both files are committed (a few KB each).
2. A new head (mean -> Dense(5) -> Softmax, the same initial weights on both) is fine-tuned
   on digits 5-9 (60 % of them; the other 40 % measure accuracy) with the backbone frozen:
   on the float backbone (the float importer, head appended) and on the int8 one
   (``microtrain.convert(..., new_head=5)``). Both on the host.
3. The int8 run again as firmware on the board under QEMU, replayed on the host: the
   per-epoch losses, accuracy counts and weight CRC must be the host's bits. Both variants
   are also built as cost benchmarks: arena, flash and instructions per train step.
"""

import argparse
import os
import sys

import numpy as np

import microtrain
from microtrain import ops as _ops
from microtrain.nn import image as _image
from microtrain.tools import firmware
from microtrain.tools.firmware_training import TrainingSpec

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import arm_cost  # noqa: E402

FIXTURES = os.path.join(REPO_ROOT, "tests", "convert", "fixtures", "int8")
CLASSES = 5
BATCH = 16
LEARNING_RATE = 0.5


def digits_5_to_9(seed=0):
    from sklearn.datasets import load_digits  # bundled with scikit-learn
    digits = load_digits()
    keep = digits.target >= 5
    x = (digits.data[keep] / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    labels = digits.target[keep] - 5
    order = np.random.default_rng(seed).permutation(len(x))
    x, labels = x[order], labels[order]
    y = np.eye(CLASSES, dtype=np.float32)[labels]
    split = int(0.6 * len(x))
    return x[:split], y[:split], x[split:], y[split:]


def append_head(image_bytes, classes, seed=0):
    """The float image with GlobalAveragePool -> Dense(classes) -> Softmax appended, the
    head initialised as tflite_int8's new head (Glorot uniform from ``seed``, zero bias)."""
    parsed = _image.read_image(image_bytes)
    tensors = []
    for t in parsed.tensors:
        data = parsed.tensor_data(t.index).copy() if t.flags & _image.FLAG_CONST else None
        tensors.append(_image.TensorSpec(t.dims, flags=t.flags & ~_image.FLAG_OUTPUT,
                                         dtype=t.dtype, data=data))
    ops = [_image.OpSpec(op.op_type, op.inputs, op.outputs, op.params) for op in parsed.ops]
    features = parsed.outputs[0]
    channels = parsed.tensors[features].dims[-1]
    rng = np.random.default_rng(seed)
    limit = np.sqrt(6.0 / (channels + classes))
    weight = rng.uniform(-limit, limit, (classes, channels)).astype(np.float32)

    def add(spec):
        tensors.append(spec)
        return len(tensors) - 1

    pooled = add(_image.TensorSpec((channels,)))
    ops.append(_image.OpSpec(_ops.GLOBAL_AVERAGE_POOL, [features], [pooled]))
    w = add(_image.TensorSpec(weight.shape, _image.FLAG_CONST | _image.FLAG_TRAINABLE,
                              data=weight))
    b = add(_image.TensorSpec((classes,), _image.FLAG_CONST | _image.FLAG_TRAINABLE,
                              data=np.zeros(classes, np.float32)))
    logits = add(_image.TensorSpec((classes,)))
    ops.append(_image.OpSpec(_ops.DENSE, [pooled, w, b], [logits]))
    out = add(_image.TensorSpec((classes,), flags=_image.FLAG_OUTPUT))
    ops.append(_image.OpSpec(_ops.SOFTMAX, [logits], [out]))
    return _image.write_image(tensors, ops, parsed.inputs, [out])


def models():
    float_backbone = microtrain.convert(os.path.join(FIXTURES, "digits_backbone_float.tflite"))
    float_model = append_head(float_backbone.to_bytes(), CLASSES)
    int8_model = microtrain.convert(os.path.join(FIXTURES, "digits_backbone_int8.tflite"),
                                    new_head=CLASSES).to_bytes()
    return {"float": float_model, "int8": int8_model}


def fine_tune(model_bytes, data, epochs):
    """Train the head (the last two ops: Dense, Softmax) with SGD; test accuracy per epoch."""
    x, y, x_test, y_test = data
    accuracies = []
    with microtrain.TrainSession(model_bytes) as session:
        session.compile(microtrain.optimizers.SGD(LEARNING_RATE), "categorical_crossentropy",
                        batch_size=BATCH, num_trainable_ops=2)
        for _ in range(epochs):
            for first in range(0, len(x), BATCH):
                session.train_step(x[first:first + BATCH], y[first:first + BATCH])
            predicted = session.infer(x_test)[0].argmax(1)
            accuracies.append(float(np.mean(predicted == y_test.argmax(1))))
        plan = session.memory_plan()
    return accuracies, plan


def on_board(name, model_bytes, data, epochs, board, work_dir):
    """Fine-tune on the board under QEMU against the host; cost of one step."""
    os.makedirs(work_dir, exist_ok=True)
    model_path = os.path.join(work_dir, name + ".mtm")
    with open(model_path, "wb") as handle:
        handle.write(model_bytes)
    data_path = os.path.join(work_dir, "digits.npz")
    x, y, x_test, y_test = data
    np.savez(data_path, x=x, y=y, x_eval=x_test, y_eval=y_test)
    spec = TrainingSpec(epochs=epochs, optimizer="sgd", learning_rate=LEARNING_RATE,
                        loss="categorical_crossentropy", batch_size=BATCH, num_trainable_ops=2)
    record = firmware.package(model_path, data_path, spec, work_dir)
    source = firmware.find_source_dir(REPO_ROOT)
    data_dir, build_dir = os.path.join(work_dir, "data"), os.path.join(work_dir, "build")
    info = firmware.build(source, board, data_dir, build_dir, bench_steps=4,
                          cache={"MT_STACK_BYTES": ""})
    status, text, errors = firmware.run(info, "firmware", timeout=1800)
    device = firmware.parse_output(text)
    host = record["host_reference"]
    identical = status == 0 and device["crc32"] == host["crc32"] and \
        device["epochs"] == host["epochs"]
    plugin = arm_cost.build_plugin(work_dir)
    per_step = (arm_cost.count_instructions(info, "bench", plugin) -
                arm_cost.count_instructions(info, "bench_base", plugin)) / 4.0
    flash = arm_cost.flash_and_ram(info["firmware"])[0]
    ram = arm_cost.measured_ram(info["firmware"], text, lambda reserved: firmware.build(
        source, board, data_dir, build_dir, bench_steps=4, cache={"MT_STACK_BYTES": reserved},
        targets=("microtrain_firmware",)))["ram_used"]
    last = host["epochs"][-1]
    return {"identical": identical, "crc32": "0x%08x" % host["crc32"],
            "device_accuracy": "%d/%d" % (last["correct"], last["total"]),
            "per_step": per_step, "flash": flash, "ram": ram,
            "arena": record["plan"]["total_bytes"], "image": len(model_bytes)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="mps2-an500")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--no-board", action="store_true")
    parser.add_argument("--work-dir", default=os.path.join(REPO_ROOT, "build", "digits-int8"))
    args = parser.parse_args(argv)
    data = digits_5_to_9()
    print("digits 5-9: %d rows fine-tune the head, %d measure accuracy; backbone pretrained "
          "on digits 0-4; batch %d, SGD lr %g, %d epochs"
          % (len(data[0]), len(data[2]), BATCH, LEARNING_RATE, args.epochs))
    for name, model_bytes in models().items():
        accuracies, plan = fine_tune(model_bytes, data, args.epochs)
        print("%-5s backbone: test accuracy %.4f (best %.4f), arena %d bytes, image %d bytes"
              % (name, accuracies[-1], max(accuracies), plan["total_bytes"], len(model_bytes)))
        if not args.no_board:
            result = on_board(name, model_bytes, data, args.epochs, args.board,
                              os.path.join(args.work_dir, name))
            print("      %s: host = device %s (crc32 %s, accuracy %s); %d instructions per "
                  "train step of %d rows; flash %d bytes, RAM %d bytes (arena %d)"
                  % (args.board, "yes" if result["identical"] else "NO", result["crc32"],
                     result["device_accuracy"], round(result["per_step"]), BATCH,
                     result["flash"], result["ram"], result["arena"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
