#!/usr/bin/env bash
# Fuzzes a real `veil serve` against its own OpenAPI document with schemathesis: every check, at
# least 1,000 generated examples per operation. Exits non-zero on any failure or warning.
#
# Needs python3 (3.11) with its venv module (Debian: package python3-venv) and, on first run,
# PyPI: schemathesis is installed into a venv under ${VEIL_CACHE_DIR:-~/.cache/veil} and reused.
# Extra arguments go to `st run` (e.g. --seed N to replay a run, -n 100 for a quick one);
# `--install` alone installs schemathesis and exits.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
ST_VERSION=4.32.5
# the venv: scripts/python-venv.sh builds it once (one build at a time across processes)
venv=$("$root/scripts/python-venv.sh" schemathesis "schemathesis==$ST_VERSION")
# --install: the venv only (the tests' warm-up, test/setup/tool-cache.ts)
if [ "${1:-}" = --install ]; then exit 0; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/veil-schemathesis.XXXXXX")
server=
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The embedded defaults (config/example.yaml) with one change: failed token requests are
# rate-limited to 10 per minute per client id and 100 per address, and schemathesis sends about
# a thousand failing ones (random client ids and secrets), so nearly all of them would get 429
# slow_down instead of reaching the code under test. The limit is raised for this run only;
# token.test.ts tests the limit itself.
{
  cat "$root/config/example.yaml"
  printf '\nservice:\n  rateLimit: { tokenFailuresPerMinute: 1000000 }\n'
} > "$work/config.yaml"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
url="http://127.0.0.1:$port"
# as `npm start` runs it (scripts/node22 src/cli/main.ts serve), on a fresh data directory
VEIL_LOG_LEVEL=warn VEIL_DRAIN_DELAY_MS=0 "$root/scripts/node22" "$root/src/cli/main.ts" serve \
  --port "$port" --host 127.0.0.1 --data-dir "$work/data" --config "$work/config.yaml" > "$work/serve.log" 2>&1 &
server=$!

# ready, then a token for the development client; the secret and the token stay in variables
# and files of this run, never on the terminal
token=$(python3 - "$url" "$work/data/dev-client.secret" "$server" "$work/dev-client.dict" <<'PY'
import json, os, sys, time, urllib.parse, urllib.request
url, secret_file, server, dictionary = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
deadline = time.time() + 120
while True:
    try:
        os.kill(server, 0)
    except OSError:
        sys.exit("schemathesis.sh: veil serve exited before it was ready")
    try:
        if urllib.request.urlopen(f"{url}/readyz", timeout=2).status == 200:
            break
    except OSError:
        pass
    if time.time() > deadline:
        sys.exit("schemathesis.sh: veil serve did not become ready in 120 s")
    time.sleep(0.2)
secret = open(secret_file).read().strip()
# the secret as a libFuzzer dictionary entry, for schemathesis.toml
with open(os.open(dictionary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
    f.write('"' + secret.replace("\\", "\\\\").replace('"', '\\"') + '"\n')
form = {"grant_type": "client_credentials", "client_id": "veil-dev", "client_secret": secret}
with urllib.request.urlopen(f"{url}/connect/token", data=urllib.parse.urlencode(form).encode(), timeout=30) as res:
    print(json.load(res)["access_token"])
PY
) || { echo "schemathesis.sh: no token; server log:" >&2; cat "$work/serve.log" >&2; exit 1; }

cp "$root/scripts/schemathesis/schemathesis.toml" "$work/schemathesis.toml"

# --generation-database none: with an example database Hypothesis also runs its Pareto
# optimisation pass, which made the same 1,000 examples per operation take 5 minutes, not 1
# --workers 2: this machine has 2 cores, and the server needs one of them
status=0
(cd "$work" && SCHEMATHESIS_HOOKS="$root/scripts/schemathesis/hooks.py" "$venv/bin/st" \
  --config-file "$work/schemathesis.toml" --no-color \
  run "$url/openapi.json" --checks all --max-examples 1000 --workers 2 --generation-database none \
  -H "Authorization: Bearer $token" "$@") || status=$?

if [ "$status" -ne 0 ]; then
  echo "schemathesis.sh: schemathesis failed (exit $status); server log:" >&2
  cat "$work/serve.log" >&2
fi
exit "$status"
