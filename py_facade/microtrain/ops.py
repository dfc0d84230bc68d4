"""The op table on the Python side: code and name of every op type (MicroPython-safe).

The one list of ops is ``micro_core/include/microtrain_ops.def``; the C enum ``mt_op_type``
and the kernel registry are generated from it, and ``tests/test_op_table.py`` checks that
this module says the same. Names are the core's (``mt_op_name``): lower case, as in
``microtrain info`` and in error messages (``op 7 (conv2d): ...``); ``DISPLAY_NAMES`` are
the layer-style spellings the tools print.
"""

from ._const import const

DENSE = const(1)
RELU = const(2)
SIGMOID = const(3)
TANH = const(4)
SOFTMAX = const(5)
CONV2D = const(6)
DEPTHWISE_CONV2D = const(7)
MAX_POOL2D = const(8)
AVERAGE_POOL2D = const(9)
GLOBAL_AVERAGE_POOL = const(10)
RESHAPE = const(11)
ADD = const(12)
CONCATENATION = const(13)
RELU6 = const(14)
LEAKY_RELU = const(15)
PAD = const(16)
MUL = const(17)
SUB = const(18)
TRANSPOSE = const(19)
# int8 inference ops (frozen layers of a quantized model; no backward), from code 64
QUANTIZE = const(64)
DEQUANTIZE = const(65)
CONV2D_S8 = const(66)
DEPTHWISE_CONV2D_S8 = const(67)
DENSE_S8 = const(68)
ADD_S8 = const(69)
AVERAGE_POOL2D_S8 = const(70)
MAX_POOL2D_S8 = const(71)
MEAN_S8 = const(72)
RESHAPE_S8 = const(73)
CONCATENATION_S8 = const(74)
PAD_S8 = const(75)

# code -> the core's name (mt_op_name)
NAMES = {
    DENSE: "dense", RELU: "relu", SIGMOID: "sigmoid", TANH: "tanh", SOFTMAX: "softmax",
    CONV2D: "conv2d", DEPTHWISE_CONV2D: "depthwise_conv2d", MAX_POOL2D: "max_pool2d",
    AVERAGE_POOL2D: "average_pool2d", GLOBAL_AVERAGE_POOL: "global_average_pool",
    RESHAPE: "reshape", ADD: "add", CONCATENATION: "concatenation", RELU6: "relu6",
    LEAKY_RELU: "leaky_relu", PAD: "pad", MUL: "mul", SUB: "sub", TRANSPOSE: "transpose",
    QUANTIZE: "quantize", DEQUANTIZE: "dequantize", CONV2D_S8: "conv2d_s8",
    DEPTHWISE_CONV2D_S8: "depthwise_conv2d_s8", DENSE_S8: "dense_s8", ADD_S8: "add_s8",
    AVERAGE_POOL2D_S8: "average_pool2d_s8", MAX_POOL2D_S8: "max_pool2d_s8", MEAN_S8: "mean_s8",
    RESHAPE_S8: "reshape_s8", CONCATENATION_S8: "concatenation_s8", PAD_S8: "pad_s8",
}

# code -> how tables and plots spell it
DISPLAY_NAMES = {
    DENSE: "Dense", RELU: "ReLU", SIGMOID: "Sigmoid", TANH: "Tanh", SOFTMAX: "Softmax",
    CONV2D: "Conv2D", DEPTHWISE_CONV2D: "DepthwiseConv2D", MAX_POOL2D: "MaxPool2D",
    AVERAGE_POOL2D: "AveragePool2D", GLOBAL_AVERAGE_POOL: "GlobalAveragePool",
    RESHAPE: "Reshape", ADD: "Add", CONCATENATION: "Concatenation", RELU6: "ReLU6",
    LEAKY_RELU: "LeakyReLU", PAD: "ZeroPadding2D", MUL: "Multiply", SUB: "Subtract",
    TRANSPOSE: "Permute",
    QUANTIZE: "Quantize", DEQUANTIZE: "Dequantize", CONV2D_S8: "Conv2D int8",
    DEPTHWISE_CONV2D_S8: "DepthwiseConv2D int8", DENSE_S8: "Dense int8", ADD_S8: "Add int8",
    AVERAGE_POOL2D_S8: "AveragePool2D int8", MAX_POOL2D_S8: "MaxPool2D int8",
    MEAN_S8: "Mean int8", RESHAPE_S8: "Reshape int8", CONCATENATION_S8: "Concatenation int8",
    PAD_S8: "Pad int8",
}

# the int8 ops and the float/int8 boundary: nothing of theirs trains, and a new .tflite file
# has no writer for them (an int8 model exports through its own file's operators)
INFERENCE_ONLY = (QUANTIZE, DEQUANTIZE, CONV2D_S8, DEPTHWISE_CONV2D_S8, DENSE_S8, ADD_S8,
                  AVERAGE_POOL2D_S8, MAX_POOL2D_S8, MEAN_S8, RESHAPE_S8, CONCATENATION_S8,
                  PAD_S8)
# ... of which these pass no gradient (no backward: the planner refuses a gradient through
# them; the others' is the straight-through estimator, docs/model_format.md)
NO_BACKWARD = (CONCATENATION_S8, PAD_S8)


def name(code):
    """The core's name of op type ``code`` ("conv2d"), or "op type N" for an unknown one."""
    return NAMES.get(code, "op type %d" % code)


def display_name(code):
    """The table spelling of op type ``code`` ("Conv2D"), or its number as text."""
    return DISPLAY_NAMES.get(code, str(code))
