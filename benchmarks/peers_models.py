"""The models of benchmarks/peers.py, each written once as a layer list and built from it in
microtrain and in PyTorch with the same initial weights (microtrain's, seed 0).

A spec is a list of layers:
    ("dense", units, activation)                          activation: None, "relu", "relu6"
    ("conv", filters, kernel, stride, padding, activation) padding: "same" or "valid"
    ("dwconv", kernel, stride, padding, activation)        depthwise, depth multiplier 1
    ("maxpool", size)                                      stride = size, "valid"
    ("flatten",) ("gap",)                                  Flatten, GlobalAveragePool
Every model ends in Dense(classes) + Softmax; the loss is categorical cross-entropy on the
softmax (fused in microtrain; from the logits in PyTorch and ONNX Runtime).

Layouts: microtrain (and the .tflite onert trains) is NHWC with OHWI conv weights; PyTorch
is NCHW with OIHW weights, so the data is transposed once, not per step, and the Dense after
a Flatten gets its columns permuted to PyTorch's channel-major order. TFLite's SAME padding
puts an odd pad after (bottom/right); the PyTorch model pads explicitly where that happens.
"""

import numpy as np

# name -> (input shape (NHWC without batch), spec, batch size)
MODELS = {
    "tiny-mlp-b1": ((16,), [("dense", 32, "relu"), ("dense", 4, None)], 1),
    "tiny-mlp-b32": ((16,), [("dense", 32, "relu"), ("dense", 4, None)], 32),
    "mlp-784-128-10": ((784,), [("dense", 128, "relu"), ("dense", 10, None)], 32),
    "cnn-28x28": ((28, 28, 1), [("conv", 8, 3, 1, "same", "relu"), ("maxpool", 2),
                                ("conv", 16, 3, 1, "same", "relu"), ("maxpool", 2),
                                ("flatten",), ("dense", 10, None)], 32),
    "depthwise-stack": ((32, 32, 3), [("conv", 8, 3, 2, "same", "relu6"),
                                      ("dwconv", 3, 1, "same", "relu6"), ("conv", 16, 1, 1, "same", "relu6"),
                                      ("dwconv", 3, 2, "same", "relu6"), ("conv", 24, 1, 1, "same", "relu6"),
                                      ("dwconv", 3, 1, "same", "relu6"), ("conv", 24, 1, 1, "same", "relu6"),
                                      ("dwconv", 3, 2, "same", "relu6"), ("conv", 32, 1, 1, "same", "relu6"),
                                      ("gap",), ("dense", 5, None)], 32),
    # examples/digits_mlp.py and examples/digits_cnn.py (batch 16, their default)
    "digits-mlp": ((64,), [("dense", 32, "relu"), ("dense", 10, None)], 16),
    "digits-cnn": ((8, 8, 1), [("conv", 8, 3, 1, "same", "relu"), ("maxpool", 2),
                               ("conv", 32, 3, 1, "valid", "relu"), ("gap",),
                               ("dense", 10, None)], 16),
}


def microtrain_model(name):
    """The microtrain Sequential of a model (seed 0 gives the initial weights)."""
    import microtrain
    from microtrain import layers

    shape, spec, _ = MODELS[name]
    stack = []
    for layer in spec:
        kind = layer[0]
        if kind == "dense":
            stack.append(layers.Dense(layer[1], activation=layer[2]))
        elif kind == "conv":
            stack.append(layers.Conv2D(layer[1], layer[2], strides=layer[3], padding=layer[4],
                                       activation=layer[5]))
        elif kind == "dwconv":
            stack.append(layers.DepthwiseConv2D(layer[1], strides=layer[2], padding=layer[3],
                                                activation=layer[4]))
        elif kind == "maxpool":
            stack.append(layers.MaxPool2D(layer[1]))
        elif kind == "flatten":
            stack.append(layers.Flatten())
        elif kind == "gap":
            stack.append(layers.GlobalAveragePool())
        else:
            raise ValueError(kind)
    stack.append(layers.Softmax())
    return microtrain.Sequential(stack, input_shape=shape, seed=0)


def _same_padding(size, kernel, stride):
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def torch_model(name, weights):
    """A torch.nn.Sequential computing the logits (no softmax) on NCHW input, with
    ``weights`` (microtrain's get_weights(): per weighted layer W then b) copied in."""
    import torch
    from torch import nn

    shape, spec, _ = MODELS[name]
    modules, pending = [], list(weights)
    h, w, c = shape if len(shape) == 3 else (None, None, shape[0])
    flattened_from = None  # (H, W, C) of the last Flatten, for the next Dense's columns

    def activation(act):
        if act == "relu":
            modules.append(nn.ReLU())
        elif act == "relu6":
            modules.append(nn.ReLU6())

    def conv(filters, kernel, stride, padding, act, groups):
        nonlocal h, w, c
        weight, bias = pending.pop(0), pending.pop(0)
        if padding == "same":
            top, bottom = _same_padding(h, kernel, stride)
            left, right = _same_padding(w, kernel, stride)
            if (top, left) == (bottom, right):
                pad = top
            else:
                modules.append(nn.ZeroPad2d((left, right, top, bottom)))
                pad = 0
            h, w = -(-h // stride), -(-w // stride)
        else:
            pad = 0
            h, w = (h - kernel) // stride + 1, (w - kernel) // stride + 1
        module = nn.Conv2d(c, filters, kernel, stride=stride, padding=pad, groups=groups)
        with torch.no_grad():
            if groups == 1:  # OHWI -> OIHW
                module.weight.copy_(torch.from_numpy(weight).permute(0, 3, 1, 2))
            else:  # [1, KH, KW, C] -> [C, 1, KH, KW]
                module.weight.copy_(torch.from_numpy(weight).permute(3, 0, 1, 2))
            module.bias.copy_(torch.from_numpy(bias))
        modules.append(module)
        c = filters
        activation(act)

    for layer in spec:
        kind = layer[0]
        if kind == "dense":
            weight, bias = pending.pop(0), pending.pop(0)
            if flattened_from is not None:  # NHWC column order -> NCHW's
                fh, fw, fc = flattened_from
                weight = weight.reshape(-1, fh, fw, fc).transpose(0, 3, 1, 2).reshape(len(weight), -1)
                flattened_from = None
            module = nn.Linear(weight.shape[1], weight.shape[0])
            with torch.no_grad():
                module.weight.copy_(torch.from_numpy(np.ascontiguousarray(weight)))
                module.bias.copy_(torch.from_numpy(bias))
            modules.append(module)
            activation(layer[2])
        elif kind == "conv":
            conv(layer[1], layer[2], layer[3], layer[4], layer[5], 1)
        elif kind == "dwconv":
            conv(c, layer[1], layer[2], layer[3], layer[4], c)
        elif kind == "maxpool":
            modules.append(nn.MaxPool2d(layer[1]))
            h, w = h // layer[1], w // layer[1]
        elif kind == "flatten":
            flattened_from = (h, w, c)
            modules.append(nn.Flatten())
        elif kind == "gap":
            modules.append(nn.AdaptiveAvgPool2d(1))
            modules.append(nn.Flatten())
    assert not pending, "weights left over"
    return nn.Sequential(*modules)


def macs_per_step(name, batch):
    """Multiply-accumulates of one train step with every op trained: forward, weight
    gradient, and input gradient for every weighted op but the first (nothing upstream
    needs it); pooling, activations and the optimizer are not counted."""
    shape, spec, _ = MODELS[name]
    h, w, c = shape if len(shape) == 3 else (1, 1, shape[0])
    total, first = 0, True
    for layer in spec:
        kind = layer[0]
        if kind == "dense":
            macs = h * w * c * layer[1]
            h, w, c = 1, 1, layer[1]
        elif kind in ("conv", "dwconv"):
            kernel, stride, padding = layer[1:4] if kind == "dwconv" else layer[2:5]
            if padding == "same":
                h, w = -(-h // stride), -(-w // stride)
            else:
                h, w = (h - kernel) // stride + 1, (w - kernel) // stride + 1
            if kind == "conv":
                macs = h * w * layer[1] * kernel * kernel * c
                c = layer[1]
            else:
                macs = h * w * c * kernel * kernel
        else:
            if kind == "maxpool":
                h, w = h // layer[1], w // layer[1]
            elif kind in ("flatten", "gap"):
                h, w, c = 1, 1, (h * w * c if kind == "flatten" else c)
            continue
        total += macs * (2 if first else 3)
        first = False
    return total * batch


def dataset(name, batches=8, seed=0):
    """``batches`` batches of (x NHWC float32, one-hot float32, labels int64)."""
    shape, spec, batch = MODELS[name]
    classes = spec[-1][1]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batches, batch) + tuple(shape)).astype(np.float32)
    labels = rng.integers(0, classes, (batches, batch)).astype(np.int64)
    onehot = np.eye(classes, dtype=np.float32)[labels]
    return x, onehot, labels
