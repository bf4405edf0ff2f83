#!/bin/sh
# Builds veil's native protection core (native/, Rust over RustCrypto through napi-rs; issue 42)
# from source with cargo, its crates from crates.io at the versions native/Cargo.lock pins, into
# native/veil-native.node; needs cargo and rustc >= 1.89 (rustup). Run by npm ci's postinstall (and
# so by the Dockerfile's build stage), by the tests' global setup (test/setup/native-build.ts: only
# what changed) and by `npm run bench:native`. veil's engines run their keyed primitives on it
# (src/app/open-engine.ts), so veil does not start without it. A node addon built by napi-rs links
# no Node.js library: it resolves the N-API symbols from the process that loads it, so no headers
# are needed.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out="$here/native/veil-native.node"
if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && PATH="$HOME/.cargo/bin:$PATH" || { echo "veil: cargo is needed to build the native core (https://rustup.rs)" >&2; exit 1; }
fi
echo "veil: building the native core (native/) with cargo: about a minute the first time, then only what changed" >&2
cargo build --release --locked --manifest-path "$here/native/Cargo.toml" --target-dir "$here/native/target" >"$here/native/build-veil.log" 2>&1 || {
  tail -40 "$here/native/build-veil.log" >&2
  echo "veil: the native core's build failed; full log: native/build-veil.log" >&2
  exit 1
}
cp "$here/native/target/release/libveil_native.so" "$out.tmp" && mv "$out.tmp" "$out"
"$here/scripts/node22" -e "require('$out')"
