#!/usr/bin/env bash
# memory=letta in one command (from the repository root, after ./setup.sh):
#   plugins/letta/install.sh
# 1. the plugin into memorybench's environment (.venv): our client, no Letta in it;
# 2. the Letta server into an environment of its own (plugins/letta/.venv): letta 0.11.7 with
#    every dependency at the version of Letta's own lock (mb_letta/server/constraints.txt).
# Both end with `pip check`. PYTHON picks the interpreter for the server's venv (default: the one
# memorybench's .venv was made from).
set -euo pipefail
cd "$(dirname "$0")/../.."
# the Python memorybench's venv was made from (3.11), for the same wheels: PYTHON overrides it
PYTHON="${PYTHON:-$(.venv/bin/python -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')}"
SERVER=plugins/letta/.venv
echo "install.sh: the plugin into .venv"
.venv/bin/python -m pip install --quiet -e plugins/letta
.venv/bin/python -m pip check
echo "install.sh: the Letta server into $SERVER (letta 0.11.7, Letta's own lock)"
[ -x "$SERVER/bin/python" ] || "$PYTHON" -m venv "$SERVER"
"$SERVER/bin/python" -m pip install --quiet "pip==26.3"   # older pips fail on letta's tree (an lxml extras bug)
"$SERVER/bin/python" -m pip install --quiet -c plugins/letta/mb_letta/server/constraints.txt "letta[server,sqlite]==0.11.7"
"$SERVER/bin/python" -m pip check
echo "install.sh: done; run: .venv/bin/memorybench qa memory=letta writer=local reader=local memory.max_sessions=1 max_questions=5"
