"""Pretrain Keras MobileNetV2-w0.35 (128x128x3) on a synthetic source task and write it as a
full-int8 .tflite: the trained backbone benchmarks/sparse_accuracy.py adapts ("mbv2" case).

    # a venv of its own (tensorflow-cpu pins another numpy than the tests use):
    python3 -m venv /work/venvs/tf && /work/venvs/tf/bin/pip install tensorflow-cpu==2.21.0
    OMP_NUM_THREADS=1 TF_NUM_INTEROP_THREADS=1 TF_NUM_INTRAOP_THREADS=1 \\
        /work/venvs/tf/bin/python benchmarks/make_mbv2_trained.py [--steps 1500]

Why: the committed tests/convert/fixtures/int8/mbv2_035_128.tflite has random weights (no
ImageNet weights can be downloaded here), its pooled features are the same for every input,
and every fine-tuning scheme stays at chance on it. This one is trained.

Source task: benchmarks/synthetic_images.py's gratings in blobs, its 12 source classes
(4 orientations x 3 frequencies in an elliptic region over a low-frequency background,
noise sigma 0.3), fresh images every step (batch 32, ``--steps`` steps, Adam 2e-3, seeds
fixed: Keras seed 21, image seeds 100000 + step). The model is Keras's
``MobileNetV2(alpha=0.35, input_shape=(128, 128, 3), include_top=False, weights=None)`` with
GlobalAveragePooling2D -> Dense(12) on top while pretraining; the file holds the backbone
(up to Conv_1's 4x4x1280 ReLU6 output, exactly the layers of mbv2_035_128.tflite), so
``microtrain.convert(path, new_head=N)`` adds its own head as for the random file.

Conversion: as tests/convert/make_int8_fixtures.py does (``Optimize.DEFAULT``,
``TFLITE_BUILTINS_INT8``, float input and output), with 128 source images (seed 7) as the
representative dataset.

Output: tests/convert/fixtures/int8/mbv2_035_128_gratings.tflite (about 0.6 MB; the run
prints its size and the source task's held-out accuracy, float and after quantization).
TensorFlow's training is deterministic on one CPU thread with op determinism on, but its
bits may differ across TensorFlow versions and CPUs: the committed file is the one this
script wrote with tensorflow-cpu 2.21.0 on x86-64; the benchmark reads the file, never
retrains.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import synthetic_images as images  # noqa: E402

OUT = os.path.join(REPO_ROOT, "tests", "convert", "fixtures", "int8",
                   "mbv2_035_128_gratings.tflite")
SIGMA = 0.3
BATCH = 32


def source_batch(step, batch=BATCH):
    """(x, labels) of one pretraining step: its own seeds, so a run is reproducible."""
    classes = images.source_classes()
    labels = images.balanced_labels(len(classes), -(-batch // len(classes)), 100000 + step)
    labels = labels[:batch]
    return images.images(classes, labels, 100000 + step, SIGMA), labels


def held_out(count=240, seed=99):
    classes = images.source_classes()
    labels = images.balanced_labels(len(classes), count // len(classes), seed)
    return images.images(classes, labels, seed, SIGMA), labels


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)

    import numpy as np
    import keras
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(21)

    base = keras.applications.MobileNetV2(input_shape=(128, 128, 3), alpha=0.35,
                                          include_top=False, weights=None)
    # Keras's default BatchNormalization momentum (0.999) would leave the moving statistics
    # the file is converted with 22 % at their initial (0, 1) after 1500 steps; at 0.9 they
    # follow the last ~10 batches
    for layer in base.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = 0.9
    pooled = keras.layers.GlobalAveragePooling2D()(base.output)
    model = keras.Model(base.input, keras.layers.Dense(12, activation="softmax")(pooled))
    model.compile(optimizer=keras.optimizers.Adam(2e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x_held, y_held = held_out()
    start, losses = time.time(), []
    for step in range(args.steps):
        x, y = source_batch(step)
        loss, accuracy = model.train_on_batch(x, y)
        losses.append(loss)
        if step % 50 == 0 or step == args.steps - 1:
            print("step %4d  loss (mean of the last 50) %.3f  batch accuracy %.2f  %.0f s"
                  % (step, np.mean(losses[-50:]), accuracy, time.time() - start))
            sys.stdout.flush()
    float_accuracy = model.evaluate(x_held, y_held, verbose=0, batch_size=BATCH)[1]
    print("source task, held out (%d images), float: %.3f" % (len(y_held), float_accuracy))

    backbone = keras.Model(base.input, base.output)

    def representative():
        x_rep, _ = source_batch(10 ** 6, 128)  # seed 1,100,000: never a training batch
        for row in x_rep:
            yield [row[None]]

    converter = tf.lite.TFLiteConverter.from_keras_model(backbone)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    data = converter.convert()
    with open(args.out, "wb") as handle:
        handle.write(data)
    print("%s: %d bytes" % (args.out, len(data)))

    # the int8 file's features with the float head the pretraining learned, on the held-out
    # images: how much the quantization kept
    interpreter = tf.lite.Interpreter(model_content=data)
    interpreter.allocate_tensors()
    source = interpreter.get_input_details()[0]["index"]
    target = interpreter.get_output_details()[0]["index"]
    head = model.layers[-1]
    hits = 0
    for row, label in zip(x_held, y_held):
        interpreter.set_tensor(source, row[None])
        interpreter.invoke()
        features = interpreter.get_tensor(target).mean(axis=(1, 2))
        hits += int(np.argmax(head(features).numpy()) == label)
    print("source task, held out, int8 backbone + float head: %.3f" % (hits / len(y_held)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
