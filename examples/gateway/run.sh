#!/bin/sh
# The gateway example end to end (docs/gateway.md): starts the customer app
# (upstream.ts, port 3000), `veil serve` (tokens, port 8080) and `veil gateway` (port 8081) on
# examples/gateway/gateway.yaml, writes a customer through the gateway, shows what the app stored,
# reads it back with three roles, and stops everything it started.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=$(mktemp -d "${TMPDIR:-/tmp}/veil-gateway-example.XXXXXX")
# the example configuration, pointed at the app's port (UPSTREAM_PORT, VEIL_PORT and GATEWAY_PORT move the three)
config="$data/gateway.yaml"
sed "s#upstream: http://127.0.0.1:3000#upstream: http://127.0.0.1:${UPSTREAM_PORT:-3000}#" "$here/gateway.yaml" > "$config"
APP=http://127.0.0.1:${UPSTREAM_PORT:-3000}
VEIL=http://127.0.0.1:${VEIL_PORT:-8080}
GW=http://127.0.0.1:${GATEWAY_PORT:-8081}
pids=""
stop() {
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$data"
}
trap stop EXIT INT TERM

wait_for() {   # url
  i=0
  until curl -sf -o /dev/null "$1"; do
    i=$((i + 1)); [ $i -lt 150 ] || { echo "run.sh: $1 did not come up" >&2; exit 1; }
    sleep 0.2
  done
}

"$root/scripts/node22" "$here/upstream.ts" "${UPSTREAM_PORT:-3000}" & pids="$pids $!"
VEIL_LOG_LEVEL=warn "$root/bin/veil" serve --config "$config" --data-dir "$data" --port "${VEIL_PORT:-8080}" & pids="$pids $!"
wait_for "$VEIL/readyz"
VEIL_LOG_LEVEL=warn VEIL_BASE_URL=$VEIL "$root/bin/veil" gateway --config "$config" --data-dir "$data" --port "${GATEWAY_PORT:-8081}" & pids="$pids $!"
wait_for "$GW/_veil/healthz"
wait_for "$APP/static/hello.txt"

token() {   # client id, secret
  curl -sf -X POST "$VEIL/connect/token" -d grant_type=client_credentials -d client_id="$1" --data-urlencode "client_secret=$2" \
    | sed -E 's/.*"access_token":"([^"]+)".*/\1/'
}
INGEST=$(token example-ingest ingest-example-secret)
SUPPORT=$(token example-support support-example-secret)
FRAUD=$(token example-fraud fraud-example-secret)

echo "--- POST /customers through the gateway (role ingest)"
curl -sf -X POST "$GW/customers" -H "Authorization: Bearer $INGEST" -H 'Content-Type: application/json' \
  -d '{"name":"Alice Martin","email":"alice@example.com","card":{"number":"4111-1111-1111-1111"},"contacts":[{"e-mail":"bob@example.com"}],"plan":"gold"}'
echo
echo "--- what the app stored (read from the app directly, not through the gateway)"
curl -sf "$APP/customers/1"; echo
echo "--- GET /customers/1 through the gateway, role support (email clear, card masked, name protected)"
curl -sf "$GW/customers/1" -H "Authorization: Bearer $SUPPORT"; echo
echo "--- GET /customers/1 through the gateway, role fraud (everything clear)"
curl -sf "$GW/customers/1" -H "Authorization: Bearer $FRAUD"; echo
echo "--- GET /static/hello.txt through the gateway (no selectors: untouched, no token needed)"
curl -sf "$GW/static/hello.txt"
echo "--- POST with a drifted field (emailAddress, not a selector): refused by the unmapped guard, nothing forwarded"
curl -s -X POST "$GW/customers" -H "Authorization: Bearer $INGEST" -H 'Content-Type: application/json' \
  -d '{"name":"Carol Diaz","email":"carol@example.com","emailAddress":"carol@example.com","plan":"silver"}'; echo
echo "--- what the app holds now (still only the first customer)"
curl -sf "$APP/customers"; echo
echo "--- POST without a token: refused, nothing forwarded"
curl -s -X POST "$GW/customers" -H 'Content-Type: application/json' -d '{"email":"carol@example.com"}'; echo
