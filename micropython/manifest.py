# Freeze manifest of microtrain's MicroPython firmware (tools/micropython/build_firmware.sh
# passes it as FROZEN_MANIFEST): the facade's pure modules, exactly as py_facade/manifest.py
# lists them. The native backend `_microtrain` comes from USER_C_MODULES, not from here.
include("../py_facade/manifest.py")
