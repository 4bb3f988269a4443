#!/usr/bin/env bash
# memory=cognee's one install command, from the repository root after ./setup.sh:
#
#   bash plugins/cognee/install.sh
#
# cognee 1.6.5 cannot share memorybench's environment (it pins openai<3 through instructor;
# memorybench needs openai>=3.50: README.md here), so this makes two installs:
#   1. plugins/cognee/.venv: cognee and its whole tree at the versions of requirements-cognee.txt
#      (git ignores .venv/), made with the interpreter memorybench's .venv was made with;
#   2. this plugin's light package (mb_cognee: memorybench's side) into memorybench's .venv.
# Both environments end with `pip check`. Nothing of memorybench's environment moves. Last, the
# words every cognee store holds are read from two empty stores cognee builds (mb_cognee._store_words,
# about 30-60 s), kept in the cognee environment: each pack's prompt file of them.
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
"$venv/bin/python" -m pip install -q -r "$here/requirements-cognee.txt"
"$venv/bin/python" -m pip check
"$core" -m pip install -q -e "$here"
"$core" -m pip check
"$core" -c 'from mb_cognee._store_words import cache_path, store_words; store_words(); print("store words:", cache_path())'
echo "memory=cognee installed: cognee $("$venv/bin/python" -c 'from importlib.metadata import version; print(version("cognee"))') in $venv"
