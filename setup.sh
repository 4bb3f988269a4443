#!/usr/bin/env bash
# One-command set-up: a virtual environment with memorybench, the embedded local model
# (llama.cpp compiled from source: about 5-7 minutes the first time on 2 cores, seconds
# afterwards from pip's wheel cache) and the test tools; then the pinned data files.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# LLAVA (image models) is not needed: skipping it cuts the llama.cpp build by ~20%.
CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" .venv/bin/python -m pip install --quiet -e ".[local,test]"
# Download (or, with MEMORYBENCH_PINS set to a folder that has them, verify) the pinned files.
.venv/bin/memorybench fetch
