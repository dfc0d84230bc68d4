"""_native.py: library loading, the ABI check, completeness of the 1:1 bindings, _check."""

import ctypes
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError, layers
from microtrain import ops as opcodes
from microtrain.backend import _native

INCLUDE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "micro_core", "include")
HEADER = os.path.join(INCLUDE, "microtrain.h")
OPS_DEF = os.path.join(INCLUDE, "microtrain_ops.def")


def header_text():
    """microtrain.h and the parts of the API it includes (session, checkpoint)."""
    text = ""
    for name in ("microtrain.h", "microtrain_session.h", "microtrain_checkpoint.h"):
        with open(os.path.join(INCLUDE, name)) as handle:
            text += handle.read()
    return text


def test_every_header_function_has_a_binding_with_its_prototype_comment():
    declared = set(re.findall(r"MT_API\s+[^;]*?\b(mt_\w+)\s*\(", header_text()))
    bound = {function.name for function in _native.ALL_FUNCTIONS}
    assert declared == bound
    with open(_native.__file__) as handle:
        source = handle.read()
    for name in declared:
        assert re.search(r"^# .*\b%s\(" % name, source, re.MULTILINE), name
        assert getattr(_native, name).name == name
        getattr(_native, name)._resolve()  # exported by the library


def test_enum_constants_match_the_header():
    text = header_text()
    for name, value in re.findall(r"\b(MT_(?:ERR|OK|DTYPE|OPTIMIZER|LOSS|REDUCTION)\w*)"
                                  r"\s*=\s*(-?\d+)", text):
        assert getattr(_native, name) == int(value), name
    # mt_op_type is generated from microtrain_ops.def (MT_OP_<NAME> = code); the Python
    # copy of the op table is microtrain.ops (tests/test_op_table.py checks it row by row)
    assert "#include \"microtrain_ops.def\"" in text
    with open(OPS_DEF) as handle:
        rows = re.findall(r"^MT_OP\((\d+), *(\w+),", handle.read(), re.MULTILINE)
    assert rows
    for value, name in rows:
        assert getattr(opcodes, name) == int(value), name
    for name, value in re.findall(r"\b(MT_TENSOR_\w+)\s*=\s*(\d+)u", text):
        assert getattr(_native, name) == int(value), name
    for name, value in re.findall(r"#define (MT_\w+) (\d+)u?\b", text):
        assert getattr(_native, name) == int(value), name


def test_abi_version_and_struct_sizes_match():
    library = _native.load_library()
    assert _native.mt_abi_version() == _native.MT_ABI_VERSION
    for which, mirror in _native.STRUCT_MIRRORS.items():
        assert _native.mt_struct_size(which) == ctypes.sizeof(mirror)
    assert _native.mt_struct_size(99) == 0
    _native.check_abi(library)


def test_abi_check_rejects_a_drifted_mirror(monkeypatch):
    class shorter_plan(ctypes.Structure):
        _fields_ = [("total_bytes", ctypes.c_size_t)]

    monkeypatch.setitem(_native.STRUCT_MIRRORS, _native.MT_STRUCT_MEMORY_PLAN, shorter_plan)
    with pytest.raises(RuntimeError, match="sizeof\\(shorter_plan\\)"):
        _native.check_abi(_native.load_library())


def test_library_path_override_and_clear_errors(monkeypatch, tmp_path):
    real = _native.library_path()
    monkeypatch.setenv("MICROTRAIN_LIB", real)
    assert _native.library_path() == real
    monkeypatch.setenv("MICROTRAIN_LIB", str(tmp_path / "missing.so"))
    with pytest.raises(OSError, match="MICROTRAIN_LIB"):
        _native.library_path()
    monkeypatch.delenv("MICROTRAIN_LIB")
    monkeypatch.setattr(_native, "bundled_library_path", lambda: str(tmp_path / "none.so"))
    with pytest.raises(OSError, match="set MICROTRAIN_LIB="):
        _native.library_path()


def test_package_imports_without_a_library_and_fails_clearly_on_first_native_call(tmp_path):
    """A fresh interpreter whose MICROTRAIN_LIB names no file: building models works,
    the first native call raises OSError naming the variable."""
    code = ("import microtrain\n"
            "from microtrain import layers\n"
            "m = microtrain.Sequential([layers.Dense(2)], input_shape=(3,), seed=0)\n"
            "assert len(m.to_bytes()) > 64\n"
            "try:\n"
            "    microtrain.TrainSession(m)\n"
            "except OSError as error:\n"
            "    print('ERROR', error)\n")
    environment = dict(os.environ)
    environment["MICROTRAIN_LIB"] = str(tmp_path / "missing.so")
    environment["PYTHONPATH"] = os.path.dirname(os.path.dirname(microtrain.__file__))
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ERROR" in result.stdout and "MICROTRAIN_LIB" in result.stdout


def test_check_turns_statuses_into_microtrain_error():
    assert _native._check(_native.MT_OK) == 0
    for status, name in _native.STATUS_NAMES.items():
        text = _native.mt_status_str(status)
        assert isinstance(text, bytes) and text
        if status == _native.MT_OK:
            continue
        with pytest.raises(MicrotrainError) as error:
            _native._check(status, "mt_demo")
        assert error.value.status == status
        assert error.value.function == "mt_demo"
        assert error.value.message.startswith(text.decode())
        assert name in str(error.value) and "mt_demo" in str(error.value)
        assert isinstance(error.value, RuntimeError)
    assert _native.mt_status_str(-1000)  # never NULL


def test_raw_session_init_rejects_a_short_or_misaligned_arena():
    model = microtrain.Sequential([layers.Dense(4, activation="relu"), layers.Dense(2)],
                                  input_shape=(3,), seed=0)
    image = np.frombuffer(model.to_bytes(), dtype=np.uint8).copy()
    config = _native.mt_train_config()
    _native.mt_train_config_init(ctypes.byref(config))
    assert (config.optimizer, config.loss, config.reduction, config.batch_size,
            config.num_trainable_ops) == (_native.MT_OPTIMIZER_SGD, _native.MT_LOSS_MSE,
                                          _native.MT_REDUCTION_MEAN, 1, -1)
    assert config.learning_rate == np.float32(0.01) and config.epsilon == np.float32(1e-8)
    config.batch_size = 4
    plan = _native.mt_memory_plan()
    _native._check(_native.mt_plan(image.ctypes.data, image.size, ctypes.byref(config),
                                   ctypes.byref(plan)))
    raw = np.zeros(plan.total_bytes + 32, dtype=np.uint8)
    aligned = raw[(-raw.ctypes.data) % 16:]
    session = _native.mt_session_p()
    status = _native.mt_session_init(ctypes.byref(session), image.ctypes.data, image.size,
                                     ctypes.byref(config), aligned.ctypes.data,
                                     plan.total_bytes - 16)
    assert status == _native.MT_ERR_ARENA_TOO_SMALL
    status = _native.mt_session_init(ctypes.byref(session), image.ctypes.data, image.size,
                                     ctypes.byref(config), aligned.ctypes.data + 4,
                                     plan.total_bytes)
    assert status == _native.MT_ERR_BAD_ARGUMENT
    assert _native.mt_session_init(ctypes.byref(session), image.ctypes.data, image.size,
                                   ctypes.byref(config), aligned.ctypes.data,
                                   plan.total_bytes) == _native.MT_OK
    session_plan = _native.mt_memory_plan()
    _native._check(_native.mt_session_plan(session, ctypes.byref(session_plan)))
    assert bytes(session_plan) == bytes(plan)


def test_raw_accumulate_then_optimizer_step_equals_train_step():
    """The ONNX-Runtime-style split (zero_grad, accumulate, optimizer_step) is one train_step."""
    model = microtrain.Sequential([layers.Dense(4, activation="tanh"), layers.Dense(2)],
                                  input_shape=(3,), seed=0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = rng.standard_normal((4, 2)).astype(np.float32)
    whole = microtrain.TrainSession(model)
    whole.compile("sgd", "mse", batch_size=4)
    expected_loss = whole.train_step(x, y)["loss"][0]

    split = microtrain.TrainSession(model)
    split.compile("sgd", "mse", batch_size=4, accumulate_gradients=True)
    split.input_buffer()[:] = x
    split.target_buffer()[:] = y
    loss = ctypes.c_float()
    _native._check(_native.mt_session_zero_grad(split._backend._session))
    _native._check(_native.mt_session_accumulate(split._backend._session, 4, ctypes.byref(loss)))
    _native._check(_native.mt_session_optimizer_step(split._backend._session))
    assert loss.value == expected_loss
    for a, b in zip(split.get_weights(), whole.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert split.get_counters()["step"] == 1


def test_raw_diagnose_names_the_op_and_last_error_the_tensor():
    """mt_model_diagnose on an image whose op 2 (the second Dense) has a weight that no longer
    fits; mt_session_last_error after a step refused for a label out of range."""
    import struct
    from microtrain.nn import image as _image

    model = microtrain.Sequential([layers.Dense(4, activation="relu"), layers.Dense(3),
                                   layers.Softmax()], input_shape=(5,), seed=0)
    data = bytearray(model.to_bytes())
    header = _image.read_image(bytes(data)).header
    detail = _native.mt_error_detail()
    image = np.frombuffer(bytes(data), dtype=np.uint8).copy()
    assert _native.mt_model_diagnose(image.ctypes.data, image.size, None,
                                     ctypes.byref(detail)) == _native.MT_OK
    assert (detail.status, detail.op_index, detail.op_type, detail.tensor_index) == (0, -1, 0, -1)

    w2 = _image.read_image(bytes(data)).ops[2].inputs[1]
    entry = header.tensors_offset + 32 * w2
    struct.pack_into("<II", data, entry + 4, 3, 3)     # W2 [3, 4] -> [3, 3]
    struct.pack_into("<I", data, entry + 24, 3 * 3 * 4)  # data bytes to match
    _image.update_crc(data)
    image = np.frombuffer(bytes(data), dtype=np.uint8).copy()
    config = _native.mt_train_config()
    _native.mt_train_config_init(ctypes.byref(config))
    status = _native.mt_model_diagnose(image.ctypes.data, image.size, ctypes.byref(config),
                                       ctypes.byref(detail))
    assert status == detail.status == _native.MT_ERR_SHAPE
    assert (detail.op_index, detail.op_type, detail.tensor_index) == (2, opcodes.DENSE, -1)
    assert _native.mt_op_name(detail.op_type) == b"dense"
    assert _native.mt_model_diagnose(image.ctypes.data, image.size, None, None) == \
        _native.MT_ERR_BAD_ARGUMENT

    with microtrain.TrainSession(model) as session:
        session.compile("sgd", "sparse_categorical_crossentropy", batch_size=2)
        _native._check(_native.mt_session_last_error(session._backend._session, ctypes.byref(detail)))
        assert (detail.status, detail.op_index, detail.tensor_index) == (0, -1, -1)
        target, size = ctypes.c_void_p(), ctypes.c_int32()  # the facade would refuse label 7
        _native._check(_native.mt_session_target(session._backend._session, ctypes.byref(target),
                                                 ctypes.byref(size)))
        (ctypes.c_int32 * 2).from_address(target.value)[:] = [0, 7]
        assert _native.mt_session_train_step(session._backend._session, 2, None) == \
            _native.MT_ERR_BAD_ARGUMENT
        _native._check(_native.mt_session_last_error(session._backend._session, ctypes.byref(detail)))
        output = _image.read_image(model.to_bytes()).outputs[0]
        assert detail.status == _native.MT_ERR_BAD_ARGUMENT
        assert (detail.op_index, detail.op_type, detail.tensor_index) == (-1, 0, output)
