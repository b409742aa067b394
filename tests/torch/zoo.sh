#!/bin/sh
# zoo.sh PYTHON PASSRUN MODEL: runs tests/torch/zoo.py MODEL (both partition
# modes) with PYTHON, the Python that has torch, torchvision and transformers
# (CMake's PASSRUN_TORCH_PYTHON; tools/torch_export/setup_venv.sh makes one).
# Without them the test cannot run: exit 77, which ctest reports as skipped,
# with the reason on standard output.
PY=$1 PASSRUN=$2 MODEL=$3
HERE=$(cd "$(dirname "$0")" && pwd)
if ! command -v "$PY" >/dev/null 2>&1; then
	echo "zoo.sh: skipped: no Python at '$PY' (run tools/torch_export/setup_venv.sh, or set PASSRUN_TORCH_PYTHON)"
	exit 77
fi
if ! "$PY" -c 'import torch, torchvision, transformers, numpy' >/dev/null 2>&1; then
	echo "zoo.sh: skipped: $PY cannot import torch, torchvision, transformers and numpy (run tools/torch_export/setup_venv.sh)"
	exit 77
fi
HF_HUB_OFFLINE=1 exec "$PY" "$HERE/zoo.py" --passrun "$PASSRUN" "$MODEL"
