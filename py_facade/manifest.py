# MicroPython freeze manifest (micropython-lib style) of microtrain's MicroPython-safe modules:
# everything in the package except the folders and files that need CPython (nn/: the model
# builder, numpy; tools/: CLI, firmware, plots; convert/: the .tflite/.circle/.onnx importers;
# federated/: Flower; micropython_runner/: runs scripts on the firmware under QEMU;
# _array_files.py: numpy; _arguments.py: argparse;
# backend/ctypes_backend.py, backend/ctypes_callbacks.py, backend/ctypes_fast_steps.py,
# backend/_native.py and backend/_native_types.py: ctypes).
# tests/test_micropython_safe.py checks that this list is exactly that set and compiles each
# file with mpy-cross; tools/micropython/run.mjs copies the same files into MicroPython's
# filesystem.
# A firmware freezes them with `include("<repo>/py_facade/manifest.py")` in its board manifest;
# the backend they use there is the native module `_microtrain` (micropython/_microtrain/), or
# the JS module `_microtrain_js` behind backend/js_backend.py on a JavaScript host.
metadata(description="microtrain: on-device training API over a static-memory C core",
         version="0.1.0")

package("microtrain", files=(
    "__init__.py",
    "_const.py",
    "_feed.py",
    "_files.py",
    "_model_source.py",
    "_named.py",
    "_platform.py",
    "_random.py",
    "_shapes.py",
    "backend/__init__.py",
    "backend/_abi_fields.py",
    "backend/js_backend.py",
    "backend/loader.py",
    "checkpoint_info.py",
    "config.py",
    "data.py",
    "errors.py",
    "lite.py",
    "losses.py",
    "metrics.py",
    "ops.py",
    "optimizers.py",
    "properties.py",
    "schedules.py",
    "session.py",
    "session_persistence.py",
    "session_rows.py",
    "session_state.py",
    "sparse_scheme.py",
    "train_session.py",
    "trainable.py",
    "training.py",
), base_path=".")
