#!/bin/sh
# Prints the directory of a venv under ${VEIL_CACHE_DIR:-~/.cache/veil} holding these pinned PyPI
# packages, building it on first use (needs python3 with its venv module: Debian's python3-venv,
# which .ci/run installs). A venv whose package list changed is rebuilt. One build at a time per
# venv (flock): a test file asking while the tests' warm-up (test/setup/tool-cache.ts) builds it
# waits for that build instead of starting a second one.
#   scripts/python-venv.sh moto 'moto[server]==5.2.5'   → /root/.cache/veil/moto-venv
set -eu
[ $# -ge 2 ] || { echo "usage: scripts/python-venv.sh NAME PACKAGE..." >&2; exit 2; }
name=$1
shift
cache=${VEIL_CACHE_DIR:-$HOME/.cache/veil}
venv="$cache/$name-venv"
want=$(printf '%s\n' "$@")
ready() { [ -f "$venv/.veil-ready" ] && [ "$(cat "$venv/.veil-ready")" = "$want" ]; }
if ready; then echo "$venv"; exit 0; fi
mkdir -p "$cache"
exec 9>"$cache/$name-venv.lock"
flock 9
if ! ready; then
  echo "veil: building the $name venv from PyPI (once, into $venv)" >&2
  # built in place (its scripts' shebangs name this directory); the stamp is written last, so an
  # interrupted build is redone
  rm -rf "$venv"
  if ! python3 -m venv "$venv"; then
    echo "veil: 'python3 -m venv' failed; on Debian/Ubuntu install the package python3-venv" >&2
    exit 1
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2
  printf '%s\n' "$@" > "$venv/.veil-ready"
fi
echo "$venv"
