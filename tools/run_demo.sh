#!/usr/bin/env bash
# The main job: set up, then fine-tune an MLP on scikit-learn's bundled digits on the host.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source tools/setup_host.sh --demo
python examples/digits_mlp.py "$@"
