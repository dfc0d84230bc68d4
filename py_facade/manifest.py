# MicroPython freeze manifest (micropython-lib style) of microtrain's pure-logic modules:
# what runs under MicroPython. A firmware freezes them with `include("<repo>/py_facade/manifest.py")`
# in its board manifest; tools/micropython/run.mjs copies the same files into MicroPython's
# filesystem, and tests/test_micropython_safe.py compiles each with mpy-cross.
# The backend they need is a native module `_microtrain` of the firmware's own (see README,
# "MicroPython on a board"), or the JS module `_microtrain_js` behind _js_backend.py.
metadata(description="microtrain: on-device training API over a static-memory C core",
         version="0.1.0")

package("microtrain", files=(
    "__init__.py",
    "_lifecycle.py",
    "_random.py",
    "backend/__init__.py",
    "backend/js_backend.py",
    "data.py",
    "errors.py",
    "lite.py",
    "losses.py",
    "metrics.py",
    "ops.py",
    "optimizers.py",
    "properties.py",
    "schedules.py",
    "trainable.py",
    "training.py",
), base_path=".")
