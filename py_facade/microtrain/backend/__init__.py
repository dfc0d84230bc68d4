"""The backend interface: everything ``Session`` needs from a C core (MicroPython-safe).

``microtrain.session.Session`` is pure Python: it never touches ctypes, numpy or memory
addresses. A *backend* owns the image copy, the arena and the C session of one session, and
moves numbers in and out. The implementations:

  * ``microtrain.backend.ctypes_backend`` - CPython: ctypes over ``libmicrotrain.so``,
    numpy arrays for the image and the arena (``TrainSession`` adds numpy views on them);
  * ``microtrain.backend.js_backend`` - MicroPython on a JavaScript host (Node, a browser):
    the core compiled to wasm32 (CMake preset ``wasm32-wasi``) behind the JS module
    ``_microtrain_js`` (``microtrain_wasm.mjs`` in this folder);
  * ``_microtrain`` - MicroPython on a board: a native C module of the firmware with the
    core linked in (``micropython/_microtrain/``).

``loader.load()`` (``microtrain.backend.loader``: it imports the implementations, which
import this interface) picks the first that imports. One backend object serves one session.
Every failing core call raises ``microtrain.errors.MicrotrainError(status, message, function,
op_index, op_type)`` (op_index -1 when the failure concerns no op); other misuse may raise
any exception. Nothing here allocates per step on the C side; Python-level allocation is
the backend's own business.

Model, no session needed (``image``: bytes-like, a valid .mtm image or not):

    describe(image) -> {
        "num_ops": int, "num_tensors": int,
        "inputs":  [{"tensor": i, "dims": tuple}, ...]     model inputs, in order; dims is
        "outputs": [{"tensor": i, "dims": tuple}, ...]     one sample's shape
        "params":  [{"tensor": i, "dims": tuple, "offset": byte offset of its data in the
                     image, "trainable": bool, "dtype": "float32" | "int8" | "int32"}, ...]
                     the weights in table order: CONST f32 tensors (mt_session_param) and
                     the TRAINABLE int8 weights and int32 biases of int8 layers trained in
                     place (mt_session_qparam), merged; no "dtype": float32
        "quantized": [{"tensor": i, "dims": tuple}, ...]     TRAINABLE tensors that are not
                                                             f32 (int8 weights, int32 biases
                                                             of int8 layers trained in place:
                                                             what a sparse scheme's channels
                                                             read; optional, default none)
        "ops":     [{"type": mt_op_type, "layer": int, "inputs": [tensor or -1, ...],
                     "outputs": [tensor, ...], "weights": bool}, ...]
                     ("weights": the op reads a TRAINABLE tensor)
    }
        mt_model_check, mt_model_io, mt_model_tensors, mt_model_ops.
    plan(image, config) -> plan
        mt_plan for ``config`` (a dict of CONFIG_FIELDS, built by microtrain.config): the one
        validation and planning of the image a compile makes. A dict of the PLAN_FIELDS
        figures (int each) and, under "binding", what open() needs: the image as planned (a
        copy at an aligned address, or the caller's bytes read in place: a frozen bytes object
        in flash), the configuration and the C plan, which names that image's address. Valid
        for open() of the backend object that made it; the image must not change meanwhile.

Session:

    open(plan, arena=None)
        mt_session_init_from_plan: the session laid out from ``plan`` without validating or
        planning the image again (the core checks that the plan is still its image's and
        configuration's). The backend keeps the plan's image alive and unchanged until
        close(). ``arena``: None (the backend provides plan's total_bytes at 16-byte
        alignment) or a writable buffer the caller owns, large enough with alignment.
    close()                         forget the session; drop image and arena (idempotent)

    write_rows(kind, position, first_row, values)
        Copy ``values`` (a flat sequence: array('f') / array('i'), list, memoryview or a
        numpy array) into input ``position`` (KIND_INPUT) or the targets (KIND_TARGET,
        position 0) from row ``first_row``: float32, or int32 labels for sparse
        categorical cross-entropy. The caller has checked shapes and ranges.
    read_rows(output, n) -> flat float sequence, n rows of output ``output``

    train_step(n, out=None) -> loss mt_session_train_step on rows 0..n-1 (MT_ERR_NUMERIC
                                    raises with the reported loss in the error's ``loss``)
    accumulate(n, out=None) -> loss mt_session_accumulate (accumulate_gradients=1)
    zero_grad()                     mt_session_zero_grad
    optimizer_step()                mt_session_optimizer_step
    eval_step(n, out=None) -> loss  mt_session_eval_step
    infer(n)                        mt_session_infer
        ``out``: None (the loss is returned), or an array('f') of at least one element
        that receives the loss in out[0] (the call returns None; a bad ``out`` is refused
        before the step runs). On MicroPython a float is a heap object on every port with
        double floats (16 bytes per returned loss on the Cortex-M boards); with ``out`` a
        step of ``_microtrain`` allocates nothing (tests/micropython: gc.mem_free() is
        unchanged over 1000 write_rows + train_step calls).

    trained() -> [bool, ...]        per weight (describe()'s "params" order): does the
                                    optimizer update it (mt_param_info.trained)
    read_param(position) -> flat sequence: weight ``position`` (that order), of its dtype
    write_param(position, values)   replace it: in the arena when trained, else in the
                                    backend's image (a read-only image raises); an int8
                                    weight's master copy restarts from it. Values that do
                                    not fit its type (a float or an out-of-range integer
                                    for an int8 / int32 one) raise naming the weight and
                                    its type, and change nothing
    weights() -> bytes              every weight, little-endian at its width, in that order
    weights_crc32() -> int          zlib.crc32 of weights() (the figure firmware prints,
                                    mt_session_weights_crc32)
    set_learning_rate(rate); get_learning_rate() -> float
    base_learning_rate() -> float   the rate schedules scale (compiled, or a checkpoint's)
    set_reference()                 mt_session_set_reference: the trained weights become the
                                    proximal term's w_ref (config proximal_mu > 0)
    counters() -> (step, epoch); set_epoch(epoch); numeric_errors() -> int

    checkpoint_bytes(include_optimizer, properties) -> int
    checkpoint_save(include_optimizer, properties, write)
        mt_checkpoint_save; ``write(chunk)`` receives the bytes in order (a bytes-like chunk
        valid during the call). ``properties``: [(name, kind, value)] with kind
        microtrain.properties.KIND_INT / KIND_FLOAT / KIND_STRING.
    checkpoint_load(size, read) -> [(name, value), ...]
        mt_checkpoint_load of ``size`` bytes; ``read(offset, count)`` returns exactly
        ``count`` bytes. A refused checkpoint leaves the session as it was: the backend
        restores its state if the core's in-place second pass fails.
    export_image(write)             mt_session_export_image: the image, trained weights in

Result mappings may be anything read with ``[name]`` (a JS object proxy is fine); the pure
code copies what it keeps.
"""

from .._const import const

KIND_INPUT = const(0)
KIND_TARGET = const(1)

# mt_status values the pure code names (microtrain.h)
MT_OK = const(0)
MT_ERR_BAD_ARGUMENT = const(-1)
MT_ERR_STATE = const(-4)
MT_ERR_UNSUPPORTED = const(-5)
MT_ERR_NUMERIC = const(-7)
MT_ERR_IO = const(-10)

# mt_train_config's fields and mt_memory_plan's figures, field for field (generated from
# micro_core/abi/microtrain_abi.json by tools/gen_abi.py)
from ._abi_fields import CONFIG_FIELDS, PLAN_FIELDS  # noqa: E402,F401


def crc32(data, crc=0):
    """zlib.crc32 (IEEE), from zlib/binascii when the port has them, else in Python."""
    try:
        from zlib import crc32 as native
        return native(data, crc) & 0xFFFFFFFF
    except ImportError:
        pass
    try:
        from binascii import crc32 as native
        return native(data, crc) & 0xFFFFFFFF
    except (ImportError, AttributeError):
        pass
    crc = ~crc & 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1))
    return ~crc & 0xFFFFFFFF


class Backend:
    """Base class of backends (the interface above). ``weights_crc32`` has a default;
    everything else is the implementation's."""

    def describe(self, image):
        raise NotImplementedError("describe")

    def plan(self, image, config):
        raise NotImplementedError("plan")

    def open(self, plan, arena=None):
        raise NotImplementedError("open")

    def close(self):
        raise NotImplementedError("close")

    def write_rows(self, kind, position, first_row, values):
        raise NotImplementedError("write_rows")

    def read_rows(self, output, n):
        raise NotImplementedError("read_rows")

    def train_step(self, n, out=None):
        raise NotImplementedError("train_step")

    def accumulate(self, n, out=None):
        raise NotImplementedError("accumulate")

    def zero_grad(self):
        raise NotImplementedError("zero_grad")

    def optimizer_step(self):
        raise NotImplementedError("optimizer_step")

    def eval_step(self, n, out=None):
        raise NotImplementedError("eval_step")

    def infer(self, n):
        raise NotImplementedError("infer")

    def trained(self):
        raise NotImplementedError("trained")

    def read_param(self, position):
        raise NotImplementedError("read_param")

    def write_param(self, position, values):
        raise NotImplementedError("write_param")

    def weights(self):
        raise NotImplementedError("weights")

    def weights_crc32(self):
        return crc32(self.weights())

    def set_learning_rate(self, rate):
        raise NotImplementedError("set_learning_rate")

    def get_learning_rate(self):
        raise NotImplementedError("get_learning_rate")

    def base_learning_rate(self):
        raise NotImplementedError("base_learning_rate")

    def set_reference(self):
        raise NotImplementedError("set_reference")

    def counters(self):
        raise NotImplementedError("counters")

    def set_epoch(self, epoch):
        raise NotImplementedError("set_epoch")

    def numeric_errors(self):
        raise NotImplementedError("numeric_errors")

    def checkpoint_bytes(self, include_optimizer, properties):
        raise NotImplementedError("checkpoint_bytes")

    def checkpoint_save(self, include_optimizer, properties, write):
        raise NotImplementedError("checkpoint_save")

    def checkpoint_load(self, size, read):
        raise NotImplementedError("checkpoint_load")

    def export_image(self, write):
        raise NotImplementedError("export_image")
