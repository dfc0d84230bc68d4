"""Regenerate tests/convert/fixtures/keras/: .tflite files as a Keras user makes them, for
the importer's tests of 1-D convolution models, shared buffers, dynamic-range and int8
quantization (tests/convert/test_keras_files.py).

    # a venv of its own with tensorflow-cpu 2.21 (it pins another numpy than the tests use):
    python3 -m venv /work/venvs/tf && /work/venvs/tf/bin/pip install tensorflow-cpu==2.21.0
    /work/venvs/tf/bin/python tests/convert/make_keras_fixtures.py

The model is the usual accelerometer/audio classifier: 32 time steps of 3 channels ->
Conv1D(16, 5, ReLU) -> MaxPooling1D(2) -> Conv1D(16, 5, ReLU) -> GlobalAveragePooling1D ->
Dense(32, ReLU) -> Dense(4, softmax), Keras's default layer names (conv1d, conv1d_1, dense,
dense_1; Keras 3 scopes them conv1d_1, conv1d_1_2, dense_1, dense_1_2 in the file), kernels
from a fixed seed and the biases left at Keras's zeros, as a model is before training: the
converter stores equal constants once, so the two Conv1D's zero biases (16 each) share one
buffer (and drops the Dense layers' zero biases).

    har_conv1d.tflite          float32
    har_conv1d_hybrid.tflite   Optimize.DEFAULT without a representative dataset: int8
                               weights (those of 1024 elements or more: conv1d_1, dense),
                               float activations ("dynamic range")
    har_conv1d_int8.tflite     full int8 (representative dataset, float input and output);
                               its MEAN over the time axis has no int8 kernel in the core
    har_flatten_int8.tflite    full int8, Conv1D -> Flatten -> Dense(16, ReLU) -> Dense(4,
                               softmax): the Flatten inside the part that trains
    grey_multiplier.tflite     16x16x1 -> DepthwiseConv2D(3, depth_multiplier=8, stride 2,
                               ReLU) -> Conv2D(16, 1x1, ReLU) -> GlobalAveragePooling2D ->
                               Dense(3, softmax): a depth multiplier on one input channel
                               (MobileNetV1's first layer on a grey image, as TFLite Micro's
                               person detection has it)
    grey_multiplier_int8.tflite
                               its layers up to the pooling, full int8 (every op an int8 op
                               of the core, so every tensor is compared with LiteRT's)
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "keras")
STEPS, CHANNELS, CLASSES = 32, 3, 4


def seeded_kernels(model, seed):
    """Kernels from a fixed seed (Glorot-uniform's range); biases stay zero."""
    import numpy as np
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        weights = layer.get_weights()
        if not weights:
            continue
        kernel = weights[0]
        fan = kernel.shape[-2] * int(np.prod(kernel.shape[:-2])) + kernel.shape[-1]
        limit = np.sqrt(6.0 / fan)
        weights[0] = rng.uniform(-limit, limit, kernel.shape).astype("f4")
        layer.set_weights(weights)


def har_model():
    import keras
    keras.utils.clear_session()
    return keras.Sequential([
        keras.Input((STEPS, CHANNELS)),
        keras.layers.Conv1D(16, 5, activation="relu"),
        keras.layers.MaxPooling1D(2),
        keras.layers.Conv1D(16, 5, activation="relu"),
        keras.layers.GlobalAveragePooling1D(),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(CLASSES, activation="softmax"),
    ])


def flatten_model():
    import keras
    keras.utils.clear_session()
    return keras.Sequential([
        keras.Input((STEPS, CHANNELS)),
        keras.layers.Conv1D(8, 5, strides=2, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(CLASSES, activation="softmax"),
    ])


def grey_model(head=True):
    import keras
    keras.utils.clear_session()
    layers = [keras.Input((16, 16, 1)),
              keras.layers.DepthwiseConv2D(3, depth_multiplier=8, strides=2, padding="same",
                                           activation="relu"),
              keras.layers.Conv2D(16, 1, activation="relu"),
              keras.layers.GlobalAveragePooling2D()]
    if head:
        layers.append(keras.layers.Dense(3, activation="softmax"))
    return keras.Sequential(layers)


def grey_backbone():
    return grey_model(head=False)


def representative(seed, shape, samples=64):
    import numpy as np
    rng = np.random.default_rng(seed)
    for _ in range(samples):
        yield [rng.uniform(-2, 2, (1,) + shape).astype("f4")]


def convert(model, mode, seed=0):
    import tensorflow as tf
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode in ("hybrid", "int8"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "int8":
        shape = tuple(model.inputs[0].shape[1:])
        converter.representative_dataset = lambda: representative(seed, shape)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return converter.convert()


def main():
    os.makedirs(FIXTURES, exist_ok=True)
    outputs = {}
    for name, build, seed, mode in [("har_conv1d", har_model, 1, "float"),
                                    ("har_conv1d_hybrid", har_model, 1, "hybrid"),
                                    ("har_conv1d_int8", har_model, 1, "int8"),
                                    ("har_flatten_int8", flatten_model, 2, "int8"),
                                    ("grey_multiplier", grey_model, 3, "float"),
                                    ("grey_multiplier_int8", grey_backbone, 3, "int8")]:
        model = build()
        seeded_kernels(model, seed)
        outputs[name] = convert(model, mode, seed)
    for name, data in outputs.items():
        path = os.path.join(FIXTURES, name + ".tflite")
        with open(path, "wb") as handle:
            handle.write(data)
        print("%s: %d bytes" % (path, len(data)))


if __name__ == "__main__":
    main()
