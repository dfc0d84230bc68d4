"""The op table on the Python side: code and name of every op type (MicroPython-safe).

The one list of ops is ``micro_core/include/microtrain_ops.def``; the C enum ``mt_op_type``
and the kernel registry are generated from it, and ``tests/test_op_table.py`` checks that
this module says the same. Names are the core's (``mt_op_name``): lower case, as in
``microtrain info`` and in error messages (``op 7 (conv2d): ...``); ``DISPLAY_NAMES`` are
the layer-style spellings the tools print.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(value):
        return value

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

# code -> the core's name (mt_op_name)
NAMES = {
    DENSE: "dense", RELU: "relu", SIGMOID: "sigmoid", TANH: "tanh", SOFTMAX: "softmax",
    CONV2D: "conv2d", DEPTHWISE_CONV2D: "depthwise_conv2d", MAX_POOL2D: "max_pool2d",
    AVERAGE_POOL2D: "average_pool2d", GLOBAL_AVERAGE_POOL: "global_average_pool",
    RESHAPE: "reshape", ADD: "add", CONCATENATION: "concatenation", RELU6: "relu6",
    LEAKY_RELU: "leaky_relu", PAD: "pad", MUL: "mul", SUB: "sub", TRANSPOSE: "transpose",
}

# code -> how tables and plots spell it
DISPLAY_NAMES = {
    DENSE: "Dense", RELU: "ReLU", SIGMOID: "Sigmoid", TANH: "Tanh", SOFTMAX: "Softmax",
    CONV2D: "Conv2D", DEPTHWISE_CONV2D: "DepthwiseConv2D", MAX_POOL2D: "MaxPool2D",
    AVERAGE_POOL2D: "AveragePool2D", GLOBAL_AVERAGE_POOL: "GlobalAveragePool",
    RESHAPE: "Reshape", ADD: "Add", CONCATENATION: "Concatenation", RELU6: "ReLU6",
    LEAKY_RELU: "LeakyReLU", PAD: "ZeroPadding2D", MUL: "Multiply", SUB: "Subtract",
    TRANSPOSE: "Permute",
}


def name(code):
    """The core's name of op type ``code`` ("conv2d"), or "op type N" for an unknown one."""
    return NAMES.get(code, "op type %d" % code)


def display_name(code):
    """The table spelling of op type ``code`` ("Conv2D"), or its number as text."""
    return DISPLAY_NAMES.get(code, str(code))
