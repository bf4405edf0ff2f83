#!/bin/sh
# Token, protect, unprotect against a running `npm start` (veil serve on its embedded defaults).
# Runs from any directory: veil is at $VEIL_URL, else on port $VEIL_PORT (default 8080, as
# `npm start`) of 127.0.0.1; the development client's secret is in $VEIL_DATA_DIR, else in the
# .veil of the repository this script is in, where `npm start` keeps it.
set -eu
VEIL=${VEIL_URL:-http://127.0.0.1:${VEIL_PORT:-8080}}
SECRET=$(cat "${VEIL_DATA_DIR:-$(dirname "$0")/../../.veil}/dev-client.secret")

# 1. an access token for the development client (OAuth 2.0 client credentials)
TOKEN=$(curl -sf -X POST "$VEIL/connect/token" \
  -d grant_type=client_credentials -d client_id=veil-dev --data-urlencode "client_secret=$SECRET" \
  | sed -E 's/.*"access_token":"([^"]+)".*/\1/')

# 2. a transform request body (spec §2.1): role support, action $1, Customer.email = $2
body() {
  printf '{"rightsContexts":[{"guid":"11111111-1111-4111-8111-111111111111","evidences":[{"name":"Role","value":"support"}]}],'
  printf '"processingContexts":[{"guid":"22222222-2222-4222-8222-222222222222","evidences":[{"name":"Action","value":"%s"}]}],' "$1"
  printf '"requests":[{"guid":"33333333-3333-4333-8333-333333333333","rightsContext":"11111111-1111-4111-8111-111111111111",'
  printf '"processingContext":"22222222-2222-4222-8222-222222222222","instances":[{"className":"Customer","propertyName":"email","value":"%s"}]}]}' "$2"
}

# 3. protect, then unprotect what came back
PROTECTED=$(curl -sf -X POST "$VEIL/transform" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "$(body Protect alice@example.com)" | sed -E 's/.*"value":"([^"]+)".*/\1/')
echo "protected:   $PROTECTED"
curl -sf -X POST "$VEIL/transform" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "$(body Unprotect "$PROTECTED")"
echo
