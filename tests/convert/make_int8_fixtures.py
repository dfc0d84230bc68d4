"""Regenerate the int8 fixtures in tests/convert/fixtures/int8/ with TensorFlow's converter.

    # a venv of its own with tensorflow-cpu 2.21 (it pins another numpy than the tests use):
    python3 -m venv .venv-tf && .venv-tf/bin/pip install tensorflow-cpu==2.21.0
    .venv-tf/bin/python tests/convert/make_int8_fixtures.py

Full-integer post-training quantization with a representative dataset (TFLite's
``Optimize.DEFAULT`` + ``TFLITE_BUILTINS_INT8``), float input and output: the converter puts
QUANTIZE and DEQUANTIZE at the boundaries, exactly the files a user brings. The tests never
need TensorFlow: tests/convert/test_int8.py reads the committed files and compares every
tensor with LiteRT's reference kernels.

    int8_ops.tflite      12x12x3, every int8 op the core has: Conv2D (ReLU6), DepthwiseConv2D
                         (stride 2, ReLU), Pad + VALID depthwise (the converter folds it into
                         SAME), 1x1 Conv2D, Add, Pad (kept: asymmetric, before a pool), MaxPool,
                         AveragePool, Concatenation, Mean (GlobalAveragePooling2D), Reshape
                         (Flatten), FullyConnected, with a float Dense head kept float
    mbv2_035_128.tflite  Keras MobileNetV2(alpha=0.35, weights=None, include_top=False) at
                         128x128x3 (random weights, BatchNorm statistics randomised), ~0.6 MB;
                         the same network *trained* (mbv2_035_128_gratings.tflite) is made by
                         benchmarks/make_mbv2_trained.py
    digits_backbone_float.tflite, digits_backbone_int8.tflite
                         a small CNN pretrained in float on scikit-learn's digits 0-4 (8x8x1:
                         Conv 3x3x16 ReLU, depthwise 3x3 stride 2 ReLU6, Conv 1x1x32 ReLU,
                         then GlobalAveragePooling -> Dense(5) while pretraining); the file
                         holds the backbone up to the 4x4x32 features, in float and
                         quantized with the digits 0-4 as representative data
                         (benchmarks/digits_int8.py fine-tunes a new head on digits 5-9)
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "int8")


def randomise(model, seed):
    """BatchNorm statistics and biases away from their initial values, so that a random
    network's activations look like a trained one's (not all equal, not all zero)."""
    import numpy as np
    import keras
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights([rng.uniform(0.5, 1.5, gamma.shape).astype("f4"),
                               rng.normal(0, 0.2, beta.shape).astype("f4"),
                               rng.normal(0, 0.2, mean.shape).astype("f4"),
                               rng.uniform(0.5, 2.0, var.shape).astype("f4")])
        elif isinstance(layer, (keras.layers.Dense, keras.layers.Conv2D,
                                keras.layers.DepthwiseConv2D)) and layer.use_bias:
            weights = layer.get_weights()
            weights[-1] = rng.normal(0, 0.1, weights[-1].shape).astype("f4")
            layer.set_weights(weights)


def quantize(model, shape, seed, samples=32, int8_only=True):
    """The .tflite bytes of ``model`` fully quantized with a uniform [-1, 1] representative
    dataset of ``samples`` inputs of ``shape``."""
    import numpy as np
    import tensorflow as tf

    def representative():
        rng = np.random.default_rng(seed)
        for _ in range(samples):
            yield [rng.uniform(-1, 1, (1,) + tuple(shape)).astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    if int8_only:
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return converter.convert()


def int8_ops_model():
    import keras
    from keras import layers as kl
    keras.utils.set_random_seed(1)
    inp = keras.Input((12, 12, 3))
    x = kl.Conv2D(8, 3, padding="same", activation="relu6", name="conv")(inp)
    x = kl.DepthwiseConv2D(3, strides=2, padding="same", activation="relu", name="dw_same")(x)
    x = kl.ZeroPadding2D(((0, 1), (0, 1)), name="pad")(x)
    x = kl.DepthwiseConv2D(3, strides=2, padding="valid", name="dw_valid")(x)
    a = kl.Conv2D(8, 1, name="project_a")(x)
    b = kl.Conv2D(8, 1, activation="relu", name="project_b")(x)
    s = kl.Add(name="add")([a, b])
    s = kl.ZeroPadding2D(((1, 0), (0, 1)), name="pad_border")(s)
    m = kl.MaxPooling2D(2, strides=1, name="max_pool")(s)
    p = kl.AveragePooling2D(2, strides=1, padding="same", name="avg_pool")(m)
    c = kl.Concatenate(name="concat")([p, m])
    g = kl.GlobalAveragePooling2D(name="mean")(c)
    f = kl.Flatten(name="flatten")(m)
    d = kl.Dense(6, activation="relu", name="fc")(kl.Concatenate(name="concat_flat")([g, f]))
    out = kl.Dense(5, name="head")(d)
    model = keras.Model(inp, out)
    randomise(model, 2)
    return model, (12, 12, 3)


def mbv2_model():
    import keras
    keras.utils.set_random_seed(3)
    model = keras.applications.MobileNetV2(input_shape=(128, 128, 3), alpha=0.35,
                                           include_top=False, weights=None)
    randomise(model, 4)
    return model, (128, 128, 3)


def digits_backbones():
    """(float bytes, int8 bytes) of the digits backbone pretrained on digits 0-4."""
    import numpy as np
    import keras
    import tensorflow as tf
    from keras import layers as kl
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    keep = digits.target < 5
    x0, y0 = x[keep], digits.target[keep]
    keras.utils.set_random_seed(11)
    inp = keras.Input((8, 8, 1))
    f = kl.Conv2D(16, 3, padding="same", activation="relu", name="conv_a")(inp)
    f = kl.DepthwiseConv2D(3, strides=2, padding="same", activation="relu6", name="dw")(f)
    f = kl.Conv2D(32, 1, activation="relu", name="conv_b")(f)
    out = kl.Dense(5, activation="softmax", name="old_head")(kl.GlobalAveragePooling2D()(f))
    model = keras.Model(inp, out)
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x0, y0, epochs=40, batch_size=32, verbose=0)
    print("digits 0-4 pretraining accuracy: %.3f" % model.evaluate(x0, y0, verbose=0)[1])
    backbone = keras.Model(inp, f)
    converter = tf.lite.TFLiteConverter.from_keras_model(backbone)
    float_bytes = converter.convert()

    def representative():
        for row in x0[:200]:
            yield [row[None]]

    converter = tf.lite.TFLiteConverter.from_keras_model(backbone)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return float_bytes, converter.convert()


def main():
    os.makedirs(FIXTURES, exist_ok=True)
    for name, make in (("int8_ops", int8_ops_model), ("mbv2_035_128", mbv2_model)):
        model, shape = make()
        data = quantize(model, shape, seed=5)
        path = os.path.join(FIXTURES, name + ".tflite")
        with open(path, "wb") as handle:
            handle.write(data)
        print("%s: %d bytes" % (path, len(data)))
    # last: Keras numbers its models, and the names of the tensors above depend on it
    float_bytes, int8_bytes = digits_backbones()
    for name, data in (("digits_backbone_float", float_bytes),
                       ("digits_backbone_int8", int8_bytes)):
        path = os.path.join(FIXTURES, name + ".tflite")
        with open(path, "wb") as handle:
            handle.write(data)
        print("%s: %d bytes" % (path, len(data)))


if __name__ == "__main__":
    sys.exit(main())
