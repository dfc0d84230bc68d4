"""The weights of an int8 layer trained in place, through Session and through the backend,
printed bit for bit.

    int8_in_place_weights.py MODEL.mtm [MODEL.mtm ...]

Runs unchanged on CPython (ctypes backend), MicroPython with the native `_microtrain` and
MicroPython on Node over the wasm core: the outputs must be the same lines. MODEL is the
digits int8 backbone converted with a new 5-class head, trained from its depthwise
convolution with int8 weights in place (convert(..., train_from="dw", int8_train=True), with
or without float master copies of the int8 weights): its
weights mix float32 tensors (mt_session_param) with int8 weights and int32 biases
(mt_session_qparam), so a backend that numbers them in any other order than the tensor
table's prints other dtypes or other bytes. Each weight prints as its dtype, size and the
CRC-32 of its little-endian bytes; losses as the hex of their float32 bits.

A MODEL named sparse_rows*.mtm is a float model (x [64] -> Dense 16 relu -> Dense 5 ->
Softmax) that a sparse update trains: the first Dense's first 2 of 16 rows, which the arena
holds alone while the backend reads the 14 others from the image (mt_param_info.held), and
the head whole; writing its weights writes those 14 rows into the image (a copy of it first
where it is read-only).
"""

import binascii
import sys
from array import array

from microtrain import lite, optimizers
from microtrain.backend import crc32

TYPECODES = {"float32": "f", "int8": "b", "int32": "i"}
LOW_HIGH = {"int8": (-128, 127), "int32": (-2147483648, 2147483647)}


def dtype_of(weight):
    """"float32", "int8" or "int32": a numpy array's dtype, or an array's by its items (a
    MicroPython array has no typecode attribute)."""
    if hasattr(weight, "dtype"):
        return str(weight.dtype)
    if len(bytes(weight)) == len(weight):
        return "int8"
    return "float32" if isinstance(weight[0], float) else "int32"


def le_bytes(weight):
    """The weight's values, little-endian at their width."""
    if hasattr(weight, "dtype"):
        return weight.astype(weight.dtype.newbyteorder("<")).tobytes()
    return bytes(weight)  # an array: the machine's order, little-endian on every target


def values_of(weight):
    return weight.reshape(-1).tolist() if hasattr(weight, "reshape") else list(weight)


def like(weight, values, dtype=None):
    """``values`` (a flat list) in the form of ``weight``: a numpy array of its shape, else
    an array; of ``dtype`` (default the weight's)."""
    dtype = dtype or dtype_of(weight)
    if hasattr(weight, "reshape"):
        import numpy
        return numpy.array(values, dtype=dtype).reshape(weight.shape)
    return array(TYPECODES[dtype], values)


def nudged(weights):
    """``weights`` changed: every integer weight moved by -1, 0 or +1 within its range, the
    float ones scaled by 0.75."""
    changed = []
    for weight in weights:
        dtype, values = dtype_of(weight), values_of(weight)
        if dtype == "float32":
            values = [v * 0.75 for v in values]
        else:
            low, high = LOW_HIGH[dtype]
            values = [min(high, max(low, v + (i % 3) - 1)) for i, v in enumerate(values)]
        changed.append(like(weight, values))
    return changed


def hex_float(value):
    return binascii.hexlify(array("f", [value])).decode()


def show_weights(name, sess):
    weights = sess.get_weights()
    blob = b""
    for position, weight in enumerate(weights):
        data = le_bytes(weight)
        blob += data
        print(name, position, dtype_of(weight), len(values_of(weight)),
              "%08x" % crc32(data))
    backend_bytes = sess._backend.weights()
    print(name, "weights_crc32 %08x" % sess.weights_crc32(),
          "get_weights crc32 %08x" % crc32(blob), "backend weights() equal", backend_bytes == blob)
    return weights


def step(sess, rows, targets):
    return hex_float(sess.train_step(rows, targets)["loss"][0])


def refused(sess, action):
    """The error ``action`` raises: its type, whether it names the weight's position and its
    type (the messages themselves are each backend's own words)."""
    try:
        action()
    except Exception as error:  # noqa: BLE001: ValueError (Session), MicrotrainError (backend)
        return error
    return None


def run(path):
    print("model", path.split("/")[-1])
    sess = lite.Session(open(path, "rb").read())
    sparse_rows = path.split("/")[-1].startswith("sparse_rows")
    sess.compile(optimizers.SGD(learning_rate=0.5), "categorical_crossentropy", batch_size=4,
                 trainable={0: 2, 1: "all"} if sparse_rows else None)
    rows = [[((r * 64 + c) % 17) / 17.0 for c in range(64)] for r in range(4)]
    targets = [[1.0 if c == r else 0.0 for c in range(5)] for r in range(4)]
    print("trained", sess._backend.trained())

    start = show_weights("start", sess)
    dtypes = [dtype_of(w) for w in start]
    first = [step(sess, rows, targets)]
    after_one = sess._backend.weights()
    first += [step(sess, rows, targets) for _ in range(2)]
    print("losses", first)
    show_weights("after 3 steps", sess)

    # set_weights round trip: the start's weights back give the start's first step again (an
    # int8 weight's float master copy restarts from the weight written)
    sess.set_weights(start)
    show_weights("restored", sess)
    print("restored step equals the first", step(sess, rows, targets) == first[0],
          sess._backend.weights() == after_one)

    # weights the script writes: the next step is the host's
    sess.set_weights(nudged(sess.get_weights()))
    show_weights("written", sess)
    print("step after writing", step(sess, rows, targets))
    show_weights("written then stepped", sess)

    # an integer weight out of its type's range is refused, naming the weight and its type, and
    # changes nothing; through Session (checked before the backend) and through the backend
    before = sess._backend.weights()
    for position, dtype in enumerate(dtypes):
        if dtype == "float32":
            continue
        weight = sess.get_weights()[position]
        low, high = LOW_HIGH[dtype]
        values = values_of(weight)
        for bad, label in ((high + 1, "above"), (low - 1, "below")):
            wide = [bad] + values[1:]
            if hasattr(weight, "reshape"):  # numpy: an array of the weight's shape, wide enough
                import numpy
                wide = numpy.array(wide, dtype="int64").reshape(weight.shape)
            error = refused(sess, lambda: sess.set_weights({int(sess._params[position][0]): wide}))
            print("Session", position, dtype, label, type(error).__name__,
                  "names it", error is not None and ("weight %d" % position) in str(error)
                  and dtype in str(error))
            error = refused(sess, lambda: sess._backend.write_param(position, [bad] + values[1:]))
            print("backend", position, dtype, label, error is not None,
                  "names it", error is not None and ("weight %d" % position) in str(error)
                  and dtype in str(error))
        error = refused(sess, lambda: sess._backend.write_param(position, [0.5] + values[1:]))
        print("backend", position, dtype, "float value", error is not None,
              "names it", error is not None and ("weight %d" % position) in str(error)
              and dtype in str(error))
    print("unchanged after the refusals", sess._backend.weights() == before)
    show_weights("end", sess)
    sess.close()

    # the int8 layers frozen (trainable=1: the float head alone trains): their weights are
    # read from the image and written into it (the backend's copy of it)
    frozen = lite.Session(open(path, "rb").read())
    frozen.compile(optimizers.SGD(learning_rate=0.5), "categorical_crossentropy", batch_size=4,
                   trainable=1)
    print("frozen: trained", frozen._backend.trained())
    show_weights("frozen start", frozen)
    frozen.set_weights(nudged(frozen.get_weights()))
    show_weights("frozen written", frozen)
    print("frozen step after writing", step(frozen, rows, targets))
    show_weights("frozen stepped", frozen)
    frozen.close()


for model in sys.argv[1:]:
    run(model)
print("done")
