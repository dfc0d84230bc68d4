#!/usr/bin/env bash
# The peers of benchmarks/peers.py in a virtual environment of their own, build/bench-venv:
# ONNX Runtime training 1.19.2 needs onnx<=1.17, which must not share a venv with the test
# venv's onnx (tests/convert). PyTorch 2.13 CPU, onert (onert.experimental.train) and numpy
# go beside them; microtrain itself comes from the source tree (PYTHONPATH + MICROTRAIN_LIB,
# set by peers.py). Skips what is already there.
# Usage: bash benchmarks/setup_peers.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/build/bench-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if ! "$venv/bin/python" - <<'PY' 2>/dev/null
from importlib.metadata import version
assert version("onnxruntime-training") == "1.19.2" and version("torch") == "2.13.0"
assert version("onert") == "0.1.0"
PY
then
  "$venv/bin/python" -m pip install -q numpy "onnx<=1.17" "onnxruntime-training==1.19.2" \
      "onert==0.1.0" "torch==2.13.0" flatbuffers "tflite==2.18.0"
fi
echo "peers venv: $venv"
