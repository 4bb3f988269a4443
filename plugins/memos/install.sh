#!/usr/bin/env bash
# memory=memos's one install command, from the repository root after ./setup.sh:
#
#   bash plugins/memos/install.sh
#
# MemOS (PyPI MemoryOS 2.0.33) cannot share memorybench's environment (it pins openai<2,
# memorybench needs openai>=3.50: README.md here), so this makes two installs:
#   1. plugins/memos/.venv: MemoryOS, qdrant-client and their whole tree at the versions of
#      requirements-memos.txt (git ignores .venv/), made with the interpreter memorybench's
#      .venv was made with;
#   2. this plugin's light package (mb_memos: memorybench's side) into memorybench's .venv.
# Both environments end with `pip check`. Nothing of memorybench's environment moves. Last, the
# words every MemOS store holds are read from two empty stores MemOS builds (mb_memos._store_words,
# about 10-20 s), kept in the MemOS environment: each pack's prompt file of them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
core="$root/.venv/bin/python"
if [ ! -x "$core" ]; then
  echo "install.sh: no memorybench environment at $root/.venv; run ./setup.sh first" >&2
  exit 1
fi
base="$("$core" -c 'import sys; print(sys._base_executable)')"
venv="$here/.venv"
[ -x "$venv/bin/python" ] || "$base" -m venv "$venv"
"$venv/bin/python" -m pip install -q -r "$here/requirements-memos.txt"
"$venv/bin/python" -m pip check
"$core" -m pip install -q -e "$here"
"$core" -m pip check
"$core" -c 'from mb_memos._store_words import cache_path, store_words; store_words(); print("store words:", cache_path())'
echo "memory=memos installed: MemoryOS $("$venv/bin/python" -c 'from importlib.metadata import version; print(version("MemoryOS"))') in $venv"
