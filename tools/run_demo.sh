#!/usr/bin/env bash
# The main job: set up, then fine-tune an MLP on scikit-learn's bundled digits on the host,
# and fine-tune a pretrained one on an emulated Cortex-M4F board (QEMU mps2-an386), replaying
# the same steps on the host: both weight CRCs are printed and must match.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source tools/setup_host.sh --demo
python examples/digits_mlp.py "$@"
bash tools/setup_arm.sh --no-pytest
echo
echo "== on-device fine-tuning: QEMU mps2-an386 (Cortex-M4F) against the host =="
python examples/firmware_digits.py --board mps2-an386
echo
echo "The microtrain command and package are in $root/.venv: activate it to use them,"
echo "  source $root/.venv/bin/activate && microtrain --help"
