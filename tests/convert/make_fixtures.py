"""Regenerate the converter fixtures in tests/convert/fixtures/ with the real converters.

    # .tflite, with TensorFlow's TFLiteConverter from Keras models (tensorflow-cpu 2.21;
    # a venv of its own: it pins another numpy/protobuf than the test venv may hold)
    python tests/convert/make_fixtures.py tflite
    # .onnx, with torch.onnx.export of PyTorch modules (the test venv: torch 2.13); the
    # TorchScript exporter always, the torch.export-based one ("dynamo") where onnxscript
    # is installed
    python tests/convert/make_fixtures.py onnx

The tests never need TensorFlow: they read the committed files. Weights are drawn from
fixed seeds and the BatchNorm statistics are set away from identity, so folding them
changes the numbers. Every model is small (kilobytes): 8x8 images, a few channels.
The .circle fixtures are not made here: no tflite-to-circle converter is on PyPI, so
tests/convert/test_onert.py writes them with microtrain's own exporter and checks that
onert loads and trains them like the .tflite they came from.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")


# ---------------------------------------------------------------- TensorFlow / Keras


def keras_models():
    import numpy as np
    import tensorflow as tf
    from tensorflow import keras
    from tensorflow.keras import layers as kl

    def randomise_batch_norms(model, seed):
        """BatchNorm statistics away from identity, and biases away from zero (the
        converter drops an all-zero bias, and then nothing would train it)."""
        rng = np.random.default_rng(seed)
        for layer in model.layers:
            if isinstance(layer, (kl.Dense, kl.Conv2D, kl.DepthwiseConv2D)) and \
                    layer.use_bias:
                kernel, bias = layer.get_weights()
                layer.set_weights([kernel, rng.uniform(-0.3, 0.3, bias.shape).astype("f4")])
            if isinstance(layer, kl.BatchNormalization):
                gamma, beta, mean, var = layer.get_weights()
                layer.set_weights([rng.uniform(0.5, 1.5, gamma.shape).astype("f4"),
                                   rng.uniform(-0.3, 0.3, beta.shape).astype("f4"),
                                   rng.uniform(-0.2, 0.2, mean.shape).astype("f4"),
                                   rng.uniform(0.5, 2.0, var.shape).astype("f4")])
        return model

    keras.utils.set_random_seed(0)
    models = {}

    x = keras.Input((16,), name="features")
    h = kl.Dense(12, activation="relu")(x)
    h = kl.Dropout(0.25)(h)
    y = kl.Dense(4, activation="softmax", name="probs")(h)
    models["tf_mlp"] = randomise_batch_norms(keras.Model(x, y), 3)

    x = keras.Input((10,), name="x")
    h = kl.Dense(8, activation="tanh")(x)
    h = kl.Dense(8, activation="sigmoid")(h)
    h = kl.Dense(6)(h)
    h = kl.LeakyReLU(negative_slope=0.2)(h)
    y = kl.Dense(3)(h)
    models["tf_mlp_activations"] = randomise_batch_norms(keras.Model(x, y), 4)

    x = keras.Input((8, 8, 3), name="image")
    h = kl.Conv2D(4, 3, padding="same")(x)
    h = kl.BatchNormalization()(h)
    h = kl.ReLU()(h)
    h = kl.MaxPooling2D(2)(h)
    h = kl.Conv2D(6, 3, padding="valid", activation="relu")(h)
    h = kl.Dropout(0.3)(h)
    h = kl.Flatten()(h)
    y = kl.Dense(5, activation="softmax")(h)
    models["tf_cnn_bn"] = randomise_batch_norms(keras.Model(x, y), 1)

    x = keras.Input((8, 8, 4), name="image")
    h = kl.Conv2D(8, 1)(x)
    h = kl.ReLU(max_value=6.0)(h)
    h = kl.DepthwiseConv2D(3, padding="same", use_bias=False)(h)
    h = kl.BatchNormalization()(h)
    h = kl.ReLU(max_value=6.0)(h)
    h = kl.Conv2D(4, 1)(h)
    h = kl.Add()([h, x])
    h = kl.AveragePooling2D(2)(h)
    h = kl.GlobalAveragePooling2D()(h)
    y = kl.Dense(3)(h)
    models["tf_depthwise_residual"] = randomise_batch_norms(keras.Model(x, y), 2)

    x = keras.Input((8, 8, 2), name="image")
    a = kl.Conv2D(3, 3, padding="same", activation="relu")(x)
    b = kl.Conv2D(5, 1, strides=1, activation="relu")(x)
    h = kl.Concatenate()([a, b])
    h = kl.MaxPooling2D(2, padding="same")(h)
    h = kl.Conv2D(6, 3, strides=2, padding="same", activation="relu")(h)
    h = kl.GlobalAveragePooling2D()(h)
    h = kl.Reshape((2, 3))(h)
    h = kl.Flatten()(h)
    y = kl.Dense(4, activation="softmax")(h)
    models["tf_gap_concat"] = randomise_batch_norms(keras.Model(x, y), 5)
    return tf, models


def make_tflite():
    tf, models = keras_models()
    for name, model in models.items():
        converter = tf.lite.TFLiteConverter.from_keras_model(model)
        data = converter.convert()
        path = os.path.join(FIXTURES, name + ".tflite")
        with open(path, "wb") as handle:
            handle.write(data)
        print("%s: %d bytes" % (path, len(data)))


# ---------------------------------------------------------------- PyTorch / ONNX


def torch_modules():
    """The PyTorch models of the ONNX fixtures; tests/convert/torch_models.py defines
    them (the real-world-style CNNs too), so the tests can export them again."""
    sys.path.insert(0, HERE)
    import torch_models
    return torch_models


def make_onnx():
    import torch
    torch_models = torch_modules()
    try:
        import onnxscript  # noqa: F401  (the torch.export-based exporter needs it)
        exporters = (("", False), ("_dynamo", True))
    except ImportError:
        exporters = (("", False),)
        print("onnxscript is not installed: only the TorchScript exporter's files")
    for name, (module, example) in torch_models.fixture_models().items():
        for suffix, dynamo in exporters:
            path = os.path.join(FIXTURES, name + suffix + ".onnx")
            torch_models.export_onnx(module, example, path, dynamo=dynamo)
            print("%s: %d bytes" % (path, os.path.getsize(path)))


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("tflite", "onnx"):
        sys.exit(__doc__)
    os.makedirs(FIXTURES, exist_ok=True)
    {"tflite": make_tflite, "onnx": make_onnx}[sys.argv[1]]()
