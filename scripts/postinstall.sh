#!/bin/sh
# npm ci's postinstall (package.json; the Dockerfile's build stage runs it as `npm run postinstall`):
# builds what veil needs from its registry sources, then patches kafkajs.
#   - the four builds run at once: the native core (scripts/build-native.sh: cargo, both cores),
#     librdkafka (scripts/build-librdkafka.sh: a make that mostly keeps one core busy), better-sqlite3
#     (scripts/build-better-sqlite3.sh: SQLite's amalgamation, one compiler on one core) and pkcs11js
#     (scripts/build-pkcs11js.sh). One after the other they took 5 min of a fresh clone's install on
#     a 2-core machine, most of it with a core idle. Each writes its own log and says its own failure;
#     any failure fails the install.
#   - scripts/patch-kafkajs.mjs last: nothing after it reinstalls kafkajs.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
pids=""
for build in native librdkafka pkcs11js better-sqlite3; do
  sh "$here/scripts/build-$build.sh" &
  pids="$pids $!"
done
failed=0
for pid in $pids; do wait "$pid" || failed=1; done
if [ "$failed" != 0 ]; then
  echo "veil: a native build failed (what failed is said above); nothing was patched" >&2
  exit 1
fi
node "$here/scripts/patch-kafkajs.mjs"
